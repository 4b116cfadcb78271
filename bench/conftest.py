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
