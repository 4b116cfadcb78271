"""The element-wise family, driven by its table: every row, every data type its kernel handles,
against the row's NumPy reference (bit-exact where the row's bound is 0). Layouts: ranks 1 to 8,
packed, padded and broadcast (zero) input strides, padded output strides whose gaps must stay
untouched; values include NaN, ±inf, ±0, subnormals and the integer extremes. ScaleBias and a
fused activation are run wherever the row has them. The generated kernel modules must match the
table."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1, DMLError
from emulator.elementwise import ROWS, compute, generate
from emulator.elementwise.plan import FLOAT_TYPES, INT_TYPES
from emulator.kernels import strided
from emulator.registry import REGISTRY, validate_operator

from .helpers import (
    SENTINEL,
    addressed_mask,
    bits,
    desc,
    layout,
    logical,
    np_dtype,
    strided_buffer,
)

T = DML_TENSOR_DATA_TYPE


def test_generated_kernel_modules_match_the_table():
    assert generate.write(check=True) == [], "run: python -m emulator.elementwise.generate"


def type_combos(row):
    """Every combination of data types the operator's last band allows and the kernel handles:
    tensors that must share a DataType (the support table's "same" constraints) take one type
    together; the others vary independently."""
    spec = REGISTRY[row.operator]
    band = spec.support[-1]
    allowed = {name: set(types) & set(spec.kernel_types)
               for name, (_, types) in band.tensors.items()}
    groups: list[list[str]] = []
    for name in allowed:
        tied = {name}
        for same in spec.support_entry.same:
            if "DataType" in same.what and name in same.tensors:
                tied |= set(same.tensors)
        group = next((g for g in groups if tied & set(g)), None)
        if group is None:
            groups.append(sorted(tied & set(allowed)))
        else:
            group.extend(sorted(tied & set(allowed) - set(group)))
    choices = [sorted(set.intersection(*(allowed[n] for n in g))) for g in groups]
    picks = list(itertools.product(*choices))
    if row.operator != DML_OPERATOR_TYPE.DML_OPERATOR_CAST and len(picks) > COVERING_ABOVE:
        picks = covering(choices)
    combos = [{n: t for g, t in zip(groups, combo) for n in g} for combo in picks]
    return [c for c in combos if valid(row, c)]  # rules beyond the tables (QUANTIZE's Scale)


# Above this many combinations of independent types (only POW: its base and exponent types,
# 10 x 10 at 6_4) the combinations are a covering, not the full product: every compiled
# signature costs ~1 s of a cold run, and the exponent's type only says how it is read. CAST
# keeps its full product: there every pair is its own conversion rule.
COVERING_ABOVE = 40


def covering(choices: list[list]) -> list[tuple]:
    """Every type of every group three times, each time with other partners (the other groups'
    lists cycled at three shifts), plus one combination of every float/integer pattern (POW's
    float**float, float**int, int**float, int**int kernels) the cycle missed."""
    n = max(len(c) for c in choices)
    picks = {tuple(c[(i + shift * k) % len(c)] for k, c in enumerate(choices))
             for shift in range(3) for i in range(n)}
    def pattern(combo):
        return tuple(t in FLOAT_TYPES for t in combo)
    seen = {pattern(c) for c in picks}
    for combo in itertools.product(*choices):
        if pattern(combo) not in seen:
            seen.add(pattern(combo))
            picks.add(combo)
    return sorted(picks)


def valid(row, types) -> bool:
    """Whether a desc with these types is valid at 6_4 (CreateOperator would accept it). Judged
    by the registry alone: CreateOperator would also build the plan, compiling its kernel, and
    this runs at collection, in every xdist worker (it compiled every row's kernels twice, ~10
    minutes of CPU on a cold cache)."""
    tensors = {n: desc(t, (1,)) for n, t in types.items()}
    params = params_for(row, np.random.default_rng(0), types[row.output_name])
    try:
        validate_operator(desc_of(row, tensors, params), DML_FEATURE_LEVEL_6_4)
    except DMLError:
        return False
    return True


def combo_id(row, types) -> str:
    names = [types[n].name[21:] for n in (*row.inputs, row.output_name)]
    short = names[-1] if len(set(names)) == 1 else "-".join(names)
    return f"{row.name}-{short}"




def special_values(rng, dtype: np.dtype, n: int) -> np.ndarray:
    """Random values with the edge values of the type mixed in (and small integers: shift counts,
    divisors, integral exponents)."""
    if dtype.kind == "f":
        x = (rng.standard_normal(n) * 4).astype(dtype)
        info = np.finfo(dtype)
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4, -info.tiny,
                             info.max, -info.max, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 3.0, 0.75,
                             -1.5], dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        specials = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1, 2, 3, 7, 8,
                             15, 16, 31, 32, 63, 64, 65], dtype)
        if info.min < 0:
            specials = np.concatenate([specials, np.array([-1, -2, -7], dtype)])
    picks = rng.random(n) < 0.4
    x[picks] = rng.choice(specials, picks.sum())
    return x


def desc_of(row, tensors, params) -> DML_OPERATOR_DESC:
    cls = OPERATOR_DESC_CLASSES[row.operator]
    return DML_OPERATOR_DESC(Desc=cls(**tensors, **params))


def params_for(row, rng, dt) -> dict:
    """Attribute values for the row's desc (random, edge values included)."""
    fields = {f.name: f for f in SCHEMA[row.operator].fields}
    out: dict = {}
    if "Min" in fields and "MinMaxDataType" in fields:  # CLIP1: scalar unions of the output type
        if dt in FLOAT_TYPES:
            lo, hi = sorted(rng.standard_normal(2) * 3)
            out.update(MinMaxDataType=dt, Min=float(lo), Max=float(hi))
        else:  # exact integers of the type, its extremes included
            info = np.iinfo(np_dtype(dt))
            picks = [info.min, info.max, 0, 1, info.max - 1, info.min + 1,
                     *rng.integers(info.min, info.max, 4, endpoint=True, dtype=np_dtype(dt))]
            lo, hi = sorted(int(p) for p in rng.choice(np.array(picks, np_dtype(dt)), 2))
            out.update(MinMaxDataType=dt, Min=lo, Max=hi)
    elif "Min" in fields and "Max" in fields:
        lo, hi = sorted(rng.standard_normal(2) * 3)
        out.update(Min=float(lo), Max=float(hi))
    elif "Min" in fields:  # THRESHOLD
        out["Min"] = float(rng.choice([-1.5, 0.0, 2.25, np.nan, -np.inf]))
    if "Exponent" in fields:
        out["Exponent"] = float(rng.choice([2.0, 3.0, 0.5, -1.0, 0.0, -2.5, 1.0 / 3]))
    if "RoundingMode" in fields:
        out["RoundingMode"] = DML_ROUNDING_MODE(int(rng.integers(0, 3)))
    if "InfinityMode" in fields:
        out["InfinityMode"] = DML_IS_INFINITY_MODE(int(rng.integers(0, 3)))
    for name in ("Alpha", "Beta", "Gamma", "Steepness", "Bias", "Threshold",
                 "SigmoidInputScale"):  # the activations' attributes
        if name in fields and name not in out:
            out[name] = float(rng.choice([0.25, 1.0, 1.5, 3.0]))
    return out


def run_case(device, rng, row, types, scale_bias=None, fused=None):
    rank = int(rng.integers(1, 9))
    sizes = [int(rng.integers(1, {1: 300, 2: 20, 3: 8}.get(rank, 3) + 1)) for _ in range(rank)]
    tensors, raws, arrays = {}, [], []
    for name in row.inputs:
        dt = types[name]
        dtype = np_dtype(dt)
        strides = layout(rng, sizes, broadcast_ok=True)
        raw = strided_buffer(rng, dt, sizes, strides, fill=0)
        # Every element of the buffer (a broadcast tensor's distinct elements, each once).
        typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
        typed[:] = special_values(rng, dtype, typed.size)
        tensors[name] = desc(dt, sizes, strides)
        raws.append(raw)
        arrays.append(np.array(logical(raw, dtype, sizes, strides)))
    for name in row.scalars:  # 1-element tensors: scales (positive), zero points (optional)
        dt = types[name]
        dtype = np_dtype(dt)
        if dtype.kind != "f" and rng.random() < 0.25:
            tensors[name] = None
            arrays.append(None)
            continue
        value = rng.uniform(0.01, 3.0) if dtype.kind == "f" else rng.integers(
            np.iinfo(dtype).min, np.iinfo(dtype).max, endpoint=True)
        scalar = np.full([1] * rank, value, dtype)
        tensors[name] = tensor_desc(scalar)
        raws.append(scalar.ravel().view(np.uint8))
        arrays.append(scalar)
    # The operator's inputs in its bind order (None for an absent optional one).
    given = dict(zip([n for n in (*row.inputs, *row.scalars) if tensors.get(n) is not None], raws))
    raws = [given.get(f.name) for f in SCHEMA[row.operator].fields if f.kind == "input"]
    out_type = types[row.output_name]
    dtype = np_dtype(out_type)
    out_strides = layout(rng, sizes, broadcast_ok=False)
    raw_out = strided_buffer(rng, out_type, sizes, out_strides, fill=SENTINEL)
    tensors[row.output_name] = desc(out_type, sizes, out_strides)
    params = params_for(row, rng, out_type)
    if scale_bias is not None:
        params["ScaleBias"] = scale_bias
    if fused is not None:
        params["FusedActivation"] = fused
    op = desc_of(row, tensors, params)
    device.execute(op, raws, [raw_out])
    v = device.CreateOperator(op).validated.values
    want = compute(row, v, arrays)
    got = logical(raw_out, dtype, sizes, out_strides)
    same = bits(got) == bits(want)
    if dtype.kind == "f":
        same |= np.isnan(got) & np.isnan(want)  # any NaN is the formula's NaN
        if row.ulp:
            same |= ulps(got, want) <= row.ulp
    assert same.all(), (row.name, {k: t.name for k, t in types.items()}, params, sizes,
                        [a[~same][:5] for a in arrays], got[~same][:5], want[~same][:5])
    untouched = ~addressed_mask(raw_out.size, dtype.itemsize, sizes, out_strides)
    assert (raw_out[untouched] == SENTINEL).all(), "a gap of the output was written"


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The distance between two float arrays in units in the last place of their type (the
    number of representable values between them) for values of one sign; values of opposite
    signs (-0 and +0 included) and NaN count as far: stricter than test_activations' helper,
    where -0 equals +0, so the sign of a zero result is checked here."""
    def ordered(a):
        i = np.ascontiguousarray(a).view(f"i{a.dtype.itemsize}").astype(np.int64)
        return np.where(i < 0, np.iinfo(i.dtype).min - i, i)
    d = np.abs(ordered(got) - ordered(want))
    return np.where(np.isnan(got) | np.isnan(want), np.iinfo(np.int64).max, d)


CASES = [(row, types) for row in ROWS for types in type_combos(row)]


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


@pytest.mark.parametrize("row,types", CASES, ids=[combo_id(r, t) for r, t in CASES])
def test_kernel_matches_the_reference(device, row, types):
    rng = np.random.default_rng(zlib.crc32(combo_id(row, types).encode()))
    for _ in range(4):
        run_case(device, rng, row, types)


def floats(cases):
    return [(r, t) for r, t in cases if t[r.output_name] in FLOAT_TYPES]


SB_CASES = [(r, t) for r, t in CASES if r.scale_bias]


@pytest.mark.parametrize("row,types", SB_CASES, ids=[combo_id(r, t) for r, t in SB_CASES])
def test_scale_bias_applies_to_the_input_first(device, row, types):
    """Float tensors: one rounding of f(x·Scale + Bias); integer tensors: that value converted as
    CAST converts."""
    rng = np.random.default_rng(zlib.crc32(combo_id(row, types).encode()))
    for sb in (DML_SCALE_BIAS(2.0, 10.0), DML_SCALE_BIAS(-0.5, 0.25), DML_SCALE_BIAS(0.0, -0.0)):
        run_case(device, rng, row, types, scale_bias=sb)


FUSED_CASES = floats((r, t) for r, t in CASES if r.fused)


@pytest.mark.parametrize("row,types", FUSED_CASES,
                         ids=[combo_id(r, t) for r, t in FUSED_CASES])
@pytest.mark.parametrize("act", [DML_ACTIVATION_RELU_OPERATOR_DESC(),
                                 DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5),
                                 DML_ACTIVATION_LINEAR_OPERATOR_DESC(Alpha=2.0, Beta=-1.0)],
                         ids=["RELU", "ELU", "LINEAR"])
def test_fused_activation_applies_to_the_result(device, row, types, act):
    rng = np.random.default_rng(zlib.crc32(combo_id(row, types).encode()))
    run_case(device, rng, row, types, fused=act)


def test_hand_computed_examples(device):
    a = np.array([1, 2, 3], np.float32)
    b = np.array([5, 8, -5], np.float32)
    t = tensor_desc(a)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD1_OPERATOR_DESC(
        t, t, t, DML_ACTIVATION_ELU_OPERATOR_DESC(Alpha=0.5))), [a, b])
    assert y.tolist() == [6, 10, np.float32(0.5 * np.expm1(-2.0))]
    i = np.array([2**31 - 1, -2**31, 7], np.int32)
    ti = tensor_desc(i)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(ti, ti, ti)),
                         [i, np.array([1, -1, 8], np.int32)])
    assert y.tolist() == [-2**31, 2**31 - 1, 15]  # wraps, as C's two's-complement arithmetic
    x = np.array([np.nan, -3, 0, 3], np.float32)
    tx = tensor_desc(x)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(
        tx, tx, None, -1.0, 1.0)), [x])
    assert y.tolist() == [-1, -1, 0, 1]  # NaN: max(Min, NaN) is Min (Direct3D's max)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_MAX_OPERATOR_DESC(tx, tx, tx)),
                         [x, np.array([1, np.nan, -0.0, 5], np.float32)])
    assert y[0] == 1 and y[1] == -3 and y[3] == 5


def test_broadcast_row_and_column(device):
    """[64, 300] + [1, 300] and + [64, 1], through zero strides (the kernel's broadcast loops)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    for shape, strides in (((1, 300), (0, 1)), ((64, 1), (1, 0))):
        b = rng.standard_normal(shape).astype(np.float32)
        op = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
            tensor_desc(a), desc(T.DML_TENSOR_DATA_TYPE_FLOAT32, (64, 300), strides),
            tensor_desc(a)))
        [y] = device.execute(op, [a, b.ravel().view(np.uint8)])
        assert np.array_equal(y, a + b)


