"""REDUCE (every function), ARGMIN, ARGMAX, CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT
(``emulator/reduction/table.py``): random descs of every data type, rank and function the last
band allows (random axis sets, padded and zero input strides, padded output strides whose gaps
must stay untouched, edge values) against the references; the kernels' three ways of cutting a
shape (rows, columns, chunks) on shapes chosen to take each; the pages' examples; accuracy on
adversarial sums against an exact sum; results identical at any thread count.

Exactness: integer results, MIN/MAX (bit copies of an element) and every index are bit-exact.
Float arithmetic is float64 in both kernel and reference and differs only in summation order, so
the bound is 2 ULP of the output type plus 2**-40 of the magnitude the error scales with (sum of
|terms| for sums; that over |sum| for LOG_SUM, an absolute error).
"""

from __future__ import annotations

import math
import zlib

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.reduction.table import EXTREMES, ROWS
from emulator.registry import REGISTRY
from emulator.support.reduction import REDUCE_TYPES

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, np_dtype, strided_buffer
from .test_special import dispatch, edge_values

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
RF = DML_REDUCE_FUNCTION
F32, F16, U32 = T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16, \
    T.DML_TENSOR_DATA_TYPE_UINT32
INC, DEC = DML_AXIS_DIRECTION.DML_AXIS_DIRECTION_INCREASING, \
    DML_AXIS_DIRECTION.DML_AXIS_DIRECTION_DECREASING
LAST = DML_FEATURE_LEVEL.DML_FEATURE_LEVEL_6_4


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


def functions_for(dt) -> list:
    """REDUCE's functions whose table at the last level accepts ``dt`` as input."""
    return [fn for fn, table in REDUCE_TYPES.items() if dt in table[-1][1]]


def arg_output_types():
    return REDUCE_TYPES[RF.DML_REDUCE_FUNCTION_ARGMAX][-1][2]


def values(rng, dt, n, fn):
    """Edge values of the type; MULTIPLY and the log functions get tamer magnitudes (a product
    of random extremes leaves float64's range in an order-dependent way)."""
    v = edge_values(dt, n, rng)
    dtype = np_dtype(dt)
    if dtype.kind == "f" and fn in (RF.DML_REDUCE_FUNCTION_MULTIPLY, "product"):
        tame = rng.uniform(0.5, 2.0, n).astype(dtype) * rng.choice([-1, 1], n).astype(dtype)
        keep = rng.random(n) < 0.05  # a few zeros, infinities, NaN stay
        v = np.where(keep & ((v == 0) | ~np.isfinite(v)), v, tame).astype(dtype)
    if dtype.kind == "f" and fn in (RF.DML_REDUCE_FUNCTION_LOG_SUM,):
        v = np.where(rng.random(n) < 0.9, np.abs(rng.standard_normal(n)), v).astype(dtype)
    return v


def make_case(rng, op, dt):
    """(input sizes, output data type, output sizes, attributes, function for values)."""
    rank = int(rng.integers(1, 9))
    sizes = [int(rng.integers(1, 4 if rank > 4 else 7)) for _ in range(rank)]
    if op in (OP.DML_OPERATOR_CUMULATIVE_SUMMATION, OP.DML_OPERATOR_CUMULATIVE_PRODUCT):
        axis = int(rng.integers(0, rank))
        sizes[axis] = int(rng.integers(1, 12))
        key = "HasExclusiveSum" if op == OP.DML_OPERATOR_CUMULATIVE_SUMMATION else \
            "HasExclusiveProduct"
        return sizes, dt, sizes, {"Axis": axis, "AxisDirection": rng.choice([INC, DEC]),
                                  key: bool(rng.random() < 0.5)}, \
            "product" if op == OP.DML_OPERATOR_CUMULATIVE_PRODUCT else None
    k = int(rng.integers(1, rank + 1))
    axes = [int(a) for a in rng.choice(rank, k, replace=False)]
    if rng.random() < 0.2:
        axes.append(axes[0])  # a repeated axis: accepted, a set
    out = [1 if d in axes else n for d, n in enumerate(sizes)]
    if op == OP.DML_OPERATOR_REDUCE:
        fn = RF(rng.choice(functions_for(dt)))
        out_dt = rng.choice(arg_output_types()) if fn in (RF.DML_REDUCE_FUNCTION_ARGMIN,
                                                          RF.DML_REDUCE_FUNCTION_ARGMAX) else dt
        return sizes, T(out_dt), out, {"Function": fn, "Axes": axes}, fn
    return sizes, T(rng.choice(arg_output_types())), out, {
        "Axes": axes, "AxisDirection": rng.choice([INC, DEC])}, None


