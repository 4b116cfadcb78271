"""Constants shared by the operator modules' support tables, and the float references' errstate."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from descriptors import DML_FEATURE_LEVEL, DML_TENSOR_DATA_TYPE

T = DML_TENSOR_DATA_TYPE
FL = DML_FEATURE_LEVEL

DIMS_4 = (4,)
DIMS_4_5 = (4, 5)
DIMS_1_8 = tuple(range(1, 9))

FLOAT64 = T.DML_TENSOR_DATA_TYPE_FLOAT64
FLOAT32 = T.DML_TENSOR_DATA_TYPE_FLOAT32
FLOAT16 = T.DML_TENSOR_DATA_TYPE_FLOAT16
INT64 = T.DML_TENSOR_DATA_TYPE_INT64
INT32 = T.DML_TENSOR_DATA_TYPE_INT32
INT16 = T.DML_TENSOR_DATA_TYPE_INT16
INT8 = T.DML_TENSOR_DATA_TYPE_INT8
UINT64 = T.DML_TENSOR_DATA_TYPE_UINT64
UINT32 = T.DML_TENSOR_DATA_TYPE_UINT32
UINT16 = T.DML_TENSOR_DATA_TYPE_UINT16
UINT8 = T.DML_TENSOR_DATA_TYPE_UINT8

# The eight types most data-movement operators accept from 2_1 on.
EIGHT_TYPES = (FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8)
SIX_TYPES = (FLOAT32, FLOAT16, INT32, INT16, UINT32, UINT16)  # the same before 2_1 (no 8-bit)
ELEVEN_TYPES = (FLOAT64, FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8)


def same_for(fields: tuple[str, ...], dims: tuple[int, ...], types: tuple[T, ...]) -> dict:
    """A band's table where every listed tensor has the same allowed dims and types."""
    return dict.fromkeys(fields, (dims, types))


F = TypeVar("F", bound=Callable)


def ieee_reference(reference: F) -> F:
    """For a floating-point reference: its IEEE results (NaN, ±inf, overflow to inf when cast to
    FLOAT16) are the results, not NumPy RuntimeWarnings."""
    @functools.wraps(reference)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return reference(*args, **kwargs)

    return quiet  # type: ignore[return-value]
