"""Fuzzing (issue 7): random operator descs of every implemented family, valid or broken in one
field, and random bindings. Every call either succeeds with the reference's results or raises
DMLError; never another exception, a write outside the addressed output elements, or a changed
buffer after a failure. Guard bytes surround every bound range and a sentinel fills the gaps.

Profiles: ``bounded`` (default, every run) and ``long`` (``pytest --fuzz long``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import Buffer, DMLCreateDevice1, DMLError, nibbles
from emulator.activations import ACTIVATIONS
from emulator.elementwise import ROWS
from emulator.movement.resample import ROWS as RESAMPLE_ROWS
from emulator.movement.table import ROWS as MOVEMENT_ROWS
from emulator.ops import softmax
from emulator.reduction.table import EXTREMES as REDUCE_EXTREMES
from emulator.reduction.table import ROWS as REDUCTION_ROWS
from emulator.registry import validate_operator

from .helpers import EIGHT, addressed_mask, desc, initialize_and_dispatch
from .test_attention import make_case as attention_case
from .test_convolution import output_sizes as conv_output_sizes
from .test_convolution import random_attributes as conv_attributes
from .test_gemm import random_sizes as gemm_sizes
from .test_integer_compute import conv_case as int_conv_case
from .test_movement import make_case
from .test_pooling import window as pool_window
from .test_reduction import make_case as reduction_case
from .test_resample import random_fields
from .test_special import make_case as special_case
from .test_window import window_case

GUARD = 0xC3  # fills guard bytes around every bound range
GAP = 0x3C  # fills the unaddressed bytes of outputs
PAD = 256  # guard bytes on each side (and the binding offset)
LEVELS = ["2_1", "3_0", "3_1", "4_0"]
FAMILY_LEVELS = {"QUANTIZE": ["6_2", "6_3", "6_4"],  # introduced at 6_3
                 "MOVEMENT": ["3_0", "4_1", "5_0", "6_4"],  # signed indices, 8-D and 64-bit bands
                 "RESAMPLING": ["2_1", "5_1", "6_2", "6_4"],  # RESAMPLE1, 1-4-D, 8-bit, RESAMPLE3
                 "GENERATORS_WINDOWS": ["6_3", "6_4"],  # RANDOM, NONZERO … and FOLD/UNFOLD (6_4)
                 "REDUCTION": ["2_1", "3_0", "4_1", "5_0", "6_4"],  # 4-D, 1-8-D, 64-bit bands
                 "NORMALIZATION": ["5_0", "5_1", "6_3"],  # SOFTMAX1 from 5_1, MVN2 from 6_3
                 "COMPUTE": ["3_0", "4_0", "6_4"],  # 4-D only, then GEMM 2-4-D and conv 3-5-D
                 "INTEGER_COMPUTE": ["2_1", "4_0", "6_4"],  # introduced at 2_1; 4_0 wider
                 "ATTENTION": ["6_1", "6_3", "6_4"],  # MULTIHEAD_ATTENTION(1) from 6_1 / 6_3
                 "POOLING": ["3_0", "5_0", "6_4"],  # MAX_POOLING2 from 4_1; integer MAX at 5_0
                 "RECURRENT": ["1_0", "6_4"]}


def profile(request) -> str:
    return request.config.fuzz_profile


# -- the checker --------------------------------------------------------------------------------
def tensors_of(op):
    """(bind point, tensor desc, is_output) of every tensor bind point, in bind order: a tensor
    array (QuantizationTensors) is one bind point per tensor, ``Field[i]``."""
    sch = SCHEMA[DML_OPERATOR_TYPE(op.Type)]
    out = []
    for f in sch.fields:
        if f.is_tensor:
            value = getattr(op.Desc, f.name)
            if isinstance(value, (list, tuple)):
                out += [(f"{f.name}[{i}]", t, f.kind == "output") for i, t in enumerate(value)]
            else:
                out.append((f.name, value, f.kind == "output"))
    return out


def validated_tensor(values, point):
    """The validated tensor of a bind point (``Field[i]``: one tensor of an array)."""
    name, _, index = point.partition("[")
    t = getattr(values, name)
    return t[int(index[:-1])] if index else t


def logical(t, region):
    """A validated tensor's elements in a bound region (4-bit tensors unpacked to values)."""
    if t.data_type in nibbles.FOUR_BIT:
        return nibbles.read(t.data_type, t.sizes, t.strides, region)
    return t.view(region)


def unaddressed(t, region):
    """A tensor's unaddressed bytes, or for a 4-bit tensor its unaddressed nibbles (low nibble
    of each byte, then high), with the values GAP leaves there."""
    if t.data_type not in nibbles.FOUR_BIT:
        mask = ~addressed_mask(region.size, t.element_size, t.sizes, t.strides)
        return region[mask], np.full(int(mask.sum()), GAP, np.uint8)
    used = np.zeros(region.size * 2, bool)
    offsets = np.zeros(t.sizes, np.int64)
    for d, (n, stride) in enumerate(zip(t.sizes, t.strides)):
        dims = [1] * len(t.sizes)
        dims[d] = n
        offsets = offsets + np.arange(n).reshape(dims) * stride
    used[offsets.ravel()] = True
    both = np.stack([region & 15, region >> 4], 1).ravel()
    gap = np.tile(np.array([GAP & 15, GAP >> 4], np.uint8), region.size)
    return both[~used], gap[~used]


