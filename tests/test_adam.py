"""ADAM_OPTIMIZER: the page's formula, every output rounded once, in place or not."""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.resources import Buffer

from .helpers import desc

T = DML_TENSOR_DATA_TYPE


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level=DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_4)


def formula(x, m, v, g, t, lr, b1, b2, eps):
    """Written from the page, in float64."""
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * g * g
    alpha = np.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)
    return x - lr * alpha * m / (np.sqrt(v) + eps), m, v


def adam_desc(dtype, sizes, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    dt = T.DML_TENSOR_DATA_TYPE_FLOAT16 if dtype == np.float16 else T.DML_TENSOR_DATA_TYPE_FLOAT32
    t = desc(dt, sizes)
    step = desc(dt, (1,) * len(sizes))
    return DML_OPERATOR_DESC(DML_OPERATOR_TYPE.DML_OPERATOR_ADAM_OPTIMIZER,
                             DML_ADAM_OPTIMIZER_OPERATOR_DESC(
                                 t, t, t, t, step, t, t, t, lr, b1, b2, eps))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_three_steps_follow_the_formula(device, dtype):
    rng = np.random.default_rng(3)
    sizes = (2, 3, 4, 5)
    x = rng.standard_normal(sizes).astype(dtype)
    m = np.zeros(sizes, dtype)
    v = np.zeros(sizes, dtype)
    d = adam_desc(dtype, sizes)
    for t in (1, 2, 3):
        g = rng.standard_normal(sizes).astype(dtype)
        step = np.full((1, 1, 1, 1), t, dtype)
        want = formula(*(a.astype(np.float64) for a in (x, m, v, g)), float(t),
                       float(np.float32(0.01)), float(np.float32(0.9)), float(np.float32(0.999)),
                       float(np.float32(1e-8)))
        x, m, v = device.execute(d, [x, m, v, g, step])
        for got, w in zip((x, m, v), want):
            assert got.dtype == dtype
            assert (got == w.astype(dtype)).all()


def test_in_place_outputs_alias_their_inputs(device):
    sizes = (1, 1, 2, 3)
    x0 = np.arange(6, dtype=np.float32).reshape(sizes)
    g = np.full(sizes, 0.5, np.float32)
    bufs = [Buffer.from_array(a.copy()) for a in (x0, np.zeros(sizes, np.float32),
                                                  np.zeros(sizes, np.float32))]
    d = adam_desc(np.float32, sizes)
    device.execute(d, [*bufs, g, np.full((1, 1, 1, 1), 1, np.float32)], bufs)
    want = formula(x0.astype(np.float64), 0.0, 0.0, 0.5, 1.0, float(np.float32(0.01)),
                   float(np.float32(0.9)),
                   float(np.float32(0.999)), float(np.float32(1e-8)))
    for b, w in zip(bufs, want):
        got = b._bytes[:24].view(np.float32).reshape(sizes)
        assert (got == np.broadcast_to(w, sizes).astype(np.float32)).all()


def test_step_zero_is_the_formula_nan(device):
    """T = 0: Alpha = 0/0, so the parameters become NaN (the moments are still updated)."""
    sizes = (1, 1, 1, 2)
    one = np.ones(sizes, np.float32)
    x, m, v = device.execute(adam_desc(np.float32, sizes),
                             [one, one, one, one, np.zeros((1, 1, 1, 1), np.float32)])
    assert np.isnan(x).all() and (m == 1).all() and (v == 1).all()
