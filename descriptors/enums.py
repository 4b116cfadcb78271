"""Enumerations and constants of DirectML.h, with the header's numeric values.

The enum classes are generated from the schema facts (``descriptors/_generated.py``): every enum is
a Python ``IntEnum``/``IntFlag`` named like the C enum, whose members carry the full C constant
names (``DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_FLOAT32``), and every constant is also exported
at module level under its C name (``DML_TENSOR_DATA_TYPE_FLOAT32 == 1``), so C++ DirectML code
ports line by line. ``parse_enum`` accepts the short spellings used by DxDispatch model files.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from ._generated import *  # noqa: F403 - the enum classes
from ._generated import ENUMS

# Every C constant at module level under its C name (aliases included).
for _enum in ENUMS:
    globals().update(_enum.__members__)

DML_TENSOR_DIMENSION_COUNT_MAX = 5
DML_TENSOR_DIMENSION_COUNT_MAX1 = 8
DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16
DML_TEMPORARY_BUFFER_ALIGNMENT = 256
DML_PERSISTENT_BUFFER_ALIGNMENT = 256

def _prefix(enum_type: type[enum.Enum]) -> str:
    """What the C names of an enum's constants share (``DML_TENSOR_FLAG_``); an enum of one
    constant has the enum's own name as its prefix."""
    names = list(enum_type.__members__)
    if len(names) == 1:
        return enum_type.__name__ + "_"
    prefix = min(names)
    for name in names:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix[:prefix.rfind("_") + 1]


# The prefix of each enum's C constants, for short names ("FLOAT32") in model files.
_PREFIX: dict[type, str] = {e: _prefix(e) for e in ENUMS}

E = TypeVar("E", bound=enum.IntEnum)


def enum_prefix(enum_type: type) -> str:
    """The common prefix of an enum's C constant names (``DML_TENSOR_DATA_TYPE_``)."""
    return _PREFIX[enum_type]


def short_name(value: enum.IntEnum | enum.IntFlag) -> str:
    """The C name without its prefix: ``FLOAT32`` for DML_TENSOR_DATA_TYPE_FLOAT32."""
    return str(value.name)[len(_PREFIX[type(value)]):]


def parse_enum(enum_type: type[E], text: str) -> E:
    """An enum member from its full (``DML_TENSOR_DATA_TYPE_FLOAT32``) or short (``FLOAT32``) name.

    Raises ``KeyError`` naming the enum and the valid spellings when the name is unknown.
    """
    members = enum_type.__members__
    name = text.strip()
    if name in members:
        return members[name]
    full = _PREFIX[enum_type] + name
    if full in members:
        return members[full]
    raise KeyError(f"'{text}' is not a {enum_type.__name__} (expected a name such as "
                   f"{next(iter(members))} or {short_name(next(iter(members.values())))})")
