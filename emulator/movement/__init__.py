"""The data-movement family: every operator is a row (``family.Row``): the copies and indexed
operators of ``table.ROWS`` (index maps over the strided copy kernel, ``kernels/movement.py``),
the resampling operators of ``resample.ROWS``, ROI pooling and alignment (``roi.ROWS``), the
sliding-window operators (``window.ROWS``) and the generators (``special.ROWS``). This module
turns a row into the operator module the registry expects (KERNEL_TYPES, plan, reference,
unsupported)."""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_OPERATOR_TYPE

from .. import family
from . import resample, roi, special, table, window

ROWS = (*table.ROWS, *resample.ROWS, *roi.ROWS, *window.ROWS, *special.ROWS)
BY_OPERATOR = {row.operator: row for row in ROWS}

__all__ = ["BY_OPERATOR", "ROWS", "module"]


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    return family.module(BY_OPERATOR[op], __name__, __doc__)