def tolerance(fn, x, ref, out_dtype):
    """The stated bound of a float result (see the module docstring): ``x`` grouped (..., N),
    ``ref`` the float64 reference with the groups' shape (...) or, for a running total, the
    line's (..., N)."""
    with np.errstate(all="ignore"):
        ulp = np.spacing(np.abs(ref).astype(out_dtype)).astype(np.float64)
        a = np.abs(x.astype(np.float64))
        if fn == RF.DML_REDUCE_FUNCTION_LOG_SUM:
            scale = a.sum(axis=-1) / np.abs(x.astype(np.float64).sum(axis=-1))
        elif fn == RF.DML_REDUCE_FUNCTION_LOG_SUM_EXP:
            scale = np.ones(a.shape[:-1])
        elif fn in (RF.DML_REDUCE_FUNCTION_SUM_SQUARE, RF.DML_REDUCE_FUNCTION_L2):
            scale = (a * a).sum(axis=-1)
        elif fn in (RF.DML_REDUCE_FUNCTION_MULTIPLY, "product"):
            scale = np.abs(np.prod(x.astype(np.float64), axis=-1)) * x.shape[-1]
        else:
            scale = a.sum(axis=-1)
    scale = np.nan_to_num(scale, nan=0, posinf=0)
    if ulp.ndim == x.ndim:  # a running total
        scale = scale[..., None]
    return 2 * np.nan_to_num(ulp, nan=0, posinf=0) + 2.0 ** -40 * scale


def grouped(x, axes):
    kept = [d for d in range(x.ndim) if d not in axes]
    return np.transpose(x, kept + sorted(axes)).reshape(*[x.shape[d] for d in kept], -1)


def run_case(device, rng, row, dt):
    op = row.operator
    sizes, out_dt, out_sizes, attrs, fn = make_case(rng, op, dt)
    in_strides = layout(rng, sizes, True)
    raw = strided_buffer(rng, dt, sizes, in_strides)
    x = logical(raw, np_dtype(dt), sizes, in_strides)
    x[...] = values(rng, dt, int(np.prod(sizes)), fn).reshape(sizes)  # (zero strides: the last)
    x = np.array(x)
    in_place = op in (OP.DML_OPERATOR_CUMULATIVE_SUMMATION, OP.DML_OPERATOR_CUMULATIVE_PRODUCT) \
        and in_strides is None and rng.random() < 0.3
    out_strides = None if in_place else layout(rng, out_sizes, False)
    out_raw = raw if in_place else strided_buffer(rng, out_dt, out_sizes, out_strides,
                                                   fill=SENTINEL)
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](
        InputTensor=desc(dt, sizes, in_strides), OutputTensor=desc(out_dt, out_sizes,
                                                                   out_strides), **attrs))
    dispatch(device, operator, {"InputTensor": raw}, {"OutputTensor": out_raw})
    v = device.CreateOperator(operator).validated.values
    want = np.asarray(REGISTRY[op].module.reference(v, {"InputTensor": x})["OutputTensor"])
    dtype = np_dtype(out_dt)
    got = logical(out_raw, dtype, out_sizes, out_strides)
    assert got.shape == want.shape
    same = bits(got) == bits(want.astype(dtype))
    exact = dtype.kind != "f" or fn in EXTREMES or op in (OP.DML_OPERATOR_ARGMIN,
                                                          OP.DML_OPERATOR_ARGMAX)
    if not exact:
        nan = np.isnan(got) & np.isnan(want)
        if op == OP.DML_OPERATOR_REDUCE:
            axes = sorted(set(attrs["Axes"]))
            tol = tolerance(fn, grouped(x, axes), grouped(want.astype(np.float64), axes)[..., 0],
                            dtype).reshape(got.shape)
        else:  # a running total: bounded by the whole line's
            g = np.moveaxis(x, attrs["Axis"], -1)
            tol = np.moveaxis(tolerance(fn or RF.DML_REDUCE_FUNCTION_SUM, g, np.moveaxis(
                want.astype(np.float64), attrs["Axis"], -1), dtype), -1, attrs["Axis"])
        with np.errstate(all="ignore"):
            close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= tol
        same |= nan | close | (got.astype(np.float64) == want.astype(np.float64))
    assert same.all(), (row.name, dt.name, attrs, sizes, got[~same][:5], want[~same][:5])
    if not in_place:
        untouched = ~addressed_mask(out_raw.size, dtype.itemsize, out_sizes, out_strides)
        assert (out_raw[untouched] == SENTINEL).all(), "a gap of the output was written"


