"""Rules of the resampling group that the support tables cannot express.

ROI pooling/align (and its gradient), VALUE_SCALE_2D, UPSAMPLE_2D, the RESAMPLE family, the random
generator, NONZERO_COORDINATES, FOLD and UNFOLD. Each function is named in
``resampling.json``'s ``rules`` and runs after the generic field checks, before the ``same``
constraints and the bands: a tensor's rank is therefore not yet known to be the table's, so every
rule guards its indexing and leaves rank and type errors to the tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

from descriptors import DML_REDUCE_FUNCTION

from ..validation import Context, same

UINT_MAX = 2**32 - 1
REDUCE_AVERAGE = DML_REDUCE_FUNCTION.DML_REDUCE_FUNCTION_AVERAGE
REDUCE_MAX = DML_REDUCE_FUNCTION.DML_REDUCE_FUNCTION_MAX

__all__ = ["fold", "nonzero_coordinates", "random_generator", "resample", "resample1",
           "resample2", "resample3", "resample_grad", "resample_grad1", "roi_align",
           "roi_align1", "roi_align_grad", "roi_pooling", "unfold", "upsample_2d",
           "value_scale_2d"]


# --- shared helpers ---------------------------------------------------------------------------

def _leading_ones(sizes: Sequence[int], keep: int) -> bool:
    """All sizes but the last ``keep`` are 1."""
    return all(s == 1 for s in sizes[:max(len(sizes) - keep, 0)])


def _effective_rank(sizes: Sequence[int]) -> int:
    """The rank without leading dimensions of size 1 ({1,2,3,4} -> 3, {1,1,1,1} -> 0)."""
    for i, s in enumerate(sizes):
        if s != 1:
            return len(sizes) - i
    return 0


def _count_matches_rank(ctx: Context, v: SimpleNamespace, count_field: str,
                        input_name: str, output_name: str) -> None:
    """The array-count attribute equals the dimension count of both tensors."""
    count = getattr(v, count_field)
    for name in (input_name, output_name):
        rank = getattr(v, name).dim_count
        ctx.require(count == rank, count_field, count,
                    f"must equal {name}'s DimensionCount ({rank})")


def _resample_arrays(ctx: Context, v: SimpleNamespace, offsets: bool) -> None:
    """Scales are finite and positive; pixel offsets (when the struct has them) are finite."""
    for i, scale in enumerate(v.Scales):
        ctx.require(math.isfinite(scale) and scale > 0, f"Scales[{i}]", scale,
                    "each scale must be a finite number greater than 0")
    if not offsets:
        return
    for field in ("InputPixelOffsets", "OutputPixelOffsets"):
        for i, offset in enumerate(getattr(v, field)):
            ctx.require(math.isfinite(offset), f"{field}[{i}]", offset,
                        "each pixel offset must be a finite number")


def _resample_family(ctx: Context, v: SimpleNamespace, input_name: str, output_name: str) -> None:
    _count_matches_rank(ctx, v, "DimensionCount", input_name, output_name)
    _resample_arrays(ctx, v, offsets=True)


def _roi_count(ctx: Context, v: SimpleNamespace) -> int | None:
    """ROITensor is {NumROIs, 4} with up to two leading 1s; returns NumROIs (None: rank unfit)."""
    roi = v.ROITensor
    if roi.dim_count < 2:
        return None  # the band reports the rank
    ctx.require(roi.sizes[-1] == 4, "ROITensor.Sizes", roi.sizes,
                "the last dimension holds the 4 corner coordinates [x1, y1, x2, y2], so it must "
                "be 4")
    ctx.require(_leading_ones(roi.sizes, 2), "ROITensor.Sizes", roi.sizes,
                "must be {NumROIs, 4}, {1, NumROIs, 4} or {1, 1, NumROIs, 4}")
    return int(roi.sizes[-2])


def _batch_indices(ctx: Context, v: SimpleNamespace, num_rois: int) -> None:
    """BatchIndicesTensor is {NumROIs} with leading 1s."""
    idx = v.BatchIndicesTensor
    ctx.require(_leading_ones(idx.sizes, 1) and idx.sizes[-1] == num_rois,
                "BatchIndicesTensor.Sizes", idx.sizes,
                f"must be {{NumROIs}} preceded only by 1s, with NumROIs = {num_rois} (the "
                "ROITensor's region count)")


def _samples(ctx: Context, v: SimpleNamespace) -> None:
    ctx.require(v.ReductionFunction in (REDUCE_AVERAGE, REDUCE_MAX), "ReductionFunction",
                v.ReductionFunction,
                "only DML_REDUCE_FUNCTION_AVERAGE and DML_REDUCE_FUNCTION_MAX reduce the samples")
    ctx.require(v.MinimumSamplesPerOutput <= v.MaximumSamplesPerOutput, "MinimumSamplesPerOutput",
                v.MinimumSamplesPerOutput,
                f"the sample count is clamped to [Minimum, Maximum], so the minimum may not "
                f"exceed MaximumSamplesPerOutput ({v.MaximumSamplesPerOutput})")


def _roi_align_common(ctx: Context, v: SimpleNamespace) -> None:
    _samples(ctx, v)
    num_rois = _roi_count(ctx, v)
    if num_rois is None:
        return
    _batch_indices(ctx, v, num_rois)
    inp, out = v.InputTensor, v.OutputTensor
    if inp.dim_count != 4 or out.dim_count != 4:
        return  # the band reports the rank
    expected = (num_rois, inp.sizes[1])
    ctx.require(tuple(out.sizes[:2]) == expected, "OutputTensor.Sizes", out.sizes,
                f"must be {{NumROIs, ChannelCount, OutputHeight, OutputWidth}} with NumROIs = "
                f"{num_rois} and ChannelCount = {inp.sizes[1]} (InputTensor.Sizes[1])")


def _window_blocks(ctx: Context, v: SimpleNamespace, spatial: Sequence[int],
                   spatial_field: str) -> int:
    """The page's BlockCount = prod_d BlocksPerDimension[d] for the given spatial sizes, where
    BlocksPerDimension[d] = ((SpatialSize[d] + StartPadding[d] + EndPadding[d]
                              - Dilations[d] * (WindowSizes[d] - 1) - 1) / Strides[d]) + 1."""
    count = 1
    for d, size in enumerate(spatial):
        padded = size + v.StartPadding[d] + v.EndPadding[d]
        extent = v.Dilations[d] * (v.WindowSizes[d] - 1) + 1
        ctx.require(padded >= extent, spatial_field, tuple(spatial),
                    f"dimension {d} padded ({padded}) is smaller than the dilated window "
                    f"({extent}), so no block fits")
        count *= (padded - extent) // v.Strides[d] + 1
    return count


def _window_attributes(ctx: Context, v: SimpleNamespace, low: int) -> None:
    n = v.DimensionCount
    ctx.require(low <= n <= 6, "DimensionCount", n,
                f"the number of spatial dimensions must lie in [{low}, 6]")
    for field in ("WindowSizes", "Strides", "Dilations"):
        for i, value in enumerate(getattr(v, field)):
            ctx.require(value >= 1, f"{field}[{i}]", value, "must be at least 1")


def _columns_shape(ctx: Context, v: SimpleNamespace, image_name: str, columns_name: str) -> None:
    """The image tensor is {N, C, spatial...} (DimensionCount + 2 dims) and the columns tensor is
    {N, C * prod(WindowSizes), BlockCount}."""
    image, columns = getattr(v, image_name), getattr(v, columns_name)
    n = v.DimensionCount
    ctx.require(image.dim_count == n + 2, f"{image_name}.Sizes", image.sizes,
                f"must be {{N, C, spatial sizes...}}: DimensionCount + 2 = {n + 2} dimensions")
    ctx.require(columns.dim_count == 3, f"{columns_name}.Sizes", columns.sizes,
                "must be the 3-D {N, C * prod(WindowSizes), BlockCount}")
    window = math.prod(v.WindowSizes)
    blocks = _window_blocks(ctx, v, image.sizes[2:], f"{image_name}.Sizes")
    expected = (image.sizes[0], image.sizes[1] * window, blocks)
    ctx.require(tuple(columns.sizes) == expected, f"{columns_name}.Sizes", columns.sizes,
                f"must be {{N, C * prod(WindowSizes), BlockCount}} = {{{expected[0]}, "
                f"{expected[1]}, {expected[2]}}} for {image_name}.Sizes {{"
                + ", ".join(str(s) for s in image.sizes) + "}")


# --- rules ------------------------------------------------------------------------------------

def roi_pooling(ctx: Context, v: SimpleNamespace) -> None:
    """ROITensor {1, 1, NumROIs, 5}; OutputTensor {NumROIs, InputChannelCount, PooledSize.Height,
    PooledSize.Width}."""
    roi, inp, out = v.ROITensor, v.InputTensor, v.OutputTensor
    if roi.dim_count != 4 or inp.dim_count != 4 or out.dim_count != 4:
        return  # the band reports the rank
    ctx.require(roi.sizes[0] == 1 and roi.sizes[1] == 1 and roi.sizes[3] == 5, "ROITensor.Sizes",
                roi.sizes, "must be {1, 1, NumROIs, 5}: each region is [BatchID, x1, y1, x2, y2]")
    ctx.require(out.sizes[2] == v.PooledSize.Height and out.sizes[3] == v.PooledSize.Width,
                "PooledSize", (v.PooledSize.Height, v.PooledSize.Width),
                f"(Height, Width) must equal the last two OutputTensor sizes "
                f"({out.sizes[2]}, {out.sizes[3]})")
    expected = (roi.sizes[2], inp.sizes[1], v.PooledSize.Height, v.PooledSize.Width)
    ctx.require(tuple(out.sizes) == expected, "OutputTensor.Sizes", out.sizes,
                "must be {NumROIs, InputChannelCount, PooledSize.Height, PooledSize.Width} = {"
                + ", ".join(str(s) for s in expected) + "}")


def value_scale_2d(ctx: Context, v: SimpleNamespace) -> None:
    """ChannelCount is 1 or 3 and equals the input's channel dimension."""
    ctx.require(v.ChannelCount in (1, 3), "ChannelCount", v.ChannelCount, "must be 1 or 3")
    inp = v.InputTensor
    if inp.dim_count == 4:
        ctx.require(v.ChannelCount == inp.sizes[1], "ChannelCount", v.ChannelCount,
                    f"must equal the channel size InputTensor.Sizes[1] ({inp.sizes[1]})")


