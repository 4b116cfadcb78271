"""IDMLDevice1::CompileGraph: results against the same operators run one by one, every rule of the
graph pages with a reject test, binding rules, OWNED_BY_DML graph inputs, constant-data nodes and
the intermediate memory plan."""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *
from emulator import Buffer, CommandList, CommandQueue, DMLCreateDevice1, DMLError
from emulator.graph import ALIGN, place

F32 = DML_TENSOR_DATA_TYPE_FLOAT32
SHAPE = (1, 1, 16, 16)
NBYTES = 16 * 16 * 4


def t(shape=SHAPE, dtype=F32, flags=DML_TENSOR_FLAG_NONE):
    return tensor_desc(shape, dtype, flags=flags)


def op_desc(inner):
    return DML_OPERATOR_DESC(Desc=inner)


def add(a=None, b=None, out=None):
    return op_desc(DML_ELEMENT_WISE_ADD_OPERATOR_DESC(ATensor=a or t(), BTensor=b or t(),
                                                      OutputTensor=out or t()))


def mul(a=None, b=None):
    return op_desc(DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC(ATensor=a or t(), BTensor=b or t(),
                                                           OutputTensor=t()))


def relu(x=None):
    x = x or t()
    return op_desc(DML_ACTIVATION_RELU_OPERATOR_DESC(InputTensor=x, OutputTensor=x))


def gemm(a=None, b=None):
    return op_desc(DML_GEMM_OPERATOR_DESC(
        ATensor=a or t(), BTensor=b or t(), OutputTensor=t(),
        TransA=DML_MATRIX_TRANSFORM_NONE, TransB=DML_MATRIX_TRANSFORM_NONE, Alpha=1.0, Beta=0.0))


def node(op):
    return DML_GRAPH_NODE_DESC(Type=DML_GRAPH_NODE_TYPE_OPERATOR,
                               Desc=DML_OPERATOR_GRAPH_NODE_DESC(Operator=op))


def inp(g, n, p):
    return DML_GRAPH_EDGE_DESC(Type=DML_GRAPH_EDGE_TYPE_INPUT, Desc=DML_INPUT_GRAPH_EDGE_DESC(
        GraphInputIndex=g, ToNodeIndex=n, ToNodeInputIndex=p))


def mid(a, ap, b, bp):
    return DML_GRAPH_EDGE_DESC(Type=DML_GRAPH_EDGE_TYPE_INTERMEDIATE,
                               Desc=DML_INTERMEDIATE_GRAPH_EDGE_DESC(
                                   FromNodeIndex=a, FromNodeOutputIndex=ap, ToNodeIndex=b,
                                   ToNodeInputIndex=bp))


def out(n, p, g):
    return DML_GRAPH_EDGE_DESC(Type=DML_GRAPH_EDGE_TYPE_OUTPUT, Desc=DML_OUTPUT_GRAPH_EDGE_DESC(
        FromNodeIndex=n, FromNodeOutputIndex=p, GraphOutputIndex=g))


def graph(nodes, inputs, mids, outputs, n_in=None, n_out=None):
    return DML_GRAPH_DESC(
        InputCount=n_in if n_in is not None else len({e.Desc.GraphInputIndex for e in inputs}),
        OutputCount=n_out if n_out is not None else len(outputs),
        Nodes=nodes, InputEdges=inputs, IntermediateEdges=mids, OutputEdges=outputs)


@pytest.fixture
def device():
    return DMLCreateDevice1()  # a fresh one per test: a failed void call removes a device


def rand(rng, shape=SHAPE):
    return rng.standard_normal(shape).astype(np.float32)


def gemm_add_relu(device):
    ops = [device.CreateOperator(d) for d in (gemm(), add(), relu())]
    return graph([node(o) for o in ops], [inp(0, 0, 0), inp(1, 0, 1), inp(2, 1, 1)],
                 [mid(0, 0, 1, 0), mid(1, 0, 2, 0)], [out(2, 0, 0)])


