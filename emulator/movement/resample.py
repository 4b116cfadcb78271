"""RESAMPLE, RESAMPLE1/2/3, their GRADs and UPSAMPLE_2D's linear mode:
rows of the data-movement family (``table.Row``)."""

from __future__ import annotations

from .table import Row

ROWS: tuple[Row, ...] = ()
