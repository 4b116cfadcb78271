"""IDMLDevice1::CompileGraph: a DAG of operators (and, from 6_2, constant data) compiled into one
dispatchable.

``compile_graph`` checks every rule of Microsoft's graph pages (DML_GRAPH_DESC and the node and edge
structs; docs/decisions.md, "Graphs", for where they are silent), orders the nodes topologically
and plans the intermediate tensors once:

- every operator output that no graph output takes is an intermediate *value*, alive from the
  step of the node that writes it to the step of its last reader;
- values are placed in one temporary resource by first fit, largest first, so two values share
  bytes only when their lifetimes do not overlap: the resource (``TemporaryResourceSize``, bound
  by the user as in DirectML) is the peak of the live set, not the sum;
- each node then runs its own operator's plan, the same plan ``CompileOperator`` runs, over byte
  regions worked out once per recorded dispatch, so a dispatch is one loop of plan calls.

Graph inputs flagged OWNED_BY_DML (every operator input connected to them must agree) are bound
once at initialization, through the initializer's BUFFER_ARRAY, and copied; constant nodes' data is
copied at CompileGraph (the call's pointers are not kept, as the page says of the operators).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from descriptors import (
    DML_BINDING_PROPERTIES,
    DML_EXECUTION_FLAGS,
    DML_FEATURE_LEVEL,
    DML_GRAPH_EDGE_TYPE,
    DML_GRAPH_NODE_TYPE,
    DML_TEMPORARY_BUFFER_ALIGNMENT,
)
from descriptors.structs import GENERIC_STRUCTS
from descriptors.tensor import ELEMENT_SIZE_BITS

from .binding import Bound
from .cvalues import as_list, show, to_enum, to_flags, to_int
from .device import IDMLCompiledOperator, IDMLOperator, operator_bind_points
from .errors import E_NOINTERFACE, E_OUTOFMEMORY, DMLError, invalid_arg
from .featurelevels import level_name
from .registry import not_executable
from .validation import Tensor

if TYPE_CHECKING:
    from .device import IDMLDevice

# The graph structs (generated from the header's struct table, so typed Any here).
DML_GRAPH_DESC = GENERIC_STRUCTS["DML_GRAPH_DESC"]
DML_GRAPH_NODE_DESC = GENERIC_STRUCTS["DML_GRAPH_NODE_DESC"]
DML_OPERATOR_GRAPH_NODE_DESC = GENERIC_STRUCTS["DML_OPERATOR_GRAPH_NODE_DESC"]
DML_CONSTANT_DATA_GRAPH_NODE_DESC = GENERIC_STRUCTS["DML_CONSTANT_DATA_GRAPH_NODE_DESC"]
DML_GRAPH_EDGE_DESC = GENERIC_STRUCTS["DML_GRAPH_EDGE_DESC"]
DML_INPUT_GRAPH_EDGE_DESC = GENERIC_STRUCTS["DML_INPUT_GRAPH_EDGE_DESC"]
DML_OUTPUT_GRAPH_EDGE_DESC = GENERIC_STRUCTS["DML_OUTPUT_GRAPH_EDGE_DESC"]
DML_INTERMEDIATE_GRAPH_EDGE_DESC = GENERIC_STRUCTS["DML_INTERMEDIATE_GRAPH_EDGE_DESC"]

LEVEL_GRAPHS = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_2_1  # IDMLDevice1 (the level history)
LEVEL_CONSTANTS = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_2  # DML_GRAPH_NODE_TYPE_CONSTANT
ALIGN = DML_TEMPORARY_BUFFER_ALIGNMENT  # every intermediate starts on this many bytes
WHERE = "CompileGraph"
MAX_DESCRIPTORS = 1_000_000  # D3D12's largest shader-visible CBV/SRV/UAV heap
NUMERIC_FORMATS = frozenset("bBhHiIlLqQefd?")  # memoryview formats whose bytes are numbers
NT, ET = DML_GRAPH_NODE_TYPE, DML_GRAPH_EDGE_TYPE
# A node or edge may be given as the inner struct alone: its type follows from its class.
NODE_KINDS = {DML_OPERATOR_GRAPH_NODE_DESC: NT.DML_GRAPH_NODE_TYPE_OPERATOR,
              DML_CONSTANT_DATA_GRAPH_NODE_DESC: NT.DML_GRAPH_NODE_TYPE_CONSTANT}
EDGE_KINDS = {DML_INPUT_GRAPH_EDGE_DESC: ET.DML_GRAPH_EDGE_TYPE_INPUT,
              DML_OUTPUT_GRAPH_EDGE_DESC: ET.DML_GRAPH_EDGE_TYPE_OUTPUT,
              DML_INTERMEDIATE_GRAPH_EDGE_DESC: ET.DML_GRAPH_EDGE_TYPE_INTERMEDIATE}


@dataclass
class Node:
    """One node: an operator's compiled form, or constant data."""

    index: int
    name: str
    compiled: IDMLCompiledOperator | None  # None: a constant node
    data: np.ndarray | None = None  # a constant node's bytes

    @property
    def label(self) -> str:
        kind = self.compiled.name if self.compiled is not None else "constant data"
        return f"Nodes[{self.index}] ({kind}{', ' + repr(self.name) if self.name else ''})"

    def points(self, kind: str) -> list[tuple[str, Tensor | None]]:
        if self.compiled is None:
            return [] if kind == "input" else [("Data", None)]
        return self.compiled.bind_points(kind)