def test_a_chain_equals_its_operators_run_one_by_one(device):
    rng = np.random.default_rng(1)
    a, b, c = rand(rng), rand(rng), rand(rng)
    [y] = device.execute_graph(gemm_add_relu(device), [a, b, c])
    [p] = device.execute(gemm(), [a, b, None])
    [s] = device.execute(add(), [np.array(p), c])
    [want] = device.execute(relu(), [np.array(s)])
    assert y.tobytes() == want.tobytes()
    assert (y >= 0).all() and y.any()


def test_the_temporary_resource_is_the_peak_live_set_not_the_sum(device):
    """A chain of n nodes keeps two values alive at a time; a diamond three."""
    ops = [device.CreateOperator(relu()) for _ in range(8)]
    chain = graph([node(o) for o in ops], [inp(0, 0, 0)],
                  [mid(i, 0, i + 1, 0) for i in range(7)], [out(7, 0, 0)])
    compiled = device.CompileGraph(chain)
    props = compiled.GetBindingProperties()
    assert props.TemporaryResourceSize == 2 * NBYTES  # 7 intermediates, 2 live at once
    assert compiled.live_peak == props.TemporaryResourceSize
    x = rand(np.random.default_rng(2))
    [y] = device.execute_graph(chain, [x])
    assert y.tobytes() == np.maximum(x, 0).tobytes()
    # Diamond: r0 feeds r1 and r2, add joins them: r0's value lives until the add.
    r = [device.CreateOperator(relu()) for _ in range(3)]
    a = device.CreateOperator(add())
    diamond = graph([node(r[0]), node(r[1]), node(r[2]), node(a)], [inp(0, 0, 0)],
                    [mid(0, 0, 1, 0), mid(0, 0, 2, 0), mid(1, 0, 3, 0), mid(2, 0, 3, 1)],
                    [out(3, 0, 0)])
    compiled = device.CompileGraph(diamond)
    assert compiled.GetBindingProperties().TemporaryResourceSize == 3 * NBYTES
    [y] = device.execute_graph(diamond, [x])
    assert y.tobytes() == (2 * np.maximum(x, 0)).tobytes()