def type_cases():
    out = []
    for row in ROWS:
        band = REGISTRY[row.operator].support[-1]
        types = set(band.tensors["InputTensor"][1]) & set(row.kernel_types)
        out += [(row, t) for t in sorted(types)]
    return out


CASES = type_cases()


def test_every_type_of_the_last_bands_is_covered():
    names = {(r.name, t.name[21:]) for r, t in CASES}
    assert len([n for n in names if n[0] == "reduce"]) == 10
    assert len([n for n in names if n[0] == "argmax"]) == 10
    assert len([n for n in names if n[0] == "cumulative_summation"]) == 6


@pytest.mark.parametrize("row,dt", CASES, ids=[f"{r.name}-{t.name[21:]}" for r, t in CASES])
def test_kernel_matches_the_reference(device, row, dt):
    rng = np.random.default_rng(zlib.crc32(f"{row.name}{dt.name}".encode()))
    for _ in range(40 if row.operator == OP.DML_OPERATOR_REDUCE else 15):
        run_case(device, rng, row, dt)


# --- the three cuts: rows, columns, chunks --------------------------------------------------------

def reduce_op(x, fn, axes, out_dt=None, strides=None):
    dt = data_type_of_numpy(x.dtype)
    out = [1 if d in axes else n for d, n in enumerate(x.shape)]
    return DML_OPERATOR_DESC(Desc=DML_REDUCE_OPERATOR_DESC(
        Function=fn, InputTensor=desc(dt, x.shape, strides),
        OutputTensor=desc(out_dt or dt, out), Axes=axes))


def reference(x, fn, axes, out_dt=U32):
    op = reduce_op(x, fn, axes, out_dt if fn in (RF.DML_REDUCE_FUNCTION_ARGMIN,
                                                 RF.DML_REDUCE_FUNCTION_ARGMAX) else None)
    v = DMLCreateDevice1(feature_level="6_4").CreateOperator(op).validated.values
    return REGISTRY[OP.DML_OPERATOR_REDUCE].module.reference(v, {"InputTensor": x})[
        "OutputTensor"]


SHAPES = [  # (shape, axes, the cut the plan takes)
    ((3, 70000), [1], "chunks"),  # few long groups: cut into chunks
    ((70001,), [0], "chunks"),
    ((5, 9000, 3), [1], "chunks+columns"),
    ((300, 70), [0], "chunks+columns"),  # neighbouring groups are neighbours in memory
    ((3, 2000), [0], "columns"),  # two blocks of groups, each three rows long
    ((6, 130, 7), [0, 1], "columns"),
    ((40, 50), [1], "rows"),
]


