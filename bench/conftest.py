"""Benchmark options and peers. Run: python -m pytest bench/ --benchmark-columns=min,median,mean

Peers (PyTorch, ONNX Runtime) are optional extras (`pip install -e ".[bench]"`); a peer that is not
installed is skipped, never the emulator. Every peer uses the same thread count as Numba.

Side by side in one process, a peer's worker threads keep spinning for a while after its last
call (ONNX Runtime's pool, OpenMP's): they steal cores from whatever is timed next and made the
emulator look up to 2x slower. So before each benchmark the process sleeps ``--bench-park``
seconds (after a garbage collection, which ends the pools of dropped sessions). At the end, a
table gives each group's emulator median and its ratio to the fastest peer (peer time / emulator
time: above 1.0 the emulator is ahead).
"""

from __future__ import annotations

import gc
import time

import numba
import pytest


def pytest_addoption(parser):
    parser.addoption("--bench-scale", type=float, default=1.0,
                     help="scale the largest dimension of every workload (0.25: a quick run)")
    parser.addoption("--bench-park", type=float, default=0.5,
                     help="seconds to let peers' worker threads park before each benchmark")


@pytest.fixture(autouse=True)
def park(request):
    """Let every thread pool go idle before a benchmark starts timing."""
    gc.collect()
    time.sleep(request.config.getoption("--bench-park"))


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


def ratios(benchmarks) -> list[tuple[str, float, str, float, float]]:
    """(group, emulator median, fastest peer, its median, peer / emulator) per group; medians
    in seconds. A benchmark named ``test_emulator[...]`` is the emulator, any other a peer."""
    groups: dict[str, dict[str, float]] = {}
    for b in benchmarks:
        peer = b.name.split("[")[0].removeprefix("test_")
        groups.setdefault(b.group or b.name, {})[peer] = b.stats.median
    rows = []
    for group, medians in groups.items():
        emulator = medians.pop("emulator", None)
        if emulator is None or not medians:
            continue
        peer, best = min(medians.items(), key=lambda kv: kv[1])
        rows.append((group, emulator, peer, best, best / emulator))
    return rows


def pytest_terminal_summary(terminalreporter, config):
    session = getattr(config, "_benchmarksession", None)
    rows = ratios([b for b in getattr(session, "benchmarks", []) if b])
    if not rows:
        return
    terminalreporter.section(f"emulator vs fastest peer, {numba.config.NUMBA_NUM_THREADS} threads "
                             "(median ms; ratio = peer / emulator)")
    for group, emulator, peer, best, ratio in rows:
        terminalreporter.write_line(f"{group:<44} {emulator * 1e3:9.3f}  {peer:<14} "
                                    f"{best * 1e3:9.3f}  {ratio:5.2f}x")