def test_place_shares_bytes_only_between_disjoint_lifetimes():
    rng = np.random.default_rng(3)
    for _ in range(200):
        values = []
        for _ in range(rng.integers(1, 12)):
            lo = int(rng.integers(0, 10))
            values.append((int(rng.integers(1, 5000)), lo, lo + int(rng.integers(0, 5))))
        offsets, total = place(values)
        assert total % ALIGN == 0
        for i, (si, li, hi) in enumerate(values):
            assert offsets[i] % ALIGN == 0 and offsets[i] + si <= total
            for j, (sj, lj, hj) in enumerate(values[:i]):
                if li <= hj and lj <= hi:  # alive together: disjoint bytes
                    assert offsets[i] + si <= offsets[j] or offsets[j] + sj <= offsets[i]
        peak = max(sum(-(-s // ALIGN) * ALIGN for s, lo, hi in values if lo <= k <= hi)
                   for k in range(16))
        assert total >= peak


def test_random_dags_equal_their_operators_one_by_one(device):
    """Random DAGs of ADD/MULTIPLY/RELU with fan-out, several graph inputs and outputs."""
    rng = np.random.default_rng(4)
    for trial in range(12):
        n_in = int(rng.integers(1, 4))
        kinds = [rng.choice(["add", "mul", "relu"]) for _ in range(int(rng.integers(1, 9)))]
        descs = {"add": add, "mul": mul, "relu": relu}
        ops = [device.CreateOperator(descs[k]()) for k in kinds]
        inputs, mids = [], []
        srcs = []  # per node: its inputs, each ("in", g) or ("node", i)
        for i, k in enumerate(kinds):
            arity = 1 if k == "relu" else 2
            picks = []
            for p in range(arity):
                if i and rng.random() < 0.7:
                    j = int(rng.integers(0, i))
                    mids.append(mid(j, 0, i, p))
                    picks.append(("node", j))
                else:
                    g = int(rng.integers(0, n_in))
                    inputs.append(inp(g, i, p))
                    picks.append(("in", g))
            srcs.append(picks)
        used = {g for s in srcs for kind, g in s if kind == "in"}
        read = {j for s in srcs for kind, j in s if kind == "node"}
        ends = [i for i in range(len(kinds)) if i not in read]
        outputs = [out(i, 0, k) for k, i in enumerate(ends)]
        desc = graph([node(o) for o in ops], inputs, mids, outputs, n_in=n_in)
        xs = [rand(rng) if g in used else None for g in range(n_in)]
        got = device.execute_graph(desc, xs)
        values: list[np.ndarray] = []
        for k, s in zip(kinds, srcs):
            args = [np.array(xs[g]) if kind == "in" else np.array(values[g]) for kind, g in s]
            [v] = device.execute(descs[k](), args)
            values.append(np.array(v))
        for y, i in zip(got, ends):
            assert y.tobytes() == values[i].tobytes(), (trial, kinds, i)


def test_tensors_may_reinterpret_an_edge_of_equal_total_size(device):
    """The page: connected tensors may differ in sizes and type, not in TotalTensorSizeInBytes."""
    flat = t((256,))
    r = device.CreateOperator(relu())
    i = device.CreateOperator(op_desc(DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
        InputTensor=tensor_desc((256,), DML_TENSOR_DATA_TYPE_UINT32),
        OutputTensor=tensor_desc((256,), DML_TENSOR_DATA_TYPE_UINT32))))
    del flat
    x = rand(np.random.default_rng(5))
    [y] = device.execute_graph(graph([node(r), node(i)], [inp(0, 0, 0)], [mid(0, 0, 1, 0)],
                                     [out(1, 0, 0)]), [x])
    assert y.tobytes() == np.maximum(x, 0).tobytes()


def test_owned_by_dml_graph_inputs_are_copied_at_initialization():
    """dml_gemm_graph's pattern: B flagged OWNED_BY_DML, bound through the initializer; changing
    its buffer afterwards changes nothing."""
    device = DMLCreateDevice1()
    rng = np.random.default_rng(6)
    owned = t(flags=DML_TENSOR_FLAG_OWNED_BY_DML)
    g_op = device.CreateOperator(gemm(b=owned))
    desc = graph([node(g_op)], [inp(0, 0, 0), inp(1, 0, 1)], [], [out(0, 0, 0)])
    compiled = device.CompileGraph(desc)
    a, b = rand(rng), rand(rng)
    a_buf, b_buf, y_buf = Buffer.from_array(a), Buffer.from_array(b), Buffer(NBYTES)
    init = device.CreateOperatorInitializer([compiled])
    it = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=init, SizeInDescriptors=init.GetBindingProperties().RequiredDescriptorCount))
    it.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING(),
                                                      DML_BUFFER_BINDING(Buffer=b_buf)])])
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                             SizeInDescriptors=3))
    with pytest.raises(DMLError, match="OWNED_BY_DML"):
        table.BindInputs([DML_BUFFER_BINDING(Buffer=a_buf), DML_BUFFER_BINDING(Buffer=b_buf)])
    device = DMLCreateDevice1()  # the failed Bind removed the first one
    g_op = device.CreateOperator(gemm(b=owned))
    compiled = device.CompileGraph(graph([node(g_op)], [inp(0, 0, 0), inp(1, 0, 1)], [],
                                         [out(0, 0, 0)]))
    init = device.CreateOperatorInitializer([compiled])
    it = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=init, SizeInDescriptors=4))
    it.BindInputs([DML_BUFFER_ARRAY_BINDING(Bindings=[DML_BUFFER_BINDING(),
                                                      DML_BUFFER_BINDING(Buffer=b_buf)])])
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                             SizeInDescriptors=3))
    table.BindInputs([DML_BUFFER_BINDING(Buffer=a_buf), None])
    table.BindOutputs([DML_BUFFER_BINDING(Buffer=y_buf)])
    rec, queue = device.CreateCommandRecorder(), CommandQueue()
    cl = CommandList()
    rec.RecordDispatch(cl, init, it)
    cl.Close()
    queue.ExecuteCommandLists([cl])
    b_buf.numpy(np.float32)[:] = 1e6  # after initialization: DirectML owns its copy
    cl = CommandList()
    rec.RecordDispatch(cl, compiled, table)
    cl.Close()
    queue.ExecuteCommandLists([cl])
    [want] = DMLCreateDevice1().execute(gemm(), [a, b, None])
    assert y_buf.numpy(np.float32).tobytes() == np.array(want).tobytes()


