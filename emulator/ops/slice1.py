"""DML_OPERATOR_SLICE1 (DML_SLICE1_OPERATOR_DESC): a strided window of the input, copied.

    CopyStart[i] = InputWindowOffsets[i] + (InputWindowSizes[i] - 1 if InputWindowStrides[i] < 0)
    Output[c] = Input[CopyStart + InputWindowStrides * c]

Rules (Microsoft's DML_SLICE1_OPERATOR_DESC page): same DataType and DimensionCount for both
tensors, the DimensionCount field equal to both, strides never 0, windows non-empty and inside the
input, and 1 <= OutputSizes[i] <= 1 + (InputWindowSizes[i] - 1) / |InputWindowStrides[i]|.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace

import numpy as np

from ..plan import CopyPlan
from ..validation import Context, same
from .common import ELEVEN_TYPES

_T = ("InputTensor", "OutputTensor")
KERNEL_TYPES = ELEVEN_TYPES  # a copy moves bytes: every type up to 64 bits


def check_tensors_and_count(ctx: Context, v: SimpleNamespace) -> None:
    """Shared with SLICE: both tensors alike, and the DimensionCount field equal to theirs."""
    i, o = v.InputTensor, v.OutputTensor
    same(ctx, "InputTensor", "OutputTensor", "DataType", i.data_type, o.data_type)
    same(ctx, "InputTensor", "OutputTensor", "DimensionCount", i.dim_count, o.dim_count)
    ctx.require(v.DimensionCount == i.dim_count, "DimensionCount", v.DimensionCount,
                f"must equal the tensors' DimensionCount ({i.dim_count})")


def check_window(ctx: Context, v: SimpleNamespace, sliced: str, result: str) -> None:
    """The window rules SLICE1 and SLICE_GRAD share: non-zero strides, a non-empty window inside
    the ``sliced`` tensor, and the ``result`` tensor no larger than the window reaches."""
    in_sizes, out_sizes = getattr(v, sliced).sizes, getattr(v, result).sizes
    for i, (off, size, stride) in enumerate(
            zip(v.InputWindowOffsets, v.InputWindowSizes, v.InputWindowStrides)):
        ctx.require(stride != 0, f"InputWindowStrides[{i}]", stride, "window strides may not be 0")
        ctx.require(size >= 1, f"InputWindowSizes[{i}]", size, "the input window may not be empty")
        ctx.require(off + size <= in_sizes[i], f"InputWindowOffsets[{i}] + InputWindowSizes[{i}]",
                    off + size,
                    f"the window must lie inside {sliced}.Sizes[{i}] = {in_sizes[i]}")
        reachable = 1 + (size - 1) // abs(stride)
        ctx.require(out_sizes[i] <= reachable, f"{result}.Sizes[{i}]", out_sizes[i],
                    f"the window reaches at most 1 + (InputWindowSizes[{i}] - 1) / "
                    f"|InputWindowStrides[{i}]| = {reachable} elements")


def validate(ctx: Context, v: SimpleNamespace) -> None:
    check_tensors_and_count(ctx, v)
    check_window(ctx, v, "InputTensor", "OutputTensor")


def window(v: SimpleNamespace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(CopyStart, step) per dimension, as the page's pseudo-code defines them."""
    start = tuple(off + (size - 1 if stride < 0 else 0) for off, size, stride
                  in zip(v.InputWindowOffsets, v.InputWindowSizes, v.InputWindowStrides))
    return start, tuple(v.InputWindowStrides)


def copy_plan(v: SimpleNamespace, start: Sequence[int], step: Sequence[int]) -> CopyPlan:
    """Output[c] = Input[start + step*c] as one strided copy in element units."""
    i, o = v.InputTensor, v.OutputTensor
    return CopyPlan.build(
        "InputTensor", "OutputTensor", i.element_size, o.sizes,
        src_strides=[s * st for s, st in zip(step, i.strides)], dst_strides=o.strides,
        src_base=sum(a * st for a, st in zip(start, i.strides)))


def plan(v: SimpleNamespace) -> CopyPlan:
    return copy_plan(v, *window(v))


def gather(x: np.ndarray, start: Sequence[int], step: Sequence[int],
           out_sizes: Sequence[int]) -> np.ndarray:
    """Output[c] = x[start + step*c] for every output coordinate c (the page's formula)."""
    index = np.ix_(*[s + d * np.arange(n) for s, d, n in zip(start, step, out_sizes)])
    return x[index]


def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    start, step = window(v)
    return {"OutputTensor": gather(inputs["InputTensor"], start, step, v.OutputTensor.sizes)}
