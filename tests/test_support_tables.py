"""The support tables, checked against the schema, and driven through the device.

Structure: every operator type has an entry; its tensors, "same" constraints, enum levels and rule
names exist. Behaviour, from each group's examples (``tests/support/examples/<group>.json``: valid
descs written as DxDispatch model files write them, with the lowest level at which each is valid):
the example is valid exactly from that level and rejected one level below; a data type no band
allows and a dimension count the last band refuses are rejected naming the field; and every data
type a later band adds is accepted from that band's level and rejected below it, naming the level.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from descriptors import DML_BUFFER_TENSOR_DESC, DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE, SCHEMA
from emulator import DMLCreateDevice1, DMLError, min_feature_level
from emulator.dxdispatch import operator_desc_from_json
from emulator.featurelevels import ALL_LEVELS, level_name, short_level
from emulator.fieldtypes import ENUM_BY_NAME
from emulator.registry import REGISTRY
from emulator.support.loader import HERE, SUPPORT, level

T = DML_TENSOR_DATA_TYPE
EXAMPLES_DIR = Path(__file__).parent / "support" / "examples"
GROUPS = sorted(p.stem for p in HERE.glob("*.json") if p.name != "fused_activations.json")


def test_every_operator_type_has_a_support_entry():
    missing = [op.name for op in REGISTRY if op not in SUPPORT]
    assert not missing, f"no support table for {missing}"


@pytest.mark.parametrize("op", list(SUPPORT), ids=lambda op: op.name)
def test_entry_agrees_with_the_schema(op):
    entry, sch = SUPPORT[op], SCHEMA[op]
    tensors = {f.name for f in sch.fields if f.is_tensor}
    required = {f.name for f in sch.fields if f.is_tensor and not f.optional}
    assert entry.bands, "at least one band"
    assert entry.bands[0].level >= entry.available or entry.bands[0].level <= entry.available
    for band in entry.bands:
        assert set(band.tensors) <= tensors, (short_level(band.level), set(band.tensors) - tensors)
        assert required <= set(band.tensors), (short_level(band.level), required - set(band.tensors))
        for dims, types in band.tensors.values():
            assert dims and set(dims) <= set(range(1, 9)) and types
    for same in entry.same:
        assert set(same.tensors) <= tensors and set(same.what) <= {"DataType", "DimensionCount",
                                                                   "Sizes"}
    fields = {f.name: f for f in sch.fields}
    for field, values in entry.enum_levels.items():
        assert fields[field].is_enum
        assert set(values) <= set(ENUM_BY_NAME[fields[field].type].__members__)
    assert all(callable(rule) for rule in entry.rules)


# -- behaviour, from the examples ----------------------------------------------------------------
def _examples() -> list[tuple[str, str, int, dict[str, Any]]]:
    out = []
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        for op_name, cases in json.loads(path.read_text()).items():
            for i, case in enumerate(cases):
                out.append((path.stem, op_name, i, case))
    return out


EXAMPLES = _examples()


def _desc(op_name: str, case: dict[str, Any]) -> Any:
    return operator_desc_from_json({"Type": op_name, "Desc": case["desc"]}, op_name)


def _error(desc: Any, lv: int) -> str | None:
    try:
        DMLCreateDevice1(feature_level=lv).CreateOperator(desc)
    except DMLError as e:
        return str(e)
    return None


def _retype(desc: Any, names: set[str], data_type: T) -> Any:
    """The desc with the named tensors (and every tensor of a named array) of ``data_type``."""
    def one(t: Any) -> Any:
        inner = t.Desc if not isinstance(t, DML_BUFFER_TENSOR_DESC) else t
        new = dataclasses.replace(inner, DataType=data_type, TotalTensorSizeInBytes=None)
        return dataclasses.replace(t, Desc=new) if inner is not t else new

    inner = desc.Desc
    changes = {}
    for name in names:
        value = getattr(inner, name)
        if value is not None:
            changes[name] = tuple(one(x) for x in value) if isinstance(value, tuple) else one(value)
    return dataclasses.replace(desc, Desc=dataclasses.replace(inner, **changes))


def _type_group(op: DML_OPERATOR_TYPE, name: str) -> set[str]:
    """The tensor and every tensor that must share its DataType."""
    group = {name}
    for same in SUPPORT[op].same:
        if "DataType" in same.what and name in same.tensors:
            group |= set(same.tensors)
    return group


def test_every_operator_has_an_example():
    covered = {op for _, op, _, _ in EXAMPLES}
    missing = [op.name for op in SUPPORT if op.name not in covered]
    assert not missing, f"no example in tests/support/examples for {missing}"


@pytest.mark.parametrize("group,op_name,i,case", EXAMPLES,
                         ids=[f"{op}-{i}" for _, op, i, _ in EXAMPLES])
def test_example_is_valid_exactly_from_its_level(group, op_name, i, case):
    desc = _desc(op_name, case)
    lowest = level(case["min_level"])
    assert min_feature_level(desc) == lowest, _error(desc, ALL_LEVELS[-1])
    assert _error(desc, lowest) is None
    below = [lv for lv in ALL_LEVELS if lv < lowest]
    if below:
        message = _error(desc, below[-1])
        assert message is not None and ("or later allows it" in message
                                        or "is invalid" in message), message


@pytest.mark.parametrize("group,op_name,i,case", [e for e in EXAMPLES if e[2] == 0],
                         ids=[op for _, op, i, _ in EXAMPLES if i == 0])
def test_band_boundaries_from_the_example(group, op_name, i, case):
    """A type no band allows is refused naming DataType; a rank the last band refuses names
    DimensionCount; each type a later band adds is valid from that band's level only."""
    op = DML_OPERATOR_TYPE[op_name]
    desc = _desc(op_name, case)
    bands = SUPPORT[op].bands
    last = ALL_LEVELS[-1]
    tensors = [n for n in bands[-1].tensors if getattr(desc.Desc, n) is not None]
    for name in tensors:
        ever = {t for b in bands for t in b.tensors.get(name, ((), ()))[1]}
        never = [t for t in T if t != T.DML_TENSOR_DATA_TYPE_UNKNOWN and t not in ever]
        if never:
            message = _error(_retype(desc, {name}, never[0]), last)
            assert message is not None and ".DataType = " in message, (name, message)
        for b_prev, b in itertools.pairwise(bands):
            new = set(b.tensors.get(name, ((), ()))[1]) - set(b_prev.tensors.get(name, ((), ()))[1])
            for t in sorted(new):
                mutated = _retype(desc, _type_group(op, name), t)
                if _error(mutated, b.level) is not None:
                    continue  # another tensor's type must follow (a rule ties them)
                before = [lv for lv in ALL_LEVELS if lv < b.level][-1]
                message = _error(mutated, before)
                assert message is not None, (name, t.name, level_name(b.level))
                if ".DataType = " in message:  # the band refused it: it names where it is allowed
                    assert "or later allows it" in message, message


