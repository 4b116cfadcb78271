"""MULTIHEAD_ATTENTION (6_1) and MULTIHEAD_ATTENTION1 (6_3) on the compute family
(``emulator/compute/attention.py``): random descs of both data types over every input layout
(separate, stacked QKV, stacked QK + V, Q + stacked KV), grouped key/value heads, bias,
relative position bias (broadcast), past/present keys and values, every executable mask type,
padded and zero input strides, padded output strides whose gaps must stay untouched, the BLAS
path and the NumPy fallback; fully masked rows, non-finite values; the same bytes at any thread
count; what is not executable yet.

**The bound** (docs/decisions.md, "Attention"), against the page's steps in float64: each score
x[i,j] = Scale * q.k + rpb (+ f where a boolean mask adds it) is a FLOAT32 dot product of d
terms plus up to three roundings, so

    |dx[i,j]| <= E[i,j] = (d + 6) * 2**-24 * (|Scale| * sum_e |q[i,e] k[j,e]| + |rpb| + |f| + |x|)

(0 where a key-range mask sets the score to f exactly), plus 2 * 2**-24 * |x - max_j x| for
the shift before the exponential. A softmax moves p[j] by at most
p[j] * (|dx[j]| + sum_k p[k] |dx[k]|) to first order, the float32 exp32 adds 1 ULP, the
second product and the row sum (n = keys) add (n + 4) roundings, so for every output element

    |O - reference| <= 1.5 * (sum_j p[j] |v[j,e]| (E[i,j] + sum_k p[k] E[i,k])
                               + (n + 12) * 2**-24 * sum_j p[j] |v[j,e]|)

plus half an ULP of the output type. Present keys/values are copies (with the bias added, one
rounding) and are bit-exact.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from descriptors import *
from emulator import DMLCreateDevice1, DMLError
from emulator.compute import attention, blas
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, desc, layout, logical, strided_buffer

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
MT = DML_MULTIHEAD_ATTENTION_MASK_TYPE
F32, F16 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16
I32 = T.DML_TENSOR_DATA_TYPE_INT32
DTYPES = {F32: np.float32, F16: np.float16}
U = 2.0 ** -24
LAYOUTS = ("separate", "qkv", "qk+v", "q+kv")
MASKS = (MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE, MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN,
         MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH,
         MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START,
         MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_QUERY_SEQUENCE_LENGTH_START_END)
RANGES = MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_QUERY_SEQUENCE_LENGTH_START_END
OUTPUTS = ("OutputTensor", "OutputPresentKeyTensor", "OutputPresentValueTensor")


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def leading_ones(rng, sizes, most=5):
    """Sizes with 0 to (most - rank) leading 1s (the pages allow them on these tensors)."""
    return [1] * int(rng.integers(0, most - len(sizes) + 1)) + list(sizes)


def make_case(rng, dt, version, kind, mask_type, bias=False, rpb=False, past=False,
              present=False, groups=1, lengths=False):
    """A random desc: (the desc's fields without tensors, [(bind point, sizes, data type,
    values)] of the inputs, [(bind point, sizes)] of the outputs). ``lengths`` (version 1):
    a PastSequenceLengthsTensor over PastKey/PastValue (``past``), over the present tensors
    as a KV cache of a larger capacity (``present`` without ``past``), or over no past."""
    b, s = int(rng.integers(1, 3)), int(rng.integers(1, 6))
    hkv = int(rng.integers(1, 3))
    hq = hkv * groups if version == 1 else hkv
    d = int(rng.integers(1, 5))
    kvs = s if kind in ("qkv", "qk+v") else int(rng.integers(1, 6))
    dv = d if kind in ("qkv", "q+kv") else int(rng.integers(1, 5))
    p = int(rng.integers(1, 3)) if past else 0
    total = p + kvs
    cache = lengths and present and not past
    if cache:  # the present tensors' spare capacity holds the past
        p = int(rng.integers(0, 4))
        total = p + kvs
    ins = []
    if kind == "separate":
        ins += [("QueryTensor", leading_ones(rng, [b, s, hq * d])),
                ("KeyTensor", leading_ones(rng, [b, kvs, hkv * d])),
                ("ValueTensor", leading_ones(rng, [b, kvs, hkv * dv]))]
    elif kind == "qkv":
        ins += [("StackedQueryKeyValueTensor", [b, s, hq, 3, d])]
    elif kind == "qk+v":
        ins += [("StackedQueryKeyTensor", [b, s, hq, 2, d]),
                ("ValueTensor", leading_ones(rng, [b, kvs, hkv * dv]))]
    else:
        ins += [("QueryTensor", leading_ones(rng, [b, s, hq * d])),
                ("StackedKeyValueTensor", [b, kvs, hkv, 2, d])]
    ins = [(n, sz, dt, None) for n, sz in ins]
    if bias:
        ins.append(("BiasTensor", leading_ones(rng, [hq * d + hkv * d + hkv * dv]), dt, None))
    if rpb:
        sizes = [n if rng.random() < 0.7 else 1 for n in (b, hq, s, total)]
        ins.append(("RelativePositionBiasTensor", leading_ones(rng, sizes), dt, None))
    if past:
        ins += [("PastKeyTensor", leading_ones(rng, [b, hkv, p, d]), dt, None),
                ("PastValueTensor", leading_ones(rng, [b, hkv, p, dv]), dt, None)]
    if mask_type == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN:
        sizes = [n if rng.random() < 0.6 else 1 for n in (b, hq, s, total)]
        sizes = sizes[int(rng.integers(0, 3)):] if sizes[0] == 1 else sizes
        values = (rng.random(sizes) < 0.7).astype(np.int32) * rng.choice([1, 1, 2, -3], sizes)
        ins.append(("MaskTensor", sizes, I32, values))
    elif mask_type == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH:
        ins.append(("MaskTensor", [1, b], I32, rng.integers(-1, total + 2, (1, b))))
    elif mask_type == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START:
        ends = rng.integers(0, total + 2, b)
        starts = rng.integers(-1, total + 1, b)
        ins.append(("MaskTensor", [2, b], I32, np.stack([ends, starts])))
    elif mask_type == RANGES:
        ins.append(("MaskTensor", leading_ones(rng, [3 * b + 2]), I32,
                    ranges(rng, b, s, total)))
    if lengths:
        values = rng.integers(-1, p + 2, b)
        kind_of = I32 if rng.random() < 0.8 else dt  # the page's float types are allowed too
        ins.append(("PastSequenceLengthsTensor", leading_ones(rng, [b]), kind_of, values))
    outs = [("OutputTensor", leading_ones(rng, [b, s, hq * dv]))]
    if present:
        outs += [("OutputPresentKeyTensor", leading_ones(rng, [b, hkv, total, d])),
                 ("OutputPresentValueTensor", leading_ones(rng, [b, hkv, total, dv]))]
    fields = {"Scale": float(rng.choice([1.0, 0.5, 1 / np.sqrt(max(d, 1)), -0.75])),
              "MaskFilterValue": float(rng.choice([-10000.0, -30.0, -1e30])),
              "MaskType": mask_type}
    if version == 0:
        fields["HeadCount"] = hq
    else:
        fields["QueryHeadCount"], fields["KeyValueHeadCount"] = hq, hkv
    return fields, ins, outs


def ranges(rng, b, s, total):
    """KEY_QUERY_SEQUENCE_LENGTH_START_END values: [keyLength[b], queryStart[b] + queryEnd,
    keyStart[b] + keyEnd]; half the time the padded layout (sequence c at c * s and c * total),
    else random offsets on the flat axes (ranges across batch items, overlapping, empty,
    reversed, out of the axes)."""
    lengths = rng.integers(-1, total + 2, b)
    if rng.random() < 0.5:
        q_start, k_start = np.arange(b + 1) * s, np.arange(b + 1) * total
    else:
        q_start = np.sort(rng.integers(-1, b * s + 2, b + 1))
        if rng.random() < 0.3:
            q_start = rng.integers(-1, b * s + 2, b + 1)
        k_start = rng.integers(-1, b * total + 1, b + 1)
        lengths = rng.integers(-1, b * total + 2, b)
    return np.concatenate([lengths, q_start, k_start]).astype(np.int32)


def dispatch(device, rng, version, fields, ins, outs, values=None, strides=None):
    """Bind every input in a random layout (zero strides included) holding standard normal
    values (or ``values(name, sizes)``), every output in a random padded layout; dispatch;
    check the outputs' gaps; return (got, reference, the inputs' logical arrays, v)."""
    tensors, raws, arrays = {}, {}, {}
    chosen = strides or {}
    for name, sizes, dt, fixed in ins:
        strides = chosen.get(name) or layout(rng, sizes, True)
        raw = strided_buffer(rng, dt, sizes, strides, fill=0)
        dtype = np.int32 if dt == I32 else DTYPES[dt]
        view = logical(raw, dtype, sizes, strides)
        data = fixed if fixed is not None else \
            values(name, sizes) if values else rng.standard_normal(sizes)
        view[...] = np.asarray(data).astype(dtype)
        tensors[name], raws[name], arrays[name] = desc(dt, sizes, strides), raw, np.array(view)
    dt = ins[0][2]
    out_layouts = {}
    for name, sizes in outs:
        strides = chosen.get(name) or layout(rng, sizes, False)
        out_layouts[name] = (sizes, strides, strided_buffer(rng, dt, sizes, strides,
                                                            fill=SENTINEL))
        tensors[name] = desc(dt, sizes, strides)
        if "PastSequenceLengthsTensor" in tensors and name != "OutputTensor":
            # a KV cache's contents before the call (the reference reads them too)
            prior = logical(out_layouts[name][2], DTYPES[dt], sizes, strides)
            prior[...] = rng.standard_normal(sizes).astype(DTYPES[dt])
            arrays[name] = np.array(prior)
    cls = DML_MULTIHEAD_ATTENTION_OPERATOR_DESC if version == 0 else \
        DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC
    op = DML_OPERATOR_DESC(Desc=cls(**tensors, **fields))
    before = {n: r.copy() for n, r in raws.items()}
    device.execute(op, raws, {n: r for n, (_, _, r) in out_layouts.items()})
    for n, r in raws.items():
        assert (r == before[n]).all(), f"the input {n} was changed"
    got = {}
    dtype = DTYPES[dt]
    for name, (sizes, strides, raw) in out_layouts.items():
        untouched = ~addressed_mask(raw.size, np.dtype(dtype).itemsize, sizes, strides)
        assert (raw[untouched] == SENTINEL).all(), f"a gap of {name} was written"
        got[name] = np.array(logical(raw, dtype, sizes, strides)).astype(np.float64)
    v = device.CreateOperator(op).validated.values
    op_type = OP.DML_OPERATOR_MULTIHEAD_ATTENTION1 if version else \
        OP.DML_OPERATOR_MULTIHEAD_ATTENTION
    want = REGISTRY[op_type].module.reference(v, arrays)
    return got, {k: w.astype(np.float64) for k, w in want.items()}, arrays, v


def bound(v, arrays, want, dtype):
    """The stated bound (module doc) per output element, from float64 intermediates of the
    reference's own steps."""
    sh = attention.describe(v)
    group = sh.hq // sh.hkv
    if v.MaskType == RANGES:
        return ranged_bound(v, arrays, want, dtype)

    q, k, val = _reference_operands(v, arrays)
    seen = np.True_  # (a NumPy bool: ~ is logical)
    if arrays.get("PastSequenceLengthsTensor") is not None:  # a causal KV cache
        k, val, valid, _ = attention._kv_cache(
            v, arrays, *_reference_operands(v, arrays, past=False)[1:],
            *(None if arrays.get(n) is None else arrays[n].astype(np.float64)
              for n in ("PastKeyTensor", "PastValueTensor")),
            arrays["PastSequenceLengthsTensor"])
        position = valid[:, None] - sh.seq + np.arange(sh.seq)[None, :]
        seen = (np.arange(sh.total)[None, None, :] <= position[:, :, None])[:, None]
    scale = abs(np.float64(np.float32(v.Scale)))
    qk = scale * np.einsum("bhid,bhjd->bhij", np.abs(q), np.repeat(np.abs(k), group, axis=1))
    x = np.float64(np.float32(v.Scale)) * np.einsum("bhid,bhjd->bhij", q,
                                                     np.repeat(k, group, axis=1))
    mag = qk + np.abs(x)
    rpb = arrays.get("RelativePositionBiasTensor")
    if rpb is not None:
        r = np.abs(rpb.astype(np.float64).reshape(rpb.shape[-4:]) if rpb.ndim > 4 else
                   rpb.astype(np.float64))
        mag = mag + 2 * r
        x = x + (rpb.astype(np.float64).reshape(rpb.shape[-4:]) if rpb.ndim > 4 else rpb)
    f = abs(np.float64(np.float32(v.MaskFilterValue)))
    keys = np.arange(sh.total)
    set_mask = np.zeros(x.shape, bool)
    m = arrays.get("MaskTensor")
    if v.MaskType == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN:
        zero = np.broadcast_to((m.reshape(m.shape[-4:]) if m.ndim > 4 else m) == 0, x.shape)
        mag = mag + np.where(zero, 2 * f, 0.0)
        x = x - np.where(zero, f, 0.0)
    elif v.MaskType == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH:
        outside = keys[None, :] >= m.reshape(-1)[:, None]
        set_mask = np.broadcast_to(outside[:, None, None, :], x.shape)
    elif v.MaskType == MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START:
        ends, starts = m.reshape(2, -1)
        outside = (keys[None, :] < starts[:, None]) | (keys[None, :] >= ends[:, None])
        set_mask = np.broadcast_to(outside[:, None, None, :], x.shape)
    x = np.where(set_mask, np.float64(np.float32(v.MaskFilterValue)), x)
    x = np.where(seen, x, -np.inf)
    e_logit = np.where(set_mask | ~seen, 0.0, (sh.d + 6) * U * mag)
    with np.errstate(all="ignore"):
        shift = 2 * U * np.abs(x - x.max(axis=3, keepdims=True))  # x - max
        e_logit = e_logit + np.where(set_mask | ~np.isfinite(shift), 0.0, shift)
        p = np.exp(x - x.max(axis=3, keepdims=True))
        p = p / p.sum(axis=3, keepdims=True)
    vv = np.abs(np.repeat(val, group, axis=1))
    pv = np.einsum("bhij,bhje->bhie", p, vv)
    ebar = (p * e_logit).sum(axis=3, keepdims=True)
    err = np.einsum("bhij,bhje->bhie", p * e_logit, vv) + pv * ebar + \
        (sh.total + 12) * U * pv
    err = 1.5 * err.transpose(0, 2, 1, 3).reshape(want.shape)
    with np.errstate(invalid="ignore"):
        half_ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    return err + half_ulp