def fill_random(rng, raw, data_type):
    """Values for a tensor's bytes: random bits for integer types, finite-ish floats for float
    types (scales stay positive and moderate, so results are comparable)."""
    if data_type == DML_TENSOR_DATA_TYPE_FLOAT32:
        raw[: raw.size // 4 * 4].view(np.float32)[:] = rng.standard_normal(raw.size // 4) * 2
    elif data_type == DML_TENSOR_DATA_TYPE_FLOAT16:
        raw[: raw.size // 2 * 2].view(np.float16)[:] = rng.standard_normal(raw.size // 2) * 2
    else:
        raw[:] = rng.integers(0, 256, raw.size, dtype=np.uint8)


def check(device, op, rng, exact):
    """Run ``op`` on guarded buffers and assert the contract (see the module docstring).
    ``exact``: compare the outputs bit for bit (True) or within 2e-3 (False) with the reference;
    or a function of the validated values giving True, False, or None (no value comparison: the
    family's own tests bound its float math)."""
    try:
        spec, validated = validate_operator(op, device.feature_level)
    except DMLError:
        spec = None
    entries = tensors_of(op)
    buffers, regions = {}, {}
    for name, t, is_output in entries:
        if t is None:
            continue
        d = t.Desc if isinstance(t, DML_TENSOR_DESC) else t
        total = getattr(d, "TotalTensorSizeInBytes", None)
        if not isinstance(total, int) or not 0 <= total <= 1 << 22:
            total = 64  # a malformed desc: the device rejects it; the buffer is a stand-in
        dtype_of = getattr(d, "DataType", None)
        buf = Buffer(PAD + total + PAD)
        raw = buf.numpy()
        raw[:] = GUARD
        region = raw[PAD:PAD + total]
        if is_output:
            region[:] = GAP
        elif "Scale" in name and dtype_of == DML_TENSOR_DATA_TYPE_FLOAT32:
            region[: total // 4 * 4].view(np.float32)[:] = rng.uniform(0.001, 0.05, total // 4)
        else:
            fill_random(rng, region, dtype_of)
        buffers[name], regions[name] = buf, region
    before = {n: b.numpy().copy() for n, b in buffers.items()}

    try:
        compiled = device.CompileOperator(device.CreateOperator(op))
        table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=compiled,
            SizeInDescriptors=compiled.GetBindingProperties().RequiredDescriptorCount))

        def binding(name):
            if name not in buffers:
                return None
            return DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(
                Buffer=buffers[name], Offset=PAD, SizeInBytes=regions[name].size))

        table.BindInputs([binding(n) for n, _, o in entries if not o])
        table.BindOutputs([binding(n) for n, _, o in entries if o])
        initialize_and_dispatch(device, compiled, table)
    except DMLError:
        for n, b in buffers.items():
            np.testing.assert_array_equal(b.numpy(), before[n], err_msg=f"{n} changed on failure")
        return "rejected"
    assert spec is not None, "the device accepted what validate_operator rejects"

    for n, b in buffers.items():  # guards intact; inputs untouched
        raw = b.numpy()
        assert (raw[:PAD] == GUARD).all() and (raw[-PAD:] == GUARD).all(), f"{n}: guard written"
        if not {e[0]: e[2] for e in entries}[n]:
            np.testing.assert_array_equal(raw, before[n], err_msg=f"input {n} changed")
    values = validated.values
    if callable(exact):
        exact = exact(values)
    if exact is None:
        return "ran"
    inputs = {n: logical(t, regions[n]) for n, t in
              ((n, validated_tensor(values, n)) for n, _, o in entries if not o) if t is not None}
    want = spec.module.reference(values, {n: np.ascontiguousarray(x) for n, x in inputs.items()})
    for n, _, is_output in entries:
        if not is_output:
            continue
        t = validated_tensor(values, n)
        if t is None:  # an optional output the desc leaves null
            continue
        got = logical(t, regions[n])
        left, gap = unaddressed(t, regions[n])
        assert (left == gap).all(), f"{n}: bytes between elements written"
        w = np.asarray(want[n])
        if t.data_type in nibbles.FOUR_BIT:
            np.testing.assert_array_equal(got, w)
        elif exact:
            np.testing.assert_array_equal(got.view(f"u{t.element_size}"),
                                          np.ascontiguousarray(w).view(f"u{t.element_size}"))
        else:
            np.testing.assert_allclose(got.astype(np.float64), w.astype(np.float64),
                                       rtol=2e-3, atol=2e-3, equal_nan=True)
    return "ran"


# -- generators of valid descs --------------------------------------------------------------------
def layout(rng, sizes, zero_ok):
    mode = rng.integers(0, 3 if zero_ok else 2)
    if mode == 0:
        return None
    acc, strides = 1, []
    for s in reversed(sizes):
        strides.append(0 if mode == 2 and rng.random() < 0.3 else acc)
        acc *= s + int(rng.integers(0, 2))
    return list(reversed(strides))


def shape(rng, rank, cap=5):
    return [int(rng.integers(1, cap + 1)) for _ in range(rank)]