# Where a node input's bytes come from, and where a node output's bytes go.
@dataclass(frozen=True)
class GraphInput:
    index: int


@dataclass(frozen=True)
class GraphOutput:
    index: int


@dataclass(frozen=True)
class Value:
    """An intermediate: bytes [offset, offset + size) of the temporary resource."""

    index: int
    offset: int
    size: int


@dataclass(frozen=True)
class Constant:
    node: int


Source = GraphInput | Value | Constant | GraphOutput  # (a graph output read by a later node)
Target = GraphOutput | Value


@dataclass(frozen=True)
class Step:
    """One operator node's work: its compiled operator, and where each bind point's region
    comes from."""

    op: IDMLCompiledOperator
    inputs: tuple[tuple[str, Source], ...]
    outputs: tuple[tuple[str, Target], ...]


def _kind_desc(value: Any, where: str, wrapper: Any, kinds: dict[Any, Any], enum: Any,
               what: str) -> tuple[Any, Any]:
    """A node or edge given as DirectML's tagged struct (``Type`` + ``Desc``), or as the inner
    struct itself (a Python convenience): (type, inner desc)."""
    for cls, kind in kinds.items():
        if isinstance(value, cls):
            return kind, value
    if not isinstance(value, wrapper):
        raise invalid_arg(f"{WHERE}: {where} = {show(value)} is invalid: must be a "
                          f"{wrapper.__name__} (or one of {', '.join(c.__name__ for c in kinds)})")
    kind = to_enum(value.Type, enum, f"{WHERE}: {where}.Type")
    expected = next((c for c, k in kinds.items() if k == kind), None)
    if expected is None:
        raise invalid_arg(f"{WHERE}: {where}.Type = {kind.name} is not a valid {what} type")
    if not isinstance(value.Desc, expected):
        raise invalid_arg(f"{WHERE}: {where}.Desc = {show(value.Desc)} is invalid: a {kind.name} "
                          f"needs a {expected.__name__}")
    return kind, value.Desc