@pytest.mark.parametrize("rank,data_type", [
    (2, T.DML_TENSOR_DATA_TYPE_FLOAT16), (3, T.DML_TENSOR_DATA_TYPE_UINT8),
    (4, T.DML_TENSOR_DATA_TYPE_INT64), (6, T.DML_TENSOR_DATA_TYPE_FLOAT32),
    (3, T.DML_TENSOR_DATA_TYPE_FLOAT16)])
def test_transposed_and_broadcast_inputs(device, rank, data_type):
    """ADD of a transposed input (permuted strides: contiguous along a dimension that is not the
    output's last; the random layouts never permute) and an input broadcast along the others,
    into a padded output, run in tiles (kernels/strided.py) that do not divide the sizes, for
    1-, 2-, 4- and 8-byte elements: exact against NumPy, the gaps untouched."""
    rng = np.random.default_rng(rank)
    sizes = [int(rng.integers(2, 9)) for _ in range(rank)]
    perm = rng.permutation(rank)
    if perm[-1] == rank - 1:  # the input's contiguous axis must not be the output's last
        perm[[0, -1]] = perm[[-1, 0]]
    k = int(np.argmax(perm == rank - 1))
    sizes[k] = 40
    dtype = np_dtype(data_type)
    a = special_values(rng, dtype, int(np.prod(sizes))).reshape([sizes[d] for d in np.argsort(perm)])
    x = a.transpose(perm)  # the input the strides describe: x[c] = a[c permuted]
    x_strides = [s // dtype.itemsize for s in x.strides]
    assert x_strides[k] == 1
    b = special_values(rng, dtype, sizes[k])
    b_strides = [1 if d == k else 0 for d in range(rank)]
    out_strides = layout(rng, sizes, broadcast_ok=False)
    raw = strided_buffer(rng, data_type, sizes, out_strides, fill=SENTINEL)
    op = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ADD_OPERATOR_DESC(
        desc(data_type, sizes, x_strides), desc(data_type, sizes, b_strides),
        desc(data_type, sizes, out_strides)))
    assert device.CompileOperator(device.CreateOperator(op)).operator.plan.block[
        strided.TILE] >= 0
    pad = np.zeros(8, np.uint8)  # (tensor sizes are whole 4-byte words)
    device.execute(op, [np.concatenate([a.ravel().view(np.uint8), pad]),
                        np.concatenate([b.view(np.uint8), pad])], [raw])
    shape = [sizes[k] if d == k else 1 for d in range(rank)]
    with np.errstate(all="ignore"):
        want = (x.astype(np.float32) + b.reshape(shape).astype(np.float32)).astype(dtype) \
            if dtype == np.float16 else x + b.reshape(shape)
    got = logical(raw, dtype, sizes, out_strides)
    same = bits(got) == bits(want)
    if dtype.kind == "f":
        same |= np.isnan(got) & np.isnan(want)
    assert same.all()
    untouched = ~addressed_mask(raw.size, dtype.itemsize, sizes, out_strides)
    assert (raw[untouched] == SENTINEL).all()


