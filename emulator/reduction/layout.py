"""The reduction layout: every operator of the reduction family sees its tensors as
groups x elements.

The reduced axes and the kept axes are each collapsed once, from any strides (``plan.collapse``:
size-1 dimensions dropped, neighbours contiguous in every stride set merged), so a kernel walks
``groups`` groups, each of ``count`` elements, in the logical (row-major) order of the reduced
axes, whatever the rank, the axis set or the strides (zero and padded ones included). Several
tensors share one layout, each with its own strides (an input and an output; MVN's scale and
bias, which broadcast with zero strides).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..plan import collapse, int64s

__all__ = ["Layout", "Part"]

# A collapsed part: its sizes, then one stride array per tensor.
Part = tuple[np.ndarray, ...]


def _part(sizes: Sequence[int], dims: Sequence[int], strides: Sequence[Sequence[int]]) -> Part:
    c = collapse([sizes[d] for d in dims], *[[s[d] for d in dims] for s in strides])
    return tuple(int64s(x) for x in c)


@dataclass(frozen=True, eq=False)
class Layout:
    """``g``: the kept (group) dimensions, ``r``: the reduced ones; each is (sizes, strides of
    tensor 0, strides of tensor 1, ...), at least one dimension (a part with no dimension is one
    element, stride 0)."""

    g: Part
    r: Part
    groups: int
    count: int
    axes: tuple[int, ...]

    @classmethod
    def build(cls, sizes: Sequence[int], axes: Sequence[int],
              strides: Sequence[Sequence[int]]) -> Layout:
        """``axes``: the reduced axes, a set (any order, repeats ignored); ``strides``: one
        element-stride list per tensor, over the input's coordinates (0 where a tensor
        broadcasts, any value where a tensor has size 1 along a reduced axis)."""
        axis_set = tuple(sorted(set(axes)))
        kept = [d for d in range(len(sizes)) if d not in axis_set]
        return cls(_part(sizes, kept, strides), _part(sizes, axis_set, strides),
                   int(np.prod([sizes[d] for d in kept], dtype=np.int64)),
                   int(np.prod([sizes[d] for d in axis_set], dtype=np.int64)), axis_set)
