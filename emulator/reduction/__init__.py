"""The reduction family: every operator is a row (``family.Row``) over one layout
(``layout.Layout``: groups x elements): REDUCE, ARGMIN, ARGMAX and the cumulative operators
(``table.ROWS``, kernels in ``kernels.py``) and the normalizations (``norms.ROWS``). This module
joins the row tables and turns a row into the operator module the registry expects."""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_OPERATOR_TYPE

from .. import family
from . import norms, table

ROWS = (*table.ROWS, *norms.ROWS)
BY_OPERATOR = {row.operator: row for row in ROWS}

__all__ = ["BY_OPERATOR", "ROWS", "module"]


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    return family.module(BY_OPERATOR[op], __name__, __doc__)
