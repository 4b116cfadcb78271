"""UNFOLD, FOLD and MAX_UNPOOLING (``emulator/movement/window.py``): every data type of the last
band, every rank it allows (DimensionCount 1 … 6: images of 3 … 8 dimensions), random descs with
padded and zero input strides and padded output strides whose gaps must stay untouched, against
the rows' NumPy references (bit-exact: UNFOLD and MAX_UNPOOLING copy bits; FOLD sums in float64
in window-position order and rounds once, which the reference reproduces, so it is bit-exact
too); the pages' examples as golden vectors; FOLD's sum order, precision and wrapping;
MAX_UNPOOLING's out-of-range and repeated indices; FOLD(UNFOLD(x)) = x · FOLD(UNFOLD(1))."""

from __future__ import annotations

import math
import zlib

import numba
import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.movement.window import ROWS, blocks_per_dimension, unfold_plan
from emulator.registry import REGISTRY

from .helpers import SENTINEL, addressed_mask, bits, desc, layout, logical, np_dtype, strided_buffer

T = DML_TENSOR_DATA_TYPE
OP = DML_OPERATOR_TYPE
F32, F64, F16 = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT64,
                 T.DML_TENSOR_DATA_TYPE_FLOAT16)
U32, U64 = T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64
BY_OPERATOR = {row.operator: row for row in ROWS}


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


# --- random descs against the references ---------------------------------------------------------

def window_case(rng, d: int, pad: bool = True) -> tuple[list[int], list[int], dict]:
    """(image sizes {N, C, spatial...}, column sizes {N, C·K, B}, attributes) of a random valid
    FOLD/UNFOLD desc with DimensionCount d (``pad``: random start and end padding, else 0)."""
    small = d >= 4  # K and B grow as powers of d
    attrs: dict = {"DimensionCount": d, "WindowSizes": [], "Strides": [], "Dilations": [],
                   "StartPadding": [], "EndPadding": []}
    spatial = []
    for _ in range(d):
        w = int(rng.integers(1, 3 if small else 4))
        s = int(rng.integers(1, 3 if small else 4))
        dil = int(rng.integers(1, 3))
        a, b = (int(rng.integers(0, 3)), int(rng.integers(0, 3))) if pad else (0, 0)
        extent = dil * (w - 1) + 1
        spatial.append(max(1, extent - a - b) + int(rng.integers(0, 2 if small else 6)))
        for key, value in zip(("WindowSizes", "Strides", "Dilations", "StartPadding",
                               "EndPadding"), (w, s, dil, a, b)):
            attrs[key].append(value)
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    blocks = [(x + a + b - dil * (w - 1) - 1) // s + 1 for x, a, b, dil, w, s in zip(
        spatial, attrs["StartPadding"], attrs["EndPadding"], attrs["Dilations"],
        attrs["WindowSizes"], attrs["Strides"])]
    return [n, c, *spatial], [n, c * math.prod(attrs["WindowSizes"]), math.prod(blocks)], attrs


def finite_values(rng, raw: np.ndarray, dt) -> None:
    """Overwrite a float buffer with finite values that FLOAT16 sums of a few hold (FOLD's
    random cases: a NaN's payload after an addition is not something the sums promise)."""
    dtype = np_dtype(dt)
    typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
    typed[:] = (rng.standard_normal(typed.size) * 100).astype(dtype)


def index_buffer(rng, sizes, strides, count: int):
    """A UINT32 or UINT64 index tensor: mostly flat positions of the output (repeats happen),
    about 10% past its last element (the largest value of the type among them)."""
    dt = [U32, U64][int(rng.integers(0, 2))]
    dtype = np_dtype(dt)
    raw = strided_buffer(rng, dt, sizes, strides, fill=0)
    typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
    values = rng.integers(0, count, typed.size).astype(dtype)
    outside = rng.random(typed.size) < 0.1
    values[outside] = rng.choice(np.array([count, count + 5, np.iinfo(dtype).max], dtype))
    typed[:] = values
    return dt, raw