def upsample_2d(ctx: Context, v: SimpleNamespace) -> None:
    """0 < ScaleSize.Height <= UINT_MAX / InputHeight (likewise Width); OutputTensor is
    {N, C, [D,] InputHeight * ScaleSize.Height, InputWidth * ScaleSize.Width}."""
    inp, out = v.InputTensor, v.OutputTensor
    if inp.dim_count < 4 or out.dim_count != inp.dim_count:
        return  # the band and the same-DimensionCount constraint report it
    height, width = inp.sizes[-2], inp.sizes[-1]
    ctx.require(0 < v.ScaleSize.Height <= UINT_MAX // height, "ScaleSize.Height",
                v.ScaleSize.Height, f"must lie in [1, UINT_MAX / InputHeight] = "
                f"[1, {UINT_MAX // height}]")
    ctx.require(0 < v.ScaleSize.Width <= UINT_MAX // width, "ScaleSize.Width", v.ScaleSize.Width,
                f"must lie in [1, UINT_MAX / InputWidth] = [1, {UINT_MAX // width}]")
    expected = (*inp.sizes[:-2], height * v.ScaleSize.Height, width * v.ScaleSize.Width)
    ctx.require(tuple(out.sizes) == expected, "OutputTensor.Sizes", out.sizes,
                "must keep the leading input sizes and multiply height and width by ScaleSize: {"
                + ", ".join(str(s) for s in expected) + "}")


