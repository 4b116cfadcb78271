"""The exponentials of multi-head attention's softmax (``attention.py``).

``exp_shifted(s, top)``: s[i, j] = exp32(s[i, j] - top[i]) in place over a FLOAT32 block of
scores, ``kernels/vmath.exp32`` (within 1 ULP of exp over every float32 input; NaN stays NaN,
exp(-inf) = 0, exp(+inf) = inf): a serial loop without reductions, so LLVM vectorises it, called
from the plan's worker threads (it releases the GIL). The row maxima and sums stay NumPy's
(SIMD reductions).

Why a kernel (2-core dev box, one 512 x 512 block): NumPy's float32 exp took 1.27 ms, half of
the whole attention's time, this kernel ~0.2 ms; ``plan.SoftmaxPlan`` (float64 internals) took
2.45 ms for the whole softmax. One signature (FLOAT32 2-D, FLOAT32 column), ~1-2 s first
compile.
"""

from __future__ import annotations

from ..kernels.jit import helper
from ..kernels.vmath import exp32


@helper
def exp_shifted(s, top):  # pragma: no cover - compiled
    rows, n = s.shape
    for i in range(rows):
        m = top[i, 0]
        row = s[i]
        for j in range(n):
            row[j] = exp32(row[j] - m)