def run_case(device, rng, op, dt, d: int | None = None, pad: bool = True):
    """One random desc executed on strided buffers and compared with the row's reference
    (FOLD/UNFOLD: DimensionCount ``d``, random if None)."""
    if op == OP.DML_OPERATOR_MAX_UNPOOLING:
        ins = {"InputTensor": [int(rng.integers(1, 4)) for _ in range(4)]}
        ins["IndicesTensor"] = ins["InputTensor"]
        out_sizes = [int(rng.integers(1, 5)) for _ in range(4)]
        attrs: dict = {}
    else:
        image, columns, attrs = window_case(rng, d or int(rng.integers(1, 7)), pad)
        ins = {"InputTensor": image if op == OP.DML_OPERATOR_UNFOLD else columns}
        out_sizes = columns if op == OP.DML_OPERATOR_UNFOLD else image
    tensors, raws, inputs = {}, [], {}
    for name, sizes in ins.items():
        strides = layout(rng, sizes, True)
        tdt, raw = dt, strided_buffer(rng, dt, sizes, strides)
        if name == "IndicesTensor":
            tdt, raw = index_buffer(rng, sizes, strides, math.prod(out_sizes))
        elif op == OP.DML_OPERATOR_FOLD and np_dtype(dt).kind == "f":
            finite_values(rng, raw, dt)
        tensors[name] = desc(tdt, sizes, strides)
        raws.append(raw)
        inputs[name] = np.array(logical(raw, np_dtype(tdt), sizes, strides))
    out_strides = layout(rng, out_sizes, False)
    out_raw = strided_buffer(rng, dt, out_sizes, out_strides, fill=SENTINEL)
    tensors["OutputTensor"] = desc(dt, out_sizes, out_strides)
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs))
    device.execute(operator, raws, [out_raw])
    v = device.CreateOperator(operator).validated.values
    expected = BY_OPERATOR[op].reference(v, inputs)["OutputTensor"]
    dtype = np_dtype(dt)
    got = logical(out_raw, dtype, out_sizes, out_strides)
    assert got.shape == expected.shape
    same = bits(got) == bits(expected.astype(dtype))
    assert same.all(), (op.name, dt.name, attrs, ins, got[~same][:5], expected[~same][:5])
    untouched = ~addressed_mask(out_raw.size, dtype.itemsize, out_sizes, out_strides)
    assert (out_raw[untouched] == SENTINEL).all(), "a gap of the output was written"
    return attrs


def type_cases():
    out = []
    for row in ROWS:
        band = REGISTRY[row.operator].support[-1]
        types = set(band.tensors["InputTensor"][1]) & set(band.tensors["OutputTensor"][1])
        out += [(row.operator, t) for t in sorted(types & set(row.kernel_types))]
    return out


CASES = type_cases()


def test_every_type_of_the_last_band_executes():
    """FOLD and UNFOLD: all eleven types; MAX_UNPOOLING: the ten of its 5_0 band."""
    counts = {op: sum(1 for o, _ in CASES if o == op) for op in BY_OPERATOR}
    assert counts == {OP.DML_OPERATOR_UNFOLD: 11, OP.DML_OPERATOR_FOLD: 11,
                      OP.DML_OPERATOR_MAX_UNPOOLING: 10}


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{o.name[13:]}-{t.name[21:]}" for o, t in CASES])
def test_kernel_matches_the_reference(device, op, dt):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dt.name}".encode()))
    for _ in range(8):
        run_case(device, rng, op, dt)


@pytest.mark.parametrize("op", [OP.DML_OPERATOR_UNFOLD, OP.DML_OPERATOR_FOLD],
                         ids=["UNFOLD", "FOLD"])
def test_every_dimension_count(device, op):
    """DimensionCount 1 … 6 (the bands' 3 … 8 image dimensions), each with and without
    padding."""
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))
    for d in range(1, 7):
        for pad, dt in ((False, F32), (True, T.DML_TENSOR_DATA_TYPE_INT16)):
            assert run_case(device, rng, op, dt, d, pad)["DimensionCount"] == d


# --- the pages' examples -------------------------------------------------------------------------