def test_scale_bias_on_integers_converts_as_cast(device):
    """x·Scale + Bias in float64, the function, then toward zero and saturated (as CAST)."""
    x = np.array([1, -3, 2**31 - 1, 3], np.int32)
    t = tensor_desc(x)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC(
        t, t, DML_SCALE_BIAS(2.0, 1.0))), [x])
    assert y.tolist() == [3, -5, 2**31 - 1, 7]
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_ABS_OPERATOR_DESC(
        t, t, DML_SCALE_BIAS(-0.5, 0.0))), [x])
    assert y.tolist() == [0, 1, 1073741823, 1]


def test_every_row_is_tested():
    assert {row for row, _ in CASES} == set(ROWS)


def test_every_row_is_registered_with_its_types():
    for row in ROWS:
        if row.loads:
            continue
        types = set(REGISTRY[row.operator].kernel_types)
        assert (row.float_body is not None or row.bitwise) == (set(FLOAT_TYPES) <= types)
        integers = row.int_body is not None or row.int_as_float or row.output == "flag"
        assert integers == (set(INT_TYPES) <= types)


def cast(device, x: np.ndarray, out_dtype) -> np.ndarray:
    out = np.zeros(x.shape, out_dtype)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_CAST_OPERATOR_DESC(
        tensor_desc(x), tensor_desc(out))), [x])
    return y


