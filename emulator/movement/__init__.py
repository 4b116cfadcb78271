"""The data-movement family: every operator is a row (``table.Row``): the copies and indexed
operators of ``table.ROWS`` (index maps over the strided copy kernel, ``kernels/movement.py``),
the resampling operators of ``resample.ROWS``, ROI pooling and alignment (``roi.ROWS``), the
sliding-window operators (``window.ROWS``) and the generators (``special.ROWS``). This module
turns a row into the operator module the registry expects (KERNEL_TYPES, plan, reference,
unsupported)."""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_OPERATOR_TYPE

from . import resample, roi, special, table, window

ROWS = (*table.ROWS, *resample.ROWS, *roi.ROWS, *window.ROWS, *special.ROWS)
BY_OPERATOR = {row.operator: row for row in ROWS}

__all__ = ["BY_OPERATOR", "ROWS", "module"]


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    row = BY_OPERATOR[op]
    out = SimpleNamespace(__name__=f"{__name__}[{row.name}]", __doc__=f"{op.name}: {__doc__}",
                          KERNEL_TYPES=row.kernel_types, ROW=row, plan=row.plan,
                          reference=row.reference)
    if row.unsupported is not None:
        out.unsupported = row.unsupported
    return out
