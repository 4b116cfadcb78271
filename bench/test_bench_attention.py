"""MULTIHEAD_ATTENTION (issue 17) side by side with PyTorch's scaled_dot_product_attention and
ONNX Runtime's com.microsoft MultiHeadAttention contrib operator (CPU provider), JIT excluded;
every peer at Numba's thread count.

Workload (issue 17): separate Query, Key, Value {8, 512, 12 x 64} FLOAT32 (batch 8, 12 heads,
512 tokens, head size 64), Scale 1/8, no mask: 6.4 GFLOP (two products of 2 * 512 * 512 * 64
per head). PyTorch gets the same data as [8, 12, 512, 64] tensors (its layout; the reshape is
not timed), ONNX Runtime the emulator's [8, 512, 768]. ``--bench-scale`` scales the sequence
length. GFLOP/s are in each benchmark's extra_info.

    NUMBA_NUM_THREADS=2 python -m pytest bench/test_bench_attention.py -p no:cacheprovider -q \\
        --benchmark-max-time=0.5 --benchmark-warmup=on --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import numpy as np
import pytest

from descriptors import *

from .harness import Prepared

BATCH, HEADS, HEAD_SIZE = 8, 12, 64
SCALE = 1.0 / np.sqrt(HEAD_SIZE)
GROUP = "attention f32 [8,512,12x64]"


@pytest.fixture(scope="module")
def data(scale):
    tokens = max(1, int(512 * scale))
    rng = np.random.default_rng(1)
    return [rng.standard_normal((BATCH, tokens, HEADS * HEAD_SIZE)).astype(np.float32)
            for _ in range(3)]


def _group(benchmark, q):
    benchmark.group = GROUP
    tokens = q.shape[1]
    benchmark.extra_info["gflop"] = 2 * 2.0 * BATCH * HEADS * tokens * tokens * HEAD_SIZE / 1e9


def _reference(q, k, v):
    """float64 softmax(Q K^T / 8) V per head, for the emulator's check."""
    b, s, _ = q.shape
    qh, kh, vh = (x.astype(np.float64).reshape(b, s, HEADS, HEAD_SIZE).transpose(0, 2, 1, 3)
                  for x in (q, k, v))
    scores = SCALE * qh @ kh.transpose(0, 1, 3, 2)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    o = (p / p.sum(-1, keepdims=True)) @ vh
    return o.transpose(0, 2, 1, 3).reshape(q.shape)


def test_emulator(benchmark, data):
    q, k, v = data
    out = np.empty_like(q)
    op = DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
        QueryTensor=tensor_desc(q), KeyTensor=tensor_desc(k), ValueTensor=tensor_desc(v),
        OutputTensor=tensor_desc(out), Scale=float(SCALE), MaskFilterValue=-10000.0,
        HeadCount=HEADS, MaskType=DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE)
    run = Prepared(DML_OPERATOR_DESC(Desc=op), [q, k, v] + [None] * 8, [out, None, None],
                   level="6_4")
    _group(benchmark, q)
    benchmark(run)
    want = _reference(q[:2], k[:2], v[:2])
    assert np.abs(out[:2] - want).max() <= 1e-4 * np.abs(want).max()


def test_torch(benchmark, torch, data):
    q, k, v = (torch.from_numpy(x).reshape(BATCH, -1, HEADS, HEAD_SIZE).transpose(1, 2)
               .contiguous() for x in data)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    _group(benchmark, data[0])
    with torch.inference_mode():
        benchmark(sdpa, q, k, v, scale=float(SCALE))


def test_onnxruntime(benchmark, ort, data):
    q, k, v = data
    h = ort.onnx.helper
    node = h.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain="com.microsoft",
                       num_heads=HEADS, scale=float(SCALE))
    io = [h.make_tensor_value_info(n, 1, q.shape) for n in ("q", "k", "v")]
    graph = h.make_graph([node], "bench", io, [h.make_tensor_value_info("y", 1, q.shape)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17),
                                               h.make_opsetid("com.microsoft", 1)])
    try:
        sess = ort.session_from_model(model)
    except Exception as e:  # a build of ONNX Runtime without the contrib operators
        pytest.skip(f"ONNX Runtime has no com.microsoft MultiHeadAttention here: {e}")
    _group(benchmark, q)
    benchmark(sess.run, None, {"q": q, "k": k, "v": v})
