"""Compiled graphs (issue 18): a 50-node element-wise chain on [1024, 1024] float32 — ADD,
MULTIPLY, RELU in turn, the binary nodes reading a second graph input — run as one compiled graph
against the same 50 operators compiled one by one and recorded into one command list (the sum of
the node times), and against NumPy and PyTorch doing the same 50 steps with ``out=``.

The issue's target: the graph within 1.2x the sum of its node times (ratio >= 0.83 in the table:
"nodes_one_by_one / emulator").

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_graph.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *
from emulator import Buffer, CommandList, CommandQueue, DMLCreateDevice1

NODES = 50
SIDE = 1024
KINDS = ("add", "mul", "relu")


def _side(scale: float) -> int:
    return max(64, int(SIDE * scale ** 0.5))


def _descs(shape):
    t = tensor_desc(shape, DML_TENSOR_DATA_TYPE_FLOAT32)
    return {"add": DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(t, t, t)),
            "mul": DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC(t, t, t)),
            "relu": DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC(t, t))}


def _chain(device, shape):
    """The graph: node i reads node i-1 (graph input 0 for the first) and, if binary, input 1."""
    descs = _descs(shape)
    kinds = [KINDS[i % 3] for i in range(NODES)]
    ops = [device.CreateOperator(descs[k]) for k in kinds]
    inputs = [DML_INPUT_GRAPH_EDGE_DESC(0, 0, 0)]
    mids = []
    for i, k in enumerate(kinds):
        if i:
            mids.append(DML_INTERMEDIATE_GRAPH_EDGE_DESC(i - 1, 0, i, 0))
        if k != "relu":
            inputs.append(DML_INPUT_GRAPH_EDGE_DESC(1, i, 1))
    return kinds, DML_GRAPH_DESC(
        InputCount=2, OutputCount=1, Nodes=[DML_OPERATOR_GRAPH_NODE_DESC(o) for o in ops],
        InputEdges=inputs, IntermediateEdges=mids,
        OutputEdges=[DML_OUTPUT_GRAPH_EDGE_DESC(NODES - 1, 0, 0)])


@pytest.fixture(scope="module")
def data(scale):
    rng = np.random.default_rng(0)
    side = _side(scale)
    x = rng.standard_normal((side, side)).astype(np.float32)
    b = (rng.standard_normal((side, side)) * 0.5 + 1).astype(np.float32)
    return x, b


def _reference(x, b):
    y = x.copy()
    for k in (KINDS[i % 3] for i in range(NODES)):
        y = y + b if k == "add" else y * b if k == "mul" else np.maximum(y, 0)
    return y


def _binding(buf):
    return DML_BUFFER_BINDING(Buffer=buf)


def _run_list(device, dispatchables):
    """(dispatchable, input buffers, output buffers, temporary) recorded into one command list,
    initialized first."""
    rec, queue = device.CreateCommandRecorder(), CommandQueue()
    compiled = [d for d, _, _, _ in dispatchables]
    init = device.CreateOperatorInitializer(compiled)
    lst = CommandList()
    rec.RecordDispatch(lst, init, device.CreateBindingTable(DML_BINDING_TABLE_DESC(
        Dispatchable=init,
        SizeInDescriptors=init.GetBindingProperties().RequiredDescriptorCount)))
    lst.Close()
    queue.ExecuteCommandLists([lst])
    lst = CommandList()
    for d, ins, outs, temp in dispatchables:
        table = device.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=d, SizeInDescriptors=d.GetBindingProperties().RequiredDescriptorCount))
        table.BindInputs([_binding(b) for b in ins])
        table.BindOutputs([_binding(b) for b in outs])
        if temp is not None:
            table.BindTemporaryResource(_binding(temp))
        rec.RecordDispatch(lst, d, table)
    lst.Close()
    return lambda: queue.ExecuteCommandLists([lst])


CHAIN = f"graph: {NODES}-node element-wise chain"


def _walk(x, ping, pong):
    """The chain's steps for one-by-one runs: (kind, source, destination), alternating two
    buffers."""
    steps, src = [], x
    for i in range(NODES):
        dst = ping if i % 2 == 0 else pong
        steps.append((KINDS[i % 3], src, dst))
        src = dst
    return steps


def test_emulator(benchmark, data):
    benchmark.group = CHAIN
    x, b = data
    device = DMLCreateDevice1()
    _, desc = _chain(device, x.shape)
    compiled = device.CompileGraph(desc)
    temp = Buffer(compiled.GetBindingProperties().TemporaryResourceSize)
    y = np.empty_like(x)
    run = _run_list(device, [(compiled, [x, b], [y], temp)])
    run()
    assert np.allclose(y, _reference(x, b), rtol=1e-5, atol=1e-5)
    benchmark(run)


def test_nodes_one_by_one(benchmark, data):
    benchmark.group = CHAIN
    x, b = data
    device = DMLCreateDevice1()
    descs = _descs(x.shape)
    steps = _walk(x, np.empty_like(x), np.empty_like(x))
    run = _run_list(device, [
        (device.CompileOperator(device.CreateOperator(descs[k])),
         [src, b] if k != "relu" else [src], [dst], None) for k, src, dst in steps])
    run()
    assert np.allclose(steps[-1][2], _reference(x, b), rtol=1e-5, atol=1e-5)
    benchmark(run)


def _peer(benchmark, x, b, ping, pong, ops):
    """A peer's chain: ``ops[kind](source, b, out)`` per step, two ping-pong buffers."""
    steps = _walk(x, ping, pong)

    def run():
        for k, src, dst in steps:
            ops[k](src, b, dst)

    benchmark(run)