def test_cast_rules(device):
    """Floats to integers: toward zero, saturated, NaN 0; integers to integers: wrapped; to
    FLOAT16: rounded once, past its range inf (docs/decisions.md)."""
    f = np.array([2.9, -2.9, np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, -128.5, -0.5],
                 np.float32)
    assert cast(device, f, np.int8).tolist() == [2, -2, 0, 127, -128, 127, -128, 127, -128, 0]
    assert cast(device, f, np.uint8).tolist() == [2, 0, 0, 255, 0, 255, 0, 127, 0, 0]
    big = np.array([2.0**63, -2.0**63, 2.0**64, 9.2e18], np.float64)
    assert cast(device, big, np.int64).tolist() == [2**63 - 1, -2**63, 2**63 - 1,
                                                    9200000000000000000]
    assert cast(device, big, np.uint64).tolist() == [2**63, 0, 2**64 - 1, 9200000000000000000]
    i = np.array([300, -1, 2**31 - 1, -2**31], np.int32)
    assert cast(device, i, np.uint8).tolist() == [44, 255, 255, 0]
    assert cast(device, i, np.int16).tolist() == [300, -1, -1, 0]
    assert cast(device, np.array([65519, 65520, 2049], np.int32), np.float16).tolist() == \
        [65504, np.inf, 2048]  # 2049 is a tie: to even
    d = np.array([1 + 2.0**-11 + 2.0**-40], np.float64)  # just above a FLOAT16 tie: rounds up
    assert cast(device, d, np.float16).tolist() == [1 + 2.0**-10]


