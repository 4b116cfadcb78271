"""Rules of the data-movement group that the support tables cannot express.

Split and join, padding, gather and scatter (plain, ELEMENTS and ND forms), depth/space
rearrangement, tile, max-unpooling, one-hot, the fill generators, reverse-subsequences, the slice
gradient and DIAGONAL_MATRIX1. Each function is named in ``movement.json``'s ``rules`` and runs
after the field checks, the "same" constraints and the bands, so the tensors' ranks are the
table's; the rules still guard every index they take, so that a rule never raises anything but
the DMLError of ``ctx.require`` / ``ctx.fail``. SLICE, SLICE1, TOP_K and TOP_K1 keep their rules
in ``emulator/ops``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from ..ops.slice1 import check_window
from ..validation import Context, Tensor, same

__all__ = ["depth_to_space", "depth_to_space1", "diagonal_matrix1", "fill_value_constant",
           "fill_value_sequence", "gather", "gather_elements", "gather_nd", "gather_nd1", "join",
           "max_unpooling", "one_hot", "padding", "padding1", "reverse_subsequences",
           "scatter_elements", "scatter_nd", "slice_grad", "space_to_depth", "space_to_depth1",
           "split", "tile"]


# --- shared helpers ---------------------------------------------------------------------------

def _sizes_text(sizes: Sequence[int]) -> str:
    return "{" + ", ".join(str(s) for s in sizes) + "}"


def _axis(ctx: Context, v: SimpleNamespace, tensor_name: str) -> int:
    """Axis must name a dimension of ``tensor_name``."""
    rank = getattr(v, tensor_name).dim_count
    ctx.require(v.Axis < rank, "Axis", v.Axis,
                f"must be less than {tensor_name}.DimensionCount ({rank})")
    return int(v.Axis)


def _sizes_equal(ctx: Context, field: str, actual: Sequence[int], expected: Sequence[int],
                 how: str) -> None:
    ctx.require(tuple(actual) == tuple(expected), field, tuple(actual),
                f"must be {_sizes_text(expected)} ({how})")


def _match_except_axis(ctx: Context, name: str, t: Tensor, ref_name: str, ref: Tensor, axis: int,
                       axis_size: int | None = None) -> None:
    """``t`` has ``ref``'s rank and sizes in every dimension but ``axis`` (which, when
    ``axis_size`` is given, must be that)."""
    same(ctx, ref_name, name, "DimensionCount", ref.dim_count, t.dim_count)
    for d, (a, b) in enumerate(zip(t.sizes, ref.sizes)):
        if d == axis:
            if axis_size is not None:
                ctx.require(a == axis_size, f"{name}.Sizes[{d}]", a,
                            f"must be {axis_size} along Axis")
            continue
        ctx.require(a == b, f"{name}.Sizes[{d}]", a,
                    f"must equal {ref_name}.Sizes[{d}] = {b} (only the Axis dimension, {axis}, "
                    "may differ)")


def _right_aligned(sizes: Sequence[int], rank: int) -> tuple[int, ...] | None:
    """``sizes`` fitted to ``rank`` dimensions: leading 1s prepended, or leading 1s dropped;
    None when it would take dropping a size other than 1."""
    sizes = tuple(sizes)
    if len(sizes) <= rank:
        return (1,) * (rank - len(sizes)) + sizes
    extra = len(sizes) - rank
    if any(s != 1 for s in sizes[:extra]):
        return None
    return sizes[extra:]


def _fits(ctx: Context, name: str, t: Tensor, expected: Sequence[int], how: str) -> None:
    """``t.sizes`` equals ``expected`` right-aligned to ``t``'s rank."""
    fitted = _right_aligned(expected, t.dim_count)
    if fitted is None:
        ctx.fail(f"{name}.DimensionCount", t.dim_count,
                 f"cannot hold the expected sizes {_sizes_text(expected)} ({how})")
    _sizes_equal(ctx, f"{name}.Sizes", t.sizes, fitted, how)


def _count_is_rank(ctx: Context, v: SimpleNamespace, count_field: str,
                   names: Sequence[str]) -> None:
    count = getattr(v, count_field)
    for name in names:
        rank = getattr(v, name).dim_count
        ctx.require(count == rank, count_field, count, f"must equal {name}.DimensionCount ({rank})")


def _value_type(ctx: Context, v: SimpleNamespace, field: str, output: str = "OutputTensor") -> None:
    """A scalar's data type field must be the output tensor's data type."""
    want = getattr(v, output).data_type
    got = getattr(v, field)
    ctx.require(got == want, field, got, f"must equal {output}.DataType ({want.name})")