def gen_slice1(rng, rank):
    dt = EIGHT[int(rng.integers(0, 8))]
    sizes = shape(rng, rank)
    offs, ws, wst, out = [], [], [], []
    for n in sizes:
        o = int(rng.integers(0, n))
        w = int(rng.integers(1, n - o + 1))
        s = int(rng.integers(1, 3)) * int(rng.choice([-1, 1]))
        offs.append(o), ws.append(w), wst.append(s), out.append(int(rng.integers(1, 1 + (w - 1) // abs(s) + 1)))
    return DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=desc(dt, sizes, layout(rng, sizes, True)),
        OutputTensor=desc(dt, out, layout(rng, out, False)), InputWindowOffsets=offs,
        InputWindowSizes=ws, InputWindowStrides=wst)), True


def gen_top_k1(rng, rank):
    dt = EIGHT[int(rng.integers(0, 8))]
    sizes = shape(rng, rank, 6)
    axis = int(rng.integers(0, rank))
    k = int(rng.integers(1, sizes[axis] + 1))
    o = [k if d == axis else s for d, s in enumerate(sizes)]
    return DML_OPERATOR_DESC(Desc=DML_TOP_K1_OPERATOR_DESC(
        InputTensor=desc(dt, sizes, layout(rng, sizes, True)),
        OutputValueTensor=desc(dt, o, layout(rng, o, False)),
        OutputIndexTensor=desc(DML_TENSOR_DATA_TYPE_UINT32, o, layout(rng, o, False)),
        Axis=axis, K=k, AxisDirection=int(rng.integers(0, 2)))), True


def gen_mvn1(rng, rank):
    dt = (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16)[int(rng.integers(0, 2))]
    sizes = shape(rng, rank)
    axes = sorted({int(a) for a in rng.integers(0, rank, int(rng.integers(1, rank + 1)))})
    scale = bias = None
    if rng.random() < 0.6:
        s_sizes = [n if rng.random() < 0.5 else 1 for n in sizes]
        scale, bias = desc(dt, s_sizes, layout(rng, s_sizes, True)), desc(dt, s_sizes)
    fused = None
    if rng.random() < 0.5:
        act = [a for a in ACTIVATIONS if a.fusable_from and a.fusable_from <= 0x3000][
            int(rng.integers(0, 15))]
        fused = OPERATOR_DESC_CLASSES[act.operator](**{p: float(rng.uniform(0.5, 1.5))
                                                       for p in act.params})
    return DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC(
        InputTensor=desc(dt, sizes, layout(rng, sizes, False)), ScaleTensor=scale,
        BiasTensor=bias, OutputTensor=desc(dt, sizes, layout(rng, sizes, False)), Axes=axes,
        NormalizeVariance=bool(rng.random() < 0.8), Epsilon=1e-3, FusedActivation=fused)), False


def gen_qlmm(rng, rank):
    rank = max(rank, 2)
    ts = [(DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT8)[int(rng.integers(0, 2))]
          for _ in range(3)]
    batch = shape(rng, rank - 2, 2)
    m, k, n = (int(rng.integers(1, 9)) for _ in range(3))
    one = [1] * rank
    per_row = [*one[:-2], m, 1]
    per_col = [*one[:-1], n]

    def pick(a, b):
        return a if rng.random() < 0.5 else b

    a_s, b_s, o_s = pick(one, per_row), pick(one, per_col), pick(one, per_row)
    return DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(
        ATensor=desc(ts[0], [*batch, m, k], layout(rng, [*batch, m, k], True)),
        AScaleTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, a_s),
        AZeroPointTensor=desc(ts[0], a_s) if rng.random() < 0.5 else None,
        BTensor=desc(ts[1], [*batch, k, n], layout(rng, [*batch, k, n], True)),
        BScaleTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, b_s),
        BZeroPointTensor=desc(ts[1], b_s) if rng.random() < 0.5 else None,
        OutputScaleTensor=desc(DML_TENSOR_DATA_TYPE_FLOAT32, o_s),
        OutputZeroPointTensor=desc(ts[2], o_s) if rng.random() < 0.5 else None,
        OutputTensor=desc(ts[2], [*batch, m, n], layout(rng, [*batch, m, n], False)))), True


def gen_activation(rng, rank):
    act = [a for a in ACTIVATIONS if a.introduced <= 0x3000][int(rng.integers(0, 16))]
    dt = (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16)[int(rng.integers(0, 2))]
    sizes = shape(rng, rank)
    params = {p: float(rng.uniform(1.0, 2.0)) for p in act.params}
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[act.operator](
        InputTensor=desc(dt, sizes, layout(rng, sizes, True)),
        OutputTensor=desc(dt, sizes, layout(rng, sizes, False)), **params)), False


def gen_quantize(rng, rank):
    """QUANTIZE or DEQUANTIZE (6_3): blockwise quantization tensors, 8-bit or 4-bit."""
    sizes = shape(rng, min(rank, 4), 6)
    blocks = [int(rng.choice([d for d in range(1, n + 1) if n % d == 0])) for n in sizes]
    f = (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16)[int(rng.integers(0, 2))]
    q = (DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_INT4,
         DML_TENSOR_DATA_TYPE_UINT4)[int(rng.integers(0, 4))]
    quantize = rng.random() < 0.5
    tensors = [desc(f, blocks, layout(rng, blocks, True))]
    if rng.random() < 0.6:
        tensors.append(desc(q, blocks, layout(rng, blocks, True)))
    qtype = (DML_QUANTIZATION_TYPE_SCALE, DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT)[len(tensors) - 1]
    data_in, data_out = (f, q) if quantize else (q, f)
    cls = DML_QUANTIZE_OPERATOR_DESC if quantize else DML_DEQUANTIZE_OPERATOR_DESC
    return DML_OPERATOR_DESC(Desc=cls(
        InputTensor=desc(data_in, sizes, layout(rng, sizes, True)), QuantizationType=qtype,
        QuantizationTensorCount=len(tensors), QuantizationTensors=tensors,
        OutputTensor=desc(data_out, sizes, layout(rng, sizes, False)))), True


ELEMENT_WISE = [r for r in ROWS if r.params is None and r.output in ("same", "flag")
                and not (r.scalars or r.loads) and r.operator in OPERATOR_DESC_CLASSES]