def resample(ctx: Context, v: SimpleNamespace) -> None:
    """ScaleCount equals the tensors' DimensionCount; scales finite and positive."""
    _count_matches_rank(ctx, v, "ScaleCount", "InputTensor", "OutputTensor")
    _resample_arrays(ctx, v, offsets=False)


def resample1(ctx: Context, v: SimpleNamespace) -> None:
    """DimensionCount equals the tensors' DimensionCount; scales positive, offsets finite."""
    _resample_family(ctx, v, "InputTensor", "OutputTensor")


def resample2(ctx: Context, v: SimpleNamespace) -> None:
    """As RESAMPLE1 (RoundingDirection is an enum already checked)."""
    _resample_family(ctx, v, "InputTensor", "OutputTensor")


def resample3(ctx: Context, v: SimpleNamespace) -> None:
    """As RESAMPLE2 (Antialiased only changes the filter)."""
    _resample_family(ctx, v, "InputTensor", "OutputTensor")


def resample_grad(ctx: Context, v: SimpleNamespace) -> None:
    """DimensionCount equals the gradient tensors' DimensionCount; scales positive."""
    _resample_family(ctx, v, "InputGradientTensor", "OutputGradientTensor")


def resample_grad1(ctx: Context, v: SimpleNamespace) -> None:
    """As RESAMPLE_GRAD."""
    _resample_family(ctx, v, "InputGradientTensor", "OutputGradientTensor")


def random_generator(ctx: Context, v: SimpleNamespace) -> None:
    """The Philox 4x32-10 state is 6 UINT32 values: sizes {1, ..., 1, 6} (OutputStateTensor
    follows through the same-Sizes constraint)."""
    state = v.InputStateTensor
    ctx.require(state.dim_count >= 1 and state.sizes[-1] == 6 and _leading_ones(state.sizes, 1),
                "InputStateTensor.Sizes", state.sizes,
                "the Philox 4x32-10 state (128-bit counter and 64-bit key) must have sizes "
                "{1, ..., 1, 6}")


