"""What an operator of a family table is: a ``Row`` (its plan, its reference, the data types its
kernels execute, what it cannot run yet), and ``module``, which turns a row into the operator
module the registry expects (``emulator/ops/__init__.py`` says what that holds). The
data-movement (``emulator/movement``) and reduction (``emulator/reduction``) families are tables
of these rows; the element-wise family has a richer row of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_OPERATOR_TYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from .ops.common import ELEVEN_TYPES

__all__ = ["Row", "module"]


@dataclass(frozen=True)
class Row:
    operator: DML_OPERATOR_TYPE
    plan: Callable[[SimpleNamespace], Any]
    reference: Callable[[SimpleNamespace, Mapping[str, np.ndarray]], dict[str, np.ndarray]]
    kernel_types: tuple[T, ...] = ELEVEN_TYPES  # copies: any type to 64 bits
    unsupported: Callable[[SimpleNamespace], str | None] | None = None

    @property
    def name(self) -> str:
        return self.operator.name.removeprefix("DML_OPERATOR_").lower()


def module(row: Row, family: str, doc: str | None) -> SimpleNamespace:
    """The operator module of ``row`` (``family``: the package name, for messages)."""
    out = SimpleNamespace(__name__=f"{family}[{row.name}]",
                          __doc__=f"{row.operator.name}: {doc}", KERNEL_TYPES=row.kernel_types,
                          ROW=row, plan=row.plan, reference=row.reference)
    if row.unsupported is not None:
        out.unsupported = row.unsupported
    return out