def test_quantize_linear_per_axis_and_without_zero_point(device):
    """Per-channel scales and zero points through zero strides; halves round to even; the result
    saturates; an absent zero point is 0; DEQUANTIZE inverts it."""
    x = np.array([[0.5, 1.5, 2.5, -0.5], [300.0, -300.0, np.nan, 7.0]], np.float32)
    scale = np.array([1.0, 2.0], np.float32)  # one per row: strides (1, 0)
    zp = np.array([0, 10], np.uint8)
    t32, t8 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_UINT8
    per_row = (1, 0)
    q = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC(
        tensor_desc(x), desc(t32, (2, 4), per_row), desc(t8, (2, 4), per_row),
        desc(t8, (2, 4))))
    [y] = device.execute(q, [x, scale, zp])
    assert y.reshape(2, 4).tolist() == [[0, 2, 2, 0], [160, 0, 0, 14]]
    no_zp = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_QUANTIZE_LINEAR_OPERATOR_DESC(
        tensor_desc(x), desc(t32, (2, 4), per_row), None,
        desc(T.DML_TENSOR_DATA_TYPE_INT8, (2, 4))))
    [y] = device.execute(no_zp, [x, scale])
    assert y.view(np.int8).reshape(2, 4).tolist() == [[0, 2, 2, 0], [127, -128, 0, 4]]
    d = DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_DEQUANTIZE_LINEAR_OPERATOR_DESC(
        desc(t8, (2, 4)), desc(t32, (2, 4), per_row), desc(t8, (2, 4), per_row),
        desc(t32, (2, 4))))
    [back] = device.execute(d, [np.array([0, 2, 2, 0, 160, 0, 0, 14], np.uint8), scale, zp])
    assert back.reshape(2, 4).tolist() == [[0, 2, 2, 0], [300, -20, -20, 8]]


