"""The data-movement family, driven by its table: every row, every data type its kernel handles,
random descs (ranks the last band allows, padded and zero input strides, padded output strides
whose gaps must stay untouched), bit-exact against the row's NumPy reference; the pages'
examples as golden vectors; the index-map plan's pieces."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from descriptors import *
from emulator import DMLCreateDevice1
from emulator.kernels.pieces import AFFINE, FILL, FILL_PIECE, GATHER
from emulator.movement.plan import IndexMap
from emulator.movement.table import ROWS, fold
from emulator.registry import REGISTRY

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
OP = DML_OPERATOR_TYPE


def ranks(op) -> list[int]:
    band = REGISTRY[op].support[-1]
    dims = next(iter(band.tensors.values()))[0]
    return list(dims)


def typed_value(rng, dt):
    """A random value of the data type, as the scalar union carries it."""
    dtype = np_dtype(dt)
    if dtype.kind == "f":
        return float(np.array(rng.standard_normal() * 50).astype(dtype))
    info = np.iinfo(dtype)
    choices = [int(info.min), int(info.max), 0, int(rng.integers(info.min, info.max, dtype=dtype))]
    return choices[int(rng.integers(0, 4))]


def make_case(rng, op, dt):
    """(inputs {name: sizes or [sizes...]}, outputs {name: sizes or [...]}, attributes)."""
    rank = int(rng.choice(ranks(op)))
    sizes = [int(rng.integers(1, 5 if rank > 4 else 7)) for _ in range(rank)]
    if op in (OP.DML_OPERATOR_JOIN, OP.DML_OPERATOR_SPLIT):
        axis = int(rng.integers(0, rank))
        count = int(rng.integers(1, 5))
        parts = []
        for _ in range(count):
            s = list(sizes)
            s[axis] = int(rng.integers(1, 5))
            parts.append(s)
        whole = list(sizes)
        whole[axis] = sum(p[axis] for p in parts)
        if op == OP.DML_OPERATOR_JOIN:
            return {"InputTensors": parts}, {"OutputTensor": whole}, {"Axis": axis}
        return {"InputTensor": whole}, {"OutputTensors": parts}, {"Axis": axis}
    if op in (OP.DML_OPERATOR_PADDING, OP.DML_OPERATOR_PADDING1):
        modes = ["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"]
        mode = getattr(DML_PADDING_MODE, "DML_PADDING_MODE_" + str(rng.choice(modes)))
        most = 9 if rank <= 3 else 2  # pads beyond the size fold periodically; keep it small
        start = [int(rng.integers(0, most)) for _ in range(rank)]
        end = [int(rng.integers(0, most)) for _ in range(rank)]
        out = [n + a + b for n, a, b in zip(sizes, start, end)]
        attrs = {"PaddingMode": mode, "StartPadding": start, "EndPadding": end}
        if op == OP.DML_OPERATOR_PADDING:
            attrs["PaddingValue"] = float(rng.choice([1.5, -3.75, 300.0, -1e10, 0.0]))
        else:
            attrs.update(PaddingValueDataType=dt, PaddingValue=typed_value(rng, dt))
        return {"InputTensor": sizes}, {"OutputTensor": out}, attrs
    if op == OP.DML_OPERATOR_TILE:
        repeats = [int(rng.integers(1, 4)) for _ in range(rank)]
        return {"InputTensor": sizes}, {"OutputTensor": [n * r for n, r in zip(sizes, repeats)]}, \
            {"Repeats": repeats}
    if op == OP.DML_OPERATOR_UPSAMPLE_2D:
        h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        out = [*sizes[:-2], sizes[-2] * h, sizes[-1] * w]
        return {"InputTensor": sizes}, {"OutputTensor": out}, {
            "ScaleSize": DML_SIZE_2D(Width=w, Height=h),
            "InterpolationMode": DML_INTERPOLATION_MODE.DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR}
    if op in (OP.DML_OPERATOR_DEPTH_TO_SPACE, OP.DML_OPERATOR_DEPTH_TO_SPACE1,
              OP.DML_OPERATOR_SPACE_TO_DEPTH, OP.DML_OPERATOR_SPACE_TO_DEPTH1):
        b = int(rng.integers(1, 4))
        n, c, h, w = (int(rng.integers(1, 4)) for _ in range(4))
        deep, wide = [n, c * b * b, h, w], [n, c, h * b, w * b]
        attrs = {"BlockSize": b}
        if op in (OP.DML_OPERATOR_DEPTH_TO_SPACE1, OP.DML_OPERATOR_SPACE_TO_DEPTH1):
            attrs["Order"] = DML_DEPTH_SPACE_ORDER(int(rng.integers(0, 2)))
        if op in (OP.DML_OPERATOR_DEPTH_TO_SPACE, OP.DML_OPERATOR_DEPTH_TO_SPACE1):
            return {"InputTensor": deep}, {"OutputTensor": wide}, attrs
        return {"InputTensor": wide}, {"OutputTensor": deep}, attrs
    if op == OP.DML_OPERATOR_SLICE_GRAD:
        offsets, window, steps, grad = [], [], [], []
        for n in sizes:
            off = int(rng.integers(0, n))
            size = int(rng.integers(1, n - off + 1))
            step = int(rng.choice([1, 2, 3, -1, -2]))
            offsets.append(off)
            window.append(size)
            steps.append(step)
            grad.append(int(rng.integers(1, 1 + (size - 1) // abs(step) + 1)))
        return {"InputGradientTensor": grad}, {"OutputGradientTensor": sizes}, {
            "InputWindowOffsets": offsets, "InputWindowSizes": window,
            "InputWindowStrides": steps}
    if op in (OP.DML_OPERATOR_GATHER, OP.DML_OPERATOR_GATHER_ELEMENTS,
              OP.DML_OPERATOR_SCATTER_ELEMENTS):
        axis = int(rng.integers(0, rank))
        if op == OP.DML_OPERATOR_GATHER:
            # Every tensor has the input's rank r; the output is {Input[..Axis], the q last
            # index sizes, Input[Axis+1..]} with its q - 1 leading entries (which must be 1)
            # cropped, or a 1 prepended when q = 0.
            q = int(rng.integers(0, rank + 1))
            index_sizes = [1] * (rank - q) + [int(rng.integers(1, 4)) for _ in range(q)]
            for k in range(max(q - 1, 0)):  # make the cropped entries 1
                if k < axis:
                    sizes[k] = 1
                else:
                    index_sizes[rank - q + k - axis] = 1
            expected = sizes[:axis] + index_sizes[rank - q:] + sizes[axis + 1:]
            out = expected[q - 1:] if q else [1, *expected]
            return {"InputTensor": sizes, "IndicesTensor": index_sizes}, \
                {"OutputTensor": out}, {"Axis": axis, "IndexDimensions": q}
        index_sizes = list(sizes)
        index_sizes[axis] = int(rng.integers(1, 6))
        if op == OP.DML_OPERATOR_GATHER_ELEMENTS:
            return {"InputTensor": sizes, "IndicesTensor": index_sizes}, \
                {"OutputTensor": index_sizes}, {"Axis": axis}
        return {"InputTensor": sizes, "IndicesTensor": index_sizes, "UpdatesTensor": index_sizes}, \
            {"OutputTensor": sizes}, {"Axis": axis}
    if op in (OP.DML_OPERATOR_GATHER_ND, OP.DML_OPERATOR_GATHER_ND1, OP.DML_OPERATOR_SCATTER_ND):
        m = int(rng.integers(1, rank + 1))  # meaningful input dimensions
        b = int(rng.integers(0, m)) if op == OP.DML_OPERATOR_GATHER_ND1 else 0
        t = int(rng.integers(1, m - b + 1))
        most_n = rank - (m - b - t) + 1  # the output's meaningful dims must fit its rank
        n = int(rng.integers(b + 1, max(b + 1, min(rank, most_n)) + 1))
        x_m = [int(rng.integers(1, 4)) for _ in range(m)]
        idx_m = x_m[:b] + [int(rng.integers(1, 4)) for _ in range(n - 1 - b)] + [t]
        out_m = idx_m[:-1] + x_m[b + t:]
        x_sizes = [1] * (rank - m) + x_m
        idx_sizes = [1] * (rank - n) + idx_m
        target = [1] * (rank - len(out_m)) + out_m
        attrs = {"InputDimensionCount": m, "IndicesDimensionCount": n}
        if op == OP.DML_OPERATOR_GATHER_ND1:
            attrs["BatchDimensionCount"] = b
        if op == OP.DML_OPERATOR_SCATTER_ND:
            return {"InputTensor": x_sizes, "IndicesTensor": idx_sizes, "UpdatesTensor": target}, \
                {"OutputTensor": x_sizes}, attrs
        return {"InputTensor": x_sizes, "IndicesTensor": idx_sizes}, {"OutputTensor": target}, attrs
    if op == OP.DML_OPERATOR_ONE_HOT:
        axis = int(rng.integers(0, rank))
        index_sizes = list(sizes)
        index_sizes[axis] = 1
        values = [1] * rank
        values[int(rng.integers(0, rank))] = int(rng.integers(2, 4))
        return {"IndicesTensor": index_sizes, "ValuesTensor": values}, \
            {"OutputTensor": sizes}, {"Axis": axis}
    if op == OP.DML_OPERATOR_REVERSE_SUBSEQUENCES:
        axis = int(rng.integers(0, rank))
        lengths = list(sizes)
        lengths[axis] = 1
        return {"InputTensor": sizes, "SequenceLengthsTensor": lengths}, \
            {"OutputTensor": sizes}, {"Axis": axis}
    if op == OP.DML_OPERATOR_DIAGONAL_MATRIX:
        return {}, {"OutputTensor": sizes}, {
            "Offset": int(rng.integers(-sizes[-2] - 1, sizes[-1] + 2)),
            "Value": float(rng.choice([1.0, -2.5, 10.6, 300.0, -1e10]))}
    if op == OP.DML_OPERATOR_FILL_VALUE_CONSTANT:
        return {}, {"OutputTensor": sizes}, {"ValueDataType": dt, "Value": typed_value(rng, dt)}
    if op == OP.DML_OPERATOR_FILL_VALUE_SEQUENCE:
        return {}, {"OutputTensor": sizes}, {"ValueDataType": dt, "ValueStart": typed_value(rng, dt),
                                              "ValueDelta": typed_value(rng, dt)}
    raise AssertionError(op)


INDEX_TYPES = (T.DML_TENSOR_DATA_TYPE_INT32, T.DML_TENSOR_DATA_TYPE_INT64,
               T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64)


def axis_size(op, attrs, ins, outs) -> int:
    """The size of the dimension the indices point into (ND: the smallest a tuple addresses)."""
    if "InputDimensionCount" in attrs:
        x = ins["InputTensor"]
        return min(x[len(x) - attrs["InputDimensionCount"]:])
    whole = outs["OutputTensor"] if op in (OP.DML_OPERATOR_SCATTER_ELEMENTS,
                                           OP.DML_OPERATOR_ONE_HOT) else ins["InputTensor"]
    return whole[attrs["Axis"]]


def index_buffer(rng, sizes, strides, size):
    """An index tensor of a random type: mostly valid values (negative ones for signed types,
    counted from the end), some outside the axis (the output reads 0 there / the update is
    dropped)."""
    dt = INDEX_TYPES[int(rng.integers(0, 4))]
    dtype = np_dtype(dt)
    raw = strided_buffer(rng, dt, sizes, strides, fill=0)
    typed = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
    low = -size if dtype.kind == "i" else 0
    values = rng.integers(low, size, typed.size)
    outside = rng.random(typed.size) < 0.1
    values[outside] = rng.choice([size, size + 7, -size - 1 if dtype.kind == "i" else 2**31])
    typed[:] = values.astype(dtype) if dtype.kind == "i" or (values >= 0).all() else \
        np.where(values < 0, 2**31, values).astype(dtype)
    if dtype.kind == "u" and rng.random() < 0.3:
        typed[0] = np.iinfo(dtype).max  # a huge unsigned index: outside
    return dt, raw


def run_case(device, rng, row, dt):
    op = row.operator
    ins, outs, attrs = make_case(rng, op, dt)
    tensors, raws, inputs = {}, [], {}
    for name, sizes in ins.items():
        many = isinstance(sizes[0], list)
        descs = []
        for i, s in enumerate(sizes if many else [sizes]):
            strides = layout(rng, s, True)
            tdt = dt
            raw = strided_buffer(rng, dt, s, strides)
            if name == "IndicesTensor":
                tdt, raw = index_buffer(rng, s, strides, axis_size(op, attrs, ins, outs))
            if name == "SequenceLengthsTensor":  # 0 … beyond the axis (a whole reversal)
                tdt = INDEX_TYPES[int(rng.integers(2, 4))]
                raw = strided_buffer(rng, tdt, s, strides, fill=0)
                typed = raw[: raw.size // np_dtype(tdt).itemsize * np_dtype(tdt).itemsize].view(
                    np_dtype(tdt))
                typed[:] = rng.integers(0, ins["InputTensor"][attrs["Axis"]] + 3, typed.size)
            descs.append(desc(tdt, s, strides))
            raws.append(raw)
            inputs[f"{name}[{i}]" if many else name] = np.array(logical(raw, np_dtype(tdt), s,
                                                                         strides))
        tensors[name] = descs if many else descs[0]
    out_raws = []
    for name, sizes in outs.items():
        many = isinstance(sizes[0], list)
        descs = []
        for i, s in enumerate(sizes if many else [sizes]):
            strides = layout(rng, s, False)
            out_raws.append((f"{name}[{i}]" if many else name, s, strides,
                             strided_buffer(rng, dt, s, strides, fill=SENTINEL)))
            descs.append(desc(dt, s, strides))
        tensors[name] = descs if many else descs[0]
    operator = DML_OPERATOR_DESC(Desc=OPERATOR_DESC_CLASSES[op](**tensors, **attrs))
    device.execute(operator, raws, [r for *_, r in out_raws])
    v = device.CreateOperator(operator).validated.values
    want = REGISTRY[op].module.reference(v, inputs)
    dtype = np_dtype(dt)
    for label, sizes, strides, raw in out_raws:
        got = logical(raw, dtype, sizes, strides)
        expected = np.asarray(want[label])
        assert got.shape == expected.shape
        same = bits(got) == bits(expected.astype(dtype))
        assert same.all(), (row.name, dt.name, attrs, ins, got[~same][:5], expected[~same][:5])
        untouched = ~addressed_mask(raw.size, dtype.itemsize, sizes, strides)
        assert (raw[untouched] == SENTINEL).all(), "a gap of the output was written"


def type_cases():
    out = []
    for row in ROWS:
        band = REGISTRY[row.operator].support[-1]
        types = set.intersection(*(set(t) for _, t in band.tensors.values()))
        out += [(row, t) for t in sorted(types & set(row.kernel_types))]
    return out


CASES = type_cases()


@pytest.fixture(scope="module")
def device():
    return DMLCreateDevice1(feature_level="6_4")


@pytest.mark.parametrize("row,dt", CASES, ids=[f"{r.name}-{t.name[21:]}" for r, t in CASES])
def test_kernel_matches_the_reference(device, row, dt):
    rng = np.random.default_rng(zlib.crc32(f"{row.name}{dt.name}".encode()))
    for _ in range(6):
        run_case(device, rng, row, dt)


# --- the pages' examples ------------------------------------------------------------------------

F32 = T.DML_TENSOR_DATA_TYPE_FLOAT32
EXAMPLE_INPUT = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)


@pytest.mark.parametrize("mode,first_rows", [
    ("CONSTANT", [[9, 9, 9, 9, 9, 9, 9, 9, 9, 9], [9, 9, 1, 2, 3, 4, 9, 9, 9, 9]]),
    ("EDGE", [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [1, 1, 1, 2, 3, 4, 4, 4, 4, 4]]),
    ("REFLECTION", [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]]),
    ("SYMMETRIC", [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1]]),
])
def test_padding1_page_examples(device, mode, first_rows):
    x = EXAMPLE_INPUT.reshape(1, 1, 4, 4)
    op = DML_OPERATOR_DESC(Desc=DML_PADDING1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 8, 10), F32),
        PaddingMode=getattr(DML_PADDING_MODE, "DML_PADDING_MODE_" + mode),
        PaddingValueDataType=F32, PaddingValue=9.0, StartPadding=(0, 0, 1, 2),
        EndPadding=(0, 0, 3, 4)))
    [y] = device.execute(op, [x])
    y = y.reshape(8, 10)
    np.testing.assert_array_equal(y[:2], first_rows)
    # The last rows: below the input, rows 5-7 repeat the pattern the mode folds to.
    rows = {"CONSTANT": [9] * 10, "EDGE": None, "REFLECTION": None, "SYMMETRIC": None}
    if rows[mode] is not None:
        np.testing.assert_array_equal(y[5:], [rows[mode]] * 3)


def test_padding_page_reflection_rows_fold_periodically(device):
    """Example 3's whole output (rows fold over the padding already made)."""
    x = EXAMPLE_INPUT.reshape(1, 1, 4, 4)
    op = DML_OPERATOR_DESC(Desc=DML_PADDING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 1, 8, 10), F32),
        PaddingMode=DML_PADDING_MODE.DML_PADDING_MODE_REFLECTION, PaddingValue=0.0,
        StartPadding=(0, 0, 1, 2), EndPadding=(0, 0, 3, 4)))
    [y] = device.execute(op, [x])
    a, b = [7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]
    np.testing.assert_array_equal(y.reshape(8, 10), [a, b, a, b, a, b, a, b])