@pytest.mark.parametrize("shape,axes,cut", SHAPES, ids=[c for *_, c in SHAPES])
@pytest.mark.parametrize("fn", list(RF), ids=[f.name[20:] for f in RF])
def test_each_cut_of_the_shape(device, shape, axes, cut, fn):
    from emulator.reduction.layout import Layout
    from emulator.reduction.table import _cut

    lay = Layout.build(shape, axes, [[int(np.prod(shape[d + 1:])) for d in range(len(shape))]])
    lanes, chunks = _cut(lay)
    assert ("columns" in cut) == (lanes > 1) and ("chunks" in cut) == (chunks > 1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    if fn == RF.DML_REDUCE_FUNCTION_MULTIPLY:
        x = rng.uniform(0.99, 1.01, shape).astype(np.float32)
    if fn == RF.DML_REDUCE_FUNCTION_LOG_SUM:
        x = np.abs(x)
    x.reshape(-1)[rng.integers(0, x.size, 3)] = x.reshape(-1)[0]  # ties for MIN/MAX/ARG*
    [y] = device.execute(reduce_op(x, fn, axes, U32 if fn.name.endswith(("ARGMIN", "ARGMAX"))
                                   else None), [x])
    want = reference(x, fn, axes)
    y = y.reshape(want.shape)
    if fn in EXTREMES:
        assert bits(y).tolist() == bits(want).tolist()
    else:
        tol = tolerance(fn, grouped(x, axes), grouped(want.astype(np.float64), axes)[..., 0],
                        np.float32).reshape(y.shape)
        assert (np.abs(y.astype(np.float64) - want) <= tol).all()
    xi = (x * 1000).astype(np.int32)
    if fn in (RF.DML_REDUCE_FUNCTION_SUM, RF.DML_REDUCE_FUNCTION_MULTIPLY,
              RF.DML_REDUCE_FUNCTION_MAX, RF.DML_REDUCE_FUNCTION_ARGMIN):
        [yi] = device.execute(reduce_op(xi, fn, axes, U32 if fn.name.endswith("ARGMIN") else
                                        None), [xi])
        wi = reference(xi, fn, axes)
        assert bits(yi.reshape(wi.shape)).tolist() == bits(wi).tolist()


def test_results_do_not_depend_on_the_thread_count(device):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 50000)) * 1e4).astype(np.float32)
    before = numba.get_num_threads()
    results = []
    for threads in sorted({1, before}):
        numba.set_num_threads(threads)
        try:
            results.append([device.execute(reduce_op(x, fn, [1]), [x])[0].tobytes()
                            for fn in (RF.DML_REDUCE_FUNCTION_SUM, RF.DML_REDUCE_FUNCTION_L2)])
        finally:
            numba.set_num_threads(before)
    assert all(r == results[0] for r in results)


# --- accuracy -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_sums_are_accurate_under_cancellation(device, dt):
    """Large terms that cancel and small ones that remain, over a 2**20-element axis: within
    1 ULP of the exact sum (math.fsum) plus 2**-40 of the sum of magnitudes."""
    rng = np.random.default_rng(11)
    n = 1 << 20
    big = rng.uniform(1e3, 6e4 if dt == np.float16 else 1e7, n // 2).astype(dt)
    small = rng.uniform(-1, 1, n // 2).astype(dt)
    x = np.concatenate([big, -big, small])[:n]
    rng.shuffle(x)
    x = x.reshape(1, n)
    [y] = device.execute(reduce_op(x, RF.DML_REDUCE_FUNCTION_SUM, [1]), [x])
    exact = math.fsum(x.astype(np.float64).ravel().tolist())
    bound = float(np.spacing(np.abs(np.array(exact, dt)))) + 2.0 ** -40 * float(
        np.abs(x.astype(np.float64)).sum())
    assert abs(float(y.ravel()[0]) - exact) <= bound, (float(y.ravel()[0]), exact)


# --- the pages' examples --------------------------------------------------------------------------

REDUCE_X = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)
ARG_X = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)


@pytest.mark.parametrize("axes,expected", [([0], [6, 6, 9]), ([1], [6, 7, 8]), ([0, 1], [21])])
def test_reduce_page_examples(device, axes, expected):
    [y] = device.execute(reduce_op(REDUCE_X, RF.DML_REDUCE_FUNCTION_SUM, axes), [REDUCE_X])
    assert y.ravel().tolist() == expected


@pytest.mark.parametrize("axes,expected", [([0], [1, 2, 1]), ([1], [2, 2, 1]), ([0, 1], [7])])
def test_argmax_page_examples(device, axes, expected):
    out = [1 if d in axes else n for d, n in enumerate(ARG_X.shape)]
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_ARGMAX_OPERATOR_DESC(
        InputTensor=tensor_desc(ARG_X), OutputTensor=desc(U32, out), Axes=axes,
        AxisDirection=INC)), [ARG_X])
    assert y.ravel().tolist() == expected


@pytest.mark.parametrize("op,direction,expected", [
    (DML_ARGMAX_OPERATOR_DESC, INC, 0), (DML_ARGMAX_OPERATOR_DESC, DEC, 4),
    (DML_ARGMIN_OPERATOR_DESC, INC, 2), (DML_ARGMIN_OPERATOR_DESC, DEC, 2)])
