"""Installing and first use: compiled kernels live in the user's cache, never in the package, and
the first compile of an operator's kernels is announced once on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from emulator.kernels import jit
from emulator.kernels.copy import strided_copy

ROOT = Path(__file__).resolve().parent.parent


def test_kernels_are_cached_outside_the_package():
    path = Path(strided_copy._cache._cache_path).resolve()
    if os.environ.get("NUMBA_CACHE_DIR"):
        assert path.is_relative_to(Path(os.environ["NUMBA_CACHE_DIR"]).resolve())
    else:
        assert path.is_relative_to(jit.cache_root().resolve())
    assert not path.is_relative_to(jit.PACKAGE), path
    from emulator import __version__
    # One folder per version and per version of the inlined helper modules.
    assert jit.cache_root().name.startswith(f"{__version__}-")


def test_first_compile_is_announced_once_and_the_cache_is_used_after(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    model = str(ROOT / "examples" / "slice1_reverse_subsample.json")
    cmd = [sys.executable, "-m", "emulator.cli", "run", model]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("dml-emulator: compiling CPU kernels for SLICE1 (first use "
                              "only)...") == 1, first.stderr
    assert any(tmp_path.rglob("*.nbi")), "the kernels were cached in the user's cache folder"
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 0 and second.stderr == "", second.stderr
    assert second.stdout == first.stdout


def test_import_emulator_does_not_import_numba():
    """Kernels load on first use: ``import emulator`` (and building descriptors) stays fast."""
    code = "import sys, emulator, descriptors; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