# --- split / join -----------------------------------------------------------------------------

def _split_join(ctx: Context, v: SimpleNamespace, whole_name: str, parts_name: str,
                count_field: str) -> None:
    whole: Tensor = getattr(v, whole_name)
    parts: tuple[Tensor, ...] = getattr(v, parts_name)
    ctx.require(getattr(v, count_field) > 0, count_field, getattr(v, count_field),
                "must be greater than 0")
    axis = _axis(ctx, v, whole_name)
    total = 0
    for i, t in enumerate(parts):
        _match_except_axis(ctx, f"{parts_name}[{i}]", t, whole_name, whole, axis)
        total += t.sizes[axis]
    ctx.require(total == whole.sizes[axis], f"{whole_name}.Sizes[{axis}]", whole.sizes[axis],
                f"must equal the sum of {parts_name}[*].Sizes[{axis}] ({total})")


def split(ctx: Context, v: SimpleNamespace) -> None:
    """Outputs have the input's sizes except along Axis, where their sizes sum to the input's."""
    _split_join(ctx, v, "InputTensor", "OutputTensors", "OutputCount")


def join(ctx: Context, v: SimpleNamespace) -> None:
    """Inputs have the output's sizes except along Axis, where their sizes sum to the output's."""
    _split_join(ctx, v, "OutputTensor", "InputTensors", "InputCount")


# --- padding ----------------------------------------------------------------------------------

def padding(ctx: Context, v: SimpleNamespace) -> None:
    """OutputTensor.Sizes[i] = InputTensor.Sizes[i] + StartPadding[i] + EndPadding[i]."""
    _count_is_rank(ctx, v, "DimensionCount", ("InputTensor", "OutputTensor"))
    i_sizes = v.InputTensor.sizes
    expected = tuple(s + a + b for s, a, b in zip(i_sizes, v.StartPadding, v.EndPadding))
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, expected,
                 "InputTensor.Sizes + StartPadding + EndPadding")


def padding1(ctx: Context, v: SimpleNamespace) -> None:
    """PADDING's rule, and PaddingValueDataType is the output's data type."""
    padding(ctx, v)
    _value_type(ctx, v, "PaddingValueDataType")


# --- gather / scatter -------------------------------------------------------------------------

def gather(ctx: Context, v: SimpleNamespace) -> None:
    """OutputTensor.Sizes = {Input[0..Axis], Indices[last IndexDimensions], Input[Axis+1..]},
    right-aligned to the output's DimensionCount."""
    i, idx, out = v.InputTensor, v.IndicesTensor, v.OutputTensor
    axis = _axis(ctx, v, "InputTensor")
    n = idx.dim_count
    ctx.require(v.IndexDimensions <= n, "IndexDimensions", v.IndexDimensions,
                f"must be at most IndicesTensor.DimensionCount ({n})")
    lead = n - v.IndexDimensions
    ctx.require(all(s == 1 for s in idx.sizes[:lead]), "IndicesTensor.Sizes", idx.sizes,
                f"the {lead} leading dimension(s) outside IndexDimensions must be 1")
    expected = i.sizes[:axis] + idx.sizes[lead:] + i.sizes[axis + 1:]
    _fits(ctx, "OutputTensor", out, expected,
          "InputTensor.Sizes before Axis, the IndexDimensions last IndicesTensor sizes, then "
          "InputTensor.Sizes after Axis")


def gather_elements(ctx: Context, v: SimpleNamespace) -> None:
    """IndicesTensor has the input's sizes except along Axis; the output has the indices' sizes."""
    axis = _axis(ctx, v, "InputTensor")
    _match_except_axis(ctx, "IndicesTensor", v.IndicesTensor, "InputTensor", v.InputTensor, axis)
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, v.IndicesTensor.sizes,
                 "the output has IndicesTensor's sizes")


def scatter_elements(ctx: Context, v: SimpleNamespace) -> None:
    """Indices match the input except along Axis; updates match the indices; the output matches
    the input."""
    axis = _axis(ctx, v, "OutputTensor")
    i, idx = v.InputTensor, v.IndicesTensor
    _match_except_axis(ctx, "IndicesTensor", idx, "InputTensor", i, axis)
    _sizes_equal(ctx, "UpdatesTensor.Sizes", v.UpdatesTensor.sizes, idx.sizes,
                 "UpdatesTensor has IndicesTensor's sizes")
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, i.sizes,
                 "the output has InputTensor's sizes")