def gen_element_wise(rng, rank):
    """A parameterless element-wise row (ADD, SIN, IF, BIT_AND, a comparison …) on FLOAT32 or
    INT32 tensors (a comparison's output UINT8), any layouts, broadcast inputs included."""
    row = ELEMENT_WISE[int(rng.integers(0, len(ELEMENT_WISE)))]
    floats = row.float_body is not None and (row.int_body is None or rng.random() < 0.5)
    dt = DML_TENSOR_DATA_TYPE_FLOAT32 if floats else DML_TENSOR_DATA_TYPE_INT32
    if row.operator == DML_OPERATOR_TYPE.DML_OPERATOR_ELEMENT_WISE_IF:
        types = [DML_TENSOR_DATA_TYPE_UINT8, dt, dt]
    else:
        types = [dt] * row.arity
    out = DML_TENSOR_DATA_TYPE_UINT8 if row.output == "flag" else dt
    sizes = shape(rng, rank)
    tensors = {name: desc(t, sizes, layout(rng, sizes, True))
               for name, t in zip(row.inputs, types)}
    tensors[row.output_name] = desc(out, sizes, layout(rng, sizes, False))
    op = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[row.operator](**tensors))
    return op, row.ulp == 0


MOVEMENT = [row.operator for row in MOVEMENT_ROWS]
INDEX_TENSORS = ("IndicesTensor", "SequenceLengthsTensor")


def gen_movement(rng, rank):
    """A data-movement row (JOIN … GATHER_ND, SCATTER_ND) with a random desc of the last band's
    ranks (test_movement's generator), any layouts; index tensors INT32/UINT32 filled with
    random bits, so most indices lie outside (read as 0 / dropped) or are negative."""
    op = MOVEMENT[int(rng.integers(0, len(MOVEMENT)))]
    dt = EIGHT[int(rng.integers(0, 8))]
    ins, outs, attrs = make_case(rng, op, dt)
    tensors = {}
    for names, is_input in ((ins, True), (outs, False)):
        for name, sizes in names.items():
            t = dt
            if name in INDEX_TENSORS:
                t = DML_TENSOR_DATA_TYPE_UINT32 if rng.random() < 0.5 or name != "IndicesTensor" \
                    else DML_TENSOR_DATA_TYPE_INT32
            many = isinstance(sizes[0], list)
            descs = [desc(t, s, layout(rng, s, is_input)) for s in (sizes if many else [sizes])]
            tensors[name] = descs if many else descs[0]
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs)), True


RESAMPLING = [row.operator for row in RESAMPLE_ROWS
              if row.operator.name not in ("DML_OPERATOR_RESAMPLE_GRAD",
                                           "DML_OPERATOR_RESAMPLE_GRAD1")]


def gen_resampling(rng, rank):
    """UPSAMPLE_2D or RESAMPLE/1/2/3 (test_resample's generator), FLOAT32/FLOAT16/INT8/UINT8, any
    layouts, in NEAREST_NEIGHBOR mode: a bit copy, compared exactly (a mutation to LINEAR is
    checked for the contract only: tests/test_resample.py bounds the interpolation)."""
    op = RESAMPLING[int(rng.integers(0, len(RESAMPLING)))]
    dt = [DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_INT8,
          DML_TENSOR_DATA_TYPE_UINT8][int(rng.integers(0, 4))]
    n_in, n_out, fields = random_fields(rng, op, dt)
    fields["InterpolationMode"] = DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR
    struct = OPERATOR_DESC_CLASSES[op](InputTensor=desc(dt, n_in, layout(rng, n_in, True)),
                                       OutputTensor=desc(dt, n_out, layout(rng, n_out, False)),
                                       **fields)
    nearest = DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR
    return DML_OPERATOR_DESC(Desc=struct), lambda v: True if v.InterpolationMode == nearest \
        else None


SPECIAL = [DML_OPERATOR_TYPE.DML_OPERATOR_DIAGONAL_MATRIX1,
           DML_OPERATOR_TYPE.DML_OPERATOR_VALUE_SCALE_2D,
           DML_OPERATOR_TYPE.DML_OPERATOR_NONZERO_COORDINATES,
           DML_OPERATOR_TYPE.DML_OPERATOR_RANDOM_GENERATOR]
FOLDS = [DML_OPERATOR_TYPE.DML_OPERATOR_FOLD, DML_OPERATOR_TYPE.DML_OPERATOR_UNFOLD]


def gen_generators_windows(rng, rank):
    """DIAGONAL_MATRIX1, VALUE_SCALE_2D, NONZERO_COORDINATES, RANDOM_GENERATOR (test_special's
    generator) or FOLD/UNFOLD (test_window's), any layouts. Exact but for VALUE_SCALE_2D (float
    math: NaN payloads unspecified, compared within 2e-3) and NONZERO_COORDINATES (the rows
    past the count are left unwritten: contract only)."""
    ops = SPECIAL + FOLDS
    op = ops[int(rng.integers(0, len(ops)))]
    if op in FOLDS:
        dt = EIGHT[int(rng.integers(0, 8))]
        image, columns, attrs = window_case(rng, int(rng.integers(1, 4)))
        x, y = (columns, image) if op == DML_OPERATOR_TYPE.DML_OPERATOR_FOLD else (image, columns)
        struct = OPERATOR_DESC_CLASSES[op](InputTensor=desc(dt, x, layout(rng, x, True)),
                                           OutputTensor=desc(dt, y, layout(rng, y, False)),
                                           **attrs)
        return DML_OPERATOR_DESC(Desc=struct), True
    band_types = {DML_OPERATOR_TYPE.DML_OPERATOR_VALUE_SCALE_2D: [DML_TENSOR_DATA_TYPE_FLOAT32,
                                                                DML_TENSOR_DATA_TYPE_FLOAT16],
                  DML_OPERATOR_TYPE.DML_OPERATOR_RANDOM_GENERATOR: [DML_TENSOR_DATA_TYPE_UINT32]}
    types = band_types.get(op, [DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16,
                                DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_UINT8])
    dt = types[int(rng.integers(0, len(types)))]
    ins, outs, attrs = special_case(rng, op, dt)
    tensors = {name: desc(t, sizes, layout(rng, sizes, is_input))
               for names, is_input in ((ins, True), (outs, False))
               for name, (t, sizes) in names.items()}
    exact = {DML_OPERATOR_TYPE.DML_OPERATOR_VALUE_SCALE_2D: False,
             DML_OPERATOR_TYPE.DML_OPERATOR_NONZERO_COORDINATES: None}.get(op, True)
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs)), \
        lambda v: exact