UNARY_FLOAT = [r for r in ROWS if r.arity == 1 and r.float_body is not None and r.output != "cast"
               and T.DML_TENSOR_DATA_TYPE_FLOAT16 in REGISTRY[r.operator].kernel_types]


@pytest.mark.parametrize("row", UNARY_FLOAT, ids=lambda r: r.name)
def test_every_float16_input(device, row):
    """Every one of the 65,536 FLOAT16 inputs, packed, against the reference within the row's
    bound (0: bit-exact; NaN for NaN)."""
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    types = {"InputTensor": T.DML_TENSOR_DATA_TYPE_FLOAT16}
    out_type = next(t[row.output_name] for r, t in CASES if r is row and t == {
        **types, row.output_name: t[row.output_name]})
    dtype = np_dtype(out_type)
    params = params_for(row, np.random.default_rng(1), out_type)
    op = desc_of(row, {"InputTensor": tensor_desc(x),
                       row.output_name: desc(out_type, x.shape)}, params)
    [y] = device.execute(op, [x], [np.zeros(x.shape, dtype)])
    want = compute(row, device.CreateOperator(op).validated.values, [x])
    same = bits(y) == bits(want)
    if dtype.kind == "f":
        same |= (np.isnan(y) & np.isnan(want)) | (ulps(y, want) <= row.ulp)
    assert same.all(), (row.name, params, x[~same][:5], y[~same][:5], want[~same][:5])


FAST = [r for r in ROWS if r.fast32 is not None]
# Where tanh32's and erf32's pieces meet (and their centres, kernels/vmath.py).
SEAMS = np.array([0.625, 0.75, 1.0, 1.25, 3.92, 10.0, 0.81272113, 0.9931337], np.float32)


