"""The resampling group's rules (emulator/support/resampling.py): for each rule a desc that
CreateOperator accepts, and descs that break exactly that rule, whose error names the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
U32 = DML_TENSOR_DATA_TYPE_UINT32
NEAREST = DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR
LINEAR = DML_INTERPOLATION_MODE_LINEAR
AVERAGE = DML_REDUCE_FUNCTION_AVERAGE
MAX = DML_REDUCE_FUNCTION_MAX


def td(shape: tuple[int, ...], data_type: int = F32) -> Any:
    return tensor_desc(shape, data_type)


def create(struct: Any) -> Any:
    return DMLCreateDevice1(feature_level="6_4").CreateOperator(
        DML_OPERATOR_DESC(Desc=struct))


# --- builders: valid by default, any field overridable -------------------------------------

def roi_pooling(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 3, 8, 8)), "ROITensor": td((1, 1, 2, 5)),
         "OutputTensor": td((2, 3, 2, 2)), "SpatialScale": 1.0,
         "PooledSize": DML_SIZE_2D(Width=2, Height=2)}
    f.update(kw)
    return DML_ROI_POOLING_OPERATOR_DESC(**f)


def value_scale_2d(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 3, 4, 4)), "OutputTensor": td((1, 3, 4, 4)), "Scale": 2.0,
         "ChannelCount": 3, "Bias": (0.0, 1.0, 2.0)}
    f.update(kw)
    return DML_VALUE_SCALE_2D_OPERATOR_DESC(**f)


def upsample_2d(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 3)), "OutputTensor": td((1, 1, 4, 9)),
         "ScaleSize": DML_SIZE_2D(Width=3, Height=2), "InterpolationMode": NEAREST}
    f.update(kw)
    return DML_UPSAMPLE_2D_OPERATOR_DESC(**f)


def resample(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 2)), "OutputTensor": td((1, 1, 4, 4)),
         "InterpolationMode": LINEAR, "ScaleCount": 4, "Scales": (1.0, 1.0, 2.0, 2.0)}
    f.update(kw)
    return DML_RESAMPLE_OPERATOR_DESC(**f)


def _resample_fields(inp: str, out: str, **kw: Any) -> dict[str, Any]:
    f = {inp: td((1, 1, 2, 2)), out: td((1, 1, 4, 4)), "InterpolationMode": LINEAR,
         "DimensionCount": 4, "Scales": (1.0, 1.0, 2.0, 2.0),
         "InputPixelOffsets": (0.5, 0.5, 0.5, 0.5),
         "OutputPixelOffsets": (-0.5, -0.5, -0.5, -0.5)}
    f.update(kw)
    return f


def resample1(**kw: Any) -> Any:
    return DML_RESAMPLE1_OPERATOR_DESC(
        **_resample_fields("InputTensor", "OutputTensor", **kw))


def resample2(**kw: Any) -> Any:
    kw.setdefault("RoundingDirection", DML_AXIS_DIRECTION_DECREASING)
    return DML_RESAMPLE2_OPERATOR_DESC(
        **_resample_fields("InputTensor", "OutputTensor", **kw))


def resample3(**kw: Any) -> Any:
    kw.setdefault("RoundingDirection", DML_AXIS_DIRECTION_DECREASING)
    kw.setdefault("Antialiased", True)
    return DML_RESAMPLE3_OPERATOR_DESC(
        **_resample_fields("InputTensor", "OutputTensor", **kw))


def resample_grad(**kw: Any) -> Any:
    # the gradient of a 2x upscale: the incoming gradient has the forward output's sizes
    kw.setdefault("InputGradientTensor", td((1, 1, 4, 4)))
    kw.setdefault("OutputGradientTensor", td((1, 1, 2, 2)))
    return DML_RESAMPLE_GRAD_OPERATOR_DESC(
        **_resample_fields("InputGradientTensor", "OutputGradientTensor", **kw))


def resample_grad1(**kw: Any) -> Any:
    kw.setdefault("InputGradientTensor", td((1, 1, 4, 4)))
    kw.setdefault("OutputGradientTensor", td((1, 1, 2, 2)))
    kw.setdefault("RoundingDirection", DML_AXIS_DIRECTION_INCREASING)
    return DML_RESAMPLE_GRAD1_OPERATOR_DESC(
        **_resample_fields("InputGradientTensor", "OutputGradientTensor", **kw))


def random_generator(**kw: Any) -> Any:
    f = {"InputStateTensor": td((1, 1, 1, 6), U32), "OutputTensor": td((2, 8), U32),
         "OutputStateTensor": td((1, 1, 1, 6), U32),
         "Type": DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10}
    f.update(kw)
    return DML_RANDOM_GENERATOR_OPERATOR_DESC(**f)


def nonzero_coordinates(**kw: Any) -> Any:
    f = {"InputTensor": td((1, 1, 2, 4)), "OutputCountTensor": td((1, 1, 1, 1), U32),
         "OutputCoordinatesTensor": td((1, 1, 8, 3), U32)}
    f.update(kw)
    return DML_NONZERO_COORDINATES_OPERATOR_DESC(**f)


def _roi_align_fields(**kw: Any) -> dict[str, Any]:
    f = {"InputTensor": td((2, 3, 8, 8)), "ROITensor": td((2, 4)),
         "BatchIndicesTensor": td((2,), U32), "OutputTensor": td((2, 3, 2, 2)),
         "ReductionFunction": AVERAGE, "InterpolationMode": LINEAR, "SpatialScaleX": 1.0,
         "SpatialScaleY": 1.0, "OutOfBoundsInputValue": 0.0, "MinimumSamplesPerOutput": 1,
         "MaximumSamplesPerOutput": 2}
    f.update(kw)
    return f


def roi_align(**kw: Any) -> Any:
    return DML_ROI_ALIGN_OPERATOR_DESC(**_roi_align_fields(**kw))


def roi_align1(**kw: Any) -> Any:
    kw.setdefault("InputPixelOffset", 0.5)
    kw.setdefault("OutputPixelOffset", -0.5)
    kw.setdefault("AlignRegionsToCorners", False)
    return DML_ROI_ALIGN1_OPERATOR_DESC(**_roi_align_fields(**kw))


def roi_align_grad(**kw: Any) -> Any:
    f = {"InputTensor": td((2, 3, 8, 8)), "InputGradientTensor": td((2, 3, 2, 2)),
         "ROITensor": td((2, 4)), "BatchIndicesTensor": td((2,), U32),
         "OutputGradientTensor": td((2, 3, 8, 8)), "OutputROIGradientTensor": td((2, 4)),
         "ReductionFunction": AVERAGE, "InterpolationMode": LINEAR, "SpatialScaleX": 1.0,
         "SpatialScaleY": 1.0, "InputPixelOffset": 0.5, "OutputPixelOffset": -0.5,
         "MinimumSamplesPerOutput": 1, "MaximumSamplesPerOutput": 1,
         "AlignRegionsToCorners": False}
    f.update(kw)
    return DML_ROI_ALIGN_GRAD_OPERATOR_DESC(**f)


def _window(n: int = 2, **kw: Any) -> dict[str, Any]:
    f = {"DimensionCount": n, "WindowSizes": (3,) * n, "Strides": (1,) * n, "Dilations": (1,) * n,
         "StartPadding": (0,) * n, "EndPadding": (0,) * n}
    f.update(kw)
    return f


def fold(**kw: Any) -> Any:
    # the page's example 1: {1, 9, 4} blocks of 3x3 windows fold into a 4x4 image
    kw.setdefault("InputTensor", td((1, 9, 4)))
    kw.setdefault("OutputTensor", td((1, 1, 4, 4)))
    return DML_FOLD_OPERATOR_DESC(**_window(**kw))


def unfold(**kw: Any) -> Any:
    # the page's example 1: a 5x5 image unfolds into {1, 9, 9}
    kw.setdefault("InputTensor", td((1, 1, 5, 5)))
    kw.setdefault("OutputTensor", td((1, 9, 9)))
    return DML_UNFOLD_OPERATOR_DESC(**_window(**kw))


# --- valid descs ----------------------------------------------------------------------------

VALID: list[tuple[str, Callable[[], Any]]] = [
    ("roi_pooling", roi_pooling),
    ("value_scale_2d", value_scale_2d),
    ("value_scale_2d 1 channel", lambda: value_scale_2d(
        InputTensor=td((2, 1, 3, 3)), OutputTensor=td((2, 1, 3, 3)), ChannelCount=1,
        Bias=(0.5,))),
    ("upsample_2d", upsample_2d),
    ("upsample_2d 5-D", lambda: upsample_2d(InputTensor=td((1, 2, 3, 2, 3)),
                                            OutputTensor=td((1, 2, 3, 4, 9)))),
    ("resample", resample),
    ("resample 1-D", lambda: resample(InputTensor=td((5,)), OutputTensor=td((3,)),
                                      ScaleCount=1, Scales=(0.5,))),
    ("resample1", resample1),
    ("resample2", resample2),
    ("resample3", resample3),
    ("resample_grad", resample_grad),
    ("resample_grad1", resample_grad1),
    ("random_generator", random_generator),
    ("random_generator no state out", lambda: random_generator(
        InputStateTensor=td((6,), U32), OutputStateTensor=None)),
    ("nonzero_coordinates", nonzero_coordinates),
    ("nonzero_coordinates N = effective rank", lambda: nonzero_coordinates(
        OutputCoordinatesTensor=td((1, 1, 8, 2), U32))),
    ("nonzero_coordinates N = rank", lambda: nonzero_coordinates(
        OutputCoordinatesTensor=td((8, 4), U32), OutputCountTensor=td((1,), U32))),
    ("roi_align", roi_align),
    ("roi_align 4-D rois", lambda: roi_align(ROITensor=td((1, 1, 2, 4)),
                                             BatchIndicesTensor=td((1, 1, 1, 2), U32))),
    ("roi_align1", roi_align1),
    ("roi_align_grad", roi_align_grad),
    ("roi_align_grad only image gradient, no input", lambda: roi_align_grad(
        InputTensor=None, OutputROIGradientTensor=None)),
    ("roi_align_grad only roi gradient", lambda: roi_align_grad(OutputGradientTensor=None)),
    ("fold", fold),
    ("fold padded (page example 3)", lambda: fold(
        InputTensor=td((1, 18, 8)), OutputTensor=td((1, 2, 4, 4)), StartPadding=(1, 0),
        EndPadding=(1, 0))),
    ("unfold", unfold),
    ("unfold padded (page example 2)", lambda: unfold(
        OutputTensor=td((1, 9, 15)), StartPadding=(1, 0), EndPadding=(1, 0))),
    ("unfold 1-D strided dilated", lambda: unfold(
        InputTensor=td((2, 3, 10)), OutputTensor=td((2, 6, 4)),
        **_window(1, WindowSizes=(2,), Strides=(2,), Dilations=(3,)))),
]


@pytest.mark.parametrize("build", [b for _, b in VALID], ids=[n for n, _ in VALID])
def test_valid(build: Callable[[], Any]) -> None:
    create(build())


# --- descs that break exactly one rule -----------------------------------------------------

INVALID: list[tuple[str, Callable[[], Any], str]] = [
    # roi_pooling
    ("roi_pooling roi width", lambda: roi_pooling(ROITensor=td((1, 1, 2, 4))),
     r"ROITensor\.Sizes"),
    ("roi_pooling roi leading", lambda: roi_pooling(ROITensor=td((2, 1, 1, 5))),
     r"ROITensor\.Sizes"),
    ("roi_pooling pooled size", lambda: roi_pooling(
        PooledSize=DML_SIZE_2D(Width=3, Height=2)), r"PooledSize"),
    ("roi_pooling output channels", lambda: roi_pooling(OutputTensor=td((2, 4, 2, 2))),
     r"OutputTensor\.Sizes"),
    ("roi_pooling output rois", lambda: roi_pooling(OutputTensor=td((3, 3, 2, 2))),
     r"OutputTensor\.Sizes"),
    # value_scale_2d
    ("value_scale_2d channel count 2", lambda: value_scale_2d(
        InputTensor=td((1, 2, 4, 4)), OutputTensor=td((1, 2, 4, 4)), ChannelCount=2,
        Bias=(0.0, 0.0)), r"ChannelCount"),
    ("value_scale_2d channel mismatch", lambda: value_scale_2d(
        InputTensor=td((1, 1, 4, 4)), OutputTensor=td((1, 1, 4, 4))), r"ChannelCount"),
    # upsample_2d
    ("upsample_2d output", lambda: upsample_2d(OutputTensor=td((1, 1, 4, 8))),
     r"OutputTensor\.Sizes"),
    ("upsample_2d batch", lambda: upsample_2d(OutputTensor=td((2, 1, 4, 9))),
     r"OutputTensor\.Sizes"),
    ("upsample_2d zero height scale", lambda: upsample_2d(
        ScaleSize=DML_SIZE_2D(Width=3, Height=0)), r"ScaleSize\.Height"),
    ("upsample_2d overflowing width scale", lambda: upsample_2d(
        ScaleSize=DML_SIZE_2D(Width=2**31, Height=2)), r"ScaleSize\.Width"),
    # resample
    ("resample scale count", lambda: resample(ScaleCount=3, Scales=(1.0, 2.0, 2.0)),
     r"ScaleCount"),
    ("resample zero scale", lambda: resample(Scales=(1.0, 1.0, 0.0, 2.0)), r"Scales\[2\]"),
    ("resample1 dimension count", lambda: resample1(
        DimensionCount=3, Scales=(1.0, 2.0, 2.0), InputPixelOffsets=(0.5,) * 3,
        OutputPixelOffsets=(-0.5,) * 3), r"DimensionCount"),
    ("resample1 negative scale", lambda: resample1(Scales=(1.0, 1.0, -2.0, 2.0)),
     r"Scales\[2\]"),
    ("resample1 infinite offset", lambda: resample1(
        OutputPixelOffsets=(-0.5, -0.5, float("inf"), -0.5)), r"OutputPixelOffsets\[2\]"),
    ("resample2 dimension count", lambda: resample2(
        DimensionCount=2, Scales=(2.0, 2.0), InputPixelOffsets=(0.5,) * 2,
        OutputPixelOffsets=(-0.5,) * 2), r"DimensionCount"),
    ("resample2 nan scale", lambda: resample2(Scales=(float("nan"), 1.0, 2.0, 2.0)),
     r"Scales\[0\]"),
    ("resample3 dimension count", lambda: resample3(
        DimensionCount=3, Scales=(1.0, 2.0, 2.0), InputPixelOffsets=(0.5,) * 3,
        OutputPixelOffsets=(-0.5,) * 3), r"DimensionCount"),
    ("resample3 nan input offset", lambda: resample3(
        InputPixelOffsets=(0.5, float("nan"), 0.5, 0.5)), r"InputPixelOffsets\[1\]"),
    ("resample_grad dimension count", lambda: resample_grad(
        DimensionCount=3, Scales=(1.0, 2.0, 2.0), InputPixelOffsets=(0.5,) * 3,
        OutputPixelOffsets=(-0.5,) * 3), r"DimensionCount"),
    ("resample_grad zero scale", lambda: resample_grad(Scales=(0.0, 1.0, 2.0, 2.0)),
     r"Scales\[0\]"),
    ("resample_grad1 dimension count", lambda: resample_grad1(
        DimensionCount=3, Scales=(1.0, 2.0, 2.0), InputPixelOffsets=(0.5,) * 3,
        OutputPixelOffsets=(-0.5,) * 3), r"DimensionCount"),
    ("resample_grad1 negative scale", lambda: resample_grad1(Scales=(1.0, 1.0, 2.0, -2.0)),
     r"Scales\[3\]"),
    # random_generator
    ("random_generator state of 5", lambda: random_generator(
        InputStateTensor=td((1, 1, 1, 5), U32), OutputStateTensor=td((1, 1, 1, 5), U32)),
     r"InputStateTensor\.Sizes"),
    ("random_generator state not leading 1s", lambda: random_generator(
        InputStateTensor=td((1, 1, 2, 6), U32), OutputStateTensor=None),
     r"InputStateTensor\.Sizes"),
    # nonzero_coordinates
    ("nonzero count not scalar", lambda: nonzero_coordinates(
        OutputCountTensor=td((1, 1, 1, 2), U32)), r"OutputCountTensor\.Sizes"),
    ("nonzero M", lambda: nonzero_coordinates(OutputCoordinatesTensor=td((1, 1, 7, 3), U32)),
     r"OutputCoordinatesTensor\.Sizes"),
    ("nonzero N below effective rank", lambda: nonzero_coordinates(
        OutputCoordinatesTensor=td((1, 1, 8, 1), U32)), r"OutputCoordinatesTensor\.Sizes"),
    ("nonzero N above rank", lambda: nonzero_coordinates(
        OutputCoordinatesTensor=td((1, 1, 8, 5), U32)), r"OutputCoordinatesTensor\.Sizes"),
    ("nonzero leading not 1", lambda: nonzero_coordinates(
        OutputCoordinatesTensor=td((1, 2, 4, 3), U32)), r"OutputCoordinatesTensor\.Sizes"),
]

for _name, _build in (("roi_align", roi_align), ("roi_align1", roi_align1)):
    INVALID += [
        (f"{_name} roi width", lambda b=_build: b(ROITensor=td((2, 5))), r"ROITensor\.Sizes"),
        (f"{_name} roi leading", lambda b=_build: b(ROITensor=td((2, 2, 4))),
         r"ROITensor\.Sizes"),
        (f"{_name} batch indices count", lambda b=_build: b(BatchIndicesTensor=td((3,), U32)),
         r"BatchIndicesTensor\.Sizes"),
        (f"{_name} batch indices leading", lambda b=_build: b(
            BatchIndicesTensor=td((2, 2), U32)), r"BatchIndicesTensor\.Sizes"),
        (f"{_name} output rois", lambda b=_build: b(OutputTensor=td((3, 3, 2, 2))),
         r"OutputTensor\.Sizes"),
        (f"{_name} output channels", lambda b=_build: b(OutputTensor=td((2, 4, 2, 2))),
         r"OutputTensor\.Sizes"),
        (f"{_name} reduction sum", lambda b=_build: b(
            ReductionFunction=DML_REDUCE_FUNCTION_SUM), r"ReductionFunction"),
        (f"{_name} min above max", lambda b=_build: b(MinimumSamplesPerOutput=3),
         r"MinimumSamplesPerOutput"),
    ]

INVALID += [
    # roi_align_grad
    ("roi_align_grad no outputs", lambda: roi_align_grad(
        OutputGradientTensor=None, OutputROIGradientTensor=None), r"OutputGradientTensor"),
    ("roi_align_grad roi gradient needs input", lambda: roi_align_grad(InputTensor=None),
     r"InputTensor"),
    ("roi_align_grad max needs input", lambda: roi_align_grad(
        InputTensor=None, OutputROIGradientTensor=None, ReductionFunction=MAX), r"InputTensor"),
    ("roi_align_grad reduction", lambda: roi_align_grad(
        ReductionFunction=DML_REDUCE_FUNCTION_MIN), r"ReductionFunction"),
    ("roi_align_grad min above max", lambda: roi_align_grad(MinimumSamplesPerOutput=2),
     r"MinimumSamplesPerOutput"),
    ("roi_align_grad roi width", lambda: roi_align_grad(
        ROITensor=td((2, 3)), OutputROIGradientTensor=td((2, 3))), r"ROITensor\.Sizes"),
    ("roi_align_grad batch indices", lambda: roi_align_grad(
        BatchIndicesTensor=td((1,), U32)), r"BatchIndicesTensor\.Sizes"),
    ("roi_align_grad gradient rois", lambda: roi_align_grad(
        InputGradientTensor=td((3, 3, 2, 2))), r"InputGradientTensor\.Sizes"),
    ("roi_align_grad output gradient channels", lambda: roi_align_grad(
        InputTensor=None, OutputROIGradientTensor=None, OutputGradientTensor=td((2, 4, 8, 8))),
     r"OutputGradientTensor\.Sizes"),
    ("roi_align_grad input channels", lambda: roi_align_grad(
        InputTensor=td((2, 4, 8, 8)), OutputGradientTensor=None), r"InputTensor\.Sizes"),
    ("roi_align_grad output gradient vs input", lambda: roi_align_grad(
        OutputGradientTensor=td((2, 3, 7, 7))), r"OutputGradientTensor\.Sizes"),
    # fold
    ("fold block count", lambda: fold(InputTensor=td((1, 9, 5))), r"InputTensor\.Sizes"),
    ("fold channels", lambda: fold(InputTensor=td((1, 8, 4))), r"InputTensor\.Sizes"),
    ("fold input rank", lambda: fold(InputTensor=td((1, 1, 9, 4))), r"InputTensor\.Sizes"),
    ("fold output rank", lambda: fold(OutputTensor=td((1, 1, 1, 4, 4))),
     r"OutputTensor\.Sizes"),
    ("fold window larger than image", lambda: fold(
        InputTensor=td((1, 25, 1)), WindowSizes=(5, 5)), r"OutputTensor\.Sizes"),
    ("fold stride 0", lambda: fold(Strides=(1, 0)), r"Strides\[1\]"),
    ("fold dimension count 0", lambda: fold(
        InputTensor=td((1, 1, 1)), OutputTensor=td((1, 1, 1)), **_window(0)),
     r"DimensionCount"),
    ("fold dimension count 7", lambda: fold(
        InputTensor=td((1, 1, 1)), OutputTensor=td((1, 1, 1)), **_window(7, WindowSizes=(1,) * 7)),
     r"DimensionCount"),
    # unfold
    ("unfold block count", lambda: unfold(OutputTensor=td((1, 9, 8))), r"OutputTensor\.Sizes"),
    ("unfold channels", lambda: unfold(InputTensor=td((1, 2, 5, 5))), r"OutputTensor\.Sizes"),
    ("unfold output rank", lambda: unfold(OutputTensor=td((1, 1, 9, 9))),
     r"OutputTensor\.Sizes"),
    ("unfold input rank", lambda: unfold(InputTensor=td((1, 1, 1, 5, 5))),
     r"InputTensor\.Sizes"),
    ("unfold window larger than padded image", lambda: unfold(
        WindowSizes=(3, 7), OutputTensor=td((1, 21, 1))), r"InputTensor\.Sizes"),
    ("unfold dilation 0", lambda: unfold(Dilations=(0, 1)), r"Dilations\[0\]"),
    ("unfold window 0", lambda: unfold(WindowSizes=(3, 0)), r"WindowSizes\[1\]"),
]


@pytest.mark.parametrize("build,field", [(b, f) for _, b, f in INVALID],
                         ids=[n for n, _, _ in INVALID])
def test_invalid(build: Callable[[], Any], field: str) -> None:
    with pytest.raises(DMLError, match=rf": {field} = "):
        create(build())
