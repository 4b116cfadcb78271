"""DxDispatch model files: load one, build its resources and dispatchables through the public
API, and run its commands (dispatch, print, writeFile).

The format is described in ``docs/model-files.md``. Errors in the file raise ``ModelError`` with a
path to the offending member (``dispatchables.slice.desc.Offsets[1]``); errors from the device
stay ``DMLError``. Dispatchable fields are read by the operator schema, so a newly registered
operator needs no change here.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from descriptors import (
    DML_BINDING_DESC,
    DML_BINDING_TABLE_DESC,
    DML_BINDING_TYPE,
    DML_BUFFER_ARRAY_BINDING,
    DML_BUFFER_BINDING,
    DML_BUFFER_TENSOR_DESC,
    DML_EXECUTION_FLAGS,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_SCALAR_UNION,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_DESC,
    DML_TENSOR_FLAGS,
    DML_TENSOR_TYPE,
    ENUMS,
    NUMPY_DTYPE,
    OPERATOR_DESC_CLASSES,
    SCHEMA,
    Field,
    OperatorSchema,
    data_type_of_numpy,
    parse_enum,
    schema,
)
from descriptors.structs import GENERIC_STRUCTS

from .device import IDMLCompiledOperator, IDMLDevice
from .execution import CommandList, CommandQueue
from .resources import Buffer

DML_SCALE_BIAS = GENERIC_STRUCTS["DML_SCALE_BIAS"]
DML_SIZE_2D = GENERIC_STRUCTS["DML_SIZE_2D"]
OTHER_DISPATCHABLES = ("hlsl", "onnx", "dmlSerializedGraph")


class ModelError(Exception):
    """A problem in the model file itself (not a DirectML validation failure)."""


class UnsupportedDispatchableError(ModelError):
    """A dispatchable that a CPU emulator of DirectML cannot run (HLSL, ONNX, serialized graph)."""


# -- small readers that name the offending member -----------------------------------------------
def _expect(cond: bool, where: str, what: str, value: Any) -> None:
    if not cond:
        raise ModelError(f"{where}: expected {what}, got {_show(value)}")


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) < 60 else text[:57] + "..."


def _int(value: Any, where: str) -> int:
    _expect(isinstance(value, int) and not isinstance(value, bool), where, "an integer", value)
    return int(value)


def _number(value: Any, where: str) -> float | int:
    """A JSON number, or "nan"/"inf"/"-inf" (any case)."""
    if isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf",
                                                           "infinity", "-infinity"):
        return float(value.strip().lower().replace("infinity", "inf"))
    _expect(isinstance(value, (int, float)) and not isinstance(value, bool), where,
            'a number (or "nan", "inf", "-inf")', value)
    return value


def _enum(enum_type: Any, value: Any, where: str) -> Any:
    _expect(isinstance(value, str), where, f"a {enum_type.__name__} name", value)
    try:
        return parse_enum(enum_type, value)
    except KeyError as e:
        raise ModelError(f"{where}: {e.args[0]}") from None


def _flags(enum_type: Any, value: Any, where: str) -> Any:
    """A flag name, or an array of names OR-ed together."""
    names = value if isinstance(value, list) else [value]
    result = enum_type(0)
    for i, v in enumerate(names):
        result |= _enum(enum_type, v, f"{where}[{i}]" if isinstance(value, list) else where)
    return result


def _str(value: Any, where: str, what: str) -> str:
    _expect(isinstance(value, str), where, what, value)
    return str(value)


def _object(value: Any, where: str) -> dict:
    _expect(isinstance(value, dict), where, "an object", value)
    return value


def _no_unknown(obj: dict, known: set[str], where: str, struct: str) -> None:
    """An unknown key is an error (a typo would otherwise bind or mean something else silently);
    the message suggests the nearest known key."""
    unknown = sorted(set(obj) - known, key=str)
    if unknown:
        first = str(unknown[0])
        near = difflib.get_close_matches(first, sorted(known), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ModelError(f"{where}: {first[:60]} is not a field of {struct}{hint}; fields: "
                         + ", ".join(sorted(known)))


# The members of each kind of object in a model file (DxDispatch's schema, _schema.json).
RESOURCE_KEYS = {"type", "initialValues", "initialValuesDataType", "initialValuesOffsetInBytes",
                 "sizeInBytes"}
INITIALIZER_KEYS = {"valueCount", "value", "valueStart", "valueDelta", "sourcePath"}
# dmlCompileType: DmlCompileOp or DmlCompileGraph (one operator compiled as a one-node graph runs
# the same here).
DISPATCHABLE_KEYS = {"type", "desc", "Desc", "executionFlags", "bindings", "dmlCompileType"}
BINDING_KEYS = {"name", "elementOffset", "elementCount"}
COMMAND_KEYS = {"dispatch": {"type", "dispatchable", "bindings"},
                "print": {"type", "resource", "verbose"},
                "writeFile": {"type", "resource", "targetPath", "dimensions"}}


# -- resources -----------------------------------------------------------------------------------
@dataclass
class Resource:
    name: str
    data_type: DML_TENSOR_DATA_TYPE
    buffer: Buffer

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPE[self.data_type])


def _cast(values: list, dtype: np.dtype, where: str) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        for i, v in enumerate(values):
            if isinstance(v, float) and not v.is_integer():
                raise ModelError(f"{where}[{i}]: {v} is not an integer ({dtype.name} data)")
            if not info.min <= v <= info.max:
                raise ModelError(f"{where}[{i}]: {v} is out of range for {dtype.name} "
                                 f"[{info.min}, {info.max}]")
        return np.array([int(v) for v in values], dtype=dtype)
    return np.array(values, dtype=np.float64).astype(dtype)


def _initial_values(spec: Any, dtype: np.dtype, where: str, base: Path) -> np.ndarray | None:
    if spec == "deferred":
        return None
    if isinstance(spec, list):
        return _cast([_number(v, f"{where}[{i}]") for i, v in enumerate(spec)], dtype, where)
    obj = _object(spec, where)
    if "sourcePath" in obj:
        return _from_file(obj["sourcePath"], dtype, f"{where}.sourcePath", base)
    count = _int(obj.get("valueCount"), f"{where}.valueCount")
    _expect(count > 0, f"{where}.valueCount", "a count > 0", count)
    if "value" in obj:
        return _cast([_number(obj["value"], f"{where}.value")] * count, dtype, where)
    if "valueStart" in obj and "valueDelta" in obj:
        start = _number(obj["valueStart"], f"{where}.valueStart")
        delta = _number(obj["valueDelta"], f"{where}.valueDelta")
        return _cast([start + delta * i for i in range(count)], dtype, where)
    raise ModelError(f"{where}: expected an array, {{valueCount, value}}, {{valueCount, "
                     "valueStart, valueDelta}, {sourcePath} or \"deferred\"")


def _from_file(path: Any, dtype: np.dtype | None, where: str, base: Path) -> np.ndarray:
    _expect(isinstance(path, str), where, "a file path", path)
    full = base / path
    try:
        if full.suffix.lower() == ".npy":
            arr = np.load(full, allow_pickle=False)
            if dtype is not None and arr.dtype != dtype:
                raise ModelError(f"{where}: '{path}' holds {arr.dtype} data but "
                                 f"initialValuesDataType says {dtype.name}")
            return np.ascontiguousarray(arr).reshape(-1)
        if full.suffix.lower() in (".dat", ".bin"):
            if dtype is None:
                raise ModelError(f"{where}: raw files need initialValuesDataType")
            raw = full.read_bytes()
            if len(raw) % dtype.itemsize:
                raise ModelError(f"{where}: '{path}' has {len(raw)} bytes, not a multiple of "
                                 f"{dtype.itemsize} ({dtype.name})")
            return np.frombuffer(raw, dtype=dtype).copy()
    except OSError as e:
        raise ModelError(f"{where}: cannot read '{path}': {e.strerror or e}") from None
    except ValueError as e:
        raise ModelError(f"{where}: '{path}' is not a valid .npy file: {e}") from None
    raise ModelError(f"{where}: '{path}' must end in .npy, .dat or .bin")


def load_resource(name: str, spec: Any, base: Path) -> Resource:
    where = f"resources.{name}"
    obj = _object(spec, where)
    _no_unknown(obj, RESOURCE_KEYS, where, "a buffer resource")
    if isinstance(obj.get("initialValues"), dict):
        _no_unknown(obj["initialValues"], INITIALIZER_KEYS, f"{where}.initialValues",
                    "an initializer")
    kind = obj.get("type", "buffer")
    _expect(kind == "buffer", f"{where}.type", '"buffer"', kind)
    init = obj.get("initialValues")
    if init is None:
        raise ModelError(f"{where}: initialValues is required")
    dtype: np.dtype | None = None
    data_type = None
    if "initialValuesDataType" in obj:
        data_type = _enum(DML_TENSOR_DATA_TYPE, obj["initialValuesDataType"],
                          f"{where}.initialValuesDataType")
        if data_type not in NUMPY_DTYPE:
            raise ModelError(f"{where}.initialValuesDataType: {data_type.name} has no element type")
        dtype = np.dtype(NUMPY_DTYPE[data_type])
    elif not (isinstance(init, dict) and str(init.get("sourcePath", "")).endswith(".npy")):
        raise ModelError(f"{where}: initialValuesDataType is required (except for .npy sources)")
    values = _initial_values(init, dtype, f"{where}.initialValues", base) if dtype is not None \
        else _from_file(init["sourcePath"], None, f"{where}.initialValues.sourcePath", base)
    if data_type is None:
        assert values is not None  # a .npy source always has data
        try:
            data_type = data_type_of_numpy(values.dtype)
        except KeyError:
            raise ModelError(f"{where}: .npy dtype {values.dtype} has no DML data type") from None
    offset = _int(obj.get("initialValuesOffsetInBytes", 0), f"{where}.initialValuesOffsetInBytes")
    _expect(offset >= 0, f"{where}.initialValuesOffsetInBytes", "a byte count >= 0", offset)
    data = b"" if values is None else values.tobytes()
    need = offset + len(data)
    if "sizeInBytes" in obj:
        size = _int(obj["sizeInBytes"], f"{where}.sizeInBytes")
        if size < need:
            raise ModelError(f"{where}.sizeInBytes: {size} is smaller than the initial data "
                             f"({need} bytes including initialValuesOffsetInBytes)")
    else:
        size = (need + 3) & ~3
    buffer = Buffer(size)
    buffer.numpy()[offset:need] = np.frombuffer(data, np.uint8)
    return Resource(name, data_type, buffer)


# -- dispatchables --------------------------------------------------------------------------------
def operator_type(value: Any, where: str) -> DML_OPERATOR_TYPE:
    _expect(isinstance(value, str), where, "an operator type name", value)
    if value in OTHER_DISPATCHABLES:
        raise UnsupportedDispatchableError(
            f"{where}: '{value}' dispatchables are not supported by dml-emulator (a CPU emulator "
            "of DirectML runs DirectML operators only)")
    return _enum(DML_OPERATOR_TYPE, value, where)


def tensor_desc_from_json(value: Any, where: str) -> DML_TENSOR_DESC:
    obj = _object(value, where)
    if "Desc" in obj:
        if "Type" in obj:
            kind = _enum(DML_TENSOR_TYPE, obj["Type"], f"{where}.Type")
            _expect(kind == DML_TENSOR_TYPE.DML_TENSOR_TYPE_BUFFER, f"{where}.Type", "BUFFER",
                    obj["Type"])
        return tensor_desc_from_json(obj["Desc"], f"{where}.Desc")
    known = {"DataType", "Sizes", "Strides", "Flags", "DimensionCount", "TotalTensorSizeInBytes",
             "GuaranteedBaseOffsetAlignment"}
    _no_unknown(obj, known, where, "DML_BUFFER_TENSOR_DESC")
    for req in ("DataType", "Sizes"):
        if req not in obj:
            raise ModelError(f"{where}: {req} is required")

    def ints(key: str) -> tuple[int, ...] | None:
        if key not in obj:
            return None
        _expect(isinstance(obj[key], list), f"{where}.{key}", "an array", obj[key])
        return tuple(_int(v, f"{where}.{key}[{i}]") for i, v in enumerate(obj[key]))

    def opt_int(key: str) -> int | None:
        return _int(obj[key], f"{where}.{key}") if key in obj else None

    return DML_TENSOR_DESC(Desc=DML_BUFFER_TENSOR_DESC(
        DataType=_enum(DML_TENSOR_DATA_TYPE, obj["DataType"], f"{where}.DataType"),
        Flags=_flags(DML_TENSOR_FLAGS, obj.get("Flags", []), f"{where}.Flags"),
        DimensionCount=opt_int("DimensionCount"), Sizes=ints("Sizes") or (),
        Strides=ints("Strides"), TotalTensorSizeInBytes=opt_int("TotalTensorSizeInBytes"),
        GuaranteedBaseOffsetAlignment=opt_int("GuaranteedBaseOffsetAlignment") or 0))


def _bool(value: Any, where: str) -> bool:
    _expect(isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)), where,
            "true or false", value)
    return bool(value)


def _scalar_union(value: Any, where: str) -> Any:
    """A number (read as the member the companion DataType field names) or ``{"Int32": 5}``."""
    if isinstance(value, dict):
        names = {f.name for f in dataclasses.fields(DML_SCALAR_UNION)}
        _no_unknown(value, names, where, "DML_SCALAR_UNION")
        members: dict[str, Any] = {k: _number(v, f"{where}.{k}") if k != "Bytes" else
                                   _array(v, f"{where}.Bytes", _int) for k, v in value.items()}
        return DML_SCALAR_UNION(**members)
    return _number(value, where)


def _array(value: Any, where: str, item: Callable[[Any, str], Any]) -> tuple:
    _expect(isinstance(value, list), where, "an array", value)
    return tuple(item(v, f"{where}[{i}]") for i, v in enumerate(value))


def _pair(struct: Any, reader: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """A two-member struct (DML_SCALE_BIAS, DML_SIZE_2D) as an object of its fields."""
    names = [f.name for f in dataclasses.fields(struct)]

    def read(value: Any, where: str) -> Any:
        obj = _object(value, where)
        _no_unknown(obj, set(names), where, struct.__name__)
        for n in names:
            if n not in obj:
                raise ModelError(f"{where}: {n} is required by {struct.__name__}")
        return struct(**{n: reader(obj[n], f"{where}.{n}") for n in names})

    return read


def _fused(value: Any, where: str) -> DML_OPERATOR_DESC:
    return operator_desc_from_json(value, where, fused=True)


def _float(value: Any, where: str) -> float:
    return float(_number(value, where))


# How a model file writes each field type (descriptors.schema); enums are read by name.
_JSON_READERS: dict[str, Callable[[Any, str], Any]] = {
    schema.TENSOR: lambda v, w: tensor_desc_from_json(v, w),
    schema.TENSOR_ARRAY: lambda v, w: _array(v, w, tensor_desc_from_json),
    schema.OPERATOR_DESC: _fused,
    schema.OPERATOR_DESC_ARRAY: lambda v, w: _array(v, w, _fused),
    schema.UINT: _int, schema.INT: _int, schema.UINT64: _int,
    schema.FLOAT: _float, schema.BOOL: _bool,
    schema.UINT_ARRAY: lambda v, w: _array(v, w, _int),
    schema.INT_ARRAY: lambda v, w: _array(v, w, _int),
    schema.FLOAT_ARRAY: lambda v, w: _array(v, w, _float),
    schema.SCALE_BIAS: _pair(DML_SCALE_BIAS, _float),
    schema.SIZE_2D: _pair(DML_SIZE_2D, _int),
    schema.SCALAR_UNION: _scalar_union,
    **{e.__name__: functools.partial(_enum, e) for e in ENUMS},
}


def _field_value(f: Field, value: Any, where: str) -> Any:
    return _JSON_READERS[f.type](value, where)


def _desc_fields(sch: OperatorSchema, obj: dict, where: str, fused: bool) -> dict[str, Any]:
    known = {f.name for f in sch.fields}
    _no_unknown(obj, known, where, sch.struct_name)
    values = {}
    for f in sch.fields:
        if f.name in obj:
            values[f.name] = _field_value(f, obj[f.name], f"{where}.{f.name}")
        elif not (f.optional or f.is_count or (fused and f.is_tensor)):
            raise ModelError(f"{where}: {f.name} is required by {sch.struct_name}")
    return values


def operator_desc_from_json(value: Any, where: str, fused: bool = False) -> DML_OPERATOR_DESC:
    """``{"Type": ..., "Desc": {...}}`` or, flattened, ``{"Type": ..., fields...}``."""
    obj = _object(value, where)
    if "Type" not in obj:
        raise ModelError(f"{where}: Type is required")
    op = operator_type(obj["Type"], f"{where}.Type")
    sch = SCHEMA.get(op)
    if sch is None:
        raise ModelError(f"{where}.Type: {op.name} has no desc struct")
    fields = {k: v for k, v in obj.items() if k != "Type"}
    if "Desc" in fields:
        fields = _object(fields["Desc"], f"{where}.Desc")
        where = f"{where}.Desc"
    return DML_OPERATOR_DESC(Type=op, Desc=OPERATOR_DESC_CLASSES[op](
        **_desc_fields(sch, fields, where, fused)))


@dataclass
class Dispatchable:
    name: str
    operator: DML_OPERATOR_TYPE
    desc: DML_OPERATOR_DESC
    flags: DML_EXECUTION_FLAGS
    init_bindings: dict[str, Any]
    compiled: IDMLCompiledOperator | None = None

    @property
    def schema(self) -> OperatorSchema:
        return SCHEMA[self.operator]


def load_dispatchable(name: str, spec: Any) -> Dispatchable:
    where = f"dispatchables.{name}"
    obj = _object(spec, where)
    if "type" not in obj:
        raise ModelError(f"{where}: type is required")
    op = operator_type(obj["type"], f"{where}.type")
    sch = SCHEMA.get(op)
    if sch is None:
        raise ModelError(f"{where}.type: {op.name} is not an operator with a desc struct")
    key = "desc" if "desc" in obj else "Desc" if "Desc" in obj else None
    if key is not None:
        _no_unknown(obj, DISPATCHABLE_KEYS, where, "a DirectML dispatchable")
        fields, fwhere = _object(obj[key], f"{where}.{key}"), f"{where}.{key}"
    else:
        fields = {k: v for k, v in obj.items() if k not in ("type", "executionFlags", "bindings")}
        fwhere = where
    desc = DML_OPERATOR_DESC(Type=op, Desc=OPERATOR_DESC_CLASSES[op](
        **_desc_fields(sch, fields, fwhere, fused=False)))
    compile_type = obj.get("dmlCompileType", "DmlCompileOp")
    _expect(compile_type in ("DmlCompileOp", "DmlCompileGraph"), f"{where}.dmlCompileType",
            '"DmlCompileOp" or "DmlCompileGraph"', compile_type)
    flags = _flags(DML_EXECUTION_FLAGS, obj.get("executionFlags", []), f"{where}.executionFlags")
    bindings = _object(obj.get("bindings", {}), f"{where}.bindings")
    return Dispatchable(name, op, desc, flags, bindings)


# -- the model -----------------------------------------------------------------------------------
@dataclass
class Model:
    path: Path
    resources: dict[str, Resource]
    dispatchables: dict[str, Dispatchable]
    commands: list[dict]
    raw: dict = field(repr=False, default_factory=dict)


def parse_json5(text: str, name: str) -> Any:
    import json5

    try:
        return json5.loads(text)
    except ValueError as e:
        m = re.match(r"<string>:(\d+) (.*) at column (\d+)", str(e))
        where = f"{name}:{m.group(1)}:{m.group(3)}" if m else name
        raise ModelError(f"{where}: invalid JSON: {m.group(2) if m else e}") from None


def load_model(path: str | Path) -> Model:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path}: the model is not UTF-8 text") from None
    doc = _object(parse_json5(text, str(path)), "the model")
    for member in ("resources", "dispatchables", "commands"):
        if member not in doc:
            raise ModelError(f"the model has no '{member}' member")
    resources = {n: load_resource(n, s, p.parent)
                 for n, s in _object(doc["resources"], "resources").items()}
    dispatchables = {n: load_dispatchable(n, s)
                     for n, s in _object(doc["dispatchables"], "dispatchables").items()}
    commands = doc["commands"]
    _expect(isinstance(commands, list), "commands", "an array", commands)
    return Model(p, resources, dispatchables, commands, doc)


# -- running ---------------------------------------------------------------------------------------
def format_value(v: Any) -> str:
    """A number as C++ ``ostream <<`` writes it (6 significant digits for floats)."""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return format(f, ".6g")
    return str(int(v))


class Runner:
    """Runs a model on a device: creates its operators, initializes them, executes commands."""

    def __init__(self, model: Model, device: IDMLDevice, out: IO[str] = sys.stdout,
                 iterations: int = 1, progress: Callable[[str, int, int], None] | None = None):
        self.model, self.device, self.out = model, device, out
        self.iterations = iterations
        self.progress = progress
        self.queue = CommandQueue()
        self.recorder = device.CreateCommandRecorder()

    def _binding(self, source: Any, where: str) -> DML_BUFFER_BINDING:
        if isinstance(source, str):
            source = {"name": source}
        obj = _object(source, where)
        _no_unknown(obj, BINDING_KEYS, where, "a binding")
        name = obj.get("name")
        if name not in self.model.resources:
            raise ModelError(f"{where}: '{name}' is not a resource of the model (resources: "
                             + ", ".join(self.model.resources) + ")")
        res = self.model.resources[name]
        offset = _int(obj.get("elementOffset", 0), f"{where}.elementOffset") * res.dtype.itemsize
        if not 0 <= offset <= res.buffer.size_in_bytes:
            raise ModelError(f"{where}.elementOffset: byte offset {offset} lies outside "
                             f"'{name}' ({res.buffer.size_in_bytes} bytes)")
        size = res.buffer.size_in_bytes - offset  # to the end, unless elementCount says less
        if "elementCount" in obj:
            count = _int(obj["elementCount"], f"{where}.elementCount")
            if not 0 <= count * res.dtype.itemsize <= size:
                raise ModelError(f"{where}.elementCount: {count} elements from element "
                                 f"{offset // res.dtype.itemsize} do not fit in '{name}'")
            size = count * res.dtype.itemsize
        return DML_BUFFER_BINDING(Buffer=res.buffer, Offset=offset, SizeInBytes=size)

    def _bind_points(self, d: Dispatchable, bindings: dict, where: str
                     ) -> tuple[list[Any], list[Any]]:
        points = {f.name: f for f in d.schema.fields if f.is_tensor}
        for name in bindings:
            if name not in points:
                raise ModelError(f"{where}.{name}: not a bind point of {d.schema.struct_name} "
                                 "(bind points: " + ", ".join(points) + ")")

        def one(f: Field) -> Any:
            if f.name not in bindings:
                return None
            src = bindings[f.name]
            if isinstance(src, list):
                return DML_BINDING_DESC(Type=DML_BINDING_TYPE.DML_BINDING_TYPE_BUFFER_ARRAY,
                                        Desc=DML_BUFFER_ARRAY_BINDING(Bindings=[
                                            self._binding(s, f"{where}.{f.name}[{i}]")
                                            for i, s in enumerate(src)]))
            return DML_BINDING_DESC(Type=DML_BINDING_TYPE.DML_BINDING_TYPE_BUFFER,
                                    Desc=self._binding(src, f"{where}.{f.name}"))

        return [one(f) for f in d.schema.inputs], [one(f) for f in d.schema.outputs]

    def _table(self, dispatchable: Any) -> Any:
        need = dispatchable.GetBindingProperties().RequiredDescriptorCount
        return self.device.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=dispatchable, SizeInDescriptors=need))

    def _record(self, dispatchable: Any, table: Any) -> CommandList:
        commands = CommandList()
        self.recorder.RecordDispatch(commands, dispatchable, table)
        commands.Close()
        return commands

    def prepare(self) -> None:
        """Create, compile and initialize every dispatchable (OWNED_BY_DML inputs bound here)."""
        for d in self.model.dispatchables.values():
            d.compiled = self.device.CompileOperator(self.device.CreateOperator(d.desc), d.flags)
            init = self.device.CreateOperatorInitializer([d.compiled])
            table = self._table(init)
            inputs, _ = self._bind_points(d, d.init_bindings, f"dispatchables.{d.name}.bindings")
            if any(b is not None for b in inputs):
                table.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[
                    b.Desc if b is not None else DML_BUFFER_BINDING() for b in inputs])])
            self.queue.ExecuteCommandLists([self._record(init, table)])

    def run(self) -> None:
        self.prepare()
        for i, command in enumerate(self.model.commands):
            where = f"commands[{i}]"
            obj = _object(command, where)
            kind = obj.get("type")
            if kind in COMMAND_KEYS:
                _no_unknown(obj, COMMAND_KEYS[kind], where, f"a {kind} command")
            if kind == "dispatch":
                self.dispatch(obj, where)
            elif kind == "print":
                self.print(self._resource(obj, where))
            elif kind == "writeFile":
                self.write_file(obj, where)
            else:
                raise ModelError(f"{where}.type: expected \"dispatch\", \"print\" or "
                                 f"\"writeFile\", got {_show(kind)}")

    def _resource(self, obj: dict, where: str) -> Resource:
        name = obj.get("resource")
        if name not in self.model.resources:
            raise ModelError(f"{where}.resource: '{name}' is not a resource of the model")
        return self.model.resources[name]

    def dispatch(self, obj: dict, where: str) -> None:
        name = obj.get("dispatchable")
        if name not in self.model.dispatchables:
            raise ModelError(f"{where}.dispatchable: '{name}' is not a dispatchable of the model")
        d = self.model.dispatchables[name]
        inputs, outputs = self._bind_points(d, _object(obj.get("bindings", {}),
                                                       f"{where}.bindings"), f"{where}.bindings")
        table = self._table(d.compiled)
        table.BindInputs(inputs)
        table.BindOutputs(outputs)
        commands = self._record(d.compiled, table)
        if self.iterations <= 1:
            self.queue.ExecuteCommandLists([commands])
            return
        self.queue.ExecuteCommandLists([commands])  # warm-up: JIT compile or cache load
        times = []
        for k in range(self.iterations):
            t0 = time.perf_counter()
            self.queue.ExecuteCommandLists([commands])
            times.append(time.perf_counter() - t0)
            if self.progress:
                self.progress(name, k + 1, self.iterations)
        median = statistics.median(times) * 1e3
        print(f"Dispatch '{name}': {self.iterations} iterations, {median:.4f} ms median (CPU)",
              file=self.out)

    def print(self, res: Resource) -> None:
        values = res.buffer.numpy(res.dtype)
        print(f"Resource '{res.name}': " + ", ".join(format_value(v) for v in values.tolist()),
              file=self.out)

    def write_file(self, obj: dict, where: str) -> None:
        res = self._resource(obj, where)
        target = _str(obj.get("targetPath"), f"{where}.targetPath", "a file path")
        path = self.model.path.parent / target
        values = res.buffer.numpy(res.dtype)
        try:
            if path.suffix.lower() == ".npy":
                dims = obj.get("dimensions", [values.size])
                _expect(isinstance(dims, list), f"{where}.dimensions", "an array", dims)
                shape = tuple(_int(v, f"{where}.dimensions[{i}]") for i, v in enumerate(dims))
                count = int(np.prod(shape, dtype=np.int64))
                if count > values.size:
                    raise ModelError(f"{where}.dimensions: {list(shape)} needs {count} elements; "
                                     f"'{res.name}' holds {values.size}")
                np.save(path, values[:count].reshape(shape))
            else:
                path.write_bytes(res.buffer.numpy().tobytes())
        except OSError as e:
            raise ModelError(f"{where}.targetPath: cannot write '{target}': "
                             f"{e.strerror or e}") from None