def window_desc(op, x_sizes, out_sizes, dt, windows, strides, dilations, start, end):
    return DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](
        InputTensor=desc(dt, x_sizes), OutputTensor=desc(dt, out_sizes),
        DimensionCount=len(windows), WindowSizes=windows, Strides=strides, Dilations=dilations,
        StartPadding=start, EndPadding=end))


def run(device, op, x, out_sizes, windows, strides=None, dilations=None, start=None, end=None,
        dt=F32):
    d = len(windows)
    one, zero = (1,) * d, (0,) * d
    operator = window_desc(op, x.shape, out_sizes, dt, windows, strides or one, dilations or one,
                           start or zero, end or zero)
    [y] = device.execute(operator, [x])
    return np.asarray(y).reshape(out_sizes)


UNFOLD_1 = [[0, 1, 2, 5, 6, 7, 10, 11, 12], [1, 2, 3, 6, 7, 8, 11, 12, 13],
            [2, 3, 4, 7, 8, 9, 12, 13, 14], [5, 6, 7, 10, 11, 12, 15, 16, 17],
            [6, 7, 8, 11, 12, 13, 16, 17, 18], [7, 8, 9, 12, 13, 14, 17, 18, 19],
            [10, 11, 12, 15, 16, 17, 20, 21, 22], [11, 12, 13, 16, 17, 18, 21, 22, 23],
            [12, 13, 14, 17, 18, 19, 22, 23, 24]]
UNFOLD_2 = [[0, 0, 0, 0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17],
            [0, 0, 0, 1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18],
            [0, 0, 0, 2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19],
            [0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17, 20, 21, 22],
            [1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18, 21, 22, 23],
            [2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24],
            [5, 6, 7, 10, 11, 12, 15, 16, 17, 20, 21, 22, 0, 0, 0],
            [6, 7, 8, 11, 12, 13, 16, 17, 18, 21, 22, 23, 0, 0, 0],
            [7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24, 0, 0, 0]]
FOLD_PADDED_C0 = [[26, 70, 102, 60], [78, 183, 231, 129], [84, 195, 243, 135],
                  [82, 182, 214, 116]]
FOLD_PADDED_C1 = [[170, 358, 390, 204], [294, 615, 663, 345], [300, 627, 675, 351],
                  [226, 470, 502, 260]]


def test_unfold_page_example_1(device):
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    y = run(device, OP.DML_OPERATOR_UNFOLD, x, (1, 9, 9), (3, 3))
    np.testing.assert_array_equal(y[0], UNFOLD_1)


def test_unfold_page_example_2_padded(device):
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    y = run(device, OP.DML_OPERATOR_UNFOLD, x, (1, 9, 15), (3, 3), start=(1, 0), end=(1, 0))
    np.testing.assert_array_equal(y[0], UNFOLD_2)
    assert not np.signbit(y).any()  # the padding is +0


def test_fold_page_example_1(device):
    x = np.arange(36, dtype=np.float32).reshape(1, 9, 4)
    y = run(device, OP.DML_OPERATOR_FOLD, x, (1, 1, 4, 4), (3, 3))
    np.testing.assert_array_equal(y[0, 0], [[0, 5, 13, 9], [14, 38, 54, 32], [38, 86, 102, 56],
                                            [26, 57, 65, 35]])


def test_fold_page_example_2_padded(device):
    x = np.arange(72, dtype=np.float32).reshape(1, 9, 8)
    y = run(device, OP.DML_OPERATOR_FOLD, x, (1, 1, 4, 4), (3, 3), start=(1, 0), end=(1, 0))
    np.testing.assert_array_equal(y[0, 0], FOLD_PADDED_C0)


@pytest.mark.parametrize("dt", [F32, F16, F64, T.DML_TENSOR_DATA_TYPE_INT32,
                                T.DML_TENSOR_DATA_TYPE_UINT16])
