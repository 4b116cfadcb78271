"""Feature levels the emulator knows, emulates and parses (``3_1``, ``3.1``, ``0x3100``)."""

from __future__ import annotations

import operator
import os
import re

from descriptors import DML_FEATURE_LEVEL

FL = DML_FEATURE_LEVEL

# Every level of DirectML.h, 1_0 (DirectML 1.0) to 6_4 (DirectML 1.15, the last: DirectML is in
# maintenance mode); a device can emulate any of them.
ALL_LEVELS: tuple[DML_FEATURE_LEVEL, ...] = tuple(sorted(FL))
EMULATED_LEVELS = ALL_LEVELS
MAX_EMULATED = EMULATED_LEVELS[-1]
ENV_VAR = "DML_EMULATOR_FEATURE_LEVEL"


def level_name(level: int) -> str:
    """``DML_FEATURE_LEVEL_3_1`` (or the hex value for an unknown level)."""
    try:
        return FL(level).name
    except ValueError:
        return f"0x{int(level):X}"


def short_level(level: int) -> str:
    return level_name(level).removeprefix("DML_FEATURE_LEVEL_")


def parse_level(text: str | int) -> DML_FEATURE_LEVEL:
    """A feature level from ``3_1``, ``3.1``, ``0x3100``, ``DML_FEATURE_LEVEL_3_1`` or an int.

    Raises ValueError naming the accepted spellings.
    """
    value = -1
    if isinstance(text, (bool, float)):
        pass  # 3.1 as a float cannot say 3_1 from 3_10: spell it as text
    elif hasattr(type(text), "__index__"):  # int, numpy integers, IntEnum
        try:
            value = operator.index(text)  # type: ignore[arg-type]
        except TypeError:  # a numpy array of more than one element
            value = -1
    elif isinstance(text, str):
        s = text.strip().removeprefix("DML_FEATURE_LEVEL_")
        m = re.fullmatch(r"(\d+)[._](\d+)", s)
        if m:
            value = (int(m.group(1)) << 12) | (int(m.group(2)) << 8)
        else:
            try:
                value = int(s, 0)
            except ValueError:
                value = -1
    try:
        return FL(value)
    except ValueError:
        shown = f"'{text}'" if isinstance(text, str) else f"a {type(text).__name__}" \
            if value == -1 else hex(value) if value.bit_length() < 64 else "a huge integer"
        raise ValueError(
            f"{shown} is not a DirectML feature level (write 3_1, 3.1 or 0x3100; known: "
            + ", ".join(short_level(x) for x in ALL_LEVELS) + ")") from None


def default_level() -> DML_FEATURE_LEVEL:
    """The level a device emulates when none is asked for: $DML_EMULATOR_FEATURE_LEVEL or 6_4,
    the level of today's DirectML redistributable."""
    env = os.environ.get(ENV_VAR)
    return parse_level(env) if env else MAX_EMULATED