@pytest.mark.parametrize("order,expected", [
    ("DEPTH_COLUMN_ROW", [[[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56],
                           [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
                          [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65],
                           [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]]]),
    ("COLUMN_ROW_DEPTH", [[[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29],
                           [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
                          [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65],
                           [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]]]),
])
def test_depth_to_space1_page_examples_and_the_inverse(device, order, expected):
    x = (np.arange(8)[:, None, None] * 9 + np.arange(6).reshape(2, 3)).astype(np.uint32)
    x = x.reshape(1, 8, 2, 3)
    order_value = getattr(DML_DEPTH_SPACE_ORDER, "DML_DEPTH_SPACE_ORDER_" + order)
    op = DML_OPERATOR_DESC(Desc=DML_DEPTH_TO_SPACE1_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((1, 2, 4, 6), T.DML_TENSOR_DATA_TYPE_UINT32),
        BlockSize=2, Order=order_value))
    [y] = device.execute(op, [x])
    np.testing.assert_array_equal(y.reshape(1, 2, 4, 6), [expected])
    back = DML_OPERATOR_DESC(Desc=DML_SPACE_TO_DEPTH1_OPERATOR_DESC(
        InputTensor=tensor_desc(y.reshape(1, 2, 4, 6)), OutputTensor=tensor_desc(x),
        BlockSize=2, Order=order_value))
    [z] = device.execute(back, [y.reshape(1, 2, 4, 6)])
    np.testing.assert_array_equal(z.reshape(x.shape), x)


@pytest.mark.parametrize("dt,start,delta,want", [
    (F32, 3.0, 2.0, [3, 5, 7]),
    (T.DML_TENSOR_DATA_TYPE_UINT8, 10, 254, [10, 8, 6, 4]),  # -2 as a UINT8 delta wraps
])
def test_fill_value_sequence_page_examples(device, dt, start, delta, want):
    sizes = (1, 1, 1, len(want)) if dt == F32 else (1, 1, 2, 2)
    op = DML_OPERATOR_DESC(Desc=DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC(
        OutputTensor=tensor_desc(sizes, dt), ValueDataType=dt, ValueStart=start,
        ValueDelta=delta))
    [y] = device.execute(op, [])
    np.testing.assert_array_equal(y.ravel(), want)


# --- the plan ----------------------------------------------------------------------------------

def test_reflection_of_one_element_repeats_it():
    """Decision: REFLECTION's period 2(n - 1) is 0 for n = 1; the element is repeated."""
    assert fold("DML_PADDING_MODE_REFLECTION", 5, 2, 1).tolist() == [0] * 5


def test_pieces_describe_the_last_dimension():
    """A padded row is fill, a unit copy and fill; a reflected one folds into reversed runs;
    a short-run map (nearest-neighbour, scale 2) is gathered."""
    table = np.array([FILL, FILL, 0, 1, 2, 3, FILL], np.int64)
    m = IndexMap.build("x", "y", 4, [7], [1], [table])
    assert m.pieces[:, :3].tolist() == [[0, 2, FILL_PIECE], [2, 4, AFFINE], [6, 1, FILL_PIECE]]
    reflect = fold("DML_PADDING_MODE_REFLECTION", 44, 2, 40)
    m = IndexMap.build("x", "y", 4, [44], [1], [reflect])
    assert [(p[0], p[1], p[2], p[3], p[4]) for p in m.pieces.tolist()] == \
        [(0, 3, AFFINE, 2, -1), (3, 39, AFFINE, 1, 1), (42, 2, AFFINE, 38, -1)]
    nearest = np.arange(64) // 2
    m = IndexMap.build("x", "y", 4, [64], [1], [nearest])
    assert m.pieces[:, 2].tolist() == [GATHER]


def test_contiguous_dimensions_merge_into_one_copy():
    """A packed [4, 8, 16] identity map is one 512-element affine piece."""
    tables = [np.arange(4) * 128, np.arange(8) * 16, np.arange(16)]
    m = IndexMap.build("x", "y", 4, [4, 8, 16], [128, 16, 1], tables)
    assert m.outer.size == 0 and m.pieces.tolist() == [[0, 512, AFFINE, 0, 1]]


def test_gather_elements_page_example_and_index_decisions(device):
    """The page's example; then a negative INT32 index counts from the end (3_0+) and an index
    outside the axis reads 0 (decision), as does a huge UINT64 one."""
    x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    idx = np.array([[1, 2, 0], [2, 0, 0]], np.uint32)

    def run(indices):
        op = DML_OPERATOR_DESC(Desc=DML_GATHER_ELEMENTS_OPERATOR_DESC(
            InputTensor=tensor_desc(x), IndicesTensor=tensor_desc(indices),
            OutputTensor=tensor_desc((2, 3), F32), Axis=0))
        [y] = device.execute(op, [x, indices])
        return y.reshape(2, 3).tolist()

    assert run(idx) == [[4, 8, 3], [7, 2, 3]]
    assert run(np.array([[-1, -3, 3], [-4, 0, 2]], np.int32)) == [[7, 2, 0], [0, 2, 9]]
    assert run(np.array([[2**64 - 1, 1, 0], [0, 3, 1]], np.uint64)) == [[0, 5, 3], [1, 0, 6]]


def test_scatter_elements_last_update_wins_and_outside_ones_are_dropped(device):
    x = np.zeros((2, 4), np.float32)
    idx = np.array([[1, 3, 1, 9], [-1, 0, -1, -5]], np.int64)
    upd = np.array([[10, 11, 12, 13], [20, 21, 22, 23]], np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_SCATTER_ELEMENTS_OPERATOR_DESC(
        InputTensor=tensor_desc(x), IndicesTensor=tensor_desc(idx), UpdatesTensor=tensor_desc(upd),
        OutputTensor=tensor_desc(x), Axis=1))
    [y] = device.execute(op, [x, idx, upd])
    assert y.reshape(2, 4).tolist() == [[0, 12, 0, 11], [21, 0, 0, 22]]


@pytest.mark.parametrize("indices,values,axis,expected", [
    ([0, 3, 2], [0, 1], 3, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]),
    ([-3, 100, 3], [0, 1], 3, [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]),
])
def test_one_hot_page_examples(device, indices, values, axis, expected):
    idx = np.array(indices, np.int32).reshape(1, 1, 3, 1)
    vals = np.array(values, np.float32).reshape(1, 1, 1, 2)
    op = DML_OPERATOR_DESC(Desc=DML_ONE_HOT_OPERATOR_DESC(
        IndicesTensor=tensor_desc(idx), ValuesTensor=tensor_desc(vals),
        OutputTensor=tensor_desc((1, 1, 3, 4), F32), Axis=axis))
    [y] = device.execute(op, [idx, vals])
    assert y.reshape(3, 4).tolist() == expected


