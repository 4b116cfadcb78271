"""Fit the polynomials of ``emulator/kernels/vmath.py``'s float32 functions again and check them
against the ones in the module (exit 1 if any differs):

    python tools/fit_vmath.py

Each fit is Lawson's iteratively reweighted least squares (a near-minimax fit) of the error
that matters, the result's relative error, at 4,000 Chebyshev nodes; the coefficients are
rounded to float32 one at a time from the lowest degree, the higher ones fitted again after
each rounding (rounding them all at once cost up to 1.7 ULP). A middle piece's centre C is the
float32 near the middle of its interval whose function value is nearest a float32 (within
2**-38), so that the piece A + d·M(d) needs no correction term for A's rounding. The proof of
the finished functions over every float32 input is ``python -m emulator.kernels.vmath``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from emulator.kernels import vmath

NODES = 4000


def nodes(lo: float, hi: float) -> np.ndarray:
    k = np.arange(NODES)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / NODES)[::-1]


def lawson(a: np.ndarray, b: np.ndarray, w: np.ndarray, iters: int = 200) -> np.ndarray:
    """c minimising max |w·(a c - b)| (near enough)."""
    lam = np.full(len(b), 1 / len(b))
    best, best_err = None, np.inf
    for _ in range(iters):
        sw = np.sqrt(lam) * w
        c = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)[0]
        e = np.abs(w * (a @ c - b))
        if e.max() < best_err:
            best, best_err = c, e.max()
        lam = lam * e / (lam * e).sum()
    return best


def fit32(x: np.ndarray, target: np.ndarray, weight: np.ndarray, degree: int
          ) -> tuple[float, ...]:
    """float32 coefficients (highest degree first) of the polynomial in x nearest ``target``,
    rounded one at a time from the constant term."""
    a = np.stack([x ** j for j in range(degree + 1)], 1)
    fixed: list[float] = []
    for j in range(degree + 1):
        rest = target - (a[:, :j] @ np.array(fixed) if fixed else 0)
        fixed.append(float(np.float32(lawson(a[:, j:], rest, weight)[0])))
    return tuple(fixed[::-1])


def centre(f: Callable[[float], float], lo: float, hi: float, span: int
           ) -> tuple[float, float]:
    """(C, A): the float32 C within ``span`` float32 steps of (lo + hi) / 2 whose f(C) is
    nearest a float32, A."""
    base = int(np.array(np.float32((lo + hi) / 2)).view(np.int32))
    best = (np.inf, 0.0, 0.0)
    for i in range(base - span, base + span):
        c = float(np.array(i, np.int32).view(np.float32))
        y = f(c)
        a = float(np.float32(y))
        best = min(best, (abs(y - a), c, a))
    return best[1], best[2]


def tanh_exact(x: float) -> float:
    getcontext().prec = 40
    e = (2 * Decimal(x)).exp()
    return float((e - 1) / (e + 1))


def fits() -> dict[str, tuple[float, ...]]:
    """The fits (exp32's ``_Q32``, older, was fitted otherwise and is not refitted here)."""
    out = {}
    x = nodes(1e-4, 0.625)
    s = x * x
    out["_TANH_SMALL"] = fit32(s, (np.tanh(x) / x - 1) / s, x * s / np.tanh(x), 5)
    c, a = centre(tanh_exact, 0.625, 1.0, 20000)
    out["_TANH_C, _TANH_A"] = (c, a)
    d = nodes(0.625 - c, 1.0 - c)
    d = d[np.abs(d) > 1e-7]
    y = np.array([tanh_exact(c + v) for v in d])
    out["_TANH_MID"] = fit32(d, (y - a) / d, d / y, 6)

    erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
    x = nodes(1e-4, 0.75)
    out["_ERF_SMALL"] = fit32(x * x, erf(x) / x - 1, x / erf(x), 5)
    c, a = centre(math.erf, 0.75, 1.25, 200000)
    out["_ERF_C, _ERF_A"] = (c, a)
    d = nodes(0.75 - c, 1.25 - c)
    d = d[np.abs(d) > 1e-6]
    y = erf(c + d)
    out["_ERF_MID"] = fit32(d, (y - a) / d, d / y, 6)
    x = nodes(1.25, 3.92)
    g = erfc(x) * np.exp(x * x)
    # (fitted in x - 2.585, evaluated in x - float32(2.585): the proof covers the difference)
    out["_ERF_TAIL"] = fit32(x - (1.25 + 3.92) / 2, g, erfc(x) / g / erf(x), 7)
    return out


def main() -> int:
    differ = 0
    for name, values in fits().items():
        have = tuple(float(getattr(vmath, n)) for n in name.split(", ")) if "," in name else \
            tuple(float(v) for v in getattr(vmath, name))
        same = have == values
        differ += not same
        print(f"{name}: {'same as' if same else 'DIFFERS from'} vmath's")
        if not same:
            print("  fitted:", ", ".join(repr(v) for v in values))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