def test_a_dispatch_needs_the_temporary_resource(device):
    compiled = device.CompileGraph(gemm_add_relu(device))
    need = compiled.GetBindingProperties().TemporaryResourceSize
    assert need == 2 * NBYTES
    init = device.CreateOperatorInitializer([compiled])
    rec, queue = device.CreateCommandRecorder(), CommandQueue()
    cl = CommandList()
    rec.RecordDispatch(cl, init, device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=init, SizeInDescriptors=4)))
    cl.Close()
    queue.ExecuteCommandLists([cl])
    bufs = [Buffer(NBYTES) for _ in range(4)]
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                             SizeInDescriptors=4))
    table.BindInputs([DML_BUFFER_BINDING(Buffer=b) for b in bufs[:3]])
    table.BindOutputs([DML_BUFFER_BINDING(Buffer=bufs[3])])
    with pytest.raises(DMLError, match="TemporaryResourceSize"):
        rec.RecordDispatch(CommandList(), compiled, table)


def test_the_temporary_resource_may_not_overlap_a_bound_tensor():
    device = DMLCreateDevice1()
    compiled = device.CompileGraph(gemm_add_relu(device))
    big = Buffer(NBYTES * 8)
    table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                             SizeInDescriptors=4))
    table.BindInputs([DML_BUFFER_BINDING(Buffer=Buffer(NBYTES)) for _ in range(3)])
    table.BindOutputs([DML_BUFFER_BINDING(Buffer=big, Offset=0, SizeInBytes=NBYTES)])
    table.BindTemporaryResource(DML_BUFFER_BINDING(Buffer=big, Offset=0,
                                                   SizeInBytes=2 * NBYTES))
    with pytest.raises(DMLError, match="temporary resource overlaps"):
        device.CreateCommandRecorder().RecordDispatch(CommandList(), compiled, table)


def test_constant_data_nodes_at_6_2(device):
    x = rand(np.random.default_rng(7))
    c = np.full(SHAPE, 0.5, np.float32)
    m = device.CreateOperator(mul())
    const = DML_GRAPH_NODE_DESC(Type=DML_GRAPH_NODE_TYPE_CONSTANT,
                                Desc=DML_CONSTANT_DATA_GRAPH_NODE_DESC(Data=c.tobytes(),
                                                                       DataSize=c.nbytes))
    desc = graph([node(m), const], [inp(0, 0, 0)], [mid(1, 0, 0, 1)], [out(0, 0, 0)])
    [y] = device.execute_graph(desc, [x])
    assert y.tobytes() == (x * np.float32(0.5)).tobytes()
    old = DMLCreateDevice1(feature_level="6_1")
    m = old.CreateOperator(mul())
    with pytest.raises(DMLError, match="DML_FEATURE_LEVEL_6_2"):
        old.CompileGraph(graph([node(m), const], [inp(0, 0, 0)], [mid(1, 0, 0, 1)],
                               [out(0, 0, 0)]))