REDUCTIONS = [row.operator for row in REDUCTION_ROWS]
REDUCTION_TYPES = [DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16,
                   DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_UINT32,
                   DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_DATA_TYPE_UINT8]


def gen_reduction(rng, rank):
    """REDUCE (a function the type allows), ARGMIN, ARGMAX, CUMULATIVE_SUMMATION or
    CUMULATIVE_PRODUCT (test_reduction's generator), any layouts. Exact where the result is:
    integers, MIN/MAX and indices; float arithmetic within 2e-3 (tests/test_reduction.py holds
    the tight bound)."""
    op = REDUCTIONS[int(rng.integers(0, len(REDUCTIONS)))]
    dt = REDUCTION_TYPES[int(rng.integers(0, len(REDUCTION_TYPES)))]
    if op in (DML_OPERATOR_TYPE.DML_OPERATOR_CUMULATIVE_SUMMATION,
              DML_OPERATOR_TYPE.DML_OPERATOR_CUMULATIVE_PRODUCT) and dt == \
            DML_TENSOR_DATA_TYPE_UINT8:
        dt = DML_TENSOR_DATA_TYPE_UINT32
    if op == DML_OPERATOR_TYPE.DML_OPERATOR_REDUCE and dt == DML_TENSOR_DATA_TYPE_UINT8:
        dt = DML_TENSOR_DATA_TYPE_INT32  # (no arithmetic function takes 8-bit types)
    sizes, out_dt, out_sizes, attrs, _ = reduction_case(rng, op, dt)
    struct = OPERATOR_DESC_CLASSES[op](
        InputTensor=desc(dt, sizes, layout(rng, sizes, True)),
        OutputTensor=desc(out_dt, out_sizes, layout(rng, out_sizes, False)), **attrs)

    def exact(v):
        fn = getattr(v, "Function", None)
        return v.InputTensor.data_type not in (DML_TENSOR_DATA_TYPE_FLOAT32,
                                               DML_TENSOR_DATA_TYPE_FLOAT16) or \
            fn in REDUCE_EXTREMES or op in (DML_OPERATOR_TYPE.DML_OPERATOR_ARGMIN,
                                            DML_OPERATOR_TYPE.DML_OPERATOR_ARGMAX)
    return DML_OPERATOR_DESC(Desc=struct), exact


SOFTMAX1S = [op for op in softmax.OPERATORS if op in softmax.AXES_LIST]  # the version-1 descs


def gen_normalization(rng, rank):
    """MEAN_VARIANCE_NORMALIZATION2 (MVN1's generator with UseMean and UseVariance drawn, Scale
    and Bias each optional) or SOFTMAX1 / LOG_SOFTMAX1 / HARDMAX1 over a random axis set, any
    layouts. Float math within 2e-3 (tests/test_mvn2.py and test_softmax1.py hold the tight
    bounds); HARDMAX exact."""
    if rng.random() < 0.5:
        mvn1, _ = gen_mvn1(rng, rank)
        d = mvn1.Desc
        return DML_OPERATOR_DESC(Desc=DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC(
            InputTensor=d.InputTensor,
            ScaleTensor=d.ScaleTensor if rng.random() < 0.7 else None,
            BiasTensor=d.BiasTensor if rng.random() < 0.7 else None,
            OutputTensor=d.OutputTensor, Axes=d.Axes, UseMean=bool(rng.random() < 0.7),
            UseVariance=bool(rng.random() < 0.7), Epsilon=1e-3,
            FusedActivation=d.FusedActivation)), False
    dt = (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16)[int(rng.integers(0, 2))]
    sizes = shape(rng, rank)
    axes = [int(a) for a in rng.integers(0, rank, int(rng.integers(1, rank + 1)))]
    op = SOFTMAX1S[int(rng.integers(0, len(SOFTMAX1S)))]
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](
        InputTensor=desc(dt, sizes, layout(rng, sizes, True)),
        OutputTensor=desc(dt, sizes, layout(rng, sizes, False)), Axes=axes)), \
        softmax.MODES[op] == 2  # HARDMAX: exact


def float_type(rng):
    return (DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16)[int(rng.integers(0, 2))]


def fused_relu(rng):
    return DML_ACTIVATION_RELU_OPERATOR_DESC() if rng.random() < 0.3 else None


