"""FOLD, UNFOLD and MAX_UNPOOLING: rows of the data-movement family (``table.Row``)."""

from __future__ import annotations

from .table import Row

ROWS: tuple[Row, ...] = ()
