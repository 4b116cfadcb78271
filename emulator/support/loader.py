"""Load the support tables (``emulator/support/*.json``) and the rules named in them.

``SUPPORT[operator]`` is an ``OperatorSupport``: the level of the page's Availability line, the
bands of its "Tensor support" tables, its "must have the same" constraints, the enum values only
some levels accept, and the rule functions (looked up by name in the group's module). See
docs/support-tables.md for the format; ``tests/test_support_tables.py`` checks every file against
the schema.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from descriptors import DML_FEATURE_LEVEL, DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE

from ..featurelevels import parse_level
from ..validation import Band, Context

HERE = Path(__file__).resolve().parent
NOT_OPERATOR_FILES = ("fused_activations.json",)
Rule = Callable[[Context, SimpleNamespace], None]


@dataclass(frozen=True)
class Same:
    """Tensors that must agree on some properties (DataType, DimensionCount, Sizes)."""

    tensors: tuple[str, ...]
    what: tuple[str, ...]


@dataclass(frozen=True)
class OperatorSupport:
    operator: DML_OPERATOR_TYPE
    group: str
    source: str
    available: DML_FEATURE_LEVEL
    bands: tuple[Band, ...]
    same: tuple[Same, ...]
    enum_levels: dict[str, dict[str, DML_FEATURE_LEVEL]]
    rule_names: tuple[str, ...]
    notes: str

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The rule functions, from the group's module (imported on first use, so that
        ``import emulator`` does not import every group's rules)."""
        if not self.rule_names:
            return ()
        module = importlib.import_module(f"{__package__}.{self.group}")
        return tuple(getattr(module, name) for name in self.rule_names)


level = parse_level  # "2_1" → DML_FEATURE_LEVEL_2_1


def dims(text: str | int) -> tuple[int, ...]:
    """``"1-8"``, ``"4"`` or ``"4,5"`` → the allowed dimension counts."""
    out: list[int] = []
    for part in str(text).split(","):
        lo, _, hi = part.strip().partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return tuple(out)


def data_type(name: str) -> DML_TENSOR_DATA_TYPE:
    return DML_TENSOR_DATA_TYPE[f"DML_TENSOR_DATA_TYPE_{name}"]


def _band(row: dict[str, Any]) -> Band:
    return Band(level(row["level"]), {
        name: (dims(t["dims"]), tuple(data_type(x) for x in t["types"]))
        for name, t in row["tensors"].items()})


def _support(op_name: str, group: str, row: dict[str, Any]) -> OperatorSupport:
    return OperatorSupport(
        DML_OPERATOR_TYPE[op_name], group, row.get("source", ""), level(row["available"]),
        tuple(sorted((_band(b) for b in row.get("bands", ())), key=lambda b: b.level)),
        tuple(Same(tuple(s["tensors"]), tuple(s["what"])) for s in row.get("same", ())),
        {field: {value: level(lv) for value, lv in values.items()}
         for field, values in row.get("enum_levels", {}).items()},
        tuple(row.get("rules", ())), row.get("notes", ""))


def load() -> dict[DML_OPERATOR_TYPE, OperatorSupport]:
    table: dict[DML_OPERATOR_TYPE, OperatorSupport] = {}
    for path in sorted(HERE.glob("*.json")):
        if path.name in NOT_OPERATOR_FILES:
            continue
        for op_name, row in json.loads(path.read_text(encoding="utf-8")).items():
            if op_name.startswith("DML_OPERATOR_"):
                table[DML_OPERATOR_TYPE[op_name]] = _support(op_name, path.stem, row)
    return table


SUPPORT: dict[DML_OPERATOR_TYPE, OperatorSupport] = load()