def gen_compute(rng, rank):
    """GEMM (test_gemm's sizes: 2-4-D, transposes, C broadcast through zero strides, Alpha and
    Beta) or CONVOLUTION (test_convolution's random attributes: 1-3 spatial dimensions, both
    modes and directions, groups, dilations, padding), a fused RELU sometimes, any layouts.
    Float math within 2e-3 (tests/test_gemm.py and test_convolution.py hold the tight bound)."""
    dt = float_type(rng)
    if rng.random() < 0.5:
        sizes = gemm_sizes(rng, int(np.clip(rank, 2, 4)))
        *batch, m, k, n = sizes
        ta, tb = (bool(rng.random() < 0.5) for _ in range(2))
        a = [*batch, k, m] if ta else [*batch, m, k]
        b = [*batch, n, k] if tb else [*batch, k, n]
        o = [*batch, m, n]
        c = desc(dt, o, layout(rng, o, True)) if rng.random() < 0.5 else None
        return DML_OPERATOR_DESC(Desc=DML_GEMM_OPERATOR_DESC(
            ATensor=desc(dt, a, layout(rng, a, True)), BTensor=desc(dt, b, layout(rng, b, True)),
            CTensor=c, OutputTensor=desc(dt, o, layout(rng, o, False)),
            TransA=int(ta), TransB=int(tb), Alpha=float(rng.choice([1.0, -0.5])),
            Beta=float(rng.choice([1.0, 0.0, 2.0])), FusedActivation=fused_relu(rng))), False
    spatial = int(rng.integers(1, 4))
    direction = (DML_CONVOLUTION_DIRECTION_FORWARD, DML_CONVOLUTION_DIRECTION_BACKWARD)[
        int(rng.integers(0, 2))]
    x, f, attrs = conv_attributes(rng, spatial, direction)
    o = conv_output_sizes(x, f, attrs)
    bias = [1, o[1]] + [1] * spatial
    return DML_OPERATOR_DESC(Desc=DML_CONVOLUTION_OPERATOR_DESC(
        InputTensor=desc(dt, x, layout(rng, x, True)),
        FilterTensor=desc(dt, f, layout(rng, f, True)),
        BiasTensor=desc(dt, bias, layout(rng, bias, True)) if rng.random() < 0.5 else None,
        OutputTensor=desc(dt, o, layout(rng, o, False)), FusedActivation=fused_relu(rng),
        **attrs)), False


EIGHT_BIT = (DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT8)


def gen_integer_compute(rng, rank):
    """MATRIX_MULTIPLY_INTEGER, MATRIX_MULTIPLY_INTEGER_TO_FLOAT (per-tensor scales), or
    CONVOLUTION_INTEGER / QUANTIZED_LINEAR_CONVOLUTION (test_integer_compute's random
    attributes), 8-bit operands of random bits, optional zero points, any layouts. Integer
    results exact; the float output within 2e-3 (its own tests hold it bit-exact)."""
    a_t, b_t, o_t = (EIGHT_BIT[int(rng.integers(0, 2))] for _ in range(3))
    f32, i32 = DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32
    kind = int(rng.integers(0, 4))

    def optional(dt, sizes):
        return desc(dt, sizes) if rng.random() < 0.6 else None

    if kind < 2:
        rank = int(np.clip(rank, 2, 4))
        batch = shape(rng, rank - 2, 2)
        m, k, n = (int(rng.integers(1, 9)) for _ in range(3))
        one = [1] * rank
        a, b, o = [*batch, m, k], [*batch, k, n], [*batch, m, n]
        tensors = {"ATensor": desc(a_t, a, layout(rng, a, True)),
                   "AZeroPointTensor": optional(a_t, one),
                   "BTensor": desc(b_t, b, layout(rng, b, True)),
                   "BZeroPointTensor": optional(b_t, one)}
        if kind == 0:
            return DML_OPERATOR_DESC(Desc=DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC(
                **tensors, OutputTensor=desc(i32, o, layout(rng, o, False)))), True
        return DML_OPERATOR_DESC(Desc=DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC(
            **tensors, AScaleTensor=desc(f32, one), BScaleTensor=desc(f32, one),
            BiasTensor=optional(f32, [*one[:-1], n]),
            OutputTensor=desc(f32, o, layout(rng, o, False)))), False
    x, w, o, attrs = int_conv_case(rng, int(rng.integers(1, 3)))
    one = [1] * len(x)
    tensors = {"InputTensor": desc(a_t, x, layout(rng, x, True)),
               "InputZeroPointTensor": optional(a_t, one),
               "FilterTensor": desc(b_t, w, layout(rng, w, True)),
               "FilterZeroPointTensor": optional(b_t, one)}
    if kind == 2:
        return DML_OPERATOR_DESC(Desc=DML_CONVOLUTION_INTEGER_OPERATOR_DESC(
            **tensors, OutputTensor=desc(i32, o, layout(rng, o, False)), **attrs)), True
    return DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC(
        **tensors, InputScaleTensor=desc(f32, one), FilterScaleTensor=desc(f32, one),
        BiasTensor=optional(i32, [1, o[1], *[1] * (len(o) - 2)]),
        OutputScaleTensor=desc(f32, one), OutputZeroPointTensor=optional(o_t, one),
        OutputTensor=desc(o_t, o, layout(rng, o, False)), **attrs)), True


ATTENTION_LAYOUTS = ("separate", "qkv", "qk+v", "q+kv")


def gen_attention(rng, rank):
    """MULTIHEAD_ATTENTION or MULTIHEAD_ATTENTION1 (test_attention's random descs: every input
    layout, mask type, bias, relative position bias, past/present, grouped heads), input
    layouts padded or broadcast. Within 2e-3 (tests/test_attention.py holds the tight bound)."""
    version = int(rng.integers(0, 2))
    kind = ATTENTION_LAYOUTS[int(rng.integers(0, 4))]
    masks = list(DML_MULTIHEAD_ATTENTION_MASK_TYPE)
    fields, ins, outs = attention_case(
        rng, float_type(rng), version, kind, masks[int(rng.integers(0, len(masks)))],
        *(bool(rng.random() < 0.4) for _ in range(4)),
        groups=int(rng.integers(1, 3)) if kind in ("separate", "q+kv") else 1)
    tensors = {n: desc(dt, sz, layout(rng, sz, True)) for n, sz, dt, _ in ins}
    dt = ins[0][2]
    tensors.update({n: desc(dt, sz, layout(rng, sz, False)) for n, sz in outs})
    struct = (DML_MULTIHEAD_ATTENTION_OPERATOR_DESC, DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC)[
        version]
    return DML_OPERATOR_DESC(Desc=struct(**tensors, **fields)), False