@pytest.mark.parametrize("row", FAST, ids=lambda r: r.name)
def test_vectorised_float32_math_within_one_ulp(device, row):
    """The rows whose FLOAT32 path is kernels/vmath.py's polynomials: 300,000 float32 inputs (any
    bit pattern, a dense band, tiny values, the edges and the pieces' seams) within 1 ULP of the
    float64 function rounded once."""
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        rng.uniform(-100, 100, 80_000).astype(np.float32),
        (rng.standard_normal(20_000) * 1e-4).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, -87.33655, -103.97,
                  -103.98, 1e-45, -1e-45, 0.0625, -0.0625, 9.01, -9.01, 1.0, -1.0,
                  0.99999994, 1.0000001, 3.9999998, 4.0, -4.0000005, 44.9, 45.1], np.float32),
        SEAMS, np.nextafter(SEAMS, np.inf), np.nextafter(SEAMS, -np.inf), -SEAMS])
    op = desc_of(row, {"InputTensor": tensor_desc(x), "OutputTensor": tensor_desc(x)}, {})
    [y] = device.execute(op, [x])
    want = compute(row, device.CreateOperator(op).validated.values, [x])
    err = ulps(y, want)
    err[np.isnan(y) & np.isnan(want)] = 0
    assert err.max() <= 1, (row.name, x[err.argmax()], y[err.argmax()], want[err.argmax()])


def test_integer_clip_compares_exactly_and_clamps_to_integers(device):
    """FLOAT Min/Max on integer tensors: exact comparisons (no rounding of a 64-bit element to
    float64), Min standing for ceil(Min) and Max for floor(Max), saturated to the type."""
    x = np.array([-128, -3, 0, 3, 127], np.int8)
    t = tensor_desc(x)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(
        t, t, None, -2.5, 2.5)), [x])
    assert y.tolist() == [-2, -2, 0, 2, 2]
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(
        t, t, None, -1000.0, np.nan)), [x])
    assert y.tolist() == [-128, -3, 0, 3, 127]  # below the type's range; a NaN bound loses
    big = np.array([2**62 + 1, 2**62 - 1, -2**63], np.int64)
    tb = tensor_desc(big)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP_OPERATOR_DESC(
        tb, tb, None, -1e30, float(2**62))), [big])
    assert y.tolist() == [2**62, 2**62 - 1, -2**63]
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_THRESHOLD_OPERATOR_DESC(
        t, t, None, 0.5)), [x])
    assert y.tolist() == [1, 1, 1, 3, 127]


def test_clip1_integer_bounds_are_exact_at_64_bits(device):
    """CLIP1's bounds are integers of the tensor's type: exact beyond 2**53 and above 2**63."""
    x = np.array([0, 2**63 + 4, 2**63 + 6, 2**64 - 1], np.uint64)
    t = tensor_desc(x)
    u64 = T.DML_TENSOR_DATA_TYPE_UINT64
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC(
        t, t, None, u64, 2**63 + 5, 2**64 - 2)), [x])
    assert y.tolist() == [2**63 + 5, 2**63 + 5, 2**63 + 6, 2**64 - 2]
    i = np.array([2**60 + 1, -(2**60) - 1], np.int64)
    ti = tensor_desc(i)
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_CLIP1_OPERATOR_DESC(
        ti, ti, None, T.DML_TENSOR_DATA_TYPE_INT64, -(2**60), 2**60)), [i])
    assert y.tolist() == [2**60, -(2**60)]


def test_pow_integer_and_mixed_types(device):
    """Two integer tensors: exact (wrapping) powers, negative exponents toward zero; an integer
    base with a float exponent: float64 pow converted as CAST; a float base with an integer
    exponent: float64 pow rounded once."""
    def pow_(x, e, out_dtype):
        [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ELEMENT_WISE_POW_OPERATOR_DESC(
            tensor_desc(x), tensor_desc(e), tensor_desc(np.zeros(x.shape, out_dtype)))), [x, e])
        return y.tolist()
    x = np.array([3, -2, 1, -1, -1, 0, 2, 7], np.int32)
    e = np.array([4, 3, -5, -3, -2, -1, 31, 40], np.int32)
    assert pow_(x, e, np.int32) == [81, -8, 1, -1, 1, 0, -2**31, 7**40 % 2**32 - 2**32
                                    if 7**40 % 2**32 >= 2**31 else 7**40 % 2**32]
    assert pow_(np.array([2, 4, -8], np.int8), np.array([0.5, 10.0, 1 / 3], np.float32),
                np.int8) == [1, 127, 0]  # sqrt(2) → 1; 4**10 saturates; (-8)**(1/3) is NaN → 0
    assert pow_(np.array([2.0, -2.0], np.float32), np.array([-1, 3], np.int8),
                np.float32) == [0.5, -8.0]
