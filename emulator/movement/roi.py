"""ROI_POOLING, ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD:
rows of the data-movement family (``table.Row``)."""

from __future__ import annotations

from .table import Row

ROWS: tuple[Row, ...] = ()