def test_one_hot_on_value_is_the_second_element_along_the_fastest_dimension_above_1(device):
    """The page's Example 3: ValuesTensor {1,1,3,1} = [4, 2, 9] gives off 4, on 2."""
    idx = np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1)
    vals = np.array([4, 2, 9], np.float32).reshape(1, 1, 3, 1)
    op = DML_OPERATOR_DESC(Desc=DML_ONE_HOT_OPERATOR_DESC(
        IndicesTensor=tensor_desc(idx), ValuesTensor=tensor_desc(vals),
        OutputTensor=tensor_desc((1, 1, 3, 4), F32), Axis=3))
    [y] = device.execute(op, [idx, vals])
    assert y.reshape(3, 4).tolist() == [[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]]


@pytest.mark.parametrize("offset,sizes,expected", [
    (0, (3, 3), [[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    (1, (3, 3), [[0, 1, 0], [0, 0, 1], [0, 0, 0]]),
    (-1, (3, 2), [[0, 0], [1, 0], [0, 1]]),
    (-3, (3, 2), [[0, 0], [0, 0], [0, 0]]),
])
def test_diagonal_matrix_page_examples(device, offset, sizes, expected):
    op = DML_OPERATOR_DESC(Desc=DML_DIAGONAL_MATRIX_OPERATOR_DESC(
        OutputTensor=tensor_desc((1, 1, *sizes), F32), Offset=offset, Value=1.0))
    [y] = device.execute(op, [])
    assert y.reshape(sizes).tolist() == expected


def test_a_plan_that_cannot_be_allocated_is_e_outofmemory(device, monkeypatch):
    """A valid desc whose plan tables do not fit in memory (PADDING a 1-element tensor to 2^31
    elements needs a 16 GiB table) fails CreateOperator with E_OUTOFMEMORY, a DMLError, and the
    device stays usable."""
    from emulator import E_OUTOFMEMORY, DMLError

    module = REGISTRY[OP.DML_OPERATOR_PADDING].module

    def no_memory(v):
        raise MemoryError

    monkeypatch.setattr(module, "plan", no_memory)
    x = np.zeros(1, np.uint8)
    op = DML_OPERATOR_DESC(Desc=DML_PADDING_OPERATOR_DESC(
        InputTensor=tensor_desc(x), OutputTensor=tensor_desc((2**31,), T.DML_TENSOR_DATA_TYPE_UINT8),
        PaddingMode=DML_PADDING_MODE.DML_PADDING_MODE_CONSTANT, PaddingValue=0.0,
        StartPadding=(2**31 - 1,), EndPadding=(0,)))
    with pytest.raises(DMLError) as info:
        device.CreateOperator(op)
    assert info.value.hresult == E_OUTOFMEMORY and "DML_OPERATOR_PADDING" in str(info.value)
    assert device.GetDeviceRemovedReason() == 0


def test_scratch_memory_that_cannot_be_allocated_at_dispatch_is_e_outofmemory(monkeypatch):
    """A gather's dispatch-time table that does not fit (a huge index tensor): DMLError
    E_OUTOFMEMORY from ExecuteCommandLists (a void method: the device is removed), and the
    output untouched (the table is made before any write)."""
    from emulator import E_OUTOFMEMORY, DMLError
    from emulator.movement import plan as movement_plan

    def no_memory(*args):
        raise MemoryError

    monkeypatch.setattr(movement_plan, "tuple_table", no_memory)
    dev = DMLCreateDevice1(feature_level="6_4")
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    idx = np.array([[1], [0]], np.uint32)
    out = np.full((2, 2), 7, np.float32)
    op = DML_OPERATOR_DESC(Desc=DML_GATHER_ND_OPERATOR_DESC(
        InputTensor=tensor_desc(x), IndicesTensor=tensor_desc(idx), OutputTensor=tensor_desc(out),
        InputDimensionCount=2, IndicesDimensionCount=2))
    with pytest.raises(DMLError) as info:
        dev.execute(op, [x, idx], [out])
    assert info.value.hresult == E_OUTOFMEMORY
    assert (out == 7).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_streamed_copies_are_exact_at_any_alignment(device, monkeypatch, dtype):
    """Large copies stream with non-temporal stores (kernels/stream.py: an unaligned head and
    tail byte by byte, 32-byte vectors between, a fence per work item): forced here for small
    tensors (STREAM_BYTES 0), a JOIN whose windows start at unaligned offsets and a GATHER of
    rows, against NumPy."""
    import emulator.movement.plan as plan

    monkeypatch.setattr(plan, "STREAM_BYTES", 0)
    rng = np.random.default_rng(3)
    dt = {np.uint8: T.DML_TENSOR_DATA_TYPE_UINT8, np.float16: T.DML_TENSOR_DATA_TYPE_FLOAT16,
          np.float32: T.DML_TENSOR_DATA_TYPE_FLOAT32,
          np.float64: T.DML_TENSOR_DATA_TYPE_FLOAT64}[dtype]
    parts = [rng.integers(0, 100, (3, n)).astype(dtype) for n in (4099, 5003, 4097)]
    out_sizes = (3, sum(p.shape[1] for p in parts))
    join = DML_JOIN_OPERATOR_DESC(InputTensors=[desc(dt, p.shape) for p in parts],
                                  OutputTensor=desc(dt, out_sizes), Axis=1)
    got = device.execute(DML_OPERATOR_DESC(Desc=join), parts)[0]
    assert (bits(got) == bits(np.concatenate(parts, axis=1))).all()
    table = rng.integers(0, 100, (9, 4101)).astype(dtype)
    index = np.array([[8, 0, 3, 3, 7, 1]], np.int32)
    gather = DML_GATHER_OPERATOR_DESC(InputTensor=desc(dt, table.shape),
                                      IndicesTensor=desc(T.DML_TENSOR_DATA_TYPE_INT32, index.shape),
                                      OutputTensor=desc(dt, (6, 4101)), Axis=0, IndexDimensions=1)
    got = device.execute(DML_OPERATOR_DESC(Desc=gather), [table, index])[0]
    assert (bits(got) == bits(table[index[0]])).all()
