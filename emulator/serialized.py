"""ONNX Runtime's serialized DirectML graphs: the ``Partition_N.bin`` files its DirectML execution
provider writes for each fused partition (``ep.dml.enable_graph_serialization``), which
DxDispatch runs as ``dmlSerializedGraph`` dispatchables.

The file is a FlatBuffer read here with Google's ``flatbuffers`` runtime from the format's facts
(``docs/serialized-graph-format.md``: tables, vtable slots, unions), never with generated code.
``read`` turns the bytes into plain records (every offset and length checked against the buffer,
so a damaged file is a DMLError, never a crash or a hang); ``to_graph`` turns the records into a
``DML_GRAPH_DESC`` of this device's operators, as DxDispatch does:

- an operator desc is rebuilt field by field in DirectML.h's order: tensor fields take the node's
  input (output) names in turn, ``""`` for an absent optional tensor, and the tensor descs of the
  present ones; attribute fields take the attribute list in turn (positions, not names);
- edges come from names: a node input named like a graph input is an input edge, one named like
  another node's output an intermediate edge, a node output named like a graph output an output
  edge;
- a constant stored by name (``ConstantName``) becomes a graph input after the real ones (in node
  order), its bytes read from ``<name>.bin`` beside the partition file and bound once, at
  initialization: the operator inputs it feeds are flagged OWNED_BY_DML; a constant stored inline
  (``ConstantRawData``) becomes a constant-data node (DML_FEATURE_LEVEL_6_2).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from descriptors import (
    DML_BUFFER_TENSOR_DESC,
    DML_OPERATOR_DESC,
    DML_OPERATOR_TYPE,
    DML_TENSOR_DATA_TYPE,
    DML_TENSOR_FLAGS,
    NUMPY_DTYPE,
    OPERATOR_DESC_CLASSES,
    SCHEMA,
)

from .errors import E_INVALIDARG, DMLError
from .fieldtypes import DML_SCALE_BIAS, DML_SIZE_2D
from .graph import (
    DML_CONSTANT_DATA_GRAPH_NODE_DESC,
    DML_GRAPH_DESC,
    DML_INPUT_GRAPH_EDGE_DESC,
    DML_INTERMEDIATE_GRAPH_EDGE_DESC,
    DML_OPERATOR_GRAPH_NODE_DESC,
    DML_OUTPUT_GRAPH_EDGE_DESC,
)

if TYPE_CHECKING:
    from .device import IDMLDevice

# Union members (docs/serialized-graph-format.md, section 2).
NODE_OPERATOR, NODE_CONSTANT = 1, 2
CONSTANT_NAME, CONSTANT_RAW = 1, 2
(ACTIVATION, ACTIVATION_ARRAY, UINT32, UINT64, INT32, FLOAT32, UINT_ARRAY, INT_ARRAY, FLOAT_ARRAY,
 SCALE_BIAS, SIZE_2D, SCALAR_UNION, BOOL) = range(1, 14)
BYTE_ARRAY = 1  # the one ScalarVariant member writers use: the union's 8 raw bytes


def _vt(slot: int) -> int:
    return 4 + 2 * slot


class MalformedError(Exception):
    """Inside the reader: the file breaks the format (turned into a DMLError by ``read``)."""


class _Buffer(bytearray):
    """The file's bytes, counting the tables read: a FlatBuffer may point at one table from many
    places (a DAG of shared tables), so without a budget a small file could be read for ever."""

    tables = 0

    def budget(self) -> int:
        return len(self) // 4 + 64  # every distinct table takes at least 4 bytes


class _Table:
    """A table of the buffer, read through the flatbuffers runtime with bounds checked."""

    def __init__(self, buf: _Buffer, pos: int):
        from flatbuffers import table

        buf.tables += 1
        if buf.tables > buf.budget():
            raise MalformedError("more tables are reachable than the file can hold (shared "
                                 "tables read again and again)")
        if not 0 <= pos <= len(buf) - 4:
            raise MalformedError(f"a table offset ({pos}) lies outside the file")
        self.buf = buf
        self.t = table.Table(buf, pos)
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        if not 0 <= vt <= len(buf) - 4:
            raise MalformedError(f"the vtable of the table at {pos} lies outside the file")

    def _at(self, slot: int) -> int:
        off = self.t.Offset(_vt(slot))
        if off and not 0 <= self.t.Pos + off < len(self.buf):
            raise MalformedError("a field lies outside the file")
        return int(off)

    def has(self, slot: int) -> bool:
        return self._at(slot) != 0

    def scalar(self, slot: int, fmt: str, default: Any = 0) -> Any:
        off = self._at(slot)
        return struct.unpack_from("<" + fmt, self.buf, self.t.Pos + off)[0] if off else default

    def _vector(self, slot: int, width: int) -> tuple[int, int]:
        off = self._at(slot)
        if not off:
            return 0, 0
        n = self.t.VectorLen(off)
        start = self.t.Vector(off)
        if n < 0 or start < 0 or start + n * width > len(self.buf):
            raise MalformedError(f"a vector of {n} elements runs past the end of the file")
        return start, n

    def string(self, slot: int) -> str | None:
        off = self._at(slot)
        if not off:
            return None
        return self._string_at(self.t.Pos + off)

    def _string_at(self, at: int) -> str:
        where = at + struct.unpack_from("<I", self.buf, at)[0]
        n = struct.unpack_from("<I", self.buf, where)[0] if where <= len(self.buf) - 4 else -1
        if n < 0 or where + 4 + n > len(self.buf):
            raise MalformedError("a string runs past the end of the file")
        try:
            return bytes(self.buf[where + 4:where + 4 + n]).decode()
        except UnicodeDecodeError:
            raise MalformedError("a string is not UTF-8") from None

    def strings(self, slot: int) -> list[str]:
        start, n = self._vector(slot, 4)
        return [self._string_at(start + 4 * i) for i in range(n)]

    def tables(self, slot: int) -> list[_Table]:
        start, n = self._vector(slot, 4)
        return [_Table(self.buf, start + 4 * i + struct.unpack_from("<I", self.buf,
                                                                    start + 4 * i)[0])
                for i in range(n)]

    def numbers(self, slot: int, fmt: str) -> list[Any]:
        width = struct.calcsize(fmt)
        start, n = self._vector(slot, width)
        return list(struct.unpack_from(f"<{n}{fmt}", self.buf, start)) if n else []

    def raw(self, slot: int) -> bytes:
        start, n = self._vector(slot, 1)
        return bytes(self.buf[start:start + n])

    def union(self, slot: int) -> int:
        """The position of a union member (the value slot; its type is the slot before)."""
        off = self._at(slot)
        if not off:
            return -1
        at = self.t.Pos + off
        return at + struct.unpack_from("<I", self.buf, at)[0]


@dataclass
class Tensor:
    data_type: str
    sizes: list[int]
    strides: list[int] | None
    total: int


@dataclass
class Attribute:
    kind: int
    value: Any  # None: absent (an optional fused activation or ScaleBias)


@dataclass
class Node:
    name: str
    input_names: list[str]
    output_names: list[str]
    operator: str | None = None  # an operator node's DML_OPERATOR_* name
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)
    constant_name: str | None = None  # a constant stored in <name>.bin
    constant_data: bytes | None = None  # a constant stored inline


@dataclass
class SerializedGraph:
    nodes: list[Node]
    input_names: list[str]
    output_names: list[str]


def read(data: bytes, where: str) -> SerializedGraph:
    """The records of a serialized graph; DMLError E_INVALIDARG naming ``where`` if the bytes
    break the format."""
    buf = _Buffer(data)
    try:
        if len(buf) < 8:
            raise MalformedError(f"{len(buf)} bytes is too short for a FlatBuffer")
        root = _Table(buf, struct.unpack_from("<I", buf, 0)[0])
        graph = SerializedGraph([_node(t) for t in root.tables(0)], root.strings(1),
                                root.strings(2))
    except (MalformedError, struct.error, IndexError, ValueError, OverflowError,
            RecursionError) as e:
        raise DMLError(E_INVALIDARG, f"{where}: not a serialized DirectML graph ({e})") from None
    return graph


def _node(t: _Table) -> Node:
    name = t.string(2) or ""
    if not name:
        raise MalformedError("a node has no name")
    node = Node(name, t.strings(3), t.strings(4))
    kind, at = t.scalar(0, "B"), t.union(1)
    if at < 0:
        raise MalformedError(f"node {name!r} has no desc")
    desc = _Table(t.buf, at)
    if kind == NODE_OPERATOR:
        node.operator = desc.string(0) or ""
        node.inputs = [_tensor(x) for x in desc.tables(1)]
        node.outputs = [_tensor(x) for x in desc.tables(2)]
        node.attributes = [_attribute(x) for x in desc.tables(3)]
    elif kind == NODE_CONSTANT:
        detail, at = desc.scalar(0, "B"), desc.union(1)
        if at < 0:
            raise MalformedError(f"constant node {name!r} has no data")
        inner = _Table(t.buf, at)
        if detail == CONSTANT_NAME:
            node.constant_name = _file_name(inner.string(0) or "", name)
        elif detail == CONSTANT_RAW:
            node.constant_data = inner.raw(0)
        else:
            raise MalformedError(f"constant node {name!r} has data of unknown kind {detail}")
    else:
        raise MalformedError(f"node {name!r} has a desc of unknown kind {kind}")
    return node


def _file_name(name: str, node: str) -> str:
    """A constant's file name (``<name>.bin`` beside the partition): a plain name, never a path
    (ONNX Runtime's writer replaces path characters by ``_``)."""
    if not name or name in (".", "..") or any(c in name for c in '/\\\0:'):
        raise MalformedError(f"constant node {node!r} names its file {name!r}: not a plain file "
                             "name")
    return name


def _tensor(t: _Table) -> Tensor:
    return Tensor(t.string(0) or "", t.numbers(1, "I"),
                  t.numbers(2, "I") if t.has(2) else None, t.scalar(3, "Q"))


def _attribute(t: _Table) -> Attribute:
    kind, at = t.scalar(1, "B"), t.union(2)
    if at < 0:
        return Attribute(kind, None)
    if at > len(t.buf) - 8 and kind in (UINT64, SCALE_BIAS, SIZE_2D):
        raise MalformedError("an attribute value runs past the end of the file")
    if kind == UINT32:
        return Attribute(kind, struct.unpack_from("<I", t.buf, at)[0])
    if kind == UINT64:
        return Attribute(kind, struct.unpack_from("<Q", t.buf, at)[0])
    if kind == INT32:
        return Attribute(kind, struct.unpack_from("<i", t.buf, at)[0])
    if kind == FLOAT32:
        return Attribute(kind, struct.unpack_from("<f", t.buf, at)[0])
    if kind == BOOL:
        return Attribute(kind, t.buf[at] != 0)
    if kind in (SCALE_BIAS, SIZE_2D):
        return Attribute(kind, struct.unpack_from("<ff" if kind == SCALE_BIAS else "<II",
                                                  t.buf, at))
    inner = _Table(t.buf, at)
    if kind in (UINT_ARRAY, INT_ARRAY, FLOAT_ARRAY):
        return Attribute(kind, inner.numbers(0, {UINT_ARRAY: "I", INT_ARRAY: "i",
                                                 FLOAT_ARRAY: "f"}[kind]))
    if kind == ACTIVATION:
        return Attribute(kind, _activation(inner))
    if kind == ACTIVATION_ARRAY:
        return Attribute(kind, [_activation(x) for x in inner.tables(0)])
    if kind == SCALAR_UNION:
        member, pos = inner.scalar(0, "B"), inner.union(1)
        if member != BYTE_ARRAY or pos < 0 or pos > len(t.buf) - 8:
            raise MalformedError("a scalar union is not 8 raw bytes")
        return Attribute(kind, bytes(t.buf[pos:pos + 8]))
    raise MalformedError(f"an attribute has a value of unknown kind {kind}")


def _activation(t: _Table) -> tuple[str, list[Attribute]]:
    attributes = [_attribute(x) for x in t.tables(1)]
    if any(a.kind in (ACTIVATION, ACTIVATION_ARRAY) for a in attributes):
        raise MalformedError("a fused activation holds another activation")
    return t.string(0) or "", attributes


# -- records -> DML_GRAPH_DESC ------------------------------------------------------------------
@dataclass
class Compiled:
    """What ``to_graph`` gives: the graph, its bind points' names and the constants to bind at
    initialization (graph input index -> bytes)."""

    desc: Any
    input_names: list[str]
    output_names: list[str]
    constants: dict[int, bytes]
    operators: list[Any]  # the operator descs, in node order (for ``check``)


def _enum(enum: Any, name: str, what: str, where: str) -> Any:
    value = enum.__members__.get(name)  # the full C name, exactly
    if value is None:
        raise DMLError(E_INVALIDARG, f"{where}: {what} {name!r} is not a {enum.__name__} name")
    return value


def operator_desc(node: Node, owned: set[str], where: str) -> Any:
    """A node's DML_OPERATOR_DESC, its fields filled in DirectML.h's order (section 3 of the
    format facts). ``owned``: names of node inputs to flag OWNED_BY_DML."""
    assert node.operator is not None
    op = _enum(DML_OPERATOR_TYPE, node.operator, "the operator type", where)
    if op not in SCHEMA:
        raise DMLError(E_INVALIDARG, f"{where}: {node.operator} has no desc struct")
    return DML_OPERATOR_DESC(Type=op, Desc=_fields(op, node, owned, where))


def _fields(op: DML_OPERATOR_TYPE, node: Node, owned: set[str], where: str) -> Any:
    values: dict[str, Any] = {}
    lists = {"input": (list(node.input_names), list(node.inputs)),
             "output": (list(node.output_names), list(node.outputs))}
    attributes = list(node.attributes)
    for f in SCHEMA[op].fields:
        if f.kind in lists:
            names, descs = lists[f.kind]
            if f.type == "TENSOR_DESC_ARRAY":
                values[f.name] = [_tensor_desc(descs.pop(0),
                                               f.kind == "input" and names.pop(0) in owned, where)
                                  for _ in range(min(len(names), len(descs)))]
                continue
            name = names.pop(0) if names else ""
            if name == "":
                values[f.name] = None
                continue
            if not descs:
                raise DMLError(E_INVALIDARG, f"{where}: {node.name!r} names {f.name} "
                               f"({name!r}) but has no tensor desc left for it")
            values[f.name] = _tensor_desc(descs.pop(0), f.kind == "input" and name in owned,
                                          where)
            continue
        if not attributes:
            raise DMLError(E_INVALIDARG, f"{where}: {node.name!r} ({op.name}) has fewer "
                           f"attributes than its desc's attribute fields (no value for {f.name})")
        values[f.name] = _value(attributes.pop(0), f, values, where)
    if attributes:
        raise DMLError(E_INVALIDARG, f"{where}: {node.name!r} ({op.name}) has "
                       f"{len(attributes)} attribute(s) more than its desc's attribute fields")
    return OPERATOR_DESC_CLASSES[op](**values)


def _tensor_desc(t: Tensor, owned: bool, where: str) -> Any:
    return DML_BUFFER_TENSOR_DESC(
        DataType=_enum(DML_TENSOR_DATA_TYPE, t.data_type, "the data type", where),
        Flags=DML_TENSOR_FLAGS.DML_TENSOR_FLAG_OWNED_BY_DML if owned else
        DML_TENSOR_FLAGS.DML_TENSOR_FLAG_NONE,
        Sizes=t.sizes, Strides=t.strides, TotalTensorSizeInBytes=t.total or None)


def _value(a: Attribute, f: Any, values: dict[str, Any], where: str) -> Any:
    if a.value is None:
        return None
    if a.kind == SCALE_BIAS:
        return DML_SCALE_BIAS(*a.value)
    if a.kind == SIZE_2D:
        return DML_SIZE_2D(*a.value)
    if a.kind == ACTIVATION:
        return _activation_desc(a.value, where)
    if a.kind == ACTIVATION_ARRAY:
        return [_activation_desc(x, where) for x in a.value]
    if a.kind == SCALAR_UNION:
        data_type = values.get(f.companion) if f.companion else None
        dtype = None
        if isinstance(data_type, int) and not isinstance(data_type, bool) and \
                data_type in DML_TENSOR_DATA_TYPE._value2member_map_:
            dtype = NUMPY_DTYPE.get(DML_TENSOR_DATA_TYPE(data_type))
        if dtype is None:
            raise DMLError(E_INVALIDARG, f"{where}: {f.name}'s scalar union cannot be read: "
                           f"its data type field ({f.companion}) is {data_type}")
        return np.frombuffer(a.value[:np.dtype(dtype).itemsize], dtype)[0].item()
    return a.value


def _activation_desc(value: tuple[str, list[Attribute]], where: str) -> Any:
    name, attributes = value
    op = _enum(DML_OPERATOR_TYPE, name, "the fused activation", where)
    if op not in SCHEMA:
        raise DMLError(E_INVALIDARG, f"{where}: {name} has no desc struct")
    fields = [f for f in SCHEMA[op].fields if f.kind == "attribute"]
    if len(attributes) != len(fields):
        raise DMLError(E_INVALIDARG, f"{where}: the fused activation {name} has "
                       f"{len(attributes)} attribute(s); its desc has {len(fields)}")
    values: dict[str, Any] = {}
    for f, a in zip(fields, attributes):
        values[f.name] = _value(a, f, values, where)
    return OPERATOR_DESC_CLASSES[op](**values)


def _produced(graph: SerializedGraph) -> dict[str, tuple[int, int]]:
    """Each output name -> (serialized node, output position)."""
    return {name: (i, p) for i, n in enumerate(graph.nodes)
            for p, name in enumerate(n.output_names) if name}


def _owned(graph: SerializedGraph, produced: dict[str, tuple[int, int]]) -> set[str]:
    """The names of values that constants stored by name produce: the inputs they feed are
    OWNED_BY_DML (bound once, at initialization, as DxDispatch binds them)."""
    return {name for name, (i, _) in produced.items() if graph.nodes[i].constant_name is not None}


def to_graph(device: IDMLDevice, graph: SerializedGraph, load: Callable[[str], bytes],
             where: str) -> Compiled:
    """The graph as a DML_GRAPH_DESC of ``device``'s operators; ``load(name)`` gives the bytes of
    a constant stored by name."""
    produced = _produced(graph)
    by_name = {name: k for k, name in enumerate(graph.input_names) if name}
    out_index = {name: k for k, name in enumerate(graph.output_names) if name}
    named = [i for i, n in enumerate(graph.nodes) if n.constant_name is not None]
    constant_input = {i: len(graph.input_names) + k for k, i in enumerate(named)}
    owned = _owned(graph, produced)
    keep = [i for i, n in enumerate(graph.nodes) if n.constant_name is None]
    index = {i: k for k, i in enumerate(keep)}  # serialized node -> graph node
    nodes, inputs, mids, outputs, operators = [], [], [], [], []
    for i in keep:
        n = graph.nodes[i]
        here = f"{where}: node {n.name!r}"
        if n.operator is None:
            nodes.append(DML_CONSTANT_DATA_GRAPH_NODE_DESC(Data=n.constant_data, Name=n.name))
            continue
        desc = operator_desc(n, owned, here)
        operators.append(desc)
        nodes.append(DML_OPERATOR_GRAPH_NODE_DESC(Operator=device.CreateOperator(desc),
                                                  Name=n.name))
        for p, name in enumerate(n.input_names):
            if not name:
                continue
            if name in by_name:
                inputs.append(DML_INPUT_GRAPH_EDGE_DESC(by_name[name], index[i], p, name))
            elif name in produced:
                src, sp = produced[name]
                if src in constant_input:
                    inputs.append(DML_INPUT_GRAPH_EDGE_DESC(constant_input[src], index[i], p,
                                                            graph.nodes[src].name))
                else:
                    mids.append(DML_INTERMEDIATE_GRAPH_EDGE_DESC(index[src], sp, index[i], p,
                                                                 name))
            else:
                raise DMLError(E_INVALIDARG, f"{here}: input {p} is named {name!r}, which is "
                               "neither a graph input nor any node's output")
        for p, name in enumerate(n.output_names):
            if name in out_index:
                outputs.append(DML_OUTPUT_GRAPH_EDGE_DESC(index[i], p, out_index[name], name))
    constants = {constant_input[i]: load(graph.nodes[i].constant_name or "") for i in named}
    input_names = list(graph.input_names) + [graph.nodes[i].name for i in named]
    desc = DML_GRAPH_DESC(InputCount=len(input_names), OutputCount=len(graph.output_names),
                          Nodes=nodes, InputEdges=inputs, IntermediateEdges=mids,
                          OutputEdges=outputs)
    return Compiled(desc, input_names, list(graph.output_names), constants, operators)
