"""Start-up cost a user pays: ``import emulator`` and a first SLICE1 dispatch in a new process
(warm Numba cache: the warm-up round compiles or loads it). Wall time of a whole process, so the
interpreter's own start (~20 ms) is included. Targets (issue 2): import < 0.5 s, first dispatch
< 1 s."""

from __future__ import annotations

import subprocess
import sys

import pytest

FIRST_DISPATCH = """
import numpy as np
from descriptors import *
from emulator import DMLCreateDevice1
x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
out = tensor_desc((1, 1, 2, 2), DML_TENSOR_DATA_TYPE_FLOAT32)
op = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
    InputTensor=tensor_desc(x), OutputTensor=out, InputWindowOffsets=[0, 0, 0, 1],
    InputWindowSizes=[1, 1, 4, 3], InputWindowStrides=[1, 1, -2, 2]))
[y] = DMLCreateDevice1().execute(op, [x])
assert y.ravel().tolist() == [13, 15, 5, 7]
"""

SCRIPTS = {
    "python only": "pass",
    "import emulator": "import emulator",
    "first SLICE1 dispatch": FIRST_DISPATCH,
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_startup(benchmark, name):
    def run():
        subprocess.run([sys.executable, "-c", SCRIPTS[name]], check=True)

    benchmark.group = "startup (new process)"
    benchmark.pedantic(run, rounds=7, warmup_rounds=1)