def test_unconnected_optional_outputs_are_written_to_scratch(device):
    """MAX_POOLING1's indices are an optional output: present in the desc, left unconnected."""
    pool = device.CreateOperator(op_desc(DML_MAX_POOLING1_OPERATOR_DESC(
        InputTensor=t(), OutputTensor=t((1, 1, 8, 8)),
        OutputIndicesTensor=tensor_desc((1, 1, 8, 8), DML_TENSOR_DATA_TYPE_UINT32),
        DimensionCount=2, Strides=[2, 2], WindowSize=[2, 2], StartPadding=[0, 0],
        EndPadding=[0, 0])))
    compiled = device.CompileGraph(graph([node(pool)], [inp(0, 0, 0)], [], [out(0, 0, 0)]))
    assert compiled.GetBindingProperties().TemporaryResourceSize == 256
    x = rand(np.random.default_rng(8))
    [y] = device.execute_graph(graph([node(pool)], [inp(0, 0, 0)], [], [out(0, 0, 0)]), [x])
    assert np.array_equal(y[0, 0], x[0, 0].reshape(8, 2, 8, 2).max(axis=(1, 3)))


def test_an_unread_graph_input_is_bound_as_none(device):
    """DxDispatch's one-node graphs keep every input slot, absent optional ones included."""
    g_op = device.CreateOperator(gemm())  # CTensor absent
    desc = graph([node(g_op)], [inp(0, 0, 0), inp(1, 0, 1)], [], [out(0, 0, 0)], n_in=3)
    rng = np.random.default_rng(9)
    a, b = rand(rng), rand(rng)
    [y] = device.execute_graph(desc, [a, b, None])
    [want] = device.execute(gemm(), [a, b, None])
    assert y.tobytes() == np.array(want).tobytes()


