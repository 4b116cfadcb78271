"""C values from Python values: the one place that turns what a caller passes into a C type.

Every entry point reads its arguments through these: UINT/INT/UINT64 (``to_int``), FLOAT
(``to_float``), enums (``to_enum``), flag sets (``to_flags``), a count + pointer pair (``as_list``).
A value the C type cannot hold, or one of another kind altogether (a string for a UINT, a list for
an enum, an int of 5,000 digits, ±inf in an integer field), is a ``DMLError`` E_INVALIDARG whose
message names where it was given and the rule; it never escapes as TypeError, OverflowError or
ValueError. ``show`` formats any value for a message, whatever it is.
"""

from __future__ import annotations

import enum
import math
import numbers
from typing import Any, TypeVar

import numpy as np

from .errors import E_INVALIDARG, DMLError

UINT32_MAX = 2**32 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT64_MAX = 2**64 - 1
INT_RANGES = {"UINT": (0, UINT32_MAX), "INT": (INT32_MIN, INT32_MAX), "UINT64": (0, UINT64_MAX)}

E = TypeVar("E", bound=enum.IntEnum)
F = TypeVar("F", bound=enum.IntFlag)


def show(value: Any) -> str:
    """A value as an error message shows it: enums by C name, arrays as {1, 2, 3}, huge integers
    by their size (``str`` refuses more than 4,300 digits), anything else by its type name."""
    if isinstance(value, enum.Enum) and value.name is not None:
        return str(value.name)
    if isinstance(value, (tuple, list)):
        return "{" + ", ".join(show(v) for v in value[:16]) + (", ..." if len(value) > 16
                                                              else "") + "}"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, np.integer)) and abs(int(value)) >= 10**30:
        return f"an integer of {int(value).bit_length()} bits"
    if isinstance(value, (int, np.integer, np.floating)):
        return str(value)
    if isinstance(value, str):  # as given (rules pass names and phrases as values too)
        return value if len(value) <= 60 else value[:57] + "..."
    return type(value).__name__


def fail(where: str, value: Any, rule: str, hresult: int = E_INVALIDARG) -> DMLError:
    """'<where> = <value> is invalid: <rule>.' (to raise)."""
    return DMLError(hresult, f"{where} = {show(value)} is invalid: {rule}.")


def is_int(value: Any) -> bool:
    """A Python or NumPy integer (bool is not one)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def to_int(value: Any, where: str, ctype: str = "UINT", lo: int | None = None,
           hi: int | None = None, rule: str | None = None) -> int:
    """A C integer of ``ctype`` (UINT, INT or UINT64), optionally in a narrower [lo, hi] (``rule``
    says why, when the range is narrower)."""
    clo, chi = INT_RANGES.get(ctype, (None, None))
    lo = clo if lo is None else lo
    hi = chi if hi is None else hi
    if not is_int(value):
        raise fail(where, value, f"{ctype} values must be integers")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise fail(where, value, rule or f"{ctype} values lie in [{lo}, {hi}]")
    return v


def to_double(value: Any, where: str) -> float:
    """A real number as a C double (floats keep ±inf and NaN; an integer or a Decimal beyond a
    double's range is refused: C has no such value to convert)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating)):
        raise fail(where, value, "a FLOAT must be a real number")
    try:
        x = float(value)
    except (OverflowError, ValueError, TypeError):
        raise fail(where, value, "a FLOAT must be a real number a double can hold") from None
    if math.isinf(x) and not isinstance(value, (float, np.floating)):
        raise fail(where, value, "a FLOAT must be a real number a double can hold")
    return x


def to_float(value: Any, where: str) -> float:
    """A C FLOAT: a real number rounded to float32 (a double beyond float32's range: ±inf, as C's
    conversion gives)."""
    with np.errstate(over="ignore"):
        return float(np.float32(to_double(value, where)))


def to_enum(value: Any, enum_type: type[E], where: str, hresult: int = E_INVALIDARG) -> E:
    """A member of ``enum_type`` from an integer (or the enum itself)."""
    if not is_int(value) or int(value) not in enum_type._value2member_map_:
        names = ", ".join(enum_type.__members__)
        raise fail(where, value, f"must be a {enum_type.__name__} ({names})", hresult)
    return enum_type(int(value))


def to_flags(value: Any, flags_type: type[F], where: str, allowed: int | None = None) -> F:
    """A combination of ``flags_type`` (of the ``allowed`` bits, default every flag)."""
    mask = 0
    for f in flags_type:
        mask |= int(f)
    mask = mask if allowed is None else allowed
    names = ", ".join(f.name or "" for f in flags_type if int(f) & mask) or "none"
    if not is_int(value) or int(value) < 0 or int(value) & ~mask:
        raise fail(where, value, f"must be a combination of {flags_type.__name__} ({names})")
    return flags_type(int(value))


def as_list(value: Any, where: str, what: str = "a list") -> list:
    """C's count + pointer as one Python sequence (a list or tuple; None is an empty one). Anything
    else (a number, a string, a generator, an array) is E_INVALIDARG naming the argument."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise DMLError(E_INVALIDARG,
                   f"{where}: {type(value).__name__} is invalid: must be {what} (or None)")


__all__ = ["INT32_MAX", "INT32_MIN", "UINT32_MAX", "UINT64_MAX", "as_list", "fail", "is_int",
           "show", "to_double", "to_enum", "to_flags", "to_float", "to_int"]