@pytest.mark.parametrize("group,op_name,i,case", [e for e in EXAMPLES if e[2] == 0],
                         ids=[op for _, op, i, _ in EXAMPLES if i == 0])
def test_a_rank_the_last_band_refuses_is_refused(group, op_name, i, case):
    op = DML_OPERATOR_TYPE[op_name]
    desc = _desc(op_name, case)
    last = SUPPORT[op].bands[-1]
    for name, (dims, _) in last.tensors.items():
        value = getattr(desc.Desc, name)
        refused = [n for n in range(1, 9) if n not in dims]
        if value is None or isinstance(value, tuple) or not refused:
            continue
        inner = value.Desc
        n = refused[0]
        sizes = (tuple(inner.Sizes) + (1,) * 8)[:n]
        new = dataclasses.replace(inner, Sizes=sizes, DimensionCount=n, Strides=None,
                                  TotalTensorSizeInBytes=None)
        message = _error(dataclasses.replace(desc, Desc=dataclasses.replace(
            desc.Desc, **{name: dataclasses.replace(value, Desc=new)})), ALL_LEVELS[-1])
        assert message is not None and ("DimensionCount" in message or "Sizes" in message), \
            (name, n, message)


# Hostile values for any field: only DMLError may come out of CreateOperator, never a crash.
HOSTILE = [None, -1, 0, 2**32, 2**64, 10**5000, 1.5, float("nan"), float("inf"), "x", (), (1,),
           (0, 0, 0, 0, 0, 0, 0, 0, 0), True, object()]


@pytest.mark.parametrize("group,op_name,i,case", [e for e in EXAMPLES if e[2] == 0],
                         ids=[op for _, op, i, _ in EXAMPLES if i == 0])
def test_hostile_field_values_give_dml_errors_only(group, op_name, i, case):
    desc = _desc(op_name, case)
    device = DMLCreateDevice1()
    for f in SCHEMA[DML_OPERATOR_TYPE[op_name]].fields:
        for value in HOSTILE:
            bad = dataclasses.replace(desc, Desc=dataclasses.replace(desc.Desc, **{f.name: value}))
            with contextlib.suppress(DMLError):
                device.CreateOperator(bad)
            min_feature_level(bad)  # the same path at every level: no other exception either
        if f.is_tensor and getattr(desc.Desc, f.name) is not None \
                and not isinstance(getattr(desc.Desc, f.name), tuple):
            t = getattr(desc.Desc, f.name).Desc
            for sizes in [(1,) * 8, (2**31, 2**31), (0,), tuple(t.Sizes)[::-1], (3,) * 8]:
                bad_t = dataclasses.replace(t, Sizes=sizes, DimensionCount=len(sizes),
                                            Strides=None, TotalTensorSizeInBytes=None)
                bad = dataclasses.replace(desc, Desc=dataclasses.replace(
                    desc.Desc, **{f.name: dataclasses.replace(getattr(desc.Desc, f.name),
                                                              Desc=bad_t)}))
                min_feature_level(bad)
