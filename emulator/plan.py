"""Kernel plans: what an operator decides once at CreateOperator, so a dispatch only calls a kernel.

A plan holds integers and int64 arrays (sizes, strides, element offsets) and the names of the bind
points it reads and writes. ``run(regions)`` receives each bound tensor as the uint8 bytes of its
binding and calls a kernel; the kernels module is imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


def element_view(region: np.ndarray, element_size: int) -> np.ndarray:
    """The bytes of a binding as unsigned integers of the element's width (bit-exact copies)."""
    n = region.size // element_size
    return region[: n * element_size].view(f"u{element_size}")


def collapse(sizes: Sequence[int], *strides: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Drop size-1 dimensions and merge neighbours that are contiguous in every stride set.

    Returns (sizes, strides_0, strides_1, ...) of the shortest equivalent iteration (rank ≥ 1).
    Dimension i merges into i-1 when, for every set, strides[i-1] == strides[i] * sizes[i]; this
    merges broadcast (zero-stride) runs too.
    """
    dims = [(n, *(s[i] for s in strides)) for i, n in enumerate(sizes) if n != 1]
    if not dims:
        dims = [(1, *(0 for _ in strides))]
    merged = [list(dims[0])]
    for n, *st in dims[1:]:
        prev = merged[-1]
        if all(prev[1 + k] == st[k] * n for k in range(len(st))):
            prev[0] *= n
            prev[1:] = st
        else:
            merged.append([n, *st])
    return tuple(tuple(d[k] for d in merged) for k in range(1 + len(strides)))


def int64s(values: Sequence[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class CopyPlan:
    """dst[dst_base + c·dst_strides] = src[src_base + c·src_strides] for every coordinate c."""

    src: str
    dst: str
    element_size: int
    sizes: np.ndarray
    src_strides: np.ndarray
    dst_strides: np.ndarray
    src_base: int
    dst_base: int

    @classmethod
    def build(cls, src: str, dst: str, element_size: int, sizes: Sequence[int],
              src_strides: Sequence[int], dst_strides: Sequence[int], src_base: int = 0,
              dst_base: int = 0) -> CopyPlan:
        c_sizes, c_src, c_dst = collapse(sizes, src_strides, dst_strides)
        return cls(src, dst, element_size, int64s(c_sizes), int64s(c_src), int64s(c_dst),
                   src_base, dst_base)

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from .kernels.copy import strided_copy

        strided_copy(element_view(regions[self.src], self.element_size), self.src_base,
                     element_view(regions[self.dst], self.element_size), self.dst_base,
                     self.sizes, self.src_strides, self.dst_strides)