# -- every rule, each with a reject test ----------------------------------------------------------
def reject_cases(device):
    r = [device.CreateOperator(relu()) for _ in range(3)]
    a = device.CreateOperator(add())
    owned = device.CreateOperator(add(b=t(flags=DML_TENSOR_FLAG_OWNED_BY_DML)))
    big = device.CreateOperator(relu(t((1, 1, 16, 32))))
    g_op = device.CreateOperator(gemm())
    pool = device.CreateOperator(op_desc(DML_MAX_POOLING1_OPERATOR_DESC(  # indices left null
        InputTensor=t(), OutputTensor=t((1, 1, 8, 8)), DimensionCount=2, Strides=[2, 2],
        WindowSize=[2, 2], StartPadding=[0, 0], EndPadding=[0, 0])))
    other = DMLCreateDevice1().CreateOperator(relu())
    const = DML_GRAPH_NODE_DESC(Type=DML_GRAPH_NODE_TYPE_CONSTANT,
                                Desc=DML_CONSTANT_DATA_GRAPH_NODE_DESC(Data=b"\0" * 16,
                                                                       DataSize=16))
    one = [node(r[0])]
    return {
        "not a graph desc": (relu(), "must be a DML_GRAPH_DESC"),
        "no nodes": (graph([], [], [], [], n_in=0, n_out=1), "at least one node"),
        "no outputs": (graph(one, [inp(0, 0, 0)], [], [], n_out=0), "OutputCount"),
        "count disagrees": (DML_GRAPH_DESC(InputCount=1, OutputCount=1, NodeCount=2, Nodes=one,
                                           InputEdges=[inp(0, 0, 0)], OutputEdges=[out(0, 0, 0)]),
                            "NodeCount"),
        "foreign operator": (graph([node(other)], [inp(0, 0, 0)], [], [out(0, 0, 0)]),
                             "created by this device"),
        "edge in the wrong list": (graph(one, [out(0, 0, 0)], [], [out(0, 0, 0)], n_in=1),
                                   "InputEdges holds DML_GRAPH_EDGE_TYPE_INPUT"),
        "wrong desc for the type": (graph(one, [DML_GRAPH_EDGE_DESC(
            Type=DML_GRAPH_EDGE_TYPE_INPUT, Desc=DML_OUTPUT_GRAPH_EDGE_DESC())], [],
            [out(0, 0, 0)], n_in=1), "needs a DML_INPUT_GRAPH_EDGE_DESC"),
        "graph input index": (graph(one, [inp(1, 0, 0)], [], [out(0, 0, 0)], n_in=1),
                              "GraphInputIndex = 1"),
        "node index": (graph(one, [inp(0, 1, 0)], [], [out(0, 0, 0)]), "ToNodeIndex = 1"),
        "node input index": (graph(one, [inp(0, 0, 1)], [], [out(0, 0, 0)]),
                             "ToNodeInputIndex = 1"),
        "node output index": (graph(one, [inp(0, 0, 0)], [], [out(0, 1, 0)]),
                              "FromNodeOutputIndex = 1"),
        "graph output index": (graph(one, [inp(0, 0, 0)], [], [out(0, 0, 1)], n_out=1),
                               "GraphOutputIndex = 1"),
        "input unconnected": (graph([node(a)], [inp(0, 0, 0)], [], [out(0, 0, 0)]),
                              "input 1 (BTensor) has no edge"),
        "input connected twice": (graph(one, [inp(0, 0, 0), inp(0, 0, 0)], [], [out(0, 0, 0)]),
                                  "a second time"),
        "output unconnected": (graph([node(r[0]), node(r[1])], [inp(0, 0, 0), inp(0, 1, 0)], [],
                                     [out(1, 0, 0)]), "output 0 (OutputTensor) has no edge"),
        "graph output without edge": (graph(one, [inp(0, 0, 0)], [], [out(0, 0, 0)], n_out=2),
                                      "graph output 1 has no edge"),
        "graph output twice": (graph([node(r[0]), node(r[1])], [inp(0, 0, 0), inp(0, 1, 0)], [],
                                     [out(0, 0, 0), out(1, 0, 0)], n_out=1),
                               "exactly one edge"),
        "cycle": (graph([node(r[0]), node(r[1]), node(a)], [inp(0, 2, 1)],
                        [mid(2, 0, 0, 0), mid(0, 0, 1, 0), mid(1, 0, 2, 0)], [out(1, 0, 0)]),
                  "cycle"),
        "sizes differ across an edge": (graph([node(r[0]), node(big)], [inp(0, 0, 0)],
                                              [mid(0, 0, 1, 0)], [out(1, 0, 0)]),
                                        "identical TotalTensorSizeInBytes"),
        "owned input from a node": (graph([node(r[0]), node(owned)], [inp(0, 0, 0),
                                                                       inp(0, 1, 0)],
                                          [mid(0, 0, 1, 1)], [out(1, 0, 0)]),
                                    "must be connected to graph inputs"),
        "owned flag differs on one graph input": (
            graph([node(owned), node(r[0])], [inp(0, 0, 0), inp(1, 0, 1), inp(1, 1, 0)], [],
                  [out(0, 0, 0), out(1, 0, 1)]), "use or omit the flag alike"),
        "one graph input, two sizes": (graph([node(r[0]), node(big)], [inp(0, 0, 0),
                                                                        inp(0, 1, 0)], [],
                                             [out(0, 0, 0), out(1, 0, 1)]),
                                       "identical TotalTensorSizeInBytes"),
        "absent optional input connected": (graph([node(g_op)], [inp(0, 0, 0), inp(1, 0, 1),
                                                                 inp(2, 0, 2)], [],
                                                  [out(0, 0, 0)]), "leaves null"),
        "constant to a graph output": (graph([node(r[0]), const], [inp(0, 0, 0)], [],
                                             [out(0, 0, 0), out(1, 0, 1)]),
                                       "constant data feeds operator inputs only"),
        "constant too small": (graph([node(a), const], [inp(0, 0, 0)], [mid(1, 0, 0, 1)],
                                     [out(0, 0, 0)]), "holds 16 bytes"),
        "constant unconnected": (graph([node(r[0]), const], [inp(0, 0, 0)], [], [out(0, 0, 0)]),
                                 "connected to nothing"),
        "graph output from a null output": (graph([node(pool)], [inp(0, 0, 0)], [],
                                                  [out(0, 0, 0), out(0, 1, 1)]), "leaves null"),
        "InputCount beyond any meaning": (graph(one, [inp(0, 0, 0)], [], [out(0, 0, 0)],
                                                n_in=2**32 - 1), "descriptor heap"),
    }