def nonzero_coordinates(ctx: Context, v: SimpleNamespace) -> None:
    """OutputCountTensor is a scalar (all sizes 1); OutputCoordinatesTensor is {1, ..., 1, M, N}
    with M the input's element count and effective rank <= N <= InputTensor.DimensionCount."""
    inp, count, coords = v.InputTensor, v.OutputCountTensor, v.OutputCoordinatesTensor
    ctx.require(all(s == 1 for s in count.sizes), "OutputCountTensor.Sizes", count.sizes,
                "the count is a scalar: every size must be 1")
    if coords.dim_count < 2:
        return  # the band reports the rank
    ctx.require(_leading_ones(coords.sizes, 2), "OutputCoordinatesTensor.Sizes", coords.sizes,
                "must be {1, ..., 1, M, N}: only the last two sizes may differ from 1")
    m, n = coords.sizes[-2], coords.sizes[-1]
    ctx.require(m == inp.element_count, "OutputCoordinatesTensor.Sizes", coords.sizes,
                f"M (the next-to-last size) must equal the InputTensor element count "
                f"({inp.element_count}), the worst case of all elements non-zero")
    low, high = _effective_rank(inp.sizes), inp.dim_count
    ctx.require(low <= n <= high, "OutputCoordinatesTensor.Sizes", coords.sizes,
                f"N (the last size) must lie between the InputTensor's effective rank ({low}) "
                f"and its DimensionCount ({high})")


def roi_align(ctx: Context, v: SimpleNamespace) -> None:
    """ROI, batch-index and output shapes; AVERAGE or MAX; Minimum <= Maximum samples."""
    _roi_align_common(ctx, v)


def roi_align1(ctx: Context, v: SimpleNamespace) -> None:
    """As ROI_ALIGN (pixel offsets and AlignRegionsToCorners have no constraint)."""
    _roi_align_common(ctx, v)


def roi_align_grad(ctx: Context, v: SimpleNamespace) -> None:
    """Which optional tensors must be present, and the shapes relating them."""
    ctx.require(v.OutputGradientTensor is not None or v.OutputROIGradientTensor is not None,
                "OutputGradientTensor", None,
                "OutputGradientTensor and OutputROIGradientTensor may not both be null")
    if v.InputTensor is None:
        ctx.require(v.OutputROIGradientTensor is None, "InputTensor", None,
                    "InputTensor is required when OutputROIGradientTensor is supplied")
        ctx.require(v.ReductionFunction != REDUCE_MAX, "InputTensor", None,
                    "InputTensor is required when ReductionFunction is DML_REDUCE_FUNCTION_MAX")
    _samples(ctx, v)
    num_rois = _roi_count(ctx, v)
    if num_rois is None:
        return
    _batch_indices(ctx, v, num_rois)
    grad = v.InputGradientTensor
    if grad.dim_count != 4:
        return  # the band reports the rank
    ctx.require(grad.sizes[0] == num_rois, "InputGradientTensor.Sizes", grad.sizes,
                f"must be {{NumROIs, ChannelCount, OutputHeight, OutputWidth}} with NumROIs = "
                f"{num_rois} (the ROITensor's region count)")
    for name in ("InputTensor", "OutputGradientTensor"):
        t = getattr(v, name)
        if t is not None and t.dim_count == 4:
            ctx.require(t.sizes[1] == grad.sizes[1], f"{name}.Sizes", t.sizes,
                        f"its channel count (Sizes[1]) must equal InputGradientTensor.Sizes[1] "
                        f"({grad.sizes[1]})")
    if v.InputTensor is not None and v.OutputGradientTensor is not None:
        same(ctx, "InputTensor", "OutputGradientTensor", "Sizes", v.InputTensor.sizes,
             v.OutputGradientTensor.sizes)


def fold(ctx: Context, v: SimpleNamespace) -> None:
    """InputTensor {N, C * prod(WindowSizes), BlockCount} folds into OutputTensor
    {N, C, spatial...}; BlockCount follows the page's BlocksPerDimension formula."""
    _window_attributes(ctx, v, low=1)
    _columns_shape(ctx, v, "OutputTensor", "InputTensor")


def unfold(ctx: Context, v: SimpleNamespace) -> None:
    """InputTensor {N, C, spatial...} unfolds into OutputTensor
    {N, C * prod(WindowSizes), BlockCount}; BlockCount follows BlocksPerDimension."""
    _window_attributes(ctx, v, low=1)
    _columns_shape(ctx, v, "InputTensor", "OutputTensor")
