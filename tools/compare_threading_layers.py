"""Time the emulator's benchmarks under each Numba threading layer, side by side.

    python tools/compare_threading_layers.py [--threads 2] [--layers tbb,omp,workqueue]
        [--bench-scale 1.0] [-k EXPR]

Each layer runs in its own process (a process picks its layer once), through the same
``bench/`` workloads (``-k test_emulator`` by default). Prints the median of every benchmark per
layer and the ratio to the first layer. This measured the choice recorded in docs/decisions.md
("Threading layer").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_layer(layer: str, threads: int, scale: float, expr: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        env = dict(os.environ, NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS=str(threads))
        cmd = [sys.executable, "-m", "pytest", "bench", "-q", "-p", "no:cacheprovider", "-k", expr,
               f"--bench-scale={scale}", "--benchmark-warmup=on", f"--benchmark-json={out}"]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            print(f"{layer}: failed\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}", file=sys.stderr)
            return {}
        data = json.loads(out.read_text())
    return {b["fullname"].split("::", 1)[1]: b["stats"]["median"] for b in data["benchmarks"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--layers", default="tbb,omp,workqueue")
    p.add_argument("--bench-scale", type=float, default=1.0)
    p.add_argument("-k", default="test_emulator")
    args = p.parse_args()
    layers = args.layers.split(",")
    results = {layer: run_layer(layer, args.threads, args.bench_scale, args.k) for layer in layers}
    names = sorted({n for r in results.values() for n in r})
    base = layers[0]
    print(f"threads={args.threads}; median ms; ratio = layer / {base}")
    print(f"{'benchmark':<60}" + "".join(f"{layer:>18}" for layer in layers))
    for n in names:
        cells = []
        for layer in layers:
            t, b = results[layer].get(n), results[base].get(n)
            cells.append("n/a" if t is None else
                         f"{t * 1e3:.3f}" + (f" ({t / b:.2f}x)" if b and layer != base else ""))
        print(f"{n:<60}" + "".join(f"{c:>18}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