# The cases' names, listed here so that collecting them creates no operator (whose plan would
# compile kernels in every xdist worker at collection time).
REJECT_CASES = (
    "not a graph desc", "no nodes", "no outputs", "count disagrees", "foreign operator",
    "edge in the wrong list", "wrong desc for the type", "graph input index", "node index",
    "node input index", "node output index", "graph output index", "input unconnected",
    "input connected twice", "output unconnected", "graph output without edge",
    "graph output twice", "cycle", "sizes differ across an edge", "owned input from a node",
    "owned flag differs on one graph input", "one graph input, two sizes",
    "absent optional input connected", "constant to a graph output", "constant too small",
    "constant unconnected", "graph output from a null output", "InputCount beyond any meaning")


def test_the_reject_cases_are_all_listed():
    assert tuple(reject_cases(DMLCreateDevice1())) == REJECT_CASES


@pytest.mark.parametrize("case", REJECT_CASES)
def test_every_graph_rule_rejects(case):
    device = DMLCreateDevice1()
    desc, text = reject_cases(device)[case]
    with pytest.raises(DMLError) as e:
        device.CompileGraph(desc)
    assert e.value.name == "E_INVALIDARG"
    assert text in str(e.value), str(e.value)
    device.CompileGraph(gemm_add_relu(device))  # a rejected graph does not remove the device


def test_compile_graph_needs_feature_level_2_1():
    device = DMLCreateDevice1(feature_level="2_0")
    r = device.CreateOperator(relu())
    with pytest.raises(DMLError) as e:
        device.CompileGraph(graph([node(r)], [inp(0, 0, 0)], [], [out(0, 0, 0)]))
    assert e.value.name == "E_NOINTERFACE" and "DML_FEATURE_LEVEL_2_1" in str(e.value)
    device = DMLCreateDevice1(feature_level="2_1")
    r = device.CreateOperator(relu())
    x = rand(np.random.default_rng(10))
    [y] = device.execute_graph(graph([node(r)], [inp(0, 0, 0)], [], [out(0, 0, 0)]), [x])
    assert y.tobytes() == np.maximum(x, 0).tobytes()


def test_bare_node_and_edge_structs_are_accepted(device):
    """A Python convenience: the inner struct alone stands for its tagged wrapper."""
    r = device.CreateOperator(relu())
    desc = DML_GRAPH_DESC(InputCount=1, OutputCount=1,
                          Nodes=[DML_OPERATOR_GRAPH_NODE_DESC(Operator=r, Name="r")],
                          InputEdges=[DML_INPUT_GRAPH_EDGE_DESC(0, 0, 0, "x")],
                          OutputEdges=[DML_OUTPUT_GRAPH_EDGE_DESC(0, 0, 0, "y")])
    compiled = device.CompileGraph(desc)
    assert [n for n, _ in compiled.bind_points("input")] == ["x"]
    assert [n for n, _ in compiled.bind_points("output")] == ["y"]
    x = rand(np.random.default_rng(11))
    [y] = device.execute_graph(desc, {"x": x})
    assert y.tobytes() == np.maximum(x, 0).tobytes()


def test_dxdispatch_compiles_dml_compile_graph_dispatchables_as_graphs(tmp_path):
    """Upstream dml_gemm_graph: a one-node graph whose OWNED_BY_DML B is a graph input bound at
    initialization; the output equals the single-operator compile of the same desc."""
    import io
    import json
    from pathlib import Path

    from emulator.dxdispatch import Runner, load_model
    from emulator.graph import IDMLCompiledGraph

    upstream = Path(__file__).resolve().parent / "data" / "upstream"
    src = json.loads((upstream / "dml_gemm_graph.json").read_text())
    src["resources"]["B"]["initialValues"] = {"valueCount": 1024, "valueStart": 0,
                                              "valueDelta": 0.25}
    outputs = {}
    for compile_type in ("DmlCompileGraph", "DmlCompileOp"):
        src["dispatchables"]["gemm"]["dmlCompileType"] = compile_type
        path = tmp_path / f"{compile_type}.json"
        path.write_text(json.dumps(src))
        model = load_model(path)
        out = io.StringIO()
        runner = Runner(model, DMLCreateDevice1(), out)
        runner.run()
        compiled = model.dispatchables["gemm"].compiled
        assert isinstance(compiled, IDMLCompiledGraph) == (compile_type == "DmlCompileGraph")
        outputs[compile_type] = out.getvalue()
    assert outputs["DmlCompileGraph"] == outputs["DmlCompileOp"]
    assert "Resource 'output': " in outputs["DmlCompileOp"]