def _name(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise invalid_arg(f"{WHERE}: {where} = {show(value)} is invalid: must be a string or None")
    return value


def _counted(desc: Any, field: str, count_field: str) -> list[Any]:
    items = as_list(getattr(desc, field), f"{WHERE}: DML_GRAPH_DESC.{field}")
    count = getattr(desc, count_field)
    if count is not None:
        to_int(count, f"{WHERE}: DML_GRAPH_DESC.{count_field}", "UINT", len(items), len(items),
               f"must equal the length of {field} ({len(items)})")
    return items


def place(values: Sequence[tuple[int, int, int]]) -> tuple[list[int], int]:
    """Offsets for values given as (size, first step, last step): first fit, largest first, so
    two values share bytes only if their step ranges are disjoint. Returns (offsets, total)."""
    offsets = [0] * len(values)
    placed: list[int] = []
    order = sorted(range(len(values)), key=lambda i: (-values[i][0], values[i][1], i))
    total = 0
    for i in order:
        size, lo, hi = values[i]
        busy = sorted((offsets[j], offsets[j] + values[j][0]) for j in placed
                      if values[j][1] <= hi and lo <= values[j][2])
        at = 0
        for start, end in busy:
            if at + size <= start:
                break
            at = max(at, -(-end // ALIGN) * ALIGN)
        offsets[i] = at
        placed.append(i)
        total = max(total, at + size)
    return offsets, -(-total // ALIGN) * ALIGN


def compile_graph(device: IDMLDevice, desc: Any, flags: Any,
                  kernels: bool = True) -> IDMLCompiledGraph:
    """IDMLDevice1::CompileGraph. ``kernels=False`` (``dml-emulator check``) checks every graph
    rule but lets nodes whose operators this emulator cannot run yet through: the result is for
    validation, not dispatch."""
    level = device.feature_level
    if level < LEVEL_GRAPHS:
        raise DMLError(E_NOINTERFACE, f"{WHERE}: IDMLDevice1::CompileGraph needs "
                       f"{level_name(LEVEL_GRAPHS)} (DirectML 1.2); the device emulates "
                       f"{level_name(level)}, whose IDMLDevice has no IDMLDevice1 interface")
    if not isinstance(desc, DML_GRAPH_DESC):
        raise invalid_arg(f"{WHERE}: desc = {show(desc)} is invalid: must be a DML_GRAPH_DESC")
    flags = to_flags(flags, DML_EXECUTION_FLAGS, f"{WHERE}: flags")
    g = "DML_GRAPH_DESC"
    n_in = to_int(desc.InputCount, f"{WHERE}: {g}.InputCount", "UINT")
    n_out = to_int(desc.OutputCount, f"{WHERE}: {g}.OutputCount", "UINT", 1,
                   rule="a graph has at least one output")
    raw_nodes = _counted(desc, "Nodes", "NodeCount")
    if not raw_nodes:
        raise invalid_arg(f"{WHERE}: {g}.NodeCount = 0 is invalid: a graph has at least one node")
    in_edges = _counted(desc, "InputEdges", "InputEdgeCount")
    if n_in + n_out > MAX_DESCRIPTORS:
        raise invalid_arg(f"{WHERE}: {g}.InputCount + OutputCount = {n_in} + {n_out} is invalid: "
                          "a graph binds one descriptor per input and output, and a D3D12 "
                          f"descriptor heap holds at most {MAX_DESCRIPTORS:,}")
    out_edges = _counted(desc, "OutputEdges", "OutputEdgeCount")
    mid_edges = _counted(desc, "IntermediateEdges", "IntermediateEdgeCount")

    # -- nodes ----------------------------------------------------------------------------------
    nodes: list[Node] = []
    for i, raw in enumerate(raw_nodes):
        where = f"{g}.Nodes[{i}]"
        kind, inner = _kind_desc(raw, where, DML_GRAPH_NODE_DESC, NODE_KINDS, NT, "node")
        name = _name(inner.Name, f"{where}.Name")
        if kind == NT.DML_GRAPH_NODE_TYPE_OPERATOR:
            op = inner.Operator
            if not isinstance(op, IDMLOperator) or op._device is not device:
                raise invalid_arg(f"{WHERE}: {where}.Operator = {show(op)} is invalid: must be an "
                                  "IDMLOperator created by this device")
            if op.not_executable and kernels:
                raise not_executable(op.spec, level, op.not_executable)
            nodes.append(Node(i, name, IDMLCompiledOperator(op, flags)))
            continue
        if level < LEVEL_CONSTANTS:
            raise invalid_arg(f"{WHERE}: {where}.Type = DML_GRAPH_NODE_TYPE_CONSTANT is invalid "
                              f"at {level_name(level)}: constant-data nodes need "
                              f"{level_name(LEVEL_CONSTANTS)}")
        nodes.append(Node(i, name, None, _constant_bytes(inner, f"{where}")))

    # -- edges ----------------------------------------------------------------------------------
    sources: dict[tuple[int, int], tuple[str, Any]] = {}  # (node, input) -> its one edge
    readers: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (node, output) -> inputs
    graph_out: dict[int, tuple[int, int]] = {}  # graph output -> (node, output)
    to_graph: dict[tuple[int, int], int] = {}  # (node, output) -> graph output
    by_input: dict[int, list[tuple[int, int]]] = {}  # graph input -> node inputs

    def node_point(index: Any, point: Any, kind: str, where: str, fields: tuple[str, str]
                   ) -> tuple[int, int]:
        n = to_int(index, f"{WHERE}: {where}.{fields[0]}", "UINT", 0, len(nodes) - 1,
                   f"must name one of the graph's {len(nodes)} nodes")
        pts = nodes[n].points(kind)
        if not pts:
            raise invalid_arg(f"{WHERE}: {where}.{fields[0]} = {n} is invalid: "
                              f"{nodes[n].label} has no {kind}s")
        p = to_int(point, f"{WHERE}: {where}.{fields[1]}", "UINT", 0, len(pts) - 1,
                   f"{nodes[n].label} has {len(pts)} {kind}s ("
                   + ", ".join(lbl for lbl, _ in pts) + ")")
        return n, p

    def take_input(n: int, p: int, where: str, what: Any) -> None:
        label, tensor = nodes[n].points("input")[p]
        if tensor is None:
            raise invalid_arg(f"{WHERE}: {where} connects {nodes[n].label} input {p} ({label}), "
                              "which the operator's desc leaves null: an absent optional input "
                              "takes no edge")
        if (n, p) in sources:
            raise invalid_arg(f"{WHERE}: {where} connects {nodes[n].label} input {p} ({label}) a "
                              f"second time ({sources[(n, p)][0]} already does): an input "
                              "takes exactly one edge")
        sources[(n, p)] = (where, what)

    for i, raw in enumerate(in_edges):
        where = f"{g}.InputEdges[{i}]"
        kind, e = _kind_desc(raw, where, DML_GRAPH_EDGE_DESC, EDGE_KINDS, ET, "edge")
        _edge_list(kind, ET.DML_GRAPH_EDGE_TYPE_INPUT, where, "InputEdges")
        _name(e.Name, f"{where}.Name")
        gi = to_int(e.GraphInputIndex, f"{WHERE}: {where}.GraphInputIndex", "UINT", 0,
                    n_in - 1, f"must be below InputCount ({n_in})") if n_in else \
            _no_inputs(where)
        n, p = node_point(e.ToNodeIndex, e.ToNodeInputIndex, "input", where,
                          ("ToNodeIndex", "ToNodeInputIndex"))
        take_input(n, p, where, GraphInput(gi))
        by_input.setdefault(gi, []).append((n, p))
    for i, raw in enumerate(mid_edges):
        where = f"{g}.IntermediateEdges[{i}]"
        kind, e = _kind_desc(raw, where, DML_GRAPH_EDGE_DESC, EDGE_KINDS, ET, "edge")
        _edge_list(kind, ET.DML_GRAPH_EDGE_TYPE_INTERMEDIATE, where, "IntermediateEdges")
        _name(e.Name, f"{where}.Name")
        src = node_point(e.FromNodeIndex, e.FromNodeOutputIndex, "output", where,
                         ("FromNodeIndex", "FromNodeOutputIndex"))
        dst = node_point(e.ToNodeIndex, e.ToNodeInputIndex, "input", where,
                         ("ToNodeIndex", "ToNodeInputIndex"))
        take_input(*dst, where, src)
        readers.setdefault(src, []).append(dst)
    for i, raw in enumerate(out_edges):
        where = f"{g}.OutputEdges[{i}]"
        kind, e = _kind_desc(raw, where, DML_GRAPH_EDGE_DESC, EDGE_KINDS, ET, "edge")
        _edge_list(kind, ET.DML_GRAPH_EDGE_TYPE_OUTPUT, where, "OutputEdges")
        _name(e.Name, f"{where}.Name")
        n, p = node_point(e.FromNodeIndex, e.FromNodeOutputIndex, "output", where,
                          ("FromNodeIndex", "FromNodeOutputIndex"))
        go = to_int(e.GraphOutputIndex, f"{WHERE}: {where}.GraphOutputIndex", "UINT", 0,
                    n_out - 1, f"must be below OutputCount ({n_out})")
        if nodes[n].compiled is None:
            raise invalid_arg(f"{WHERE}: {where} connects {nodes[n].label} to graph output {go}: "
                              "constant data feeds operator inputs only")
        out_label, out_t = nodes[n].points("output")[p]
        if out_t is None:
            raise invalid_arg(f"{WHERE}: {where} connects {nodes[n].label} output {p} "
                              f"({out_label}), which the operator's desc leaves null, to graph "
                              f"output {go}")
        if go in graph_out:
            raise invalid_arg(f"{WHERE}: {where}: graph output {go} already takes "
                              f"{nodes[graph_out[go][0]].label} output {graph_out[go][1]}; a "
                              "graph output takes exactly one edge")
        if (n, p) in to_graph:
            raise invalid_arg(f"{WHERE}: {where}: {nodes[n].label} output {p} already goes to "
                              "another graph output; an operator output writes one buffer, so "
                              "it feeds at most one graph output")
        graph_out[go] = (n, p)
        to_graph[(n, p)] = go

    # -- every rule that needs the whole graph ----------------------------------------------------
    for go in range(n_out):
        if go not in graph_out:
            raise invalid_arg(f"{WHERE}: graph output {go} has no edge (OutputEdges): every graph "
                              "output must be written by a node output")
    for node in nodes:
        if node.compiled is None:
            if (node.index, 0) not in readers:
                raise invalid_arg(f"{WHERE}: {node.label} is connected to nothing: its data "
                                  "must feed an operator input")
            continue
        schema = node.compiled.operator.validated.schema
        optional_out = {f.name for f in schema.outputs if f.optional}
        for p, (label, t) in enumerate(node.points("input")):
            if t is not None and (node.index, p) not in sources:
                raise invalid_arg(f"{WHERE}: {node.label} input {p} ({label}) has no edge: every "
                                  "input the operator's desc has must be connected (an input "
                                  "edge from a graph input, or an intermediate edge)")
        for p, (label, t) in enumerate(node.points("output")):
            used = (node.index, p) in readers or (node.index, p) in to_graph
            if t is not None and not used and label.split("[")[0] not in optional_out:
                raise invalid_arg(f"{WHERE}: {node.label} output {p} ({label}) has no edge: "
                                  "every output but the operator's optional ones must be "
                                  "connected (to a graph output or another node's input)")
    _check_sizes(nodes, sources)
    graph_inputs = _graph_inputs(nodes, n_in, by_input)
    order = _topological(nodes, sources)
    return IDMLCompiledGraph(device, flags, nodes, order, sources, readers, graph_out, to_graph,
                             graph_inputs, in_edges, out_edges)


def _no_inputs(where: str) -> int:
    raise invalid_arg(f"{WHERE}: {where} is invalid: the graph has no inputs (InputCount = 0), "
                      "so it can have no input edges")


def _edge_list(kind: DML_GRAPH_EDGE_TYPE, expected: DML_GRAPH_EDGE_TYPE, where: str,
               field: str) -> None:
    if kind != expected:
        raise invalid_arg(f"{WHERE}: {where} is a {kind.name} edge; {field} holds "
                          f"{expected.name} edges only")


def _constant_bytes(inner: Any, where: str) -> np.ndarray:
    data = inner.Data
    if isinstance(data, (bytes, bytearray)) or (
            isinstance(data, memoryview) and data.format in NUMERIC_FORMATS):
        raw = np.frombuffer(bytes(data), np.uint8)
    elif isinstance(data, np.ndarray) and data.dtype.kind in "biufc":
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        raise invalid_arg(f"{WHERE}: {where}.Data = {show(data)} is invalid: must be bytes or a "
                          "numpy array of numbers")
    size = raw.size if inner.DataSize is None else \
        to_int(inner.DataSize, f"{WHERE}: {where}.DataSize", "UINT64", 1, raw.size,
               f"must be at least 1 and at most the {raw.size} bytes Data holds")
    if size == 0:
        raise invalid_arg(f"{WHERE}: {where}.Data is empty: a constant node holds at least one "
                          "byte")
    return raw[:size].copy()


def _check_sizes(nodes: list[Node], sources: dict[tuple[int, int], tuple[str, Any]]) -> None:
    """TotalTensorSizeInBytes equal across every intermediate edge (the page); OWNED_BY_DML
    inputs fed by graph inputs only (the page); constant data covers every byte its reader's
    elements reach."""
    for (n, p), (where, src) in sources.items():
        label, t = nodes[n].points("input")[p]
        assert t is not None
        if isinstance(src, GraphInput):
            continue
        if t.owned_by_dml:
            raise invalid_arg(f"{WHERE}: {where} connects a node output to {nodes[n].label} input "
                              f"{p} ({label}), which is flagged DML_TENSOR_FLAG_OWNED_BY_DML: "
                              "such inputs must be connected to graph inputs (they are bound "
                              "once, at initialization)")
        sn, sp = src
        if nodes[sn].compiled is None:
            data = nodes[sn].data
            assert data is not None
            need = -(-t.extent * ELEMENT_SIZE_BITS[t.data_type] // 8)  # bytes its elements reach
            if data.size < need:
                raise invalid_arg(f"{WHERE}: {where}: {nodes[sn].label} holds {data.size} bytes; "
                                  f"{nodes[n].label} input {p} ({label}) reads {need} "
                                  "(its elements' extent)")
            continue
        out_label, out_t = nodes[sn].points("output")[sp]
        if out_t is None:
            raise invalid_arg(f"{WHERE}: {where} connects {nodes[sn].label} output {sp} "
                              f"({out_label}), which the operator's desc leaves null")
        if out_t.total_bytes != t.total_bytes:
            raise invalid_arg(
                f"{WHERE}: {where}: {nodes[sn].label} output {sp} ({out_label}) has "
                f"TotalTensorSizeInBytes = {out_t.total_bytes} but {nodes[n].label} input {p} "
                f"({label}) has {t.total_bytes}; tensors joined by an edge must have identical "
                "TotalTensorSizeInBytes")


def _graph_inputs(nodes: list[Node], n_in: int, by_input: dict[int, list[tuple[int, int]]]
                  ) -> list[Tensor | None]:
    """One tensor per graph input, standing for every operator input it feeds: their
    TotalTensorSizeInBytes (equal) and OWNED_BY_DML flag (equal), the strictest alignment. None
    for a graph input no edge reads (bound as NONE)."""
    out: list[Tensor | None] = []
    for gi in range(n_in):
        points = by_input.get(gi, [])
        if not points:
            out.append(None)
            continue
        tensors = [(nodes[n], p, nodes[n].points("input")[p]) for n, p in points]
        first_node, first_p, (first_label, first) = tensors[0]
        assert first is not None
        for node, p, (label, t) in tensors[1:]:
            assert t is not None
            if t.owned_by_dml != first.owned_by_dml:
                raise invalid_arg(
                    f"{WHERE}: graph input {gi} feeds {first_node.label} input {first_p} "
                    f"({first_label}) {'with' if first.owned_by_dml else 'without'} "
                    f"DML_TENSOR_FLAG_OWNED_BY_DML and {node.label} input {p} ({label}) "
                    f"{'with' if t.owned_by_dml else 'without'} it; every input connected to "
                    "one graph input must use or omit the flag alike")
            if t.total_bytes != first.total_bytes:
                raise invalid_arg(
                    f"{WHERE}: graph input {gi} feeds {first_node.label} input {first_p} "
                    f"({first_label}, TotalTensorSizeInBytes = {first.total_bytes}) and "
                    f"{node.label} input {p} ({label}, {t.total_bytes}); the inputs one graph "
                    "input feeds must have identical TotalTensorSizeInBytes")
        alignment = max(t.alignment for _, _, (_, t) in tensors if t is not None)
        out.append(dataclasses.replace(first, alignment=alignment))
    return out


def _topological(nodes: list[Node], sources: dict[tuple[int, int], tuple[str, Any]]
                 ) -> list[int]:
    """Kahn's algorithm, lowest index first among the ready nodes (a stable order); a cycle is
    E_INVALIDARG naming its nodes."""
    deps: dict[int, set[int]] = {n.index: set() for n in nodes}
    for (n, _), (_, src) in sources.items():
        if not isinstance(src, GraphInput):
            deps[n].add(src[0])
    users: dict[int, list[int]] = {n.index: [] for n in nodes}
    for n, ds in deps.items():
        for d in ds:
            users[d].append(n)
    waiting = {n: len(ds) for n, ds in deps.items()}
    ready = [n for n, c in waiting.items() if c == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        n = heapq.heappop(ready)
        order.append(n)
        for u in users[n]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(nodes):
        stuck = sorted(set(waiting) - set(order))
        raise invalid_arg(f"{WHERE}: the graph has a cycle through "
                          + ", ".join(nodes[n].label for n in stuck[:6])
                          + (" …" if len(stuck) > 6 else "")
                          + "; a graph must be acyclic")
    return order


class IDMLCompiledGraph(IDMLCompiledOperator):
    """A compiled graph: an ``IDMLCompiledOperator`` whose bind points are the graph's inputs and
    outputs, with a temporary resource for its intermediates."""

    def __init__(self, device: IDMLDevice, flags: DML_EXECUTION_FLAGS, nodes: list[Node],
                 order: list[int], sources: dict[tuple[int, int], tuple[str, Any]],
                 readers: dict[tuple[int, int], list[tuple[int, int]]],
                 graph_out: dict[int, tuple[int, int]], to_graph: dict[tuple[int, int], int],
                 graph_inputs: list[Tensor | None], in_edges: list[Any], out_edges: list[Any]):
        self._device = device
        self.flags = flags
        self._initialized = False
        self._owned_inputs: dict[int, np.ndarray] = {}
        self.nodes = nodes
        self.order = order
        step_of = {n: s for s, n in enumerate(order)}
        # Intermediates: every operator output no graph output takes (an unconnected optional
        # output included: the kernel writes it, nobody reads it).
        lifetimes: list[tuple[int, int, int]] = []
        value_of: dict[tuple[int, int], int] = {}
        for n in order:
            node = nodes[n]
            if node.compiled is None:
                continue
            for p, (_, t) in enumerate(node.points("output")):
                if t is None or (n, p) in to_graph:
                    continue
                last = max((step_of[r] for r, _ in readers.get((n, p), [])),
                           default=step_of[n])
                value_of[(n, p)] = len(lifetimes)
                lifetimes.append((t.total_bytes, step_of[n], last))
        offsets, self.temporary_size = place(lifetimes)
        self.values = [Value(i, off, size) for i, (off, (size, _, _)) in
                       enumerate(zip(offsets, lifetimes))]
        self.live_peak = max((sum(-(-s // ALIGN) * ALIGN for s, lo, hi in lifetimes
                                  if lo <= step <= hi) for step in range(len(order))), default=0)
        steps: list[Step] = []
        for n in order:
            node = nodes[n]
            if node.compiled is None:
                continue
            ins: list[tuple[str, Source]] = []
            for p, (label, t) in enumerate(node.points("input")):
                if t is None:
                    continue
                src = sources[(n, p)][1]
                if not isinstance(src, GraphInput):
                    src = Constant(src[0]) if nodes[src[0]].compiled is None else \
                        GraphOutput(to_graph[src]) if src in to_graph else \
                        self.values[value_of[src]]
                ins.append((label, src))
            outs: list[tuple[str, Target]] = []
            for p, (label, t) in enumerate(node.points("output")):
                if t is None:
                    continue
                outs.append((label, GraphOutput(to_graph[(n, p)]) if (n, p) in to_graph
                             else self.values[value_of[(n, p)]]))
            steps.append(Step(node.compiled, tuple(ins), tuple(outs)))
        self.steps = tuple(steps)
        # Constants padded with zeros to their readers' TotalTensorSizeInBytes.
        self._constants: dict[int, np.ndarray] = {}
        for (n, p), (_, src) in sources.items():
            if isinstance(src, GraphInput) or nodes[src[0]].compiled is not None:
                continue
            t = nodes[n].points("input")[p][1]
            assert t is not None
            data = nodes[src[0]].data
            assert data is not None
            have = self._constants.get(src[0])
            size = max(t.total_bytes, data.size, 0 if have is None else have.size)
            try:  # (calloc: pages past the bytes a reader's elements reach are never touched)
                padded = np.zeros(size, np.uint8)
            except (MemoryError, ValueError):
                raise DMLError(E_OUTOFMEMORY, f"{WHERE}: {nodes[src[0]].label}: its reader's "
                               f"TotalTensorSizeInBytes ({t.total_bytes}) cannot be allocated "
                               "on this machine") from None
            padded[:data.size] = data
            self._constants[src[0]] = padded
        in_names = _labels(in_edges, "GraphInputIndex", len(graph_inputs), "input")
        self._inputs = list(zip(in_names, graph_inputs))
        out_names = _labels(out_edges, "GraphOutputIndex", len(graph_out), "output")
        self._outputs = [(out_names[go], nodes[graph_out[go][0]].points("output")[
            graph_out[go][1]][1]) for go in range(len(graph_out))]

    @property
    def name(self) -> str:
        return f"compiled graph ({len(self.nodes)} nodes)"

    def bind_points(self, kind: str) -> list[tuple[str, Tensor | None]]:
        return self._inputs if kind == "input" else self._outputs

    def _in_place(self) -> bool:
        """A one-node graph runs in place as its operator does; with more nodes, an output may
        be written while another node still reads the input it overlaps."""
        return len(self.steps) == 1 and self.steps[0].op._in_place()

    def GetBindingProperties(self) -> DML_BINDING_PROPERTIES:
        self._device._check_alive()
        return DML_BINDING_PROPERTIES(
            RequiredDescriptorCount=len(self._inputs) + len(self._outputs),
            TemporaryResourceSize=self.temporary_size, PersistentResourceSize=0)

    def initialize(self, owned: Sequence[Bound | None]) -> None:
        self._owned_inputs = {gi: b.region()[: t.total_bytes].copy()
                              for gi, ((_, t), b) in enumerate(zip(self._inputs, owned))
                              if b is not None and t is not None}
        self._initialized = True

    def reserve(self) -> Any:
        return [s.op.reserve() for s in self.steps]

    def regions(self, inputs: Sequence[Bound | None], outputs: Sequence[Bound | None],
                temporary: Bound | None) -> list[dict[str, np.ndarray]]:
        """Each step's byte regions for these bindings."""
        arena = temporary.region() if temporary is not None else np.zeros(0, np.uint8)
        out: list[dict[str, np.ndarray]] = []
        for s in self.steps:
            r: dict[str, np.ndarray] = {}
            for label, src in s.inputs:
                if isinstance(src, GraphInput):
                    owned = self._owned_inputs.get(src.index)
                    b = inputs[src.index]
                    r[label] = owned if owned is not None else b.region()  # type: ignore[union-attr]
                elif isinstance(src, Constant):
                    r[label] = self._constants[src.node]
                elif isinstance(src, GraphOutput):  # written by an earlier step
                    r[label] = outputs[src.index].region()  # type: ignore[union-attr]
                else:
                    r[label] = arena[src.offset:src.offset + src.size]
            for label, dst in s.outputs:
                if isinstance(dst, GraphOutput):
                    r[label] = outputs[dst.index].region()  # type: ignore[union-attr]
                else:
                    r[label] = arena[dst.offset:dst.offset + dst.size]
            out.append(r)
        return out

    def execute(self, inputs: Sequence[Bound | None], outputs: Sequence[Bound | None],
                temporary: Bound | None = None, reserved: Any = None,
                memo: dict[str, Any] | None = None) -> None:
        from .kernels.jit import launch_guard

        # Worked out once per recorded dispatch (the command's memo), so a dispatch is only the
        # loop of plan calls below.
        regions = memo.get("regions") if memo is not None else None
        if regions is None:
            regions = self.regions(inputs, outputs, temporary)
            if memo is not None:
                memo["regions"] = regions
        scratch = reserved if reserved is not None else [None] * len(self.steps)
        with launch_guard():
            for s, r, extra in zip(self.steps, regions, scratch):
                s.op.run(r, extra)


def single_node_graph(op: IDMLOperator) -> Any:
    """An operator as a one-node graph, as DxDispatch's DmlCompileGraph builds one: graph input i
    is the operator's input bind point i (unconnected where the desc leaves it null, so it is
    bound as NONE); the graph outputs are its present outputs, in order. Edges carry the bind
    points' labels as names."""
    ins, outs = (operator_bind_points(op.validated, kind) for kind in ("input", "output"))
    present = [(i, label) for i, (label, t) in enumerate(outs) if t is not None]
    return DML_GRAPH_DESC(
        InputCount=len(ins), OutputCount=len(present),
        Nodes=[DML_GRAPH_NODE_DESC(Type=NT.DML_GRAPH_NODE_TYPE_OPERATOR,
                                   Desc=DML_OPERATOR_GRAPH_NODE_DESC(Operator=op))],
        InputEdges=[DML_GRAPH_EDGE_DESC(Type=ET.DML_GRAPH_EDGE_TYPE_INPUT,
                                        Desc=DML_INPUT_GRAPH_EDGE_DESC(i, 0, i, label))
                    for i, (label, t) in enumerate(ins) if t is not None],
        OutputEdges=[DML_GRAPH_EDGE_DESC(Type=ET.DML_GRAPH_EDGE_TYPE_OUTPUT,
                                         Desc=DML_OUTPUT_GRAPH_EDGE_DESC(0, i, k, label))
                     for k, (i, label) in enumerate(present)])


def _labels(edges: list[Any], field: str, count: int, default: str) -> list[str]:
    """Each graph input's or output's bind-point label: its first edge's Name, else inputN /
    outputN; a label that two of them would share takes its index too, so labels stay unique
    (``execute_graph`` accepts a mapping by label)."""
    names: dict[int, str] = {}
    for e in edges:
        inner = e.Desc if isinstance(e, DML_GRAPH_EDGE_DESC) else e
        index, name = getattr(inner, field, None), getattr(inner, "Name", None)
        if isinstance(index, int) and name and index not in names:
            names[index] = str(name)
    labels = [names.get(i, f"{default}{i}") for i in range(count)]
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label}#{i}" if seen[label] > 1 else label for i, label in enumerate(labels)]


__all__ = ["IDMLCompiledGraph", "compile_graph", "place", "single_node_graph"]