def _nd(ctx: Context, v: SimpleNamespace, batch: int, target: str) -> None:
    """The ND gather/scatter shape rule; ``target`` is the tensor shaped by the index tuples
    (OutputTensor for gather, UpdatesTensor for scatter)."""
    i, idx = v.InputTensor, v.IndicesTensor
    m, n = i.dim_count, idx.dim_count
    in_count, idx_count = v.InputDimensionCount, v.IndicesDimensionCount
    ctx.require(1 <= in_count <= m, "InputDimensionCount", in_count,
                f"must lie in [1, InputTensor.DimensionCount] = [1, {m}]")
    ctx.require(1 <= idx_count <= n, "IndicesDimensionCount", idx_count,
                f"must lie in [1, IndicesTensor.DimensionCount] = [1, {n}]")
    for name, t, count in (("InputTensor", i, in_count), ("IndicesTensor", idx, idx_count)):
        lead = t.dim_count - count
        ctx.require(all(s == 1 for s in t.sizes[:lead]), f"{name}.Sizes", t.sizes,
                    f"the {lead} leading dimension(s) outside the meaningful ones must be 1")
    tuple_size = idx.sizes[-1]
    if batch:
        ctx.require(batch < m and batch < n, "BatchDimensionCount", batch,
                    f"must be less than InputTensor.DimensionCount ({m}) and "
                    f"IndicesTensor.DimensionCount ({n})")
        ctx.require(batch < idx_count and batch <= in_count, "BatchDimensionCount", batch,
                    f"must be less than IndicesDimensionCount ({idx_count}) and at most "
                    f"InputDimensionCount ({in_count})")
        mi, mx = i.sizes[m - in_count:], idx.sizes[n - idx_count:]
        for d in range(batch):
            ctx.require(mx[d] == mi[d], f"IndicesTensor.Sizes[{n - idx_count + d}]", mx[d],
                        f"batch dimension {d} must equal the input's "
                        f"(InputTensor.Sizes[{m - in_count + d}] = {mi[d]})")
    # The tuple addresses the meaningful input dimensions after the batch ones (the size
    # formula below reads the input sizes after them), so it must end within them.
    ctx.require(batch + tuple_size <= in_count, f"IndicesTensor.Sizes[{n - 1}]", tuple_size,
                "the index tuple size (last indices dimension) may not exceed "
                f"InputDimensionCount ({in_count})" + (f" less the {batch} batch dimension(s)"
                                                        if batch else ""))
    expected = idx.sizes[n - idx_count:n - 1] + i.sizes[m - in_count + batch + tuple_size:]
    _fits(ctx, target, getattr(v, target), expected,
          "the meaningful IndicesTensor sizes without the last, then the InputTensor sizes "
          "after the batch and indexed dimensions")


def gather_nd(ctx: Context, v: SimpleNamespace) -> None:
    """OutputTensor.Sizes = {1..., meaningful Indices sizes but the last, Input after the tuple}."""
    _nd(ctx, v, 0, "OutputTensor")


def gather_nd1(ctx: Context, v: SimpleNamespace) -> None:
    """GATHER_ND with BatchDimensionCount leading batch dimensions shared by input and indices."""
    _nd(ctx, v, int(v.BatchDimensionCount), "OutputTensor")


def scatter_nd(ctx: Context, v: SimpleNamespace) -> None:
    """UpdatesTensor.Sizes as GATHER_ND's output sizes; the output has the input's sizes."""
    _nd(ctx, v, 0, "UpdatesTensor")
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, v.InputTensor.sizes,
                 "the output has InputTensor's sizes")


def max_unpooling(ctx: Context, v: SimpleNamespace) -> None:
    """IndicesTensor has the input's sizes; the output has the input's DimensionCount."""
    i = v.InputTensor
    _sizes_equal(ctx, "IndicesTensor.Sizes", v.IndicesTensor.sizes, i.sizes,
                 "IndicesTensor has InputTensor's sizes")
    same(ctx, "InputTensor", "OutputTensor", "DimensionCount", i.dim_count,
         v.OutputTensor.dim_count)


def one_hot(ctx: Context, v: SimpleNamespace) -> None:
    """IndicesTensor has the output's sizes but 1 along Axis; ValuesTensor holds >= 2 elements."""
    axis = _axis(ctx, v, "IndicesTensor")
    _match_except_axis(ctx, "IndicesTensor", v.IndicesTensor, "OutputTensor", v.OutputTensor,
                       axis, axis_size=1)
    count = v.ValuesTensor.element_count
    ctx.require(count >= 2, "ValuesTensor.Sizes", v.ValuesTensor.sizes,
                f"must hold at least 2 elements (the off and on values), not {count}")


