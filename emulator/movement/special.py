"""RANDOM_GENERATOR, NONZERO_COORDINATES, VALUE_SCALE_2D and DIAGONAL_MATRIX1:
rows of the data-movement family (``table.Row``)."""

from __future__ import annotations

from .table import Row

ROWS: tuple[Row, ...] = ()
