"""Benchmark options and peers. Run: python -m pytest bench/ --benchmark-columns=min,median,mean

Peers (PyTorch, ONNX Runtime) are optional extras (`pip install -e ".[bench]"`); a peer that is not
installed is skipped, never the emulator. Every peer uses the same thread count as Numba.
"""

from __future__ import annotations

import numba
import pytest


def pytest_addoption(parser):
    parser.addoption("--bench-scale", type=float, default=1.0,
                     help="scale the largest dimension of every workload (0.25: a quick run)")


@pytest.fixture(scope="session")
def threads() -> int:
    return numba.config.NUMBA_NUM_THREADS


@pytest.fixture(scope="session")
def torch(threads):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(threads)
    return torch


@pytest.fixture(scope="session")
def scale(request) -> float:
    return request.config.getoption("--bench-scale")


@pytest.fixture(scope="session")
def ort(threads):
    """A factory of ONNX Runtime sessions for one-node models, with Numba's thread count."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")

    def session_from_model(model):
        model.ir_version = 8  # what every onnxruntime release reads
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        return ort.InferenceSession(model.SerializeToString(), options,
                                    providers=["CPUExecutionProvider"])

    def session(node, inputs, outputs, initializers=()):
        graph = onnx.helper.make_graph([node], "bench", inputs, outputs, list(initializers))
        return session_from_model(
            onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]))

    session.onnx = onnx
    session.session_from_model = session_from_model
    return session
