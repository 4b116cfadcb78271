"""The emulated IDMLDevice and the objects it creates.

The path of one dispatch: CreateOperator (normalise + validate, build the kernel plan) →
CompileOperator → operator initializer (OWNED_BY_DML inputs captured) → binding table (binding
rules) → RecordDispatch → CommandQueue.ExecuteCommandLists → kernel. Methods keep their C names;
out-parameters become return values; failures raise ``DMLError``. Void methods (Bind*,
RecordDispatch, execution) also remove the device, after which every call fails with
DXGI_ERROR_DEVICE_REMOVED and ``GetDeviceRemovedReason`` returns the first cause.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from descriptors import (
    DML_BINDING_PROPERTIES,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_CREATE_DEVICE_FLAGS,
    DML_EXECUTION_FLAGS,
    DML_FEATURE,
    DML_FEATURE_DATA_FEATURE_LEVELS,
    DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT,
    DML_FEATURE_LEVEL,
    DML_FEATURE_QUERY_FEATURE_LEVELS,
    DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT,
    DML_TENSOR_DATA_TYPE,
)

from . import binding
from .binding import Bound, IDMLBindingTable, bind_owned, bind_resource, bind_tensor, check_counts
from .cvalues import as_list, to_enum, to_flags, to_int
from .dispatchable import CompiledDispatchable, Dispatchable
from .errors import (
    DXGI_ERROR_DEVICE_REMOVED,
    DXGI_ERROR_UNSUPPORTED,
    E_OUTOFMEMORY,
    S_OK,
    DMLError,
    invalid_arg,
)
from .execution import CommandList, InitializerDispatch, OperatorDispatch
from .featurelevels import EMULATED_LEVELS, MAX_EMULATED, default_level, level_name, parse_level
from .registry import OperatorSpec, not_executable, validate_operator
from .validation import Tensor, Validated, labelled

T = DML_TENSOR_DATA_TYPE
# Data types CheckFeatureSupport reports as supported: every type but the 4-bit ones, which
# DML_FEATURE_LEVEL_6_3 added (FLOAT64 is a hardware option on a GPU; the CPU always has it).
FOUR_BIT_TYPES = frozenset((T.DML_TENSOR_DATA_TYPE_UINT4, T.DML_TENSOR_DATA_TYPE_INT4))


def supports_data_type(data_type: int, level: int) -> bool:
    if data_type in FOUR_BIT_TYPES:
        return level >= DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_3
    return data_type != T.DML_TENSOR_DATA_TYPE_UNKNOWN


def DMLCreateDevice(d3d12Device: Any = None,
                    flags: int = DML_CREATE_DEVICE_FLAGS.DML_CREATE_DEVICE_FLAG_NONE
                    ) -> IDMLDevice:
    """Create a device emulating $DML_EMULATOR_FEATURE_LEVEL (default DML_FEATURE_LEVEL_6_4)."""
    return DMLCreateDevice1(d3d12Device, flags, DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_1_0)


def DMLCreateDevice1(d3d12Device: Any = None,
                     flags: int = DML_CREATE_DEVICE_FLAGS.DML_CREATE_DEVICE_FLAG_NONE,
                     minimumFeatureLevel: int = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_1_0,
                     *, feature_level: int | str | None = None) -> IDMLDevice:
    """Create a device emulating ``feature_level`` (the DirectML release's maximum level).

    ``minimumFeatureLevel`` above it fails with DXGI_ERROR_UNSUPPORTED, as in DirectML.
    """
    flags = to_flags(flags, DML_CREATE_DEVICE_FLAGS, "DMLCreateDevice1: flags")
    try:
        level = default_level() if feature_level is None else parse_level(feature_level)
        minimum = parse_level(minimumFeatureLevel)
    except ValueError as e:
        raise invalid_arg(f"DMLCreateDevice1: {e}") from None
    if level not in EMULATED_LEVELS:
        raise DMLError(DXGI_ERROR_UNSUPPORTED,
                       f"DMLCreateDevice1: feature_level = {level_name(level)} is not emulated; "
                       f"dml-emulator emulates {level_name(EMULATED_LEVELS[0])} to "
                       f"{level_name(MAX_EMULATED)}")
    if minimum > level:
        raise DMLError(DXGI_ERROR_UNSUPPORTED,
                       f"DMLCreateDevice1: minimumFeatureLevel = {level_name(minimum)} is higher "
                       f"than the emulated DirectML release supports ({level_name(level)})")
    return IDMLDevice(level, flags)


class IDMLDevice:
    """An emulated DirectML device at one feature level."""

    def __init__(self, level: DML_FEATURE_LEVEL, flags: DML_CREATE_DEVICE_FLAGS):
        self._level = level
        self._flags = flags
        self._removed: DMLError | None = None
        self._lock = threading.Lock()

    # -- device state ------------------------------------------------------------------------
    @property
    def feature_level(self) -> DML_FEATURE_LEVEL:
        return self._level

    def __repr__(self) -> str:
        return f"<IDMLDevice {level_name(self._level)}{' removed' if self._removed else ''}>"

    def _check_alive(self) -> None:
        if self._removed is not None:
            raise DMLError(DXGI_ERROR_DEVICE_REMOVED,
                           f"the device was removed by an earlier failure: {self._removed}")

    def _remove(self, cause: DMLError) -> None:
        with self._lock:
            if self._removed is None and cause.hresult != DXGI_ERROR_DEVICE_REMOVED:
                self._removed = cause

    @contextlib.contextmanager
    def _void_call(self) -> Iterator[None]:
        """A method that returns void in C: a failure raises and also removes the device."""
        self._check_alive()
        try:
            yield
        except DMLError as e:
            self._remove(e)
            raise

    def GetDeviceRemovedReason(self) -> int:
        return S_OK if self._removed is None else self._removed.hresult

    # -- IDMLDevice ------------------------------------------------------------------------
    def CheckFeatureSupport(self, feature: int, query: Any = None) -> Any:
        self._check_alive()
        feature = to_enum(feature, DML_FEATURE, "CheckFeatureSupport: feature",
                          DXGI_ERROR_UNSUPPORTED)
        if feature == DML_FEATURE.DML_FEATURE_FEATURE_LEVELS:
            return self._query_levels(query)
        if not isinstance(query, DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT):
            raise invalid_arg("CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT) needs a "
                              "DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT query")
        dt = to_enum(query.DataType, T, "CheckFeatureSupport: DataType")
        if dt == T.DML_TENSOR_DATA_TYPE_UNKNOWN:
            raise invalid_arg("CheckFeatureSupport: DataType = DML_TENSOR_DATA_TYPE_UNKNOWN is not "
                              "a data type")
        return DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT(
            IsSupported=supports_data_type(dt, self._level))

    def _query_levels(self, query: Any) -> DML_FEATURE_DATA_FEATURE_LEVELS:
        if not isinstance(query, DML_FEATURE_QUERY_FEATURE_LEVELS):
            raise invalid_arg("CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS) needs a "
                              "DML_FEATURE_QUERY_FEATURE_LEVELS query")
        where = "CheckFeatureSupport: DML_FEATURE_QUERY_FEATURE_LEVELS"
        given = as_list(query.RequestedFeatureLevels, f"{where}.RequestedFeatureLevels")
        count = query.RequestedFeatureLevelCount
        to_int(count, f"{where}.RequestedFeatureLevelCount", "UINT", max(1, len(given)),
               max(1, len(given)), "must be >= 1 and equal the length of RequestedFeatureLevels")
        levels = [to_enum(lv, DML_FEATURE_LEVEL, f"{where}.RequestedFeatureLevels[{i}]")
                  for i, lv in enumerate(given)]
        supported = [lv for lv in levels if lv <= self._level]
        if not supported:
            raise DMLError(DXGI_ERROR_UNSUPPORTED,
                           "CheckFeatureSupport: none of the requested feature levels ("
                           + ", ".join(level_name(lv) for lv in levels) + ") is supported; the "
                           f"device emulates {level_name(self._level)}")
        best = DML_FEATURE_LEVEL(max(supported))
        return DML_FEATURE_DATA_FEATURE_LEVELS(MaxSupportedFeatureLevel=best)

    def CreateOperator(self, desc: Any) -> IDMLOperator:
        self._check_alive()
        spec, validated = validate_operator(desc, self._level)
        return IDMLOperator(self, spec, validated)

    def CompileOperator(self, op: IDMLOperator,
                        flags: int = DML_EXECUTION_FLAGS.DML_EXECUTION_FLAG_NONE
                        ) -> IDMLCompiledOperator:
        self._check_alive()
        if not isinstance(op, IDMLOperator) or op._device is not self:
            raise invalid_arg("CompileOperator: op must be an IDMLOperator created by this device")
        flags = to_flags(flags, DML_EXECUTION_FLAGS, "CompileOperator: flags")
        if op.not_executable:
            raise not_executable(op.spec, self._level, op.not_executable)
        return IDMLCompiledOperator(op, flags)

    def CompileGraph(self, desc: Any,
                     flags: int = DML_EXECUTION_FLAGS.DML_EXECUTION_FLAG_NONE
                     ) -> IDMLCompiledOperator:
        """IDMLDevice1::CompileGraph: a DML_GRAPH_DESC of operator (and constant-data) nodes
        compiled into one dispatchable (emulator/graph.py)."""
        self._check_alive()
        from .graph import compile_graph

        return compile_graph(self, desc, flags)

    def CreateOperatorInitializer(self, operators: Sequence[IDMLCompiledOperator] | None = None
                                  ) -> IDMLOperatorInitializer:
        self._check_alive()
        return IDMLOperatorInitializer(self, _compiled_list(self, operators))

    def CreateBindingTable(self, desc: DML_BINDING_TABLE_DESC | None = None
                           ) -> IDMLBindingTable:
        self._check_alive()
        return IDMLBindingTable(self, desc)

    def CreateCommandRecorder(self) -> IDMLCommandRecorder:
        self._check_alive()
        return IDMLCommandRecorder(self)

    # -- the Pythonic layer ----------------------------------------------------------------
    def execute(self, operator_desc: Any, inputs: Any, outputs: Any = None) -> list[np.ndarray]:
        """Create, compile, initialize, bind and dispatch one operator; return its outputs.

        ``inputs``: one array (or None for an absent optional tensor) per input bind point, in
        struct order (a mapping by field name is accepted too); each array's bytes are that
        tensor's buffer. ``outputs``: arrays to write into, or None to allocate. Returned arrays
        are shaped by the output descs' Sizes (strided views into the buffer when strided).
        """
        from .pythonic import execute

        return execute(self, operator_desc, inputs, outputs)

    def execute_graph(self, graph_desc: Any, inputs: Any, outputs: Any = None
                      ) -> list[np.ndarray]:
        """``CompileGraph``, then as ``execute``: one array per graph input (None for one no
        edge reads), in graph input order; returns one array per graph output, shaped by the
        output's tensor (the node output its edge takes). The temporary resource is allocated."""
        from .pythonic import execute_graph

        return execute_graph(self, graph_desc, inputs, outputs)


def _compiled_list(device: IDMLDevice, operators: Any) -> tuple[IDMLCompiledOperator, ...]:
    """An initializer's operators: compiled operators or graphs of this device."""
    ops = tuple(as_list(operators, "operator initializer: operators",
                        "a list of IDMLCompiledOperator"))
    for i, op in enumerate(ops):
        if not isinstance(op, IDMLCompiledOperator) or op._device is not device:
            raise invalid_arg(f"operator initializer: operators[{i}] must be an "
                              "IDMLCompiledOperator of this device")
    return ops


class IDMLOperator:
    """A validated operator: its normalised desc and its kernel plan."""

    def __init__(self, device: IDMLDevice, spec: OperatorSpec, validated: Validated):
        self._device = device
        self.spec = spec
        self.validated = validated
        # The kernel plan, built once; None for an operator that is valid but not executable.
        self.not_executable = spec.not_executable_because(validated)
        try:
            self.plan: Any = None if self.not_executable or spec.module is None \
                else spec.module.plan(validated.values)
        except MemoryError:  # a plan's tables for a valid but huge tensor (PADDING of 2^31)
            raise DMLError(E_OUTOFMEMORY, f"{validated.operator.name}: the CPU kernel plan for "
                           "these tensors cannot be allocated on this machine") from None

    @property
    def name(self) -> str:
        return self.validated.operator.name


def bind_slots(name: str, value: Tensor | tuple[Tensor, ...] | None
           ) -> list[tuple[str, Tensor | None]]:
    """A tensor field's bind points: one per tensor of an array, one (None) if absent."""
    return [*labelled(name, value)] or [(name, None)]


def operator_bind_points(v: Validated, kind: str) -> list[tuple[str, Tensor | None]]:
    """An operator's ``"input"`` or ``"output"`` bind points in binding order, with their
    tensors (None: absent). A tensor array (JOIN's InputTensors, QUANTIZE's QuantizationTensors)
    takes one bind point per tensor, labelled ``Field[i]``, as DirectML counts an operator's
    inputs."""
    fields = v.schema.inputs if kind == "input" else v.schema.outputs
    return [slot for f in fields for slot in bind_slots(f.name, v.tensor(f.name))]


class IDMLCompiledOperator(CompiledDispatchable):
    """A compiled operator: dispatchable once initialized (exactly once). A compiled graph
    (``CompileGraph``) is one too, as in DirectML."""

    def __init__(self, op: IDMLOperator, flags: DML_EXECUTION_FLAGS):
        self._device = op._device
        self.operator = op
        self.flags = flags
        self._initialized = False
        self._owned: dict[str, np.ndarray] = {}
        # Bind points in binding order, with their tensors (None: absent); fixed for the operator.
        self._slots: dict[str, list[tuple[str, Tensor | None]]] = {
            kind: operator_bind_points(op.validated, kind) for kind in ("input", "output")}
        self._label = op.name.removeprefix("DML_OPERATOR_")  # named in a first compile's message

    @property
    def name(self) -> str:
        return self.operator.name

    @property
    def initialized(self) -> bool:
        return self._initialized

    def bind_points(self, kind: str) -> list[tuple[str, Tensor | None]]:
        return self._slots[kind]

    def GetBindingProperties(self) -> DML_BINDING_PROPERTIES:
        self._device._check_alive()
        return DML_BINDING_PROPERTIES(
            RequiredDescriptorCount=len(self.bind_points("input")) +
            len(self.bind_points("output")),
            TemporaryResourceSize=0, PersistentResourceSize=0)

    def _bind(self, kind: str, method: str, bindings: list[Any]) -> list[Bound | None]:
        slots = self.bind_points(kind)
        where = f"IDMLBindingTable::{method} ({self.name})"
        check_counts(where, self.name, len(bindings), [n for n, _ in slots])
        return [bind_tensor(b, f"{where}: binding {i} ({name})", t)
                for i, (b, (name, t)) in enumerate(zip(bindings, slots))]

    def _bind_inputs(self, bindings: list[Any]) -> list[Bound | None]:
        return self._bind("input", "BindInputs", bindings)

    def _bind_outputs(self, bindings: list[Any]) -> list[Bound | None]:
        return self._bind("output", "BindOutputs", bindings)

    def _in_place(self) -> bool:
        return self.operator.spec.in_place

    def _dispatch_command(self, table: IDMLBindingTable) -> OperatorDispatch:
        where = f"IDMLCommandRecorder::RecordDispatch ({self.name})"
        ins, outs = self.bind_points("input"), self.bind_points("output")
        needs_inputs = any(t is not None and not t.owned_by_dml for _, t in ins)
        if table.inputs is None and needs_inputs:
            raise invalid_arg(f"{where}: the binding table's inputs were never bound (BindInputs)")
        if table.outputs is None:
            raise invalid_arg(f"{where}: the binding table's outputs were never bound "
                              "(BindOutputs)")
        need = self.GetBindingProperties().TemporaryResourceSize
        if need and (table.temporary is None or table.temporary.size < need):
            raise invalid_arg(f"{where}: the dispatchable needs a temporary resource of {need} "
                              "bytes (GetBindingProperties().TemporaryResourceSize); bind one "
                              "with BindTemporaryResource")
        inputs = tuple(table.inputs) if table.inputs is not None else (None,) * len(ins)
        outputs = tuple(table.outputs)
        binding.check_overlaps(where, [(n, t, b) for (n, t), b in zip(ins, inputs)],
                               [(n, t, b) for (n, t), b in zip(outs, outputs)],
                               self._in_place(), table.temporary if need else None)
        return OperatorDispatch(self, inputs, outputs, table.temporary if need else None)

    def initialize(self, owned: Sequence[Bound | None]) -> None:
        """Capture OWNED_BY_DML inputs: DirectML owns (copies) their contents from now on."""
        self._owned = {name: b.region()[: t.total_bytes].copy()
                       for (name, t), b in zip(self.bind_points("input"), owned)
                       if b is not None and t is not None}
        self._initialized = True

    def reserve(self) -> Any:
        """The dispatch's data-sized scratch, taken before a command list runs (plans that
        need none have no ``reserve``)."""
        reserve = getattr(self.operator.plan, "reserve", None)
        return reserve() if reserve is not None else None

    def execute(self, inputs: Sequence[Bound | None], outputs: Sequence[Bound | None],
                temporary: Bound | None = None, reserved: Any = None,
                memo: dict[str, Any] | None = None) -> None:
        regions: dict[str, np.ndarray] = dict(self._owned)
        for (name, _), b in zip(self.bind_points("input"), inputs):
            if b is not None:
                regions[name] = b.region()
        for (name, _), b in zip(self.bind_points("output"), outputs):
            if b is not None:
                regions[name] = b.region()
        from .kernels.jit import launch_guard

        with launch_guard():
            self.run(regions, reserved)

    def run(self, regions: dict[str, np.ndarray], reserved: Any = None) -> None:
        """The operator's kernels over its bind points' byte regions (inside a launch guard: a
        compiled graph runs its nodes through this, under one guard)."""
        from .kernels.jit import compiling_for

        with compiling_for(self._label, int(self.flags)):
            if reserved is None:
                self.operator.plan.run(regions)
            else:
                self.operator.plan.run(regions, reserved)


class IDMLOperatorInitializer(Dispatchable):
    """Initializes compiled operators and graphs; binds their OWNED_BY_DML inputs."""

    def __init__(self, device: IDMLDevice, operators: tuple[CompiledDispatchable, ...]):
        self._device = device
        self.operators = operators
        self.generation = 0  # counts Resets: a binding table made before one is invalid

    def Reset(self, operators: Sequence[IDMLCompiledOperator] | None) -> None:
        self._device._check_alive()
        self.operators = _compiled_list(self._device, operators)
        self.generation += 1

    def GetBindingProperties(self) -> DML_BINDING_PROPERTIES:
        self._device._check_alive()
        count = sum(len(op.bind_points("input")) for op in self.operators) + len(self.operators)
        return DML_BINDING_PROPERTIES(RequiredDescriptorCount=count, TemporaryResourceSize=0,
                                      PersistentResourceSize=0)

    def _check_count(self, where: str, bindings: list[Any]) -> None:
        """Inputs and outputs of an initializer: one binding per operator."""
        check_counts(where, "the operator initializer", len(bindings),
                     [f"operators[{i}] ({op.name})" for i, op in enumerate(self.operators)])

    def _bind_inputs(self, bindings: list[Any]) -> list[tuple[Bound | None, ...]]:
        """One BUFFER_ARRAY per operator (one entry per input), or NONE if it owns no input."""
        where = "IDMLBindingTable::BindInputs (operator initializer)"
        self._check_count(where, bindings)
        out: list[tuple[Bound | None, ...]] = []
        for i, (b, op) in enumerate(zip(bindings, self.operators)):
            slots = op.bind_points("input")
            here = f"{where}: binding {i} ({op.name})"
            kind, arr = binding.as_binding(b, here)
            if kind == DML_BINDING_TYPE.DML_BINDING_TYPE_NONE:
                owned = [n for n, t in slots if t is not None and t.owned_by_dml]
                if owned:
                    raise invalid_arg(f"{here}: DML_BINDING_TYPE_NONE is invalid: the operator's "
                                      f"OWNED_BY_DML inputs ({', '.join(owned)}) must be "
                                      "bound here")
                out.append((None,) * len(slots))
                continue
            if kind != DML_BINDING_TYPE.DML_BINDING_TYPE_BUFFER_ARRAY:
                raise invalid_arg(f"{here}: an initializer binds each operator's inputs with one "
                                  "DML_BINDING_TYPE_BUFFER_ARRAY binding (or NONE)")
            entries = as_list(arr.Bindings, f"{here}: Bindings")
            to_int(arr.BindingCount, f"{here}: BindingCount", "UINT", len(slots), len(slots),
                   f"the array needs one entry per input of the operator ({len(slots)})")
            if len(entries) != len(slots):
                raise invalid_arg(f"{here}: Bindings holds {len(entries)} entries; BindingCount "
                                  f"and the operator's inputs say {len(slots)}")
            out.append(tuple(bind_owned(e, f"{here}[{j}] ({name})", t)
                             for j, (e, (name, t)) in enumerate(zip(entries, slots))))
        return out

    def _bind_outputs(self, bindings: list[Any]) -> list[Bound | None]:
        """The persistent resource of each operator (none of ours needs one)."""
        where = "IDMLBindingTable::BindOutputs (operator initializer)"
        self._check_count(where, bindings)
        return [bind_resource(b, f"{where}: binding {i}", 0, 256) for i, b in enumerate(bindings)]

    def _dispatch_command(self, table: IDMLBindingTable) -> InitializerDispatch:
        where = "IDMLCommandRecorder::RecordDispatch (operator initializer)"
        if table.generation != self.generation:
            raise invalid_arg(f"{where}: the initializer was Reset after this binding table was "
                              "made for it, which invalidates the table (as in DirectML); call "
                              "IDMLBindingTable::Reset with the initializer and bind again")
        needs = any(t is not None and t.owned_by_dml
                    for op in self.operators for _, t in op.bind_points("input"))
        if table.inputs is None and needs:
            raise invalid_arg(f"{where}: OWNED_BY_DML inputs were never bound (BindInputs)")
        owned = tuple(table.inputs) if table.inputs is not None else \
            tuple((None,) * len(op.bind_points("input")) for op in self.operators)
        return InitializerDispatch(self, self.operators, owned)


class IDMLCommandRecorder:
    def __init__(self, device: IDMLDevice):
        self._device = device

    def RecordDispatch(self, commandList: CommandList, dispatchable: Any,
                       bindingTable: IDMLBindingTable) -> None:
        with self._device._void_call():
            if not isinstance(commandList, CommandList):
                raise invalid_arg(f"RecordDispatch: commandList = {type(commandList).__name__} is "
                                  "not a CommandList")
            if not isinstance(dispatchable, Dispatchable) or \
                    dispatchable._device is not self._device:
                raise invalid_arg("RecordDispatch: dispatchable must be a compiled operator, "
                                  "compiled graph or operator initializer of this device")
            if not isinstance(bindingTable, IDMLBindingTable) or \
                    bindingTable.dispatchable is not dispatchable:
                raise invalid_arg("RecordDispatch: bindingTable must be a binding table created "
                                  "for this dispatchable")
            commandList._record(dispatchable._dispatch_command(bindingTable))


__all__ = ["DMLCreateDevice", "DMLCreateDevice1", "IDMLCommandRecorder", "IDMLCompiledOperator",
           "IDMLDevice", "IDMLOperator", "IDMLOperatorInitializer"]