def test_fold_page_example_3_two_channels(device, dt):
    x = np.arange(144).reshape(1, 18, 8).astype(np_dtype(dt))
    y = run(device, OP.DML_OPERATOR_FOLD, x, (1, 2, 4, 4), (3, 3), start=(1, 0), end=(1, 0),
            dt=dt)
    np.testing.assert_array_equal(y[0], [FOLD_PADDED_C0, FOLD_PADDED_C1])


def test_example_descs_of_the_support_tables(device):
    """The support tables' example descs (strides 2, dilation 2, 1-D) against hand values."""
    x = np.arange(10, dtype=np.float16).reshape(1, 2, 5)  # window 2, dilation 2: (j, j + 2)
    y = run(device, OP.DML_OPERATOR_UNFOLD, x, (1, 4, 3), (2,), dilations=(2,), dt=F16)
    np.testing.assert_array_equal(y[0], [[0, 1, 2], [2, 3, 4], [5, 6, 7], [7, 8, 9]])
    # FOLD 1-D: output 5, window 3, stride 2, start padding 1: blocks at padded 0 and 2.
    cols = np.arange(1, 13, dtype=np.int32).reshape(1, 6, 2)
    y = run(device, OP.DML_OPERATOR_FOLD, cols, (1, 2, 5), (3,), strides=(2,), start=(1,),
            end=(0,), dt=T.DML_TENSOR_DATA_TYPE_INT32)
    # Channel 0 rows (k0, k1, k2) = (1, 2), (3, 4), (5, 6): block 0 covers -1, 0, 1; block 1
    # covers 1, 2, 3 (k0 of block 0 lands in the padding and is dropped).
    np.testing.assert_array_equal(y[0], [[3, 5 + 2, 4, 6, 0], [9, 11 + 8, 10, 12, 0]])


# --- FOLD: sums -------------------------------------------------------------------------------

def one_dimensional_fold(device, column_values, dt):
    """Output size 1 of a window of 3 with padding 2 / 2: the output element receives block
    2 - k of every window position k, so ``column_values[k]`` in k order."""
    cols = np.zeros((1, 3, 3), np_dtype(dt))
    for k, value in enumerate(column_values):
        cols[0, k, 2 - k] = value
    return run(device, OP.DML_OPERATOR_FOLD, cols, (1, 1, 1), (3,), start=(2,), end=(2,),
               dt=dt).ravel()[0]


def test_fold_sums_in_window_order_in_float64_and_rounds_once(device):
    # float64 in window order: (0 + 1 + 2^53) - 2^53 = 0 (1 is lost to 2^53's rounding); in
    # reverse order it would be 1.
    assert one_dimensional_fold(device, [1.0, 2.0**53, -(2.0**53)], F64) == 0.0
    # FLOAT32 accumulates in float64: 1 + 2^24 - 2^24 = 1 (a float32 sum would give 0).
    assert one_dimensional_fold(device, [1.0, 2.0**24, -(2.0**24)], F32) == 1.0
    # FLOAT16 likewise: 2048 + 1 is not a FLOAT16, but the float64 sum is exact.
    assert one_dimensional_fold(device, [2048.0, 1.0, -2048.0], F16) == 1.0
    # Rounded once: 1 + 2^-24 + 2^-24 = 1 + 2^-23 exactly (a FLOAT32 per step would stay 1).
    assert one_dimensional_fold(device, [1.0, 2.0**-24, 2.0**-24], F32) == np.float32(1 + 2**-23)


def test_fold_of_nothing_is_positive_zero_and_specials_propagate(device):
    assert not np.signbit(one_dimensional_fold(device, [-0.0, -0.0, -0.0], F32))
    assert np.isnan(one_dimensional_fold(device, [np.inf, 1.0, -np.inf], F32))
    assert np.isnan(one_dimensional_fold(device, [1.0, np.nan, 2.0], F16))
    assert one_dimensional_fold(device, [np.inf, 1.0, 2.0], F32) == np.inf


