"""Hostile values at every public entry point (issue 11, item 9): whatever a caller passes, in
whichever argument or field, the only exception that leaves the API is ``DMLError``, and a
descriptor holds any value without complaint (the device judges it).

Every entry point has a valid baseline call; each argument, each struct field of its arguments,
and each field of every operator's first example desc (tests/support/examples) is replaced in turn
by each value of ``HOSTILE`` (numbers of every size and kind, strings, containers, numpy scalars
and arrays, objects of unrelated types). A hypothesis test then mixes several at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import descriptors
from descriptors import *
from emulator import (
    Buffer,
    CommandList,
    CommandQueue,
    DMLCreateDevice,
    DMLCreateDevice1,
    DMLError,
    min_feature_level,
)
from emulator.dxdispatch import operator_desc_from_json

EXAMPLES_DIR = Path(__file__).parent / "support" / "examples"


class Unrelated:
    """An object of a type no API expects."""


def _hostile() -> list[Callable[[], Any]]:
    """Factories (an iterator is fresh each time) of values no C type holds as given."""
    values: list[Any] = [
        None, True, False, 0, -1, 1, 3, 7, 2**31, -2**31 - 1, 2**32, 2**63, 2**64, -2**64,
        10**5000, -10**5000, 0.0, -0.0, 0.5, 1.5, 1e39, 1e308, float("inf"), float("-inf"),
        float("nan"), 1 + 2j, Fraction(1, 3), Decimal("1.5"), Decimal("nan"), Decimal("1e5000"),
        "", "16", "FLOAT32", "DML_TENSOR_DATA_TYPE_FLOAT32", "3_1", b"\x01\x02", bytearray(4),
        [], [None], [1, 2], [2**64], [float("inf")], ["1"], [[1]], (1, 2.5), (), {}, {"a": 1},
        {1: 2}, {1, 2}, frozenset(), range(3), slice(1),
        np.uint16(0x3100), np.int64(-1), np.uint64(2**64 - 1), np.float32("inf"),
        np.float64("nan"), np.float16(1), np.bool_(True), np.str_("x"), np.array(5),
        np.array([1, 2]), np.zeros((2, 2)), np.array([object()]), np.zeros(0),
        np.zeros(4, np.float32), np.array(["a"]), np.datetime64("2020-01-01"),
        object(), Unrelated(), len, type, Ellipsis, NotImplemented, Buffer(16),
        DML_SIZE_2D(1, 2), DML_SCALE_BIAS(1.0, 0.0), DML_BUFFER_BINDING(),
        DML_TENSOR_DATA_TYPE_FLOAT32, DML_FEATURE_LEVEL_3_1, DML_OPERATOR_ELEMENT_WISE_ADD,
        DML_BINDING_TYPE_BUFFER_ARRAY,
    ]
    return [lambda v=v: v for v in values] + [lambda: iter([1, 2]), lambda: (x for x in [4])]


HOSTILE = _hostile()


def only_dml_errors(call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except DMLError:
        pass
    except Exception as e:
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e


def with_each_hostile(label: str, build: Callable[[Any], Callable[[], Any]]) -> list[str]:
    """Run ``build(value)()`` for every hostile value; the failures, described."""
    failures = []
    for make in HOSTILE:
        value = make()
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "huge int"
        try:
            only_dml_errors(build(value), f"{label} = {shown[:60]}")
        except AssertionError as e:
            failures.append(str(e)[:300])
    return failures


# -- baselines ----------------------------------------------------------------------------------
def _first_examples() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        for op_name, cases in json.loads(path.read_text()).items():
            out.setdefault(op_name, cases[0]["desc"])
    return out


EXAMPLES = _first_examples()


def example(op_name: str) -> Any:
    return operator_desc_from_json({"Type": op_name, "Desc": EXAMPLES[op_name]}, op_name)


def identity_desc(n: int = 4, flags: int = 0) -> Any:
    t = DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(DML_TENSOR_DATA_TYPE_FLOAT32, flags,
                                                    Sizes=(n,)))
    out = DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(DML_TENSOR_DATA_TYPE_FLOAT32, Sizes=(n,)))
    return DML_OPERATOR_DESC(Desc=DML_ACTIVATION_IDENTITY_OPERATOR_DESC(t, out))


class Rig:
    """A device with a compiled operator, its initializer, tables and a command list."""

    def __init__(self, owned: bool = False):
        self.device = DMLCreateDevice1(feature_level="6_4")
        self.op = self.device.CreateOperator(identity_desc(flags=int(owned)))
        self.compiled = self.device.CompileOperator(self.op)
        self.init = self.device.CreateOperatorInitializer([self.compiled])
        self.init_table = self.device.CreateBindingTable(
            DML_BINDING_TABLE_DESC(self.init, SizeInDescriptors=8))
        self.table = self.device.CreateBindingTable(
            DML_BINDING_TABLE_DESC(self.compiled, SizeInDescriptors=8))
        self.x, self.y = Buffer(16), Buffer(16)
        self.recorder = self.device.CreateCommandRecorder()
        self.commands = CommandList()

    def binding(self, buf: Any = None) -> Any:
        return DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(buf or self.x, 0, 16))


# -- construction never judges ------------------------------------------------------------------
STRUCT_CLASSES = sorted(
    {getattr(descriptors, n) for n in dir(descriptors)
     if n.startswith("DML_") and isinstance(getattr(descriptors, n), type)
     and dataclasses.is_dataclass(getattr(descriptors, n))}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", STRUCT_CLASSES, ids=lambda c: c.__name__)
def test_every_struct_holds_any_value_in_any_field(cls):
    failures = []
    for f in dataclasses.fields(cls):
        for make in HOSTILE:
            try:
                required = {g.name: None for g in dataclasses.fields(cls)
                            if g.default is dataclasses.MISSING}
                cls(**{**required, f.name: make()})
            except Exception as e:
                failures.append(f"{cls.__name__}({f.name}=...): {type(e).__name__}: {e}"[:200])
    assert not failures, "\n".join(failures[:20])


# -- the helpers and the stand-ins --------------------------------------------------------------
def test_descriptor_helpers():
    failures = []
    for i in range(4):
        def build(v, i=i):
            args: list[Any] = [DML_TENSOR_DATA_TYPE_FLOAT32, 2, (2, 3), (3, 1)]
            args[i] = v
            return lambda: DMLCalcBufferTensorSize(*args)
        failures += with_each_hostile(f"DMLCalcBufferTensorSize arg {i}", build)
    for i in range(4):
        def build(v, i=i):
            args: list[Any] = [(2, 3), DML_TENSOR_DATA_TYPE_FLOAT32, None, 0]
            args[i] = v
            return lambda: tensor_desc(*args)
        failures += with_each_hostile(f"tensor_desc arg {i}", build)
    assert not failures, "\n".join(failures[:30])


def test_buffer():
    failures = with_each_hostile("Buffer(size)", lambda v: lambda: Buffer(v))
    failures += with_each_hostile("Buffer.from_array", lambda v: lambda: Buffer.from_array(v))
    buf = Buffer(64)
    for i in range(3):
        def build(v, i=i):
            args: list[Any] = [np.float32, (4,), 0]
            args[i] = v
            return lambda: buf.numpy(*args)
        failures += with_each_hostile(f"Buffer.numpy arg {i}", build)
    assert not failures, "\n".join(failures[:30])


def test_creating_devices_and_feature_queries():
    failures = with_each_hostile("DMLCreateDevice flags", lambda v: lambda: DMLCreateDevice(None, v))
    for i in range(3):
        def build(v, i=i):
            args: list[Any] = [None, 0, DML_FEATURE_LEVEL_1_0]
            args[i] = v
            return lambda: DMLCreateDevice1(*args)
        failures += with_each_hostile(f"DMLCreateDevice1 arg {i}", build)
    failures += with_each_hostile("DMLCreateDevice1 feature_level",
                                  lambda v: lambda: DMLCreateDevice1(feature_level=v))
    device = DMLCreateDevice1(feature_level="6_4")
    failures += with_each_hostile("CheckFeatureSupport feature", lambda v: lambda: (
        device.CheckFeatureSupport(v, DML_FEATURE_QUERY_FEATURE_LEVELS([DML_FEATURE_LEVEL_1_0]))))
    failures += with_each_hostile("CheckFeatureSupport query", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, v)))
    failures += with_each_hostile("CheckFeatureSupport query", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, v)))
    failures += with_each_hostile("DML_FEATURE_QUERY_FEATURE_LEVELS levels", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS,
                                   DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=v))))
    failures += with_each_hostile("DML_FEATURE_QUERY_FEATURE_LEVELS levels[0]", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS,
                                   DML_FEATURE_QUERY_FEATURE_LEVELS(RequestedFeatureLevels=[v]))))
    failures += with_each_hostile("DML_FEATURE_QUERY_FEATURE_LEVELS count", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS, DML_FEATURE_QUERY_FEATURE_LEVELS(
            v, [DML_FEATURE_LEVEL_1_0]))))
    failures += with_each_hostile("DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT", lambda v: lambda: (
        device.CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT,
                                   DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT(v))))
    assert not failures, "\n".join(failures[:30])


# -- operator descs -----------------------------------------------------------------------------
@pytest.mark.parametrize("op_name", sorted(EXAMPLES))
def test_every_field_of_every_operator(op_name):
    """Each field of the operator's desc, each field of its first tensor and (if any) of its
    fused activation: only DMLError from CreateOperator and min_feature_level."""
    device = DMLCreateDevice1(feature_level="6_4")
    base = example(op_name)
    inner = base.Desc
    failures = with_each_hostile("DML_OPERATOR_DESC.Type", lambda v: lambda: (
        device.CreateOperator(DML_OPERATOR_DESC(v, inner))))
    failures += with_each_hostile("DML_OPERATOR_DESC.Desc", lambda v: lambda: (
        device.CreateOperator(DML_OPERATOR_DESC(base.Type, v))))
    for f in dataclasses.fields(inner):
        failures += with_each_hostile(f"{op_name}.{f.name}", lambda v, f=f: lambda: (
            device.CreateOperator(DML_OPERATOR_DESC(Desc=dataclasses.replace(inner, **{f.name: v})))))
        value = getattr(inner, f.name)
        first = value[0] if isinstance(value, tuple) and value else value
        if isinstance(first, (DML_TENSOR_DESC, DML_OPERATOR_DESC)) and first.Desc is not None:
            # The wrapper's own fields (Type, Desc), then each field of what it wraps.
            places = [("", g.name) for g in dataclasses.fields(first)] + \
                [("Desc", g.name) for g in dataclasses.fields(first.Desc)]
            for outer, name in places:
                def build(v, f=f, outer=outer, name=name, first=first, value=value):
                    changed = dataclasses.replace(first, **{name: v}) if not outer else \
                        dataclasses.replace(first, Desc=dataclasses.replace(first.Desc, **{name: v}))
                    new = (changed, *value[1:]) if isinstance(value, tuple) else changed
                    return lambda: device.CreateOperator(
                        DML_OPERATOR_DESC(Desc=dataclasses.replace(inner, **{f.name: new})))
                failures += with_each_hostile(f"{op_name}.{f.name}.{outer}.{name}", build)
    failures += with_each_hostile("min_feature_level", lambda v: lambda: min_feature_level(v))
    assert not failures, "\n".join(failures[:30])


# -- compiling, initializing, binding, recording, executing -------------------------------------
def test_compile_and_initializer():
    rig = Rig()
    failures = with_each_hostile("CompileOperator op", lambda v: lambda: (
        rig.device.CompileOperator(v)))
    failures += with_each_hostile("CompileOperator flags", lambda v: lambda: (
        rig.device.CompileOperator(rig.op, v)))
    failures += with_each_hostile("CreateOperatorInitializer", lambda v: lambda: (
        rig.device.CreateOperatorInitializer(v)))
    failures += with_each_hostile("CreateOperatorInitializer [v]", lambda v: lambda: (
        rig.device.CreateOperatorInitializer([v])))
    failures += with_each_hostile("IDMLOperatorInitializer.Reset", lambda v: lambda: (
        Rig().init.Reset(v)))
    failures += with_each_hostile("CreateBindingTable", lambda v: lambda: (
        rig.device.CreateBindingTable(v)))
    for name in ("Dispatchable", "CPUDescriptorHandle", "GPUDescriptorHandle", "SizeInDescriptors"):
        failures += with_each_hostile(f"DML_BINDING_TABLE_DESC.{name}", lambda v, name=name: (
            lambda: rig.device.CreateBindingTable(dataclasses.replace(
                DML_BINDING_TABLE_DESC(rig.compiled, SizeInDescriptors=8), **{name: v}))))
    failures += with_each_hostile("IDMLBindingTable.Reset", lambda v: lambda: (
        Rig().table.Reset(v)))
    assert not failures, "\n".join(failures[:30])


def _binding_variants(rig: Rig, v: Any) -> list[Any]:
    """``v`` in each place of a binding list."""
    good = DML_BUFFER_BINDING(rig.x, 0, 16)
    return [v, [v], [DML_BINDING_DESC(v, good)], [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, v)],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(v, 0, 16))],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(rig.x, v, 16))],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER, DML_BUFFER_BINDING(rig.x, 0, v))],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(v, [good]))],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(1, v))],
            [DML_BINDING_DESC(DML_BINDING_TYPE_BUFFER_ARRAY, DML_BUFFER_ARRAY_BINDING(1, [v]))],
            [DML_BUFFER_ARRAY_BINDING(1, [v])]]


@pytest.mark.parametrize("owned", [False, True])
def test_bindings(owned):
    failures = []
    for method in ("BindInputs", "BindOutputs"):
        for which in ("table", "init_table"):
            for place in range(len(_binding_variants(Rig(), None))):
                def build(v, method=method, which=which, place=place):
                    rig = Rig(owned)
                    arg = _binding_variants(rig, v)[place]
                    return lambda: getattr(getattr(rig, which), method)(arg)
                failures += with_each_hostile(f"{which}.{method} place {place}", build)
    for method in ("BindTemporaryResource", "BindPersistentResource"):
        for place in range(len(_binding_variants(Rig(), None))):
            def build(v, method=method, place=place):
                rig = Rig(owned)
                arg = _binding_variants(rig, v)[place]
                arg = arg[0] if isinstance(arg, list) and arg else arg
                return lambda: getattr(rig.table, method)(arg)
            failures += with_each_hostile(f"{method} place {place}", build)
    assert not failures, "\n".join(failures[:30])


def _ready(owned: bool = False) -> Rig:
    rig = Rig(owned)
    rig.init_table.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[
        DML_BUFFER_BINDING(rig.x, 0, 16) if owned else DML_BUFFER_BINDING()])])
    if not owned:
        rig.table.BindInputs([rig.binding()])
    rig.table.BindOutputs([rig.binding(rig.y)])
    return rig


def test_recording_and_executing():
    failures = []
    for i in range(3):
        def build(v, i=i):
            rig = _ready()
            args: list[Any] = [rig.commands, rig.compiled, rig.table]
            args[i] = v
            return lambda: rig.recorder.RecordDispatch(*args)
        failures += with_each_hostile(f"RecordDispatch arg {i}", build)

    def execute(v):
        rig = _ready()
        rig.recorder.RecordDispatch(rig.commands, rig.init, rig.init_table)
        rig.commands.Close()
        return lambda: CommandQueue().ExecuteCommandLists(v)
    failures += with_each_hostile("ExecuteCommandLists", execute)
    failures += with_each_hostile("ExecuteCommandLists [v]", lambda v: (
        lambda: CommandQueue().ExecuteCommandLists([v])))
    failures += with_each_hostile("CommandList.Reset", lambda v: lambda: CommandList().Reset(v))
    assert not failures, "\n".join(failures[:30])


def test_the_pythonic_execute():
    device = DMLCreateDevice1(feature_level="6_4")
    desc = identity_desc()
    x = np.arange(4, dtype=np.float32)
    failures = with_each_hostile("execute desc", lambda v: lambda: device.execute(v, [x]))
    failures += with_each_hostile("execute inputs", lambda v: lambda: device.execute(desc, v))
    failures += with_each_hostile("execute [input]", lambda v: lambda: device.execute(desc, [v]))
    failures += with_each_hostile("execute {input}", lambda v: lambda: (
        device.execute(desc, {"InputTensor": v})))
    failures += with_each_hostile("execute outputs", lambda v: lambda: device.execute(desc, [x], v))
    failures += with_each_hostile("execute [output]", lambda v: lambda: (
        device.execute(desc, [x], [v])))
    assert not failures, "\n".join(failures[:30])


# -- several at once ----------------------------------------------------------------------------
OPS = sorted(EXAMPLES)
hostile = st.sampled_from(HOSTILE).map(lambda make: make())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(op_name=st.sampled_from(OPS), data=st.data())
def test_several_hostile_fields_at_once(op_name, data):
    inner = example(op_name).Desc
    names = [f.name for f in dataclasses.fields(inner)]
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    changes = {n: data.draw(hostile) for n in chosen}
    level = data.draw(st.one_of(hostile, st.sampled_from(["1_0", "3_1", "6_4"])))
    try:
        device = DMLCreateDevice1(feature_level=level)
    except DMLError:
        device = DMLCreateDevice1()
    only_dml_errors(lambda: device.CreateOperator(DML_OPERATOR_DESC(
        Desc=dataclasses.replace(inner, **changes))), f"{op_name} with {sorted(changes)}")


# -- the reported cases, with what their messages say --------------------------------------------
def _elu(alpha: Any) -> Any:
    t = DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(DML_TENSOR_DATA_TYPE_FLOAT32, Sizes=(4,)))
    return DML_OPERATOR_DESC(Desc=DML_ACTIVATION_ELU_OPERATOR_DESC(t, t, alpha))


@pytest.mark.parametrize("call,text", [
    (lambda: Buffer(None), "size_in_bytes = null is invalid: UINT64 values must be integers"),
    (lambda: Buffer("16"), "size_in_bytes = 16 is invalid: UINT64 values must be integers"),
    (lambda: Buffer(1.5), "size_in_bytes = 1.5 is invalid"),
    (lambda: Buffer(-1), "UINT64 values lie in [0, 18446744073709551615]"),
    (lambda: Buffer(2**70), "size_in_bytes = 1180591620717411303424 is invalid"),
    (lambda: Buffer(10**5000), "an integer of 16610 bits"),
    (lambda: Buffer(2**62), "E_OUTOFMEMORY"),
    (lambda: Buffer(16).numpy(np.float32, (5,)), "needs 20 bytes; the buffer holds 16"),
    (lambda: Buffer(16).numpy(offset=17), "offset = 17 is invalid: must lie in [0, 16]"),
    (lambda: Buffer.from_array([object()]), "has no numeric bytes"),
    (lambda: DMLCreateDevice1(feature_level=3.1), "a float is not a DirectML feature level"),
    (lambda: DMLCreateDevice1(feature_level=np.arange(2)), "is not a DirectML feature level"),
    (lambda: DMLCreateDevice1(None, 7), "flags = 7 is invalid: must be a combination of "
                                        "DML_CREATE_DEVICE_FLAGS"),
    (lambda: DMLCreateDevice1().CreateOperator(_elu(10**5000)),
     "ACTIVATION_ELU: Alpha = an integer of 16610 bits is invalid: a FLOAT must be a real number "
     "a double can hold"),
    (lambda: DMLCreateDevice1().CreateOperator(DML_OPERATOR_DESC(Desc=DML_ACTIVATION_ELU_OPERATOR_DESC(
        tensor_desc([float("inf")], DML_TENSOR_DATA_TYPE_FLOAT32),
        tensor_desc([4], DML_TENSOR_DATA_TYPE_FLOAT32), 1.0))),
     "InputTensor.Sizes[0] = inf is invalid: UINT values must be integers"),
    (lambda: DMLCalcBufferTensorSize(DML_TENSOR_DATA_TYPE_FLOAT32, 1, [float("inf")]),
     "sizes must be an array of at least dimensionCount (1) UINT values"),
    (lambda: DMLCalcBufferTensorSize(float("inf"), 1, [4]), "dataType must be a "),
])
def test_reported_cases_name_the_value_and_the_rule(call, text):
    with pytest.raises(DMLError) as e:
        call()
    assert text in str(e.value), str(e.value)


def test_a_desc_holds_infinities_until_the_device_judges_them():
    d = DML_BUFFER_TENSOR_DESC(float("inf"), Sizes=[float("inf")], Strides=[float("-inf")])
    assert d.TotalTensorSizeInBytes is None and d.Sizes == (float("inf"),)
    assert tensor_desc((2, 3), 12345).Desc.DataType == 12345
