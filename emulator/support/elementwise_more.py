"""Rules of the elementwise_more group that the support tables cannot express.

Each function is named in ``elementwise_more.json``'s ``rules`` lists and receives the validated
fields (``v``): single-element scale and zero-point tensors of the quantized operators, equal
sizes where one element maps to one element, the data type of CLIP1/CLIP_GRAD1's Min/Max, the
scalar training step of ADAM_OPTIMIZER, and how QUANTIZE/DEQUANTIZE's tensor array must match
their QuantizationType. The ``same`` constraints and the bands are checked before these rules run,
so the tensors' ranks and data types are already those the tables allow.
"""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_QUANTIZATION_TYPE, DML_TENSOR_DATA_TYPE

from ..validation import Context, Tensor, same

__all__ = [
    "adam_optimizer", "clip1", "clip_grad1", "dequantize", "dynamic_quantize_linear", "quantize",
    "quantized_linear_add",
]

FLOAT_TYPES = (DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_FLOAT32,
               DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_FLOAT16)
# How many tensors QuantizationTensors holds for each QuantizationType: {scale} or
# {scale, zero point}; NONE has nothing to quantize with.
QUANTIZATION_TENSOR_COUNT = {
    DML_QUANTIZATION_TYPE.DML_QUANTIZATION_TYPE_SCALE: 1,
    DML_QUANTIZATION_TYPE.DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT: 2,
}


def _one_element(ctx: Context, name: str, t: Tensor | None) -> None:
    """An optional or required tensor that, when present, holds exactly one element."""
    if t is not None:
        ctx.require(t.element_count == 1, f"{name}.Sizes", t.sizes,
                    f"{name} must hold exactly one element (every size 1)")


def _min_max_type(ctx: Context, v: SimpleNamespace, output: str) -> None:
    out: Tensor = getattr(v, output)
    ctx.require(v.MinMaxDataType == out.data_type, "MinMaxDataType", v.MinMaxDataType,
                f"Min and Max must be given in {output}'s data type "
                f"({DML_TENSOR_DATA_TYPE(out.data_type).name})")


# ----------------------------------------------------------------------------------------------
# Quantized element-wise operators


def quantized_linear_add(ctx: Context, v: SimpleNamespace) -> None:
    """Every scale and zero point is a single value; A, B and Output pair element by element."""
    for name in ("AScaleTensor", "AZeroPointTensor", "BScaleTensor", "BZeroPointTensor",
                 "OutputScaleTensor", "OutputZeroPointTensor"):
        _one_element(ctx, name, getattr(v, name))
    same(ctx, "ATensor", "BTensor", "Sizes", v.ATensor.sizes, v.BTensor.sizes)
    same(ctx, "ATensor", "OutputTensor", "Sizes", v.ATensor.sizes, v.OutputTensor.sizes)


def dynamic_quantize_linear(ctx: Context, v: SimpleNamespace) -> None:
    """The computed scale and zero point are single values; Output has the Input's sizes."""
    _one_element(ctx, "OutputScaleTensor", v.OutputScaleTensor)
    _one_element(ctx, "OutputZeroPointTensor", v.OutputZeroPointTensor)
    same(ctx, "InputTensor", "OutputTensor", "Sizes", v.InputTensor.sizes, v.OutputTensor.sizes)


def _quantization_tensors(ctx: Context, v: SimpleNamespace, float_name: str,
                          quantized_name: str) -> None:
    """QUANTIZE/DEQUANTIZE: the tensor array against QuantizationType and the data tensors.

    ``float_name`` is the FLOAT32/FLOAT16 data tensor (its DataType is the scale's), and
    ``quantized_name`` the 8/4-bit one (its DataType is the zero point's)."""
    qtype = v.QuantizationType
    expected = QUANTIZATION_TENSOR_COUNT.get(qtype)
    if expected is None:
        ctx.fail("QuantizationType", qtype,
                 "must be DML_QUANTIZATION_TYPE_SCALE or DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT")
    tensors: tuple[Tensor, ...] = v.QuantizationTensors
    ctx.require(v.QuantizationTensorCount == expected, "QuantizationTensorCount",
                v.QuantizationTensorCount,
                f"{qtype.name} takes {expected} quantization tensor(s) "
                "(the scale, then the zero point when there is one)")
    data: Tensor = v.InputTensor
    same(ctx, "InputTensor", "OutputTensor", "Sizes", data.sizes, v.OutputTensor.sizes)
    for i, t in enumerate(tensors):
        same(ctx, "InputTensor", f"QuantizationTensors[{i}]", "DimensionCount", data.dim_count,
             t.dim_count)
        for d, (size, q) in enumerate(zip(data.sizes, t.sizes, strict=True)):
            ctx.require(size % q == 0, f"QuantizationTensors[{i}].Sizes", t.sizes,
                        f"each size must divide InputTensor's size in that dimension "
                        f"(dimension {d}: {q} does not divide {size})")
    scale = tensors[0]
    float_type = getattr(v, float_name).data_type
    ctx.require(scale.data_type in FLOAT_TYPES, "QuantizationTensors[0].DataType",
                scale.data_type, "the scale (the first quantization tensor) must be FLOAT32 or "
                "FLOAT16")
    same(ctx, float_name, "QuantizationTensors[0]", "DataType", float_type, scale.data_type)
    if expected == 2:
        zero_point = tensors[1]
        same(ctx, quantized_name, "QuantizationTensors[1]", "DataType",
             getattr(v, quantized_name).data_type, zero_point.data_type)
        same(ctx, "QuantizationTensors[0]", "QuantizationTensors[1]", "Sizes", scale.sizes,
             zero_point.sizes)


def quantize(ctx: Context, v: SimpleNamespace) -> None:
    """InputTensor (float) is quantized into OutputTensor with a scale and optional zero point."""
    _quantization_tensors(ctx, v, "InputTensor", "OutputTensor")


def dequantize(ctx: Context, v: SimpleNamespace) -> None:
    """InputTensor (quantized) is expanded into OutputTensor (float)."""
    _quantization_tensors(ctx, v, "OutputTensor", "InputTensor")


# ----------------------------------------------------------------------------------------------
# Clip and the optimizer


def clip1(ctx: Context, v: SimpleNamespace) -> None:
    """MinMaxDataType names OutputTensor's data type."""
    _min_max_type(ctx, v, "OutputTensor")


def clip_grad1(ctx: Context, v: SimpleNamespace) -> None:
    """MinMaxDataType names the output's data type (the struct's output is OutputGradientTensor)."""
    _min_max_type(ctx, v, "OutputGradientTensor")


def adam_optimizer(ctx: Context, v: SimpleNamespace) -> None:
    """TrainingStepTensor is a scalar: every size is 1."""
    step: Tensor = v.TrainingStepTensor
    ctx.require(all(s == 1 for s in step.sizes), "TrainingStepTensor.Sizes", step.sizes,
                "the training step must be a scalar tensor (every size 1)")