def test_axis_direction_picks_the_first_or_last_tie(device, op, direction, expected):
    x = np.array([3, 2, 1, 2, 3], np.float32)  # the page's argmax({3,2,1,2,3})
    [y] = device.execute(DML_OPERATOR_DESC(Desc=op(
        InputTensor=tensor_desc(x), OutputTensor=desc(U32, [1]), Axes=[0],
        AxisDirection=direction)), [x])
    assert int(y.ravel()[0]) == expected


CUMSUM_X = np.array([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], np.float32)


@pytest.mark.parametrize("axis,direction,exclusive,expected", [
    (3, INC, False, [[2, 3, 6, 11], [3, 11, 18, 21], [9, 15, 17, 21]]),
    (3, INC, True, [[0, 2, 3, 6], [0, 3, 11, 18], [0, 9, 15, 17]]),
    (3, DEC, False, [[11, 9, 8, 5], [21, 18, 10, 3], [21, 12, 6, 4]]),
    (2, INC, False, [[2, 1, 3, 5], [5, 9, 10, 8], [14, 15, 12, 12]]),
])
def test_cumulative_summation_page_examples(device, axis, direction, exclusive, expected):
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
        InputTensor=tensor_desc(CUMSUM_X), OutputTensor=tensor_desc(CUMSUM_X), Axis=axis,
        AxisDirection=direction, HasExclusiveSum=exclusive)), [CUMSUM_X])
    assert y.reshape(3, 4).tolist() == expected


@pytest.mark.parametrize("direction,exclusive,expected", [
    (INC, False, [2, 8, 64, 192]), (INC, True, [1, 2, 8, 64]),
    (DEC, False, [192, 96, 24, 3]), (DEC, True, [96, 24, 3, 1])])
def test_cumulative_product(device, direction, exclusive, expected):
    x = np.array([[[[2, 4, 8, 3]]]], np.float32)  # dml_cumulative_product's input
    [y] = device.execute(DML_OPERATOR_DESC(Desc=DML_CUMULATIVE_PRODUCT_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc(x), Axis=3,
        AxisDirection=direction, HasExclusiveProduct=exclusive)), [x])
    assert y.ravel().tolist() == expected


