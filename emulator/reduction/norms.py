"""The normalization rows of the reduction family (in progress)."""

from __future__ import annotations

from ..family import Row

ROWS: tuple[Row, ...] = ()