@pytest.mark.parametrize("dt,values,want", [
    (T.DML_TENSOR_DATA_TYPE_INT8, [100, 100, 0], -56),
    (T.DML_TENSOR_DATA_TYPE_UINT8, [200, 100, 1], 45),
    (T.DML_TENSOR_DATA_TYPE_INT64, [2**63 - 1, 1, 0], -(2**63)),
    (T.DML_TENSOR_DATA_TYPE_UINT64, [2**64 - 1, 2, 0], 1),
    (T.DML_TENSOR_DATA_TYPE_INT16, [-32768, -1, 0], 32767),
])
def test_fold_integer_sums_wrap(device, dt, values, want):
    assert one_dimensional_fold(device, values, dt) == want


def test_fold_does_not_depend_on_the_thread_count(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3 * 9, 36)).astype(np.float32)
    operator = window_desc(OP.DML_OPERATOR_FOLD, x.shape, (2, 3, 8, 8), F32, (3, 3), (1, 1),
                           (1, 1), (0, 0), (0, 0))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        [serial] = device.execute(operator, [x])
        numba.set_num_threads(before)
        [parallel] = device.execute(operator, [x])
    finally:
        numba.set_num_threads(before)
    assert (bits(np.asarray(serial)) == bits(np.asarray(parallel))).all()


@pytest.mark.parametrize("seed", range(6))
def test_fold_of_unfold_is_the_image_times_the_overlap_count(device, seed):
    """FOLD(UNFOLD(x)) = x · FOLD(UNFOLD(1)): every image element summed once per window that
    covers it (PyTorch's nn.Fold documents this relation; the pages do not state it)."""
    rng = np.random.default_rng(seed)
    image, columns, attrs = window_case(rng, int(rng.integers(1, 4)))
    dt = T.DML_TENSOR_DATA_TYPE_INT32
    geometry = [attrs[k] for k in ("WindowSizes", "Strides", "Dilations", "StartPadding",
                                   "EndPadding")]
    unfold = window_desc(OP.DML_OPERATOR_UNFOLD, image, columns, dt, *geometry)
    fold = window_desc(OP.DML_OPERATOR_FOLD, columns, image, dt, *geometry)
    x = rng.integers(-1000, 1000, image).astype(np.int32)

    def round_trip(a):
        [cols] = device.execute(unfold, [a])
        [back] = device.execute(fold, [np.asarray(cols).reshape(columns)])
        return np.asarray(back).reshape(image)

    coverage = round_trip(np.ones(image, np.int32))
    np.testing.assert_array_equal(round_trip(x), x * coverage)
    # The coverage counts windows: a stride-1, unpadded, undilated window of w covers an interior
    # element w times along each axis.
    assert coverage.max() <= math.prod(attrs["WindowSizes"])


# --- UNFOLD: the plan --------------------------------------------------------------------------

def test_unfold_without_padding_is_a_strided_copy(device):
    """No coordinate in the padding: the table is one entry (every axis affine); with padding on
    one axis, the table covers that axis' (window position, block) pairs only."""
    def plan(start, end):
        blocks = [(n + a + b - w) // s + 1 for n, a, b, w, s in
                  zip((6, 7), start, end, (3, 2), (1, 2))]
        operator = window_desc(OP.DML_OPERATOR_UNFOLD, (1, 2, 6, 7), (1, 12, math.prod(blocks)),
                               F32, (3, 2), (1, 2), (1, 1), start, end)
        return unfold_plan(device.CreateOperator(operator).validated.values), blocks

    p, _ = plan((0, 0), (0, 0))
    assert p.table.tolist() == [0] and not p.tab_strides.any()
    p, blocks = plan((1, 0), (1, 0))
    assert p.table.size == 3 * blocks[0]


def test_blocks_per_dimension_is_the_pages_formula():
    from types import SimpleNamespace

    v = SimpleNamespace(StartPadding=(1, 0), EndPadding=(1, 0), Dilations=(1, 2),
                        WindowSizes=(3, 2), Strides=(1, 2))
    assert blocks_per_dimension(v, (5, 7)) == [5, 3]


# --- MAX_UNPOOLING ----------------------------------------------------------------------------