@pytest.mark.parametrize("direction", [INC, DEC], ids=["INCREASING", "DECREASING"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("dt", [DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT32,
                                DML_TENSOR_DATA_TYPE_FLOAT16], ids=["FLOAT32", "INT32", "FLOAT16"])
def test_long_lines_a_row_apart(device, direction, exclusive, dt):
    """Lines longer than a scan chunk (kernels.SCAN_CHUNK; not a multiple of it) a row apart,
    seven of them (four, then three with spare chains), from a padded input into a padded
    output: every running total in float64 (integers wrapping), each output rounded once."""
    from emulator.reduction.kernels import SCAN_CHUNK

    rng = np.random.default_rng(5)
    dtype = np_dtype(dt)
    n = 2 * SCAN_CHUNK + 139
    sizes, in_strides, out_strides = (7, n), (n + 3, 1), (n + 5, 1)
    raw = strided_buffer(rng, dt, sizes, in_strides)
    x = logical(raw, dtype, sizes, in_strides)
    x[...] = (rng.integers(-2 ** 30, 2 ** 30, sizes) if dtype.kind == "i"
              else rng.standard_normal(sizes)).astype(dtype)
    x = np.array(x)
    out_raw = strided_buffer(rng, dt, sizes, out_strides, fill=SENTINEL)
    dispatch(device, DML_OPERATOR_DESC(Desc=DML_CUMULATIVE_SUMMATION_OPERATOR_DESC(
        InputTensor=desc(dt, sizes, in_strides), OutputTensor=desc(dt, sizes, out_strides),
        Axis=1, AxisDirection=direction, HasExclusiveSum=exclusive)),
        {"InputTensor": raw}, {"OutputTensor": out_raw})
    got = logical(out_raw, dtype, sizes, out_strides)
    wide = x.astype(np.int64 if dtype.kind == "i" else np.float64)
    line = wide[:, ::-1] if direction == DEC else wide
    total = np.cumsum(line, axis=1)
    if exclusive:  # the total before each element
        total = np.concatenate([np.zeros_like(total[:, :1]), total[:, :-1]], axis=1)
    total = total[:, ::-1] if direction == DEC else total
    np.testing.assert_array_equal(got, total.astype(dtype))
    untouched = ~addressed_mask(out_raw.size, dtype.itemsize, sizes, out_strides)
    assert (out_raw[untouched] == SENTINEL).all()


# --- edge values ----------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("fn,x,expected", [
    ("MAX", [NAN, 1.0, NAN], 1.0), ("MIN", [NAN, 1.0, -2.0], -2.0),
    ("MAX", [-0.0, 0.0], 0.0), ("MAX", [0.0, -0.0], 0.0),
    ("MIN", [0.0, -0.0], -0.0), ("MIN", [-0.0, 0.0], -0.0),
    ("MAX", [NAN, NAN], NAN), ("MAX", [-INF, -INF], -INF),
    ("SUM", [INF, -INF], NAN), ("SUM", [3e38, 3e38, -3e38], 3e38),
    ("LOG_SUM_EXP", [1000.0, 1000.0], 1000.0 + math.log(2)),
    ("LOG_SUM_EXP", [-INF, -INF], -INF), ("LOG_SUM_EXP", [INF, 1.0], INF),
    ("LOG_SUM_EXP", [NAN, 1.0], NAN), ("LOG_SUM", [0.0, 0.0], -INF),
    ("LOG_SUM", [-1.0, 0.5], NAN), ("L2", [3e30, 4e30], 5e30),
    ("AVERAGE", [3e38, 3e38], 3e38), ("MULTIPLY", [0.0, INF], NAN),
])
def test_float_edge_values(device, fn, x, expected):
    x = np.array(x, np.float32)
    [y] = device.execute(reduce_op(x, getattr(RF, f"DML_REDUCE_FUNCTION_{fn}"), [0]), [x])
    want = np.float32(expected)
    assert bits(y).tolist() == bits(np.array([want])).tolist() or (np.isnan(want) and
                                                                   np.isnan(y.ravel()[0])), (y, want)


@pytest.mark.parametrize("fn,direction,x,expected", [
    ("ARGMAX", INC, [NAN, 1.0, NAN, 1.0], 1), ("ARGMAX", DEC, [NAN, 1.0, NAN, 1.0], 3),
    ("ARGMAX", INC, [NAN, NAN], 0), ("ARGMAX", DEC, [NAN, NAN], 1),
    ("ARGMAX", INC, [-0.0, 0.0], 0), ("ARGMIN", DEC, [-0.0, 0.0], 1),
    ("ARGMIN", INC, [INF, -INF, -INF], 1),
])
def test_arg_edge_values(device, fn, direction, x, expected):
    x = np.array(x, np.float32)
    cls = DML_ARGMAX_OPERATOR_DESC if fn == "ARGMAX" else DML_ARGMIN_OPERATOR_DESC
    [y] = device.execute(DML_OPERATOR_DESC(Desc=cls(
        InputTensor=tensor_desc(x), OutputTensor=desc(T.DML_TENSOR_DATA_TYPE_INT64, [1]),
        Axes=[0], AxisDirection=direction)), [x])
    assert int(y.ravel()[0]) == expected


@pytest.mark.parametrize("dt,fn,x,expected", [
    (np.int32, "SUM", [2**31 - 1, 1], -(2**31)),  # wraps
    (np.int32, "L1", [-(2**31)], -(2**31)),  # |INT_MIN| wraps to INT_MIN
    (np.int32, "MULTIPLY", [65536, 65536], 0),
    (np.int32, "SUM_SQUARE", [-3, 65536], 9),
    (np.int64, "SUM", [2**63 - 1, 2], -(2**63) + 1),
    (np.uint8, "MIN", [255, 0, 7], 0), (np.uint8, "MAX", [255, 0, 7], 255),
])
def test_integer_edge_values(device, dt, fn, x, expected):
    x = np.array(x, dt)
    [y] = device.execute(reduce_op(x, getattr(RF, f"DML_REDUCE_FUNCTION_{fn}"), [0]), [x])
    assert int(y.ravel()[0]) == expected