POOLS = {  # operator: (extra attributes, has dilations, output indices)
    DML_OPERATOR_TYPE.DML_OPERATOR_AVERAGE_POOLING: ({"IncludePadding": True}, False, False),
    DML_OPERATOR_TYPE.DML_OPERATOR_AVERAGE_POOLING1: ({"IncludePadding": False}, True, False),
    DML_OPERATOR_TYPE.DML_OPERATOR_LP_POOLING: ({"P": 2}, False, False),
    DML_OPERATOR_TYPE.DML_OPERATOR_LP_POOLING1: ({"P": 1}, True, False),
    DML_OPERATOR_TYPE.DML_OPERATOR_MAX_POOLING: ({}, False, False),
    DML_OPERATOR_TYPE.DML_OPERATOR_MAX_POOLING1: ({}, False, True),
    DML_OPERATOR_TYPE.DML_OPERATOR_MAX_POOLING2: ({}, True, True)}


def gen_pooling(rng, rank):
    """A pooling operator (test_pooling's random windows: 2 or 3 spatial dimensions, strides,
    dilations, asymmetric padding), any input and output layouts; MAX over every type and with
    either index type. Exact: MAX values and indices, AVERAGE, LP with P = 1 or 2."""
    op = list(POOLS)[int(rng.integers(0, len(POOLS)))]
    extra, dilated, indices = POOLS[op]
    sizes, out, attrs = pool_window(rng, int(rng.integers(2, 4)), dilated)
    dt = float_type(rng)
    if op in (DML_OPERATOR_TYPE.DML_OPERATOR_MAX_POOLING1,
              DML_OPERATOR_TYPE.DML_OPERATOR_MAX_POOLING2) and rng.random() < 0.5:
        dt = EIGHT[int(rng.integers(0, 8))]
    tensors = {"InputTensor": desc(dt, sizes, layout(rng, sizes, True)),
               "OutputTensor": desc(dt, out, layout(rng, out, False))}
    if indices:
        it = (DML_TENSOR_DATA_TYPE_UINT32, DML_TENSOR_DATA_TYPE_UINT64)[int(rng.integers(0, 2))]
        tensors["OutputIndicesTensor"] = desc(it, out, layout(rng, out, False))
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs, **extra)), True


RECURRENT = {DML_OPERATOR_TYPE.DML_OPERATOR_RNN: (1, ["TANH"]),
             DML_OPERATOR_TYPE.DML_OPERATOR_GRU: (3, ["SIGMOID", "TANH"]),
             DML_OPERATOR_TYPE.DML_OPERATOR_LSTM: (4, ["SIGMOID", "TANH", "TANH"])}


def gen_recurrent(rng, rank):
    """RNN, GRU or LSTM in any direction, with or without bias, initial states, sequence
    lengths (random bits: clamped) and each output, inputs padded or broadcast. Float math
    within 2e-3 (the default sigmoid/tanh keep every state in [-1, 1]; tests/test_recurrent.py
    holds the tight bound)."""
    op = list(RECURRENT)[int(rng.integers(0, 3))]
    gates, acts = RECURRENT[op]
    dt = float_type(rng)
    seq, batch, size, hidden = (int(rng.integers(1, 5)) for _ in range(4))
    direction = int(rng.integers(0, 3))
    dirs = 2 if direction == 2 else 1

    def tensor(sizes, zero_ok=True, data_type=dt):
        return desc(data_type, sizes, layout(rng, sizes, zero_ok))

    def maybe(sizes, data_type=dt):
        return tensor(sizes, True, data_type) if rng.random() < 0.5 else None

    fields = {"InputTensor": tensor([1, seq, batch, size]),
              "WeightTensor": tensor([1, dirs, gates * hidden, size]),
              "RecurrenceTensor": tensor([1, dirs, gates * hidden, hidden]),
              "BiasTensor": maybe([1, 1, dirs, 2 * gates * hidden]),
              "HiddenInitTensor": maybe([1, dirs, batch, hidden]),
              "SequenceLengthsTensor": maybe([1, 1, 1, batch], DML_TENSOR_DATA_TYPE_UINT32),
              "OutputSequenceTensor": tensor([seq, dirs, batch, hidden], False),
              "OutputSingleTensor": tensor([1, dirs, batch, hidden], False)
              if rng.random() < 0.7 else None,
              "ActivationDescs": [DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[
                  getattr(DML_OPERATOR_TYPE, f"DML_OPERATOR_ACTIVATION_{a}")]())
                  for a in acts * dirs],
              "Direction": direction}
    if op == DML_OPERATOR_TYPE.DML_OPERATOR_LSTM:
        fields.update(CellMemInitTensor=maybe([1, dirs, batch, hidden]),
                      PeepholeTensor=maybe([1, 1, dirs, 3 * hidden]),
                      OutputCellSingleTensor=tensor([1, dirs, batch, hidden], False)
                      if rng.random() < 0.5 else None,
                      UseClipThreshold=bool(rng.random() < 0.3), ClipThreshold=2.0,
                      CoupleInputForget=bool(rng.random() < 0.3))
    elif op == DML_OPERATOR_TYPE.DML_OPERATOR_GRU:
        fields["LinearBeforeReset"] = bool(rng.random() < 0.5)
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**fields)), False