def ranged_bound(v, arrays, want, dtype):
    """The same bound for KEY_QUERY_SEQUENCE_LENGTH_START_END, a query row at a time over the
    keys of its sequence on the flat key axis (0 for rows that attend to no key)."""
    hq, hkv = attention._heads(v)
    group = hq // hkv
    q, k, val = _reference_operands(v, arrays)
    batch, _, seq, d = q.shape
    total = k.shape[2]
    fk = k.transpose(1, 0, 2, 3).reshape(hkv, batch * total, -1)
    fv = val.transpose(1, 0, 2, 3).reshape(hkv, batch * total, -1)
    rpb = arrays.get("RelativePositionBiasTensor")
    rpb = np.zeros((1,)) if rpb is None else rpb.astype(np.float64)
    rpb = np.broadcast_to(rpb.reshape(rpb.shape[-4:]) if rpb.ndim > 4 else rpb,
                          (batch, hq, seq, total))
    m = arrays["MaskTensor"].reshape(-1).astype(np.int64)
    lengths, q_start, k_start = m[:batch], m[batch:2 * batch + 1], m[2 * batch + 1:]
    scale = np.float64(np.float32(v.Scale))
    err = np.zeros((batch, hq, seq, val.shape[3]))
    for r in range(batch * seq):
        b, i = divmod(r, seq)
        c = next((c for c in range(batch) if q_start[c] <= r < q_start[c + 1]), None)
        if c is None:
            continue
        k0 = min(max(k_start[c], 0), batch * total)
        keys = np.arange(k0, min(max(k_start[c] + lengths[c], k0), batch * total))
        for h in range(hq if len(keys) else 0):
            kk, vv = fk[h // group, keys], np.abs(fv[h // group, keys])
            x = scale * (kk @ q[b, h, i]) + rpb[b, h, i, keys % total]
            e_logit = (d + 6) * U * (abs(scale) * (np.abs(kk) @ np.abs(q[b, h, i])) +
                                     2 * np.abs(rpb[b, h, i, keys % total]) + np.abs(x))
            with np.errstate(all="ignore"):
                shift = 2 * U * np.abs(x - x.max())
                e_logit = e_logit + np.where(np.isfinite(shift), shift, 0.0)
                p = np.exp(x - x.max())
                p = p / p.sum()
            pv = p @ vv
            err[b, h, i] = 1.5 * ((p * e_logit) @ vv + pv * (p @ e_logit) +
                                  (len(keys) + 12) * U * pv)
    err = err.transpose(0, 2, 1, 3).reshape(want.shape)
    with np.errstate(invalid="ignore"):
        half_ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    return err + half_ulp


def _reference_operands(v, arrays, past=True):
    """q, k, v after bias and (``past``) the past, {b, heads, rows, size}, in float64, rebuilt
    the way the page states (for the magnitudes of the bound)."""
    hq, hkv = attention._heads(v)

    def get(name):
        a = arrays.get(name)
        return None if a is None else a.astype(np.float64)

    def heads(x, n):
        return x.reshape(x.shape[-3], x.shape[-2], n, -1).transpose(0, 2, 1, 3)

    stacked = get("StackedQueryKeyValueTensor")
    stacked = stacked if stacked is not None else get("StackedQueryKeyTensor")
    k = val = None
    if stacked is not None:
        slots = [stacked[..., i, :].transpose(0, 2, 1, 3) for i in range(stacked.shape[3])]
        q, k = slots[0], slots[1]
        val = slots[2] if len(slots) == 3 else None
    else:
        q = heads(get("QueryTensor"), hq)
    kv = get("StackedKeyValueTensor")
    if kv is not None:
        k, val = kv[..., 0, :].transpose(0, 2, 1, 3), kv[..., 1, :].transpose(0, 2, 1, 3)
    if arrays.get("KeyTensor") is not None:
        k = heads(get("KeyTensor"), hkv)
    if arrays.get("ValueTensor") is not None:
        val = heads(get("ValueTensor"), hkv)
    d, dv = q.shape[3], val.shape[3]
    bias = get("BiasTensor")
    if bias is not None:
        bias = bias.reshape(-1)
        q = q + bias[:hq * d].reshape(1, hq, 1, d)
        k = k + bias[hq * d:(hq + hkv) * d].reshape(1, hkv, 1, d)
        val = val + bias[(hq + hkv) * d:].reshape(1, hkv, 1, dv)
    pk, pv = get("PastKeyTensor"), get("PastValueTensor")
    if pk is not None and past:
        k = np.concatenate([pk.reshape(pk.shape[-4:]), k], axis=2)
        val = np.concatenate([pv.reshape(pv.shape[-4:]), val], axis=2)
    return q, k, val


def check(got, want, v, arrays, dt):
    b = bound(v, arrays, want["OutputTensor"], DTYPES[dt])
    g, w = got["OutputTensor"], want["OutputTensor"]
    with np.errstate(invalid="ignore"):
        ok = (np.abs(g - w) <= b) | (g == w) | (np.isnan(g) & np.isnan(w))
    assert ok.all(), (f"outside the bound at {np.argwhere(~ok)[:5].tolist()}: got "
                      f"{g[~ok][:5]}, want {w[~ok][:5]}, bound {b[~ok][:5]}")
    for name in OUTPUTS[1:]:
        if name in want:
            assert np.array_equal(got[name], want[name], equal_nan=True), name


@pytest.mark.parametrize("direct", [True, False], ids=["blas", "numpy"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_random_descs_against_the_pages_steps(device, monkeypatch, dt, direct):
    monkeypatch.setattr(blas, "DIRECT", direct)
    rng = np.random.default_rng(17 + dt + 7 * direct)
    for i in range(80):
        kind = LAYOUTS[i % 4]
        version = (i // 4) % 2
        mask = MASKS[(i // 8) % len(MASKS)]
        groups = int(rng.integers(1, 4)) if version and kind in ("separate", "q+kv") else 1
        fields, ins, outs = make_case(
            rng, dt, version, kind, mask, bias=rng.random() < 0.5, rpb=rng.random() < 0.5,
            past=kind in ("separate", "q+kv") and rng.random() < 0.5,
            present=rng.random() < 0.5, groups=groups,
            lengths=version == 1 and mask != RANGES and rng.random() < 0.5)
        got, want, arrays, v = dispatch(device, rng, version, fields, ins, outs)
        check(got, want, v, arrays, dt)


def golden(q, k, val, scale):
    """softmax(scale q k^T) v per head, written independently of the module."""
    s = scale * q @ np.swapaxes(k, -1, -2)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ val


def test_a_hand_computed_case(device):
    """One head, two queries, three keys: the page's chain by hand, each mask type."""
    q = np.array([[[1.0, 0.0], [0.0, 2.0]]], np.float32)  # {1, 2, 2}
    k = np.array([[[1.0, 1.0], [2.0, 0.0], [0.0, -1.0]]], np.float32)
    val = np.array([[[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]], np.float32)
    base = {"QueryTensor": tensor_desc(q), "KeyTensor": tensor_desc(k),
            "ValueTensor": tensor_desc(val), "OutputTensor": tensor_desc((1, 2, 2), F32),
            "Scale": 0.5, "MaskFilterValue": -10000.0, "HeadCount": 1}
    run = lambda mask=None, **kw: device.execute(  # noqa: E731
        DML_OPERATOR_DESC(Desc=DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(**base, **kw)),
        {"QueryTensor": q, "KeyTensor": k, "ValueTensor": val, "MaskTensor": mask})[0]
    scores = 0.5 * q[0] @ k[0].T  # [[0.5, 1, 0], [1, 0, -1]]
    np.testing.assert_allclose(run(MaskType=0)[0], golden(q[0], k[0], val[0], 0.5), rtol=1e-6)
    # KEY_SEQUENCE_LENGTH 2: the third key is set to -10000 (exp underflows to 0)
    m = np.array([[2]], np.int32)
    got = run(m, MaskTensor=tensor_desc(m), MaskType=MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH)
    p = np.exp(scores[:, :2] - scores[:, :2].max(1, keepdims=True))
    np.testing.assert_allclose(got[0], (p / p.sum(1, keepdims=True)) @ val[0, :2], rtol=1e-6)
    # END_START [end 3, start 1]: the first key is out
    m = np.array([[3], [1]], np.int32)
    got = run(m, MaskTensor=tensor_desc(m),
              MaskType=MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START)
    p = np.exp(scores[:, 1:] - scores[:, 1:].max(1, keepdims=True))
    np.testing.assert_allclose(got[0], (p / p.sum(1, keepdims=True)) @ val[0, 1:], rtol=1e-6)
    # every key out (length 0): every score is -10000, so the weights are uniform
    m = np.array([[0]], np.int32)
    got = run(m, MaskTensor=tensor_desc(m), MaskType=MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH)
    np.testing.assert_allclose(got[0], np.tile(val[0].mean(0), (2, 1)), rtol=1e-6)
    # BOOLEAN: -10000 is *added* where the mask is 0; fully masked rows keep their softmax
    m = np.array([[[[1, 0, 1], [0, 0, 0]]]], np.int32)
    got = run(m, MaskTensor=tensor_desc(m), MaskType=MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN)
    p0 = np.exp(scores[0, [0, 2]] - scores[0, [0, 2]].max())
    np.testing.assert_allclose(got[0, 0], (p0 / p0.sum()) @ val[0, [0, 2]], rtol=1e-6)
    np.testing.assert_allclose(got[0, 1], golden(q[0], k[0], val[0], 0.5)[1], rtol=5e-3)
    # KEY_QUERY_SEQUENCE_LENGTH_START_END [keyLength 2 | queryStart 0, queryEnd 2 | keyStart 0,
    # keyEnd 3]: both queries attend to keys 0, 1 only (no MaskFilterValue involved)
    run_ranges = lambda m: run(m, MaskTensor=tensor_desc(m), MaskType=RANGES)  # noqa: E731
    want = golden(q[0], k[0, :2], val[0, :2], 0.5)
    np.testing.assert_allclose(run_ranges(np.array([2, 0, 2, 0, 3], np.int32))[0], want,
                               rtol=1e-6)
    # the sequence starts at query row 1: row 0 belongs to none and outputs 0; keys from 1,
    # a length past the axis is cut at its end
    got = run_ranges(np.array([7, 1, 2, 1, 3], np.int32))
    assert (got[0, 0] == 0).all()
    np.testing.assert_allclose(got[0, 1], golden(q[0], k[0, 1:], val[0, 1:], 0.5)[1], rtol=1e-6)
    # a sequence without keys outputs 0
    assert (run_ranges(np.array([0, 0, 2, 1, 3], np.int32)) == 0).all()


def test_query_key_ranges_read_keys_across_the_batch(device):
    """KEY_QUERY_SEQUENCE_LENGTH_START_END: the offsets index the batch's flat token axes (ONNX
    Runtime's layout), so a sequence may take its keys from another batch item's rows, and a
    batch item's queries may belong to different sequences."""
    rng = np.random.default_rng(21)
    b, s, kvs, d = 2, 3, 4, 2
    q, k, val = (rng.standard_normal((b, n, d)).astype(np.float32) for n in (s, kvs, kvs))
    # sequence 0: flat query rows 0..3 (item 0's three and item 1's first), keys flat 2..6
    # (item 0's last two, item 1's first three); sequence 1: query rows 4, 5, keys flat 6, 7
    m = np.array([5, 2, 0, 4, 6, 2, 6, 8], np.int32)
    op = DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
        QueryTensor=tensor_desc(q), KeyTensor=tensor_desc(k), ValueTensor=tensor_desc(val),
        MaskTensor=tensor_desc(m), OutputTensor=tensor_desc((b, s, d), F32), Scale=0.7,
        MaskFilterValue=-1e4, HeadCount=1, MaskType=RANGES)
    got = device.execute(DML_OPERATOR_DESC(Desc=op), {
        "QueryTensor": q, "KeyTensor": k, "ValueTensor": val, "MaskTensor": m})[0]
    fq, fk, fv = (x.reshape(-1, d).astype(np.float64) for x in (q, k, val))
    want = np.concatenate([golden(fq[0:4], fk[2:7], fv[2:7], 0.7),
                           golden(fq[4:6], fk[6:8], fv[6:8], 0.7)]).reshape(b, s, d)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_grouped_heads_against_a_per_head_loop(device):
    """MULTIHEAD_ATTENTION1 with 4 query heads on 2 key/value heads against a plain loop over
    the heads (query heads 0, 1 read key/value head 0; 2, 3 head 1), written independently of
    the module's reference."""
    rng = np.random.default_rng(3)
    b, s, kvs, d = 2, 6, 5, 8
    q = rng.standard_normal((b, s, 4 * d)).astype(np.float32)
    k = rng.standard_normal((b, kvs, 2 * d)).astype(np.float32)
    val = rng.standard_normal((b, kvs, 2 * d)).astype(np.float32)
    op = DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC(
        QueryTensor=tensor_desc(q), KeyTensor=tensor_desc(k), ValueTensor=tensor_desc(val),
        OutputTensor=tensor_desc((b, s, 4 * d), F32), Scale=0.3, MaskFilterValue=-1e4,
        QueryHeadCount=4, KeyValueHeadCount=2, MaskType=0)
    got = device.execute(DML_OPERATOR_DESC(Desc=op), {"QueryTensor": q, "KeyTensor": k,
                                                      "ValueTensor": val})[0]
    want = np.zeros((b, s, 4 * d))
    for n in range(b):
        for h in range(4):
            g = h // 2
            want[n, :, h * d:(h + 1) * d] = golden(
                q[n, :, h * d:(h + 1) * d].astype(np.float64),
                k[n, :, g * d:(g + 1) * d].astype(np.float64),
                val[n, :, g * d:(g + 1) * d].astype(np.float64), 0.3)
    np.testing.assert_allclose(got, want, atol=2e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6), st.integers(1, 3),
       st.integers(1, 4), st.floats(-2, 2), st.integers(0, 2**31 - 1))
def test_outputs_are_weighted_means_of_the_values(b, s, kvs, h, d, scale, seed):
    """Property: every output element lies between the smallest and largest value of its head
    and column (the softmax weights are a convex combination)."""
    dev = DMLCreateDevice1(feature_level="6_4")
    rng = np.random.default_rng(seed)
    q, k, val = (rng.standard_normal((b, n, h * d)).astype(np.float32) * 3
                 for n in (s, kvs, kvs))
    op = DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
        QueryTensor=tensor_desc(q), KeyTensor=tensor_desc(k), ValueTensor=tensor_desc(val),
        OutputTensor=tensor_desc((b, s, h * d), F32), Scale=scale, MaskFilterValue=-1e4,
        HeadCount=h, MaskType=0)
    got = dev.execute(DML_OPERATOR_DESC(Desc=op), {"QueryTensor": q, "KeyTensor": k,
                                                   "ValueTensor": val})[0]
    lo = val.min(axis=1, keepdims=True)
    hi = val.max(axis=1, keepdims=True)
    slack = 1e-5 * np.abs(val).max(axis=1, keepdims=True)
    assert ((got >= lo - slack) & (got <= hi + slack)).all()


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_non_finite_values_follow_the_pages_steps(device, dt):
    """NaN in a query row poisons that row's head; +inf scores give NaN (inf - inf); a NaN key
    whose score a key-range mask sets to f leaves the row finite; f = -inf with every key
    masked gives NaN (0/0), as the formula does."""
    rng = np.random.default_rng(5)
    M = MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH
    fields, ins, outs = make_case(rng, dt, 0, "separate", M)
    fields["MaskFilterValue"] = float("-inf")
    b = ins[-1][1][1]

    def values(name, sizes):
        x = rng.standard_normal(sizes)
        if name == "QueryTensor":
            x.reshape(-1, sizes[-1])[0, 0] = np.nan
        if name == "KeyTensor":
            x.reshape(-1, sizes[-2], sizes[-1])[:, -1, 0] = np.nan  # the last key: masked
        if name == "ValueTensor" and x.size > 1:
            x.reshape(-1)[1] = np.inf
        return x

    kvs = [n for n, sz, *_ in ins if n == "KeyTensor"]
    assert kvs
    key_len = ins[1][1][-2]
    lengths = np.array([[key_len - 1 if key_len > 1 else 0] * b], np.int32)
    ins[-1] = ("MaskTensor", [1, b], I32, lengths)
    got, want, arrays, v = dispatch(device, rng, 0, fields, ins, outs, values)
    g, w = got["OutputTensor"], want["OutputTensor"]
    assert np.isnan(w).any()
    assert np.array_equal(np.isnan(g), np.isnan(w))
    assert np.array_equal(np.isinf(g), np.isinf(w))
    check(got, want, v, arrays, dt)


def test_the_same_bytes_at_any_thread_count(device):
    rng = np.random.default_rng(9)
    fields, ins, outs = make_case(rng, F32, 1, "separate",
                                  MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN, bias=True,
                                  rpb=True, past=True, present=True, groups=2)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            got, *_ = dispatch(device, np.random.default_rng(1), 1, fields, ins, outs)
            results.append(got["OutputTensor"])
    finally:
        numba.set_num_threads(before)
    assert all(np.array_equal(r, results[0], equal_nan=True) for r in results)


def test_long_rows_are_cut_into_tasks(device, monkeypatch):
    """Fewer query rows per task than the sequence (the score block's limit) change nothing."""
    monkeypatch.setattr(attention, "SCORES", 8)
    rng = np.random.default_rng(11)
    fields, ins, outs = make_case(rng, F32, 0, "qkv", MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE)
    ins[0] = (ins[0][0], [2, 5, 2, 3, 4], F32, None)
    outs[0] = ("OutputTensor", [2, 5, 8])
    fields["HeadCount"] = 2
    got, want, arrays, v = dispatch(device, rng, 0, fields, ins, outs)
    check(got, want, v, arrays, F32)


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_transposed_and_strided_layouts(device, dt):
    """Each head's matrices column-major (the BLAS reads and writes them transposed), a
    query read with an element stride of 2 (packed first), a present key written column-major:
    the strides are honoured."""
    rng = np.random.default_rng(13)
    b, s, kvs, h, d = 2, 3, 4, 2, 3
    fields = {"Scale": 0.5, "MaskFilterValue": -1e4, "HeadCount": h,
              "MaskType": MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE}
    ins = [("QueryTensor", [b, s, h * d], dt, None), ("KeyTensor", [b, kvs, h * d], dt, None),
           ("ValueTensor", [b, kvs, h * d], dt, None)]
    outs = [("OutputTensor", [b, s, h * d]), ("OutputPresentKeyTensor", [1, b, h, kvs, d]),
            ("OutputPresentValueTensor", [b, h, kvs, d])]
    column = {"QueryTensor": [2 * s * h * d, 2, 2 * s],  # element stride 2 inside a row
              "KeyTensor": [kvs * h * d, 1, kvs],  # each head's matrix column-major
              "ValueTensor": [kvs * h * d, 1, kvs],
              "OutputTensor": [s * h * d + 5, 1, s],
              "OutputPresentKeyTensor": [0, h * kvs * d, kvs * d, 1, kvs]}
    got, want, arrays, v = dispatch(device, rng, 0, fields, ins, outs, strides=column)
    check(got, want, v, arrays, dt)


def test_what_is_not_executable_yet_fails_at_compile():
    """KEY_QUERY_SEQUENCE_LENGTH_START_END together with PastSequenceLengthsTensor: valid,
    E_NOTIMPL (docs/decisions.md, "Attention")."""
    dev = DMLCreateDevice1(feature_level="6_4")
    q = tensor_desc((1, 2, 4), F32)
    op = DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC(
        QueryTensor=q, KeyTensor=q, ValueTensor=q, OutputTensor=q,
        MaskTensor=tensor_desc((5,), I32), PastSequenceLengthsTensor=tensor_desc((1,), I32),
        Scale=1.0, MaskFilterValue=-1e4, QueryHeadCount=2, KeyValueHeadCount=2,
        MaskType=RANGES)
    compiled = dev.CreateOperator(DML_OPERATOR_DESC(Desc=op))
    with pytest.raises(DMLError) as e:
        dev.CompileOperator(compiled)
    assert e.value.name == "E_NOTIMPL" and "valid" in str(e.value)


def kv_cache_desc(b, s, kvs, cap, d, past_sizes=None, lengths_type=I32):
    """MULTIHEAD_ATTENTION1, one head, with a PastSequenceLengthsTensor; the present tensors
    {b, 1, cap, d} (a KV cache when ``past_sizes`` is None)."""
    f = tensor_desc
    fields = {"QueryTensor": f((b, s, d), F32), "KeyTensor": f((b, kvs, d), F32),
              "ValueTensor": f((b, kvs, d), F32), "OutputTensor": f((b, s, d), F32),
              "PastSequenceLengthsTensor": f((b,), lengths_type),
              "OutputPresentKeyTensor": f((b, 1, cap, d), F32),
              "OutputPresentValueTensor": f((b, 1, cap, d), F32), "Scale": 0.5,
              "MaskFilterValue": -1e4, "QueryHeadCount": 1, "KeyValueHeadCount": 1,
              "MaskType": 0}
    if past_sizes is not None:
        fields.update(PastKeyTensor=tensor_desc(past_sizes, F32),
                      PastValueTensor=tensor_desc(past_sizes, F32))
    return DML_OPERATOR_DESC(Desc=DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC(**fields))


def test_past_sequence_lengths_run_a_causal_kv_cache(device):
    """PastSequenceLengthsTensor without PastKey/PastValue (ONNX Runtime's GroupQueryAttention
    on DirectML): the present tensors are the cache. Item b's first L[b] rows are its past,
    the current keys/values are written after them, the rows after those stay as they were,
    and query i sees keys up to position L[b] + i (causal)."""
    rng = np.random.default_rng(23)
    b, d, cap = 2, 3, 6
    for s, lengths in ((1, [2, 5]), (3, [0, 1]), (2, [-4, 9])):  # decode, prompt, clamped
        q, k, val = (rng.standard_normal((b, s, d)).astype(np.float32) for _ in range(3))
        cache_k, cache_v = (rng.standard_normal((b, 1, cap, d)).astype(np.float32)
                            for _ in range(2))
        present_k, present_v = cache_k.copy(), cache_v.copy()
        length = np.array(lengths, np.int32)
        device.execute(kv_cache_desc(b, s, s, cap, d), {
            "QueryTensor": q, "KeyTensor": k, "ValueTensor": val,
            "PastSequenceLengthsTensor": length},
            {"OutputPresentKeyTensor": present_k, "OutputPresentValueTensor": present_v})
        for n in range(b):
            past = min(max(lengths[n], 0), cap - s)
            keys = np.concatenate([cache_k[n, 0, :past], k[n]])
            values = np.concatenate([cache_v[n, 0, :past], val[n]])
            want_k = cache_k[n, 0].copy()
            want_k[past:past + s] = k[n]
            assert np.array_equal(present_k[n, 0], want_k)
            assert np.array_equal(present_v[n, 0, past + s:], cache_v[n, 0, past + s:])
            out = device.execute(kv_cache_desc(b, s, s, cap, d), {
                "QueryTensor": q, "KeyTensor": k, "ValueTensor": val,
                "PastSequenceLengthsTensor": length},
                {"OutputPresentKeyTensor": cache_k.copy(),
                 "OutputPresentValueTensor": cache_v.copy()})[0]
            for i in range(s):
                seen = past + i + 1
                want = golden(q[n, i:i + 1].astype(np.float64), keys[:seen].astype(np.float64),
                              values[:seen].astype(np.float64), 0.5)
                np.testing.assert_allclose(out[n, i], want[0], rtol=1e-5, atol=1e-6)


def test_past_sequence_lengths_over_past_tensors(device):
    """With PastKey/PastValue {b, 1, P, d}: item b attends to the first L[b] past rows and the
    current ones; the present {b, 1, P + kvSequence, d} receives exactly those rows first."""
    rng = np.random.default_rng(29)
    b, s, d, p = 2, 2, 2, 3
    q, k, val = (rng.standard_normal((b, s, d)).astype(np.float32) for _ in range(3))
    pk, pv = (rng.standard_normal((b, 1, p, d)).astype(np.float32) for _ in range(2))
    length = np.array([1, 3], np.int32)
    present_k = np.full((b, 1, p + s, d), 7.0, np.float32)
    present_v = present_k.copy()
    out = device.execute(kv_cache_desc(b, s, s, p + s, d, (b, 1, p, d)), {
        "QueryTensor": q, "KeyTensor": k, "ValueTensor": val, "PastKeyTensor": pk,
        "PastValueTensor": pv, "PastSequenceLengthsTensor": length},
        {"OutputPresentKeyTensor": present_k, "OutputPresentValueTensor": present_v})[0]
    for n, past in enumerate(length):
        keys = np.concatenate([pk[n, 0, :past], k[n]])
        assert np.array_equal(present_k[n, 0, :past + s], keys)
        assert (present_k[n, 0, past + s:] == 7.0).all()  # not written
        values = np.concatenate([pv[n, 0, :past], val[n]])
        for i in range(s):
            want = golden(q[n, i:i + 1].astype(np.float64),
                          keys[:past + i + 1].astype(np.float64),
                          values[:past + i + 1].astype(np.float64), 0.5)
            np.testing.assert_allclose(out[n, i], want[0], rtol=1e-5, atol=1e-6)


def test_past_sequence_lengths_validation():
    """INT32 (ONNX Runtime's type) or the data's own type; one length per batch item; a cache
    must hold the current keys."""
    dev = DMLCreateDevice1(feature_level="6_4")
    dev.CreateOperator(kv_cache_desc(2, 1, 1, 4, 2))
    dev.CreateOperator(kv_cache_desc(2, 1, 1, 4, 2, lengths_type=F32))
    for bad in (kv_cache_desc(2, 1, 1, 4, 2, lengths_type=T.DML_TENSOR_DATA_TYPE_INT8),
                kv_cache_desc(2, 1, 1, 4, 2, lengths_type=F16),
                kv_cache_desc(2, 3, 3, 2, 2)):
        with pytest.raises(DMLError) as e:
            dev.CreateOperator(bad)
        assert e.value.name == "E_INVALIDARG"
    import dataclasses

    op = kv_cache_desc(2, 1, 1, 4, 2)
    op = DML_OPERATOR_DESC(Desc=dataclasses.replace(
        op.Desc, PastSequenceLengthsTensor=tensor_desc((3,), I32)))
    with pytest.raises(DMLError) as e:
        dev.CreateOperator(op)
    assert "PastSequenceLengthsTensor.Sizes" in str(e.value)


def test_inconsistent_shapes_are_refused_not_read_out_of_bounds():
    """A key sequence the value does not share: not interpreted (E_NOTIMPL names it)."""
    dev = DMLCreateDevice1(feature_level="6_4")
    op = DML_MULTIHEAD_ATTENTION_OPERATOR_DESC(
        QueryTensor=tensor_desc((1, 2, 4), F32), KeyTensor=tensor_desc((1, 3, 4), F32),
        ValueTensor=tensor_desc((1, 5, 4), F32), OutputTensor=tensor_desc((1, 2, 4), F32),
        Scale=1.0, MaskFilterValue=-1e4, HeadCount=2, MaskType=0)
    with pytest.raises(DMLError) as e:
        dev.CompileOperator(dev.CreateOperator(DML_OPERATOR_DESC(Desc=op)))
    assert "ValueTensor" in str(e.value)


def test_no_memory_for_scratch_is_e_outofmemory_before_any_write(device, monkeypatch):
    import emulator.compute.attention as module

    rng = np.random.default_rng(2)
    fields, ins, outs = make_case(rng, F16, 0, "separate",
                                  MT.DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE, bias=True)

    def none(shape, dtype, operator, what):
        raise DMLError(0x8007000E, f"{operator}: no memory ({what})")

    monkeypatch.setattr(module, "scratch", none)
    with pytest.raises(DMLError) as e:
        dispatch(device, rng, 0, fields, ins, outs)
    assert e.value.name == "E_OUTOFMEMORY"