def test_numpy(benchmark, data):
    benchmark.group = CHAIN
    x, b = data
    _peer(benchmark, x, b, np.empty_like(x), np.empty_like(x),
          {"add": lambda s, b, o: np.add(s, b, out=o),
           "mul": lambda s, b, o: np.multiply(s, b, out=o),
           "relu": lambda s, b, o: np.maximum(s, 0, out=o)})


def test_torch(benchmark, data, torch):
    benchmark.group = CHAIN
    x, b = (torch.from_numpy(a) for a in data)
    _peer(benchmark, x, b, torch.empty_like(x), torch.empty_like(x),
          {"add": lambda s, b, o: torch.add(s, b, out=o),
           "mul": lambda s, b, o: torch.mul(s, b, out=o),
           "relu": lambda s, b, o: torch.clamp_min(s, 0, out=o)})


# -- GEMM -> ADD -> RELU: would fusing the element-wise tail pay? ----------------------------------
# The graph (three nodes, the GEMM's result and the ADD's in the temporary resource) against the
# one GEMM that already fuses both (C as the bias, a fused RELU): the most a fusion pass could
# give, measured. [1024, 1024] float32.
FUSE = "graph: GEMM -> ADD -> RELU vs one fused GEMM"


def _gemm_desc(t, c=None, fused=None):
    return DML_OPERATOR_DESC(Desc=DML_GEMM_OPERATOR_DESC(
        ATensor=t, BTensor=t, CTensor=c, OutputTensor=t, TransA=DML_MATRIX_TRANSFORM_NONE,
        TransB=DML_MATRIX_TRANSFORM_NONE, Alpha=1.0, Beta=1.0, FusedActivation=fused))


def test_emulator_gemm_add_relu(benchmark, data):
    benchmark.group = FUSE
    x, b = data
    device = DMLCreateDevice1()
    t = tensor_desc(x.shape, DML_TENSOR_DATA_TYPE_FLOAT32)
    descs = _descs(x.shape)
    ops = [device.CreateOperator(d) for d in (_gemm_desc(t), descs["add"], descs["relu"])]
    desc = DML_GRAPH_DESC(
        InputCount=3, OutputCount=1, Nodes=[DML_OPERATOR_GRAPH_NODE_DESC(o) for o in ops],
        InputEdges=[DML_INPUT_GRAPH_EDGE_DESC(0, 0, 0), DML_INPUT_GRAPH_EDGE_DESC(1, 0, 1),
                    DML_INPUT_GRAPH_EDGE_DESC(2, 1, 1)],
        IntermediateEdges=[DML_INTERMEDIATE_GRAPH_EDGE_DESC(0, 0, 1, 0),
                           DML_INTERMEDIATE_GRAPH_EDGE_DESC(1, 0, 2, 0)],
        OutputEdges=[DML_OUTPUT_GRAPH_EDGE_DESC(2, 0, 0)])
    compiled = device.CompileGraph(desc)
    temp = Buffer(compiled.GetBindingProperties().TemporaryResourceSize)
    y = np.empty_like(x)
    run = _run_list(device, [(compiled, [x, x, b], [y], temp)])
    run()
    assert np.allclose(y, np.maximum(x @ x + b, 0), rtol=1e-4, atol=1e-3)
    benchmark(run)


def test_fused_gemm(benchmark, data):
    """The peer here is the emulator's own fused GEMM (what a fusion pass would produce)."""
    benchmark.group = FUSE
    x, b = data
    device = DMLCreateDevice1()
    t = tensor_desc(x.shape, DML_TENSOR_DATA_TYPE_FLOAT32)
    relu = DML_OPERATOR_DESC(Desc=DML_ACTIVATION_RELU_OPERATOR_DESC())
    compiled = device.CompileOperator(device.CreateOperator(_gemm_desc(t, t, relu)))
    y = np.empty_like(x)
    run = _run_list(device, [(compiled, [x, x, b], [y], None)])
    run()
    assert np.allclose(y, np.maximum(x @ x + b, 0), rtol=1e-4, atol=1e-3)
    benchmark(run)