def reverse_subsequences(ctx: Context, v: SimpleNamespace) -> None:
    """SequenceLengthsTensor has the input's sizes but 1 along Axis; the output has the input's."""
    axis = _axis(ctx, v, "InputTensor")
    _match_except_axis(ctx, "SequenceLengthsTensor", v.SequenceLengthsTensor, "InputTensor",
                       v.InputTensor, axis, axis_size=1)
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, v.InputTensor.sizes,
                 "the output has InputTensor's sizes")


# --- depth / space, tile ----------------------------------------------------------------------

def _block(ctx: Context, v: SimpleNamespace) -> int:
    ctx.require(v.BlockSize >= 1, "BlockSize", v.BlockSize, "must be at least 1")
    return int(v.BlockSize)


def depth_to_space(ctx: Context, v: SimpleNamespace) -> None:
    """Output {N, C / (BlockSize * BlockSize), H * BlockSize, W * BlockSize}."""
    b = _block(ctx, v)
    n, c, h, w = v.InputTensor.sizes[:4]
    ctx.require(c % (b * b) == 0, "InputTensor.Sizes[1]", c,
                f"the channel count must be a multiple of BlockSize * BlockSize ({b * b})")
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, (n, c // (b * b), h * b, w * b),
                 "{BatchCount, InputChannelCount / (BlockSize * BlockSize), "
                 "InputHeight * BlockSize, InputWidth * BlockSize}")


def space_to_depth(ctx: Context, v: SimpleNamespace) -> None:
    """Output {N, C * BlockSize * BlockSize, H / BlockSize, W / BlockSize}."""
    b = _block(ctx, v)
    n, c, h, w = v.InputTensor.sizes[:4]
    for d, s in ((2, h), (3, w)):
        ctx.require(s % b == 0, f"InputTensor.Sizes[{d}]", s,
                    f"the height and width must be multiples of BlockSize ({b})")
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, (n, c * b * b, h // b, w // b),
                 "{BatchCount, InputChannelCount * BlockSize * BlockSize, "
                 "InputHeight / BlockSize, InputWidth / BlockSize}")


def depth_to_space1(ctx: Context, v: SimpleNamespace) -> None:
    """As DEPTH_TO_SPACE (Order changes the element order, not the shapes)."""
    depth_to_space(ctx, v)


def space_to_depth1(ctx: Context, v: SimpleNamespace) -> None:
    """As SPACE_TO_DEPTH (Order changes the element order, not the shapes)."""
    space_to_depth(ctx, v)


def tile(ctx: Context, v: SimpleNamespace) -> None:
    """RepeatsCount is the rank; Repeats > 0; OutputTensor.Sizes[i] = InputTensor.Sizes[i] *
    Repeats[i]."""
    _count_is_rank(ctx, v, "RepeatsCount", ("InputTensor", "OutputTensor"))
    for d, r in enumerate(v.Repeats):
        ctx.require(r > 0, f"Repeats[{d}]", r, "every repeat count must be greater than 0")
    expected = tuple(s * r for s, r in zip(v.InputTensor.sizes, v.Repeats))
    _sizes_equal(ctx, "OutputTensor.Sizes", v.OutputTensor.sizes, expected,
                 "InputTensor.Sizes[i] * Repeats[i]")


# --- slice gradient ---------------------------------------------------------------------------

def slice_grad(ctx: Context, v: SimpleNamespace) -> None:
    """SLICE1's window rules, with the window inside OutputGradientTensor (the forward input)
    and InputGradientTensor (the forward output) no larger than the window reaches."""
    _count_is_rank(ctx, v, "DimensionCount", ("InputGradientTensor", "OutputGradientTensor"))
    check_window(ctx, v, "OutputGradientTensor", "InputGradientTensor")


# --- generators -------------------------------------------------------------------------------

def fill_value_constant(ctx: Context, v: SimpleNamespace) -> None:
    """ValueDataType is the output's data type."""
    _value_type(ctx, v, "ValueDataType")


def fill_value_sequence(ctx: Context, v: SimpleNamespace) -> None:
    """ValueDataType is the output's data type."""
    _value_type(ctx, v, "ValueDataType")


def diagonal_matrix1(ctx: Context, v: SimpleNamespace) -> None:
    """ValueDataType is the output's data type; an InputTensor, if any, has the output's sizes."""
    _value_type(ctx, v, "ValueDataType")
    if v.InputTensor is not None:
        _sizes_equal(ctx, "InputTensor.Sizes", v.InputTensor.sizes, v.OutputTensor.sizes,
                     "the optional input has OutputTensor's sizes")
