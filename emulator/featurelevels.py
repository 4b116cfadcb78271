"""Feature levels the emulator knows, emulates and parses (``3_1``, ``3.1``, ``0x3100``)."""

from __future__ import annotations

import os
import re

from descriptors import DML_FEATURE_LEVEL

FL = DML_FEATURE_LEVEL

# Levels a device can emulate (the range); validation tables may know later levels too.
EMULATED_LEVELS: tuple[DML_FEATURE_LEVEL, ...] = (
    FL.DML_FEATURE_LEVEL_1_0, FL.DML_FEATURE_LEVEL_2_0, FL.DML_FEATURE_LEVEL_2_1,
    FL.DML_FEATURE_LEVEL_3_0, FL.DML_FEATURE_LEVEL_3_1, FL.DML_FEATURE_LEVEL_4_0,
)
MAX_EMULATED = EMULATED_LEVELS[-1]
ALL_LEVELS: tuple[DML_FEATURE_LEVEL, ...] = tuple(sorted(FL))
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
    if isinstance(text, int):
        value = text
    else:
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
        raise ValueError(
            f"'{text}' is not a DirectML feature level (write 3_1, 3.1 or 0x3100; known: "
            + ", ".join(short_level(x) for x in ALL_LEVELS) + ")") from None


def default_level() -> DML_FEATURE_LEVEL:
    """The level a device emulates when none is asked for: $DML_EMULATOR_FEATURE_LEVEL or 4_0."""
    env = os.environ.get(ENV_VAR)
    return parse_level(env) if env else MAX_EMULATED
