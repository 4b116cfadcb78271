"""QUANTIZED_LINEAR_MATRIX_MULTIPLY: bit-exact against the integer reference for every type
combination, quantization granularity, zero points, saturation, exact .5 ties, NaN/inf results,
ranks 2-4, broadcast and strided layouts, K beyond an int32 block; and the level matrix."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError, min_feature_level
from emulator.registry import validate_operator

from .helpers import check_level_case, desc, logical, strided_buffer

I8, U8, F32 = DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_FLOAT32
NP = {I8: np.int8, U8: np.uint8}
LEVELS = ["2_1", "3_0", "3_1", "4_0"]
FIELDS = ("ATensor", "AScaleTensor", "AZeroPointTensor", "BTensor", "BScaleTensor",
          "BZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="4_0")


def qop(descs):
    return DML_OPERATOR_DESC(Desc=DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC(**descs))


def run(device, arrays, out_dtype, rank_sizes_out, descs=None, out_strides=None):
    """Execute with the given input arrays (None: absent) and compare to the reference."""
    descs = descs or {k: (tensor_desc(v) if v is not None else None) for k, v in arrays.items()}
    out_dt = data_type_of_numpy(np.dtype(out_dtype))
    descs["OutputTensor"] = desc(out_dt, rank_sizes_out, out_strides)
    op = qop(descs)
    raw_out = strided_buffer(np.random.default_rng(0), out_dt, rank_sizes_out, out_strides, fill=0x5A)
    device.execute(op, [arrays.get(f) for f in FIELDS], [raw_out])
    spec, v = validate_operator(op, device.feature_level)
    want = spec.module.reference(v.values, {k: x for k, x in arrays.items() if x is not None})
    got = logical(raw_out, out_dtype, rank_sizes_out, out_strides)
    np.testing.assert_array_equal(got, want["OutputTensor"])
    return got


def scales(rng, rank, m, n, kind):
    ones = (1,) * rank
    shape = {"tensor": ones, "row": (*ones[:-2], m, 1), "column": (*ones[:-1], n)}[kind]
    return (rng.random(shape) * 0.05 + 0.001).astype(np.float32)


@pytest.mark.parametrize("a_t,b_t,o_t", list(itertools.product((I8, U8), repeat=3)),
                         ids=lambda t: "I8" if t == I8 else "U8")
def test_every_type_combination_and_granularity(device, a_t, b_t, o_t):
    rng = np.random.default_rng(int(a_t) * 100 + int(b_t) * 10 + int(o_t))
    m, k, n = 5, 33, 70  # odd K, N not a multiple of the tile
    for a_kind, b_kind, o_kind, zps in itertools.product(("tensor", "row"), ("tensor", "column"),
                                                         ("tensor", "row"), (False, True)):
        a = rng.integers(np.iinfo(NP[a_t]).min, np.iinfo(NP[a_t]).max + 1, (1, 1, m, k)).astype(NP[a_t])
        b = rng.integers(np.iinfo(NP[b_t]).min, np.iinfo(NP[b_t]).max + 1, (1, 1, k, n)).astype(NP[b_t])
        arrays = {"ATensor": a, "BTensor": b,
                  "AScaleTensor": scales(rng, 4, m, n, a_kind),
                  "BScaleTensor": scales(rng, 4, m, n, b_kind),
                  "OutputScaleTensor": scales(rng, 4, m, n, o_kind) * 40,
                  "AZeroPointTensor": None, "BZeroPointTensor": None,
                  "OutputZeroPointTensor": None}
        if zps:
            for name, t, kind in (("AZeroPointTensor", a_t, a_kind), ("BZeroPointTensor", b_t, b_kind),
                                  ("OutputZeroPointTensor", o_t, o_kind)):
                shape = scales(rng, 4, m, n, kind).shape
                info = np.iinfo(NP[t])
                arrays[name] = rng.integers(info.min, info.max + 1, shape).astype(NP[t])
        run(device, arrays, NP[o_t], [1, 1, m, n])


def base_arrays(m=2, k=2, n=2, a_t=np.uint8, b_t=np.uint8, rank=4):
    one = (1,) * rank
    batch = (1,) * (rank - 2)
    return {"ATensor": np.ones((*batch, m, k), a_t), "BTensor": np.ones((*batch, k, n), b_t),
            "AScaleTensor": np.ones(one, np.float32), "BScaleTensor": np.ones(one, np.float32),
            "OutputScaleTensor": np.ones(one, np.float32), "AZeroPointTensor": None,
            "BZeroPointTensor": None, "OutputZeroPointTensor": None}


def test_saturation_at_both_ends(device):
    arrays = base_arrays()
    arrays["ATensor"] = np.array([[255, 255], [0, 0]], np.uint8).reshape(1, 1, 2, 2)
    arrays["BTensor"] = np.array([[255, 0], [255, 0]], np.uint8).reshape(1, 1, 2, 2)
    arrays["AZeroPointTensor"] = np.full((1, 1, 1, 1), 100, np.uint8)
    got = run(device, arrays, np.int8, [1, 1, 2, 2])
    assert got.ravel().tolist() == [127, 0, -128, 0]
    got = run(device, arrays, np.uint8, [1, 1, 2, 2])
    assert got.ravel().tolist() == [255, 0, 0, 0]


def test_ties_round_half_to_even_in_both_directions(device):
    """acc * 0.5 lands exactly on .5: 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, -2.5 -> -2."""
    arrays = base_arrays(1, 1, 4, np.int8, np.int8)
    arrays["ATensor"] = np.ones((1, 1, 1, 1), np.int8)
    arrays["BTensor"] = np.array([3, 5, -3, -5], np.int8).reshape(1, 1, 1, 4)
    arrays["AScaleTensor"] = np.full((1, 1, 1, 1), 0.5, np.float32)
    got = run(device, arrays, np.int8, [1, 1, 1, 4])
    assert got.ravel().tolist() == [2, 2, -2, -2]


def test_nan_and_infinite_results(device):
    arrays = base_arrays(1, 1, 3, np.int8, np.int8)
    arrays["BTensor"] = np.array([0, 1, -1], np.int8).reshape(1, 1, 1, 3)
    arrays["OutputScaleTensor"] = np.zeros((1, 1, 1, 1), np.float32)  # acc · inf: NaN, +inf, -inf
    arrays["OutputZeroPointTensor"] = np.full((1, 1, 1, 1), 9, np.int8)
    got = run(device, arrays, np.int8, [1, 1, 1, 3])
    assert got.ravel().tolist() == [9, 127, -128]


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_ranks_two_to_four_with_right_aligned_scales(device, rank):
    rng = np.random.default_rng(rank)
    m, k, n = 7, 19, 9
    batch = (3,) * (rank - 2)
    arrays = base_arrays(m, k, n, np.uint8, np.int8, rank)
    arrays["ATensor"] = rng.integers(0, 256, (*batch, m, k)).astype(np.uint8)
    arrays["BTensor"] = rng.integers(-128, 128, (*batch, k, n)).astype(np.int8)
    arrays["AScaleTensor"] = np.full((1,), 0.02, np.float32).reshape((1,) * min(rank, 1))
    arrays["BScaleTensor"] = (rng.random((n,)) * 0.01).astype(np.float32)  # 1-D per-column
    arrays["OutputScaleTensor"] = np.full((1,), 0.3, np.float32)
    arrays["BZeroPointTensor"] = rng.integers(-5, 5, (n,)).astype(np.int8)
    descs = {k: (tensor_desc(v) if v is not None else None) for k, v in arrays.items()}
    run(device, arrays, np.uint8, [*batch, m, n], descs)


def test_broadcast_batch_transposed_b_and_padded_rows(device):
    rng = np.random.default_rng(9)
    b_, m, k, n = 3, 4, 6, 5
    a_raw = rng.integers(0, 256, m * (k + 2)).astype(np.uint8)  # one A with padded rows
    bt = rng.integers(-128, 128, (b_, n, k)).astype(np.int8)    # B stored transposed
    arrays = base_arrays(m, k, n, np.uint8, np.int8, 3)
    arrays["ATensor"] = a_raw
    arrays["BTensor"] = bt
    arrays["OutputScaleTensor"] = np.full((1, 1, 1), 40, np.float32)
    descs = {k2: (tensor_desc(v) if v is not None else None) for k2, v in arrays.items()}
    descs["ATensor"] = desc(U8, [b_, m, k], [0, k + 2, 1])       # batch broadcast, padded rows
    descs["BTensor"] = desc(I8, [b_, k, n], [n * k, 1, k])       # transposed by strides
    logical_a = np.lib.stride_tricks.as_strided(a_raw, (b_, m, k), (0, k + 2, 1))
    logical_b = np.ascontiguousarray(bt.transpose(0, 2, 1))
    ref_arrays = dict(arrays, ATensor=np.ascontiguousarray(logical_a), BTensor=logical_b)
    out_dt = U8
    descs["OutputTensor"] = desc(out_dt, [b_, m, n], [m * (n + 3), n + 3, 1])
    op = qop(descs)
    raw = np.full(b_ * m * (n + 3), 0x5A, np.uint8)
    dev_out = device.execute(op, [arrays.get(f) for f in FIELDS], [raw])[0]
    spec, v = validate_operator(op, device.feature_level)
    want = spec.module.reference(v.values, {kk: x for kk, x in ref_arrays.items() if x is not None})
    np.testing.assert_array_equal(dev_out, want["OutputTensor"])
    assert (raw.reshape(b_, m, n + 3)[:, :, n:] == 0x5A).all()


def test_k_beyond_one_int32_block_stays_exact(device):
    k = 40_000  # 255 * 255 * 40000 > 2^31
    arrays = base_arrays(1, k, 2, np.uint8, np.uint8, 2)
    arrays["ATensor"] = np.full((1, k), 255, np.uint8)
    arrays["BTensor"] = np.full((k, 2), 255, np.uint8)
    arrays["BZeroPointTensor"] = np.array([0, 255], np.uint8)
    arrays["AScaleTensor"] = np.ones((1, 1), np.float32)
    arrays["BScaleTensor"] = np.ones((1, 1), np.float32)
    arrays["OutputScaleTensor"] = np.full((1, 1), 2.0 ** 24, np.float32)
    descs = {kk: (tensor_desc(v) if v is not None else None) for kk, v in arrays.items()}
    descs["BZeroPointTensor"] = desc(U8, [1, 2])
    arrays["BZeroPointTensor"] = arrays["BZeroPointTensor"].reshape(1, 2)
    got = run(device, arrays, np.uint8, [1, 2], descs)
    assert got.ravel().tolist() == [155, 0]  # round(2601000000 / 2^24) = 155


# -- feature levels ---------------------------------------------------------------------------------
def q(rank=4, a_t=U8, b_t=U8, o_t=U8, m=3, k=4, n=5, a_scale=None, b_scale=None, o_scale=None,
      zp_a=None, zp_b=None, zp_o=None, b_k=None, b_batch=None, out_sizes=None, s_t=F32):
    batch = [2] * (rank - 2)
    one = [1] * rank
    return qop({
        "ATensor": desc(a_t, [*batch, m, k]),
        "AScaleTensor": desc(s_t, a_scale or one),
        "AZeroPointTensor": desc(zp_a[0], zp_a[1]) if zp_a else None,
        "BTensor": desc(b_t, [*(b_batch or batch), b_k or k, n]),
        "BScaleTensor": desc(F32, b_scale or one),
        "BZeroPointTensor": desc(zp_b[0], zp_b[1]) if zp_b else None,
        "OutputScaleTensor": desc(F32, o_scale or one),
        "OutputZeroPointTensor": desc(zp_o[0], zp_o[1]) if zp_o else None,
        "OutputTensor": desc(o_t, out_sizes or [*batch, m, n]),
    })


OK = None
MATRIX = [
    ("4-D per-tensor", q(), dict.fromkeys(LEVELS)),
    ("4-D per-row/column", q(a_scale=[1, 1, 3, 1], b_scale=[1, 1, 1, 5], o_scale=[1, 1, 3, 1],
                             zp_a=(U8, [1, 1, 3, 1]), zp_b=(U8, [1, 1, 1, 5])),
     dict.fromkeys(LEVELS)),
    ("2-D", q(2, a_scale=[1, 1], b_scale=[1, 1], o_scale=[1, 1]), {
        "2_1": ("DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY", "ATensor.DimensionCount = 2",
                "DML_FEATURE_LEVEL_4_0 or later allows it"),
        "3_0": ("4_0",), "3_1": ("4_0",), "4_0": OK}),
    ("1-D scales", q(4, a_scale=[1], b_scale=[5], o_scale=[1]), {
        "2_1": ("AScaleTensor.DimensionCount = 1", "DML_FEATURE_LEVEL_4_0"), "3_0": ("4_0",),
        "3_1": ("4_0",), "4_0": OK}),
    ("per-row B scale", q(b_scale=[1, 1, 3, 1]), dict.fromkeys(LEVELS, (
        "BScaleTensor.Sizes = {1, 1, 3, 1} is invalid", "per-column {.., 1, N} with N = 5"))),
    ("per-column A scale", q(a_scale=[1, 1, 1, 5]), dict.fromkeys(LEVELS, (
        "AScaleTensor.Sizes = {1, 1, 1, 5} is invalid", "per-row {.., M, 1} with M = 3"))),
    ("zero point type", q(zp_a=(I8, [1, 1, 1, 1])), dict.fromkeys(LEVELS, (
        "AZeroPointTensor.DataType = DML_TENSOR_DATA_TYPE_INT8 is invalid",
        "ATensor and AZeroPointTensor must have the same DataType"))),
    ("scale ranks differ", q(a_scale=[1, 1, 1, 1], b_scale=[1, 1, 1]), {
        "2_1": ("BScaleTensor.DimensionCount = 3 is invalid",), "3_0": ("BScaleTensor",),
        "3_1": ("BScaleTensor",), "4_0": ("BScaleTensor.DimensionCount = 3 is invalid",
                                          "same DimensionCount")}),
    ("K mismatch", q(b_k=6), dict.fromkeys(LEVELS, ("BTensor.Sizes", "must equal A's K = 4"))),
    ("batch mismatch", q(b_batch=[2, 3]), dict.fromkeys(LEVELS, (
        "BTensor.Sizes = {2, 3, 4, 5} is invalid", "batch sizes must equal ATensor's {2, 2}"))),
    ("output sizes", q(out_sizes=[2, 2, 3, 4]), dict.fromkeys(LEVELS, (
        "OutputTensor.Sizes = {2, 2, 3, 4} is invalid", "{2, 2, 3, 5}"))),
    ("float16 scale", q(s_t=DML_TENSOR_DATA_TYPE_FLOAT16), dict.fromkeys(LEVELS, (
        "AScaleTensor.DataType = DML_TENSOR_DATA_TYPE_FLOAT16 is invalid",))),
    ("int32 A", q(a_t=DML_TENSOR_DATA_TYPE_INT32), dict.fromkeys(LEVELS, (
        "ATensor.DataType = DML_TENSOR_DATA_TYPE_INT32 is invalid",))),
    ("all int8", q(a_t=I8, b_t=I8, o_t=I8, zp_o=(I8, [1, 1, 3, 1]), o_scale=[1, 1, 3, 1]),
     dict.fromkeys(LEVELS)),
]


@pytest.mark.parametrize("name,op,expect", MATRIX, ids=[x[0] for x in MATRIX])
@pytest.mark.parametrize("level", LEVELS)
def test_feature_level_matrix(name, op, expect, level):
    check_level_case(op, level, expect[level], "DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY")


def test_levels():
    assert min_feature_level(q()) == DML_FEATURE_LEVEL_2_1
    assert min_feature_level(q(3, a_scale=[1, 1, 1], b_scale=[1, 1, 1], o_scale=[1, 1, 1])) == \
        DML_FEATURE_LEVEL_4_0
    with pytest.raises(DMLError, match="introduced in DML_FEATURE_LEVEL_2_1"):
        DMLCreateDevice1(feature_level="2_0").CreateOperator(q())


@pytest.mark.parametrize("a_t,b_t", [(I8, U8), (U8, I8), (I8, I8), (U8, U8)],
                         ids=["I8xU8", "U8xI8", "I8xI8", "U8xU8"])
def test_portable_and_vnni_paths_agree(device, monkeypatch, a_t, b_t):
    """Both GEMM paths give the reference's bytes (the VNNI one runs its micro-kernel as plain
    vector code where the CPU has no avx512vnni)."""
    import emulator.ops.qlmm as plan

    rng = np.random.default_rng(int(a_t) + 10 * int(b_t))
    m, k, n = 13, 70, 67
    arrays = base_arrays(m, k, n, NP[a_t], NP[b_t])
    for name, t, shape in (("ATensor", a_t, (1, 1, m, k)), ("BTensor", b_t, (1, 1, k, n))):
        info = np.iinfo(NP[t])
        arrays[name] = rng.integers(info.min, info.max + 1, shape).astype(NP[t])
    arrays["AZeroPointTensor"] = rng.integers(0, 100, (1, 1, m, 1)).astype(NP[a_t])
    arrays["BZeroPointTensor"] = rng.integers(0, 100, (1, 1, 1, n)).astype(NP[b_t])
    arrays["OutputScaleTensor"] = np.full((1, 1, 1, 1), 300, np.float32)
    for use_vnni in (True, False):
        monkeypatch.setattr(plan, "USE_VNNI", use_vnni)
        run(device, arrays, np.int8, [1, 1, m, n])


@pytest.mark.parametrize("a_t,b_t", [(I8, U8), (U8, I8), (I8, I8), (U8, U8)],
                         ids=["I8xU8", "U8xI8", "I8xI8", "U8xU8"])
def test_amx_tiles_give_the_reference_bytes(device, monkeypatch, a_t, b_t):
    """K a multiple of 64 on the VNNI path's AMX blocks (kernels/amx.py: the tile instructions
    where the CPU has them, the same sums in plain code elsewhere): batches, M not a multiple of 16 nor of the 48-row block, N past a 64-column tile, strided A rows,
    row zero points and per-column scales; the path taken is checked, and K = 96 keeps VNNI."""
    import emulator.ops.qlmm as plan

    monkeypatch.setattr(plan, "USE_VNNI", True)
    monkeypatch.setattr(plan, "USE_AMX", True)
    rng = np.random.default_rng(int(a_t) + 10 * int(b_t) + 3)
    for b_, m, k, n, a_pad in ((3, 53, 128, 70, 0), (2, 7, 64, 130, 5), (1, 5, 96, 20, 0)):
        arrays = base_arrays(m, k, n, NP[a_t], NP[b_t], 3)
        a_info, b_info = np.iinfo(NP[a_t]), np.iinfo(NP[b_t])
        a_full = rng.integers(a_info.min, a_info.max + 1, (b_, m, k + a_pad)).astype(NP[a_t])
        arrays["ATensor"] = np.ascontiguousarray(a_full[..., :k]) if not a_pad else a_full
        arrays["BTensor"] = rng.integers(b_info.min, b_info.max + 1, (b_, k, n)).astype(NP[b_t])
        arrays["AZeroPointTensor"] = rng.integers(0, 90, (1, m, 1)).astype(NP[a_t])
        arrays["BScaleTensor"] = (rng.random((1, 1, n)) * 0.01 + 0.001).astype(np.float32)
        arrays["OutputScaleTensor"] = np.full((1, 1, 1), 2.0, np.float32)
        descs = {f: (tensor_desc(v) if v is not None else None) for f, v in arrays.items()}
        descs["OutputTensor"] = desc(U8, [b_, m, n])
        bound = dict(arrays)
        if a_pad:  # A's rows k + a_pad bytes apart: packed element by element
            descs["ATensor"] = desc(a_t, [b_, m, k], [m * (k + a_pad), k + a_pad, 1])
            bound["ATensor"] = a_full
            arrays["ATensor"] = np.ascontiguousarray(a_full[..., :k])
        op = qop(descs)
        (got,) = device.execute(op, [bound.get(f) for f in FIELDS])
        spec, v = validate_operator(op, device.feature_level)
        want = spec.module.reference(v.values, {f: x for f, x in arrays.items() if x is not None})
        np.testing.assert_array_equal(got.reshape(b_, m, n), want["OutputTensor"])
        how = plan.plan(v.values).strategy(2)
        assert how[0] == "vnni" and how[-1] == (k % 64 == 0)


@pytest.mark.parametrize("a_t", [I8, U8], ids=["I8", "U8"])
def test_word_packed_rows_of_a(device, a_t):
    """K a multiple of 4 with contiguous rows: A is packed a 4-byte group at a time."""
    rng = np.random.default_rng(int(a_t))
    b_, m, k, n = 3, 10, 64, 70
    arrays = base_arrays(m, k, n, NP[a_t], np.int8, 3)
    info = np.iinfo(NP[a_t])
    arrays["ATensor"] = rng.integers(info.min, info.max + 1, (b_, m, k)).astype(NP[a_t])
    arrays["BTensor"] = rng.integers(-128, 128, (b_, k, n)).astype(np.int8)
    arrays["AZeroPointTensor"] = rng.integers(0, 50, (1, m, 1)).astype(NP[a_t])
    arrays["OutputScaleTensor"] = np.full((1, 1, 1), 700, np.float32)
    run(device, arrays, np.int8, [b_, m, n])


@pytest.mark.parametrize("b_t", [I8, U8], ids=["I8", "U8"])
def test_contiguous_b_rows_with_padding(device, b_t):
    """Unit-stride B rows (packed by reading whole rows), rows padded past N, a batch offset,
    K not a multiple of 4 and a last column tile only partly filled."""
    rng = np.random.default_rng(20 + int(b_t))
    b_, m, k, n, pad = 2, 9, 23, 83, 5
    info = np.iinfo(NP[b_t])
    b_raw = rng.integers(info.min, info.max + 1, b_ * k * (n + pad) + 7).astype(NP[b_t])
    arrays = base_arrays(m, k, n, np.uint8, NP[b_t], 3)
    arrays["ATensor"] = rng.integers(0, 256, (b_, m, k)).astype(np.uint8)
    arrays["BTensor"] = b_raw
    arrays["BZeroPointTensor"] = rng.integers(0, 60, (1, 1, n)).astype(NP[b_t])
    arrays["OutputScaleTensor"] = np.full((1, 1, 1), 1500, np.float32)  # few saturate
    descs = {f: (tensor_desc(v) if v is not None else None) for f, v in arrays.items()}
    strides = [k * (n + pad) + 7, n + pad, 1]
    descs["BTensor"] = desc(b_t, [b_, k, n], strides)
    logical_b = np.lib.stride_tricks.as_strided(b_raw, (b_, k, n),
                                                [s * b_raw.itemsize for s in strides])
    descs["OutputTensor"] = desc(I8, [b_, m, n])
    raw = np.full(b_ * m * n + 2, 0x5A, np.int8)  # TotalTensorSizeInBytes rounds up to 4
    got = device.execute(qop(descs), [arrays.get(f) for f in FIELDS], [raw.view(np.uint8)])[0]
    spec, v = validate_operator(qop(descs), device.feature_level)
    ref = dict(arrays, BTensor=np.ascontiguousarray(logical_b))
    want = spec.module.reference(v.values, {f: x for f, x in ref.items() if x is not None})
    np.testing.assert_array_equal(got, want["OutputTensor"])
    assert len(np.unique(want["OutputTensor"])) > 40  # the data is not mostly saturated


# -- scratch memory (issue 11, item 4) ---------------------------------------------------------------
def broadcast_case(batch=(64, 1024), k=256):
    """A varies along the first batch dimension only (16 KiB of data), B is one broadcast column
    (256 bytes): 65,536 logical batches, whose packed copies took 1 GiB (VNNI) or 2 GiB
    (portable) of scratch before; the output is 64 KiB."""
    rng = np.random.default_rng(11)
    a_real = rng.integers(0, 256, (batch[0], k)).astype(np.uint8)
    b_real = rng.integers(-128, 128, k).astype(np.int8)
    arrays = base_arrays(1, k, 1, np.uint8, np.int8)
    arrays["ATensor"], arrays["BTensor"] = a_real, b_real
    arrays["AZeroPointTensor"] = np.full((1, 1, 1, 1), 131, np.uint8)
    arrays["BZeroPointTensor"] = np.full((1, 1, 1, 1), -7, np.int8)
    arrays["OutputScaleTensor"] = np.full((1, 1, 1, 1), 4000, np.float32)
    descs = {f: (tensor_desc(x) if x is not None else None) for f, x in arrays.items()}
    descs["ATensor"] = desc(U8, [*batch, 1, k], [k, 0, 0, 1])
    descs["BTensor"] = desc(I8, [*batch, k, 1], [0, 0, 1, 0])
    descs["OutputTensor"] = desc(I8, [*batch, 1, 1])
    op = qop(descs)
    spec, v = validate_operator(op, DML_FEATURE_LEVEL_4_0)
    ref = dict(arrays, ATensor=a_real.reshape(batch[0], 1, 1, k), BTensor=b_real.reshape(1, 1, k, 1))
    want = spec.module.reference(v.values, {f: x for f, x in ref.items() if x is not None})
    return op, arrays, np.broadcast_to(want["OutputTensor"], (*batch, 1, 1))


def test_broadcast_inputs_take_scratch_by_their_data_not_their_logical_size(device):
    """The exact result, with under 16 MiB of NumPy scratch where 1 or 2 GiB were asked for."""
    import tracemalloc

    op, arrays, want = broadcast_case()
    out = np.full(want.size, 0x5A, np.uint8)
    device.execute(op, [arrays.get(f) for f in FIELDS], [out])  # kernels loaded, untraced
    out[:] = 0x5A
    tracemalloc.start()
    try:
        device.execute(op, [arrays.get(f) for f in FIELDS], [out])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out.view(np.int8).reshape(want.shape), want)
    assert len(np.unique(want)) > 10
    assert peak < 16 << 20, peak  # NumPy scratch of the whole dispatch (the tasks' own is fixed)


def test_no_memory_for_scratch_is_e_outofmemory_before_any_write(monkeypatch):
    """Scratch that cannot be had (here 4 EiB) is E_OUTOFMEMORY, and nothing was written. As a
    failure inside the void ExecuteCommandLists, it also removes the device."""
    device = DMLCreateDevice1(feature_level="4_0")
    import emulator.ops.qlmm as plan

    scratch = plan.scratch
    monkeypatch.setattr(plan, "USE_VNNI", True)  # the path whose packed B grows with the data
    monkeypatch.setattr(plan, "scratch", lambda shape, dtype: scratch((1 << 62,), dtype))
    op, arrays, _ = broadcast_case((2, 3), 8)
    out = np.full(8, 0x5A, np.uint8)
    with pytest.raises(DMLError) as e:
        device.execute(op, [arrays.get(f) for f in FIELDS], [out])
    assert e.value.name == "E_OUTOFMEMORY"
    assert "QUANTIZED_LINEAR_MATRIX_MULTIPLY: no memory for" in str(e.value)
    assert (out == 0x5A).all()
    assert device.GetDeviceRemovedReason() == e.value.hresult


@pytest.mark.parametrize("use_vnni", [False, True], ids=["portable", "vnni"])
@pytest.mark.parametrize("o_scale", [0.0, 1e-30, 3.0], ids=["zero", "tiny", "plain"])
def test_requantization_lanes_and_tails_on_both_paths(device, monkeypatch, use_vnni, o_scale):
    """37 columns (lanes of 8 and a tail) of results that are NaN and ±inf (OutputScale 0), finite
    but far beyond int32 (1e-30), and ordinary; per-tensor everything (the VNNI path's common
    loop), on both paths."""
    import emulator.ops.qlmm as plan

    monkeypatch.setattr(plan, "USE_VNNI", use_vnni)
    rng = np.random.default_rng(37)
    arrays = base_arrays(3, 20, 37, np.int8, np.uint8)
    arrays["ATensor"] = rng.integers(-128, 128, (1, 1, 3, 20)).astype(np.int8)
    arrays["BTensor"] = rng.integers(0, 256, (1, 1, 20, 37)).astype(np.uint8)
    arrays["BTensor"][..., :, 5] = 131  # column 5 is all zero point: acc = 0 (NaN at scale 0)
    arrays["BZeroPointTensor"] = np.full((1, 1, 1, 1), 131, np.uint8)
    arrays["OutputScaleTensor"] = np.full((1, 1, 1, 1), o_scale, np.float32)
    arrays["OutputZeroPointTensor"] = np.full((1, 1, 1, 1), 7, np.int8)
    got = run(device, arrays, np.int8, [1, 1, 3, 37])
    if o_scale == 0.0:
        assert (got[..., 5] == 7).all() and set(np.unique(got)) == {-128, 7, 127}
    if o_scale == 1e-30:
        assert set(np.unique(got[..., np.arange(37) != 5])) <= {-128, 127}


def test_a_command_list_reserves_every_commands_scratch_before_any_write(monkeypatch):
    """A SLICE1 recorded before a QLMM whose scratch cannot be had: E_OUTOFMEMORY, and the
    SLICE1's output is untouched (the whole list's scratch is reserved before anything runs)."""
    import emulator.ops.qlmm as plan
    from descriptors import (
        DML_BINDING_DESC,
        DML_BINDING_TABLE_DESC,
        DML_BINDING_TYPE_BUFFER,
        DML_BUFFER_BINDING,
        DML_SLICE1_OPERATOR_DESC,
        DML_TENSOR_DATA_TYPE_FLOAT32,
    )
    from emulator import Buffer, CommandList, CommandQueue

    scratch = plan.scratch
    monkeypatch.setattr(plan, "USE_VNNI", True)
    monkeypatch.setattr(plan, "scratch", lambda shape, dtype: scratch((1 << 62,), dtype))
    dev = DMLCreateDevice1(feature_level="4_0")
    x = np.arange(8, dtype=np.float32)
    copy = DML_OPERATOR_DESC(Desc=DML_SLICE1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((8,), DML_TENSOR_DATA_TYPE_FLOAT32),
        InputWindowOffsets=[0], InputWindowSizes=[8], InputWindowStrides=[1]))
    qlmm, arrays, _ = broadcast_case((2, 3), 8)
    ops = [dev.CompileOperator(dev.CreateOperator(d)) for d in (copy, qlmm)]
    rec, lst = dev.CreateCommandRecorder(), CommandList()
    init = dev.CreateOperatorInitializer(ops)

    def table(d, inputs=None, outputs=None):
        t = dev.CreateBindingTable(DML_BINDING_TABLE_DESC(
            Dispatchable=d, SizeInDescriptors=d.GetBindingProperties().RequiredDescriptorCount))
        bind = [None if a is None else DML_BINDING_DESC(
            Type=DML_BINDING_TYPE_BUFFER, Desc=DML_BUFFER_BINDING(Buffer=Buffer.from_array(a)))
            for a in inputs or []]
        if inputs is not None:
            t.BindInputs(bind)
        if outputs is not None:
            t.BindOutputs([DML_BINDING_DESC(Type=DML_BINDING_TYPE_BUFFER,
                                            Desc=DML_BUFFER_BINDING(Buffer=o)) for o in outputs])
        return t

    rec.RecordDispatch(lst, init, table(init))
    y, out = Buffer(32), Buffer(8)
    rec.RecordDispatch(lst, ops[0], table(ops[0], [x], [y]))
    rec.RecordDispatch(lst, ops[1], table(ops[1], [arrays.get(f) for f in FIELDS], [out]))
    lst.Close()
    with pytest.raises(DMLError) as e:
        CommandQueue().ExecuteCommandLists([lst])
    assert e.value.name == "E_OUTOFMEMORY"
    assert not y.numpy().any() and not out.numpy().any()
