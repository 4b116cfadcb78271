"""The compute family: every operator is a row (``family.Row``) of ``table.ROWS`` on one
matrix-multiply core (``matmul.MatmulPlan``, the BLAS NumPy links through ``blas.py``). This
module turns a row into the operator module the registry expects."""

from __future__ import annotations

from types import SimpleNamespace

from descriptors import DML_OPERATOR_TYPE

from .. import family
from . import attention, integer, pooling, recurrent, table

# One row table per kind of work: GEMM and CONVOLUTION (table), the pooling family, the integer
# and quantized products, the recurrent networks, multi-head attention.
ROWS = table.ROWS + pooling.ROWS + integer.ROWS + recurrent.ROWS + attention.ROWS
BY_OPERATOR = {row.operator: row for row in ROWS}

__all__ = ["BY_OPERATOR", "ROWS", "module"]


def module(op: DML_OPERATOR_TYPE) -> SimpleNamespace:
    return family.module(BY_OPERATOR[op], __name__, __doc__)