def test_a_graph_output_may_also_feed_later_nodes(device):
    r0, r1 = device.CreateOperator(relu()), device.CreateOperator(relu())
    a = device.CreateOperator(add())
    desc = graph([node(r0), node(r1), node(a)], [inp(0, 0, 0)],
                 [mid(0, 0, 1, 0), mid(0, 0, 2, 0), mid(1, 0, 2, 1)], [out(0, 0, 0), out(2, 0, 1)])
    compiled = device.CompileGraph(desc)
    assert compiled.GetBindingProperties().TemporaryResourceSize == NBYTES  # r1's result only
    x = rand(np.random.default_rng(12))
    y0, y1 = device.execute_graph(desc, [x])
    assert y0.tobytes() == np.maximum(x, 0).tobytes()
    assert y1.tobytes() == (2 * np.maximum(x, 0)).tobytes()


def test_a_one_node_graph_runs_in_place_as_its_operator_does(device):
    """RELU runs in place; so does its one-node graph (DxDispatch models bind one resource to
    both). With two nodes an input may not overlap an output."""
    from emulator.graph import single_node_graph

    x = rand(np.random.default_rng(13))
    buf = Buffer.from_array(x)
    for nodes, ok in ((1, True), (2, False)):
        ops = [device.CreateOperator(relu()) for _ in range(nodes)]
        desc = single_node_graph(ops[0]) if nodes == 1 else graph(
            [node(o) for o in ops], [inp(0, 0, 0)], [mid(0, 0, 1, 0)], [out(1, 0, 0)])
        compiled = device.CompileGraph(desc)
        init = device.CreateOperatorInitializer([compiled])
        rec, queue = device.CreateCommandRecorder(), CommandQueue()
        cl = CommandList()
        rec.RecordDispatch(cl, init, device.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=init, SizeInDescriptors=4)))
        table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(Dispatchable=compiled,
                                                                 SizeInDescriptors=4))
        table.BindInputs([DML_BUFFER_BINDING(Buffer=buf)])
        table.BindOutputs([DML_BUFFER_BINDING(Buffer=buf)])
        temp = compiled.GetBindingProperties().TemporaryResourceSize
        if temp:
            table.BindTemporaryResource(DML_BUFFER_BINDING(Buffer=Buffer(temp)))
        if not ok:
            with pytest.raises(DMLError, match="does not support in-place"):
                rec.RecordDispatch(cl, compiled, table)
            continue
        rec.RecordDispatch(cl, compiled, table)
        cl.Close()
        queue.ExecuteCommandLists([cl])
        assert buf.numpy(np.float32).tobytes() == np.maximum(x, 0).tobytes()


def test_bind_point_labels_stay_unique(device):
    a = device.CreateOperator(add())
    desc = DML_GRAPH_DESC(InputCount=2, OutputCount=1, Nodes=[DML_OPERATOR_GRAPH_NODE_DESC(a)],
                          InputEdges=[DML_INPUT_GRAPH_EDGE_DESC(0, 0, 0, "x"),
                                      DML_INPUT_GRAPH_EDGE_DESC(1, 0, 1, "x")],
                          OutputEdges=[DML_OUTPUT_GRAPH_EDGE_DESC(0, 0, 0)])
    labels = [n for n, _ in device.CompileGraph(desc).bind_points("input")]
    assert labels == ["x#0", "x#1"]
    ones = np.ones(SHAPE, np.float32)
    with pytest.raises(DMLError):
        device.execute_graph(desc, {"x": ones})
    [y] = device.execute_graph(desc, {"x#0": ones, "x#1": 2 * ones})
    assert (y == 3).all()