def unpool(device, x, idx, out_sizes, out_strides=None):
    dt = {np.dtype(np.float32): F32, np.dtype(np.float16): F16,
          np.dtype(np.int8): T.DML_TENSOR_DATA_TYPE_INT8}[x.dtype]
    idx_dt = U32 if idx.dtype == np.uint32 else U64
    out_raw = strided_buffer(None, dt, out_sizes, out_strides, fill=SENTINEL)
    operator = DML_OPERATOR_DESC(Desc=DML_MAX_UNPOOLING_OPERATOR_DESC(
        InputTensor=desc(dt, x.shape), IndicesTensor=desc(idx_dt, idx.shape),
        OutputTensor=desc(dt, out_sizes, out_strides)))
    device.execute(operator, [x, idx], [out_raw])
    return out_raw, logical(out_raw, x.dtype, out_sizes, out_strides)


def test_max_unpooling_onnx_example(device):
    """ONNX MaxUnpool's example (the page has none): a 2x2 max pool's values and flat indices
    back into a 4x4 output, zeros elsewhere."""
    x = np.array([5, 6, 7, 8], np.float32).reshape(1, 1, 2, 2)
    idx = np.array([5, 7, 13, 15], np.uint32).reshape(1, 1, 2, 2)
    _, y = unpool(device, x, idx, (1, 1, 4, 4))
    np.testing.assert_array_equal(y[0, 0], [[0, 0, 0, 0], [0, 5, 0, 6], [0, 0, 0, 0],
                                            [0, 7, 0, 8]])


def test_max_unpooling_indices_count_the_whole_output_across_batch_and_channels(device):
    x = np.array([1, 2, 3, 4], np.int8).reshape(2, 2, 1, 1)
    idx = np.array([3, 2, 1, 0], np.uint64).reshape(2, 2, 1, 1)
    _, y = unpool(device, x, idx, (1, 2, 1, 2))
    np.testing.assert_array_equal(y.ravel(), [4, 3, 2, 1])


def test_max_unpooling_indices_name_logical_elements_of_a_strided_output(device):
    """Flat positions of the output's Sizes, row-major, whatever its Strides; the gaps of a
    padded output stay untouched."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    idx = np.array([0, 3, 4, 8], np.uint32).reshape(1, 1, 2, 2)
    raw, y = unpool(device, x, idx, (1, 1, 3, 3), out_strides=(20, 20, 5, 1))
    np.testing.assert_array_equal(y[0, 0], [[1, 0, 0], [2, 3, 0], [0, 0, 4]])
    untouched = ~addressed_mask(raw.size, 4, (1, 1, 3, 3), (20, 20, 5, 1))
    assert (raw[untouched] == SENTINEL).all()


def test_max_unpooling_out_of_range_indices_are_dropped(device):
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    for idx in (np.array([16, 2**32 - 1, 1, 17], np.uint32),
                np.array([2**64 - 1, 2**32, 1, 16], np.uint64)):
        _, y = unpool(device, x, idx.reshape(1, 1, 2, 2), (1, 1, 4, 4))
        want = np.zeros(16, np.float32)
        want[1] = 3
        np.testing.assert_array_equal(y.ravel(), want)


def test_max_unpooling_repeated_indices_last_input_element_wins(device):
    x = np.array([1, 2, 3, 4, 5, 6], np.float16).reshape(1, 2, 3, 1)
    idx = np.array([2, 0, 2, 0, 2, 1], np.uint32).reshape(1, 2, 3, 1)
    _, y = unpool(device, x, idx, (1, 1, 2, 2))
    np.testing.assert_array_equal(y.ravel(), [4, 6, 5, 0])


def test_max_unpooling_copies_bits(device):
    """Values are moved, not converted: a signalling NaN's payload and -0 survive."""
    raw = np.array([0x7C01, 0x8000, 0xFE37, 0x3C00], np.uint16)
    x = raw.view(np.float16).reshape(1, 1, 2, 2)
    idx = np.array([3, 2, 1, 0], np.uint32).reshape(1, 1, 2, 2)
    _, y = unpool(device, x, idx, (1, 1, 1, 5))
    assert bits(np.asarray(y)).ravel().tolist() == [0x3C00, 0xFE37, 0x8000, 0x7C01, 0]