GENERATORS = {"SLICE1": gen_slice1, "TOP_K1": gen_top_k1, "MVN1": gen_mvn1, "QLMM": gen_qlmm,
              "ACTIVATION": gen_activation, "QUANTIZE": gen_quantize,
              "ELEMENT_WISE": gen_element_wise, "MOVEMENT": gen_movement,
              "RESAMPLING": gen_resampling, "GENERATORS_WINDOWS": gen_generators_windows,
              "REDUCTION": gen_reduction, "NORMALIZATION": gen_normalization,
              "COMPUTE": gen_compute, "INTEGER_COMPUTE": gen_integer_compute,
              "ATTENTION": gen_attention, "POOLING": gen_pooling,
              "RECURRENT": gen_recurrent}


# -- breaking one field -----------------------------------------------------------------------------
def bad_value(rng, value):
    """A plausible wrong value of the same kind (or of another kind, sometimes)."""
    if isinstance(value, DML_TENSOR_DESC):
        d = value.Desc
        choice = int(rng.integers(0, 6))
        sizes = list(d.Sizes)
        if choice == 0:
            sizes[int(rng.integers(0, len(sizes)))] = int(rng.choice([0, 1, 7, 2**32]))
            return desc(d.DataType, sizes, d.Strides)
        if choice == 1:
            return desc(int(rng.integers(0, 14)), sizes, d.Strides)
        if choice == 2:
            return dataclasses.replace(value, Desc=dataclasses.replace(
                d, Strides=tuple(int(v) for v in rng.integers(0, 40, len(sizes)))))
        if choice == 3:
            return desc(d.DataType, [*sizes, 1])
        if choice == 4:
            return dataclasses.replace(value, Desc=dataclasses.replace(
                d, TotalTensorSizeInBytes=int(rng.integers(0, 64))))
        return None
    if isinstance(value, tuple):
        vals = list(value)
        if vals and rng.random() < 0.8:
            vals[int(rng.integers(0, len(vals)))] = int(rng.choice([-3, -1, 0, 9, 2**31, 2**33]))
        else:
            vals.append(1)
        return tuple(vals)
    if isinstance(value, bool):
        return int(rng.choice([2, -1])) if rng.random() < 0.5 else "yes"
    if isinstance(value, (int, np.integer)):
        return int(rng.choice([-1, 0, 1, 3, 9, 2**32]))
    if isinstance(value, float):
        return float(rng.choice([np.nan, -1.0, 0.0, 1e30]))
    if value is None:
        return DML_ACTIVATION_SOFTMAX_OPERATOR_DESC()
    return None


def mutate(rng, op):
    fields = [f.name for f in dataclasses.fields(op.Desc)]
    name = fields[int(rng.integers(0, len(fields)))]
    return DML_OPERATOR_DESC(Type=op.Type, Desc=dataclasses.replace(
        op.Desc, **{name: bad_value(rng, getattr(op.Desc, name))}))


# -- the tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", list(GENERATORS))
def test_fuzz_descs(request, family):
    counts = {"ran": 0, "rejected": 0}

    @settings(settings.get_profile(profile(request)))
    @given(seed=st.integers(0, 2**32 - 1), rank=st.integers(1, 8), broken=st.booleans(),
           level=st.sampled_from(FAMILY_LEVELS.get(family, LEVELS)))
    def run(seed, rank, broken, level):
        rng = np.random.default_rng(seed)
        op, exact = GENERATORS[family](rng, rank)
        if broken:
            op = mutate(rng, op)
        counts[check(DMLCreateDevice1(feature_level=level), op, rng, exact)] += 1

    run()
    print(f"{family}: {counts}")  # shown with -s: how many cases ran and were rejected
    assert counts["ran"] > 0 and counts["rejected"] > 0, counts  # both outcomes were exercised


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_bindings(seed):
    """Random offsets, sizes, overlaps and binding counts on a SLICE1: success or DMLError, the
    device removed after a failed void call, and no byte outside the output changed."""
    rng = np.random.default_rng(seed)
    dev = DMLCreateDevice1()
    x = np.arange(16, dtype=np.float32)
    op = dev.CompileOperator(dev.CreateOperator(DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x), InputWindowOffsets=[0],
        InputWindowSizes=[16], InputWindowStrides=[-1]))))
    shared = Buffer(512)
    shared.numpy(np.float32)[:] = np.arange(128)
    before = shared.numpy().copy()

    def random_binding():
        kind = int(rng.integers(0, 6))
        if kind == 0:
            return None
        if kind == 1:
            return DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER_ARRAY,
                                    Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[]))
        return DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(
            Buffer=shared, Offset=int(rng.choice([0, 8, 16, 64, 256, 480, 512, 1024])),
            SizeInBytes=int(rng.choice([0, 32, 64, 100, 256, 2**40])) if rng.random() < 0.7 else None))

    table = dev.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=op, SizeInDescriptors=2))
    try:
        table.BindInputs([random_binding() for _ in range(int(rng.integers(0, 3)))])
        table.BindOutputs([random_binding() for _ in range(int(rng.integers(0, 3)))])
        initialize_and_dispatch(dev, op, table)
    except DMLError:
        np.testing.assert_array_equal(shared.numpy(), before)
        assert dev.GetDeviceRemovedReason() != 0
        return
    # Succeeded: only the output's 64 bytes changed, and to the reversed input.
    in_off, out_off = table.inputs[0].offset, table.outputs[0].offset
    after = shared.numpy()
    changed = np.nonzero(after != before)[0]
    assert ((changed >= out_off) & (changed < out_off + 64)).all()
    np.testing.assert_array_equal(after[out_off:out_off + 64].view(np.float32),
                                  before[in_off:in_off + 64].view(np.float32)[::-1])
