"""Rules of the compute group (convolution, GEMM, pooling, integer/quantized matrix multiply and
convolution, recurrent networks, multi-head attention) that the support tables cannot express.

Each function is named in ``compute.json``'s ``rules`` lists and receives the validated fields
(``v``): shape relations between tensors, output sizes computed from input sizes and attributes,
attribute ranges, which optional tensors go together, and counts of array attributes. The
``same`` constraints and the bands are checked by the loader, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from descriptors import (
    DML_CONVOLUTION_DIRECTION,
    DML_MATRIX_TRANSFORM,
    DML_MULTIHEAD_ATTENTION_MASK_TYPE,
    DML_OPERATOR_TYPE,
    DML_RECURRENT_NETWORK_DIRECTION,
    DML_TENSOR_DATA_TYPE,
)

from ..ops.activation import check_fused
from ..validation import Context, Tensor, fmt, same

__all__ = [
    "average_pooling_grad", "convolution", "convolution_integer", "gemm", "gru", "lp_pooling_p",
    "lstm", "matrix_multiply_integer", "matrix_multiply_integer_to_float", "max_pooling_grad",
    "max_pooling_indices", "multihead_attention", "multihead_attention1", "pooling",
    "quantized_linear_average_pooling", "quantized_linear_convolution", "rnn",
]

BACKWARD = DML_CONVOLUTION_DIRECTION.DML_CONVOLUTION_DIRECTION_BACKWARD
TRANSPOSE = DML_MATRIX_TRANSFORM.DML_MATRIX_TRANSFORM_TRANSPOSE
BIDIRECTIONAL = DML_RECURRENT_NETWORK_DIRECTION.DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL
MASK_NONE = DML_MULTIHEAD_ATTENTION_MASK_TYPE.DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE
MASK_BOOLEAN = DML_MULTIHEAD_ATTENTION_MASK_TYPE.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN
MASK_RANGES = DML_MULTIHEAD_ATTENTION_MASK_TYPE.\
    DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_QUERY_SEQUENCE_LENGTH_START_END
MASK_ROWS = {  # the key-range masks: {rows, batch}
    DML_MULTIHEAD_ATTENTION_MASK_TYPE.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH: 1,
    DML_MULTIHEAD_ATTENTION_MASK_TYPE.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START: 2}


# ----------------------------------------------------------------------------------------------
# Shared helpers


def _at_least_one(ctx: Context, name: str, values: Sequence[int]) -> None:
    for i, x in enumerate(values):
        ctx.require(x >= 1, f"{name}[{i}]", x, "must be at least 1")


def _rank(ctx: Context, name: str, t: Tensor, lo: int, hi: int | None = None) -> None:
    """Rules run before the bands: guard the ranks a rule indexes into."""
    hi = lo if hi is None else hi
    ctx.require(lo <= t.dim_count <= hi, f"{name}.DimensionCount", t.dim_count,
                f"must be {lo}" if lo == hi else f"must be between {lo} and {hi}")


def _spatial_count(ctx: Context, v: SimpleNamespace, t: Tensor, tensor_name: str) -> None:
    """DimensionCount is the number of spatial dimensions: the tensor's rank minus 2."""
    _rank(ctx, tensor_name, t, 3, 8)
    ctx.require(v.DimensionCount == t.dim_count - 2, "DimensionCount", v.DimensionCount,
                f"must equal {tensor_name}.DimensionCount - 2 = {t.dim_count - 2} "
                "(the spatial dimensions after batch and channel)")


def _pooled_sizes(ctx: Context, v: SimpleNamespace, inp: Tensor, tensor_name: str
                  ) -> tuple[int, ...]:
    """The pooling output sizes: {N, C, (Padded - Window) / Stride + 1 ...}, window dilated."""
    _spatial_count(ctx, v, inp, tensor_name)
    _at_least_one(ctx, "Strides", v.Strides)
    _at_least_one(ctx, "WindowSize", v.WindowSize)
    dilations = getattr(v, "Dilations", None) or (1,) * v.DimensionCount
    _at_least_one(ctx, "Dilations", dilations)
    out = [inp.sizes[0], inp.sizes[1]]
    for i in range(v.DimensionCount):
        padded = inp.sizes[i + 2] + v.StartPadding[i] + v.EndPadding[i]
        window = (v.WindowSize[i] - 1) * dilations[i] + 1
        ctx.require(padded >= window, f"WindowSize[{i}]", v.WindowSize[i],
                    f"the (dilated) window {window} must fit in the padded input size {padded} "
                    f"({tensor_name}.Sizes[{i + 2}] + StartPadding + EndPadding)")
        out.append((padded - window) // v.Strides[i] + 1)
    return tuple(out)


def _per_tensor(t: Tensor) -> bool:
    return all(s == 1 for s in t.sizes)


def _per_channel(t: Tensor, count: int) -> bool:
    """All ones, or a single non-1 dimension holding ``count`` values."""
    others = [s for s in t.sizes if s != 1]
    return not others or (len(others) == 1 and others[0] == count)


def _require_per_tensor(ctx: Context, name: str, t: Tensor | None) -> None:
    if t is not None:
        ctx.require(_per_tensor(t), f"{name}.Sizes", t.sizes,
                    "must be per-tensor: every dimension 1")


def _require_per_channel(ctx: Context, name: str, t: Tensor | None, count: int,
                         what: str) -> None:
    if t is not None:
        ctx.require(_per_channel(t, count), f"{name}.Sizes", t.sizes,
                    f"must be per-tensor (all ones) or per-channel (one dimension of {what} = "
                    f"{count}, the others 1)")


def _require_per_row(ctx: Context, name: str, t: Tensor | None, m: int) -> None:
    """Per-tensor {1, .., 1}, per-row {.., M, 1} right-aligned, or a 1-D {M}."""
    if t is None or _per_tensor(t):
        return
    ones = (1,) * t.dim_count
    ok = t.sizes == (m,) if t.dim_count == 1 else t.sizes == (*ones[:-2], m, 1)
    ctx.require(ok, f"{name}.Sizes", t.sizes,
                f"must be per-tensor (all ones) or per-row {{.., M, 1}} with M = {m}")


def _require_per_column(ctx: Context, name: str, t: Tensor | None, n: int) -> None:
    """Per-tensor {1, .., 1} or per-column {.., 1, N} right-aligned."""
    if t is None or _per_tensor(t):
        return
    ones = (1,) * t.dim_count
    ctx.require(t.sizes == (*ones[:-1], n), f"{name}.Sizes", t.sizes,
                f"must be per-tensor (all ones) or per-column {{.., 1, N}} with N = {n}")


def _matmul(ctx: Context, a: Tensor, b: Tensor, out: Tensor, a_name: str = "ATensor",
            b_name: str = "BTensor", trans_a: bool = False, trans_b: bool = False
            ) -> tuple[int, int]:
    """A {.., M, K} x B {.., K, N} = Output {.., M, N}; returns (M, N)."""
    ctx.require(a.dim_count >= 2, f"{a_name}.DimensionCount", a.dim_count,
                "a matrix has at least 2 dimensions")
    ctx.require(b.dim_count >= 2, f"{b_name}.DimensionCount", b.dim_count,
                "a matrix has at least 2 dimensions")
    m, k = a.sizes[-2:][::-1] if trans_a else a.sizes[-2:]
    kb, n = b.sizes[-2:][::-1] if trans_b else b.sizes[-2:]
    ctx.require(kb == k, f"{b_name}.Sizes", b.sizes,
                f"B's K ({kb}) must equal A's K ({k})")
    ctx.require(b.sizes[:-2] == a.sizes[:-2], f"{b_name}.Sizes", b.sizes,
                f"the batch dimensions must equal {a_name}'s {fmt(tuple(a.sizes[:-2]))}")
    expected = (*a.sizes[:-2], m, n)
    ctx.require(out.sizes == expected, "OutputTensor.Sizes", out.sizes,
                f"must be {{.., M, N}} = {fmt(tuple(expected))}")
    return m, n


def _forward_conv_sizes(ctx: Context, v: SimpleNamespace, inp: Tensor, flt: Tensor
                        ) -> tuple[int, ...]:
    """Forward convolution: {N, FilterBatchCount, (Padded - DilatedFilter) / Stride + 1 ...}."""
    _spatial_count(ctx, v, inp, "InputTensor")
    _rank(ctx, "FilterTensor", flt, inp.dim_count)
    _at_least_one(ctx, "Strides", v.Strides)
    _at_least_one(ctx, "Dilations", v.Dilations)
    ctx.require(v.GroupCount >= 1, "GroupCount", v.GroupCount, "must be at least 1")
    in_channels = inp.sizes[1]
    ctx.require(in_channels % v.GroupCount == 0, "GroupCount", v.GroupCount,
                f"must divide the input channel count {in_channels}")
    ctx.require(flt.sizes[0] % v.GroupCount == 0, "GroupCount", v.GroupCount,
                f"must divide the filter batch (output channel) count {flt.sizes[0]}")
    ctx.require(flt.sizes[1] * v.GroupCount == in_channels, "FilterTensor.Sizes", flt.sizes,
                f"FilterChannelCount * GroupCount must equal the input channel count "
                f"{in_channels}")
    out = [inp.sizes[0], flt.sizes[0]]
    for i in range(v.DimensionCount):
        padded = inp.sizes[i + 2] + v.StartPadding[i] + v.EndPadding[i]
        window = (flt.sizes[i + 2] - 1) * v.Dilations[i] + 1
        ctx.require(padded >= window, "FilterTensor.Sizes", flt.sizes,
                    f"the dilated filter ({window}) must fit in the padded input ({padded}) "
                    f"along spatial dimension {i}")
        out.append((padded - window) // v.Strides[i] + 1)
    return tuple(out)


def _check_out(ctx: Context, out: Tensor, expected: Sequence[int], name: str = "OutputTensor"
               ) -> None:
    ctx.require(out.sizes == tuple(expected), f"{name}.Sizes", out.sizes,
                f"must be {fmt(tuple(expected))} (computed from the input sizes and attributes)")


# ----------------------------------------------------------------------------------------------
# Convolution and GEMM


def convolution(ctx: Context, v: SimpleNamespace) -> None:
    inp, flt, out = v.InputTensor, v.FilterTensor, v.OutputTensor
    if v.Direction != BACKWARD:
        expected = _forward_conv_sizes(ctx, v, inp, flt)
    else:
        _spatial_count(ctx, v, inp, "InputTensor")
        _rank(ctx, "FilterTensor", flt, inp.dim_count)
        _at_least_one(ctx, "Strides", v.Strides)
        _at_least_one(ctx, "Dilations", v.Dilations)
        ctx.require(v.GroupCount >= 1, "GroupCount", v.GroupCount, "must be at least 1")
        ctx.require(flt.sizes[0] == inp.sizes[1], "FilterTensor.Sizes", flt.sizes,
                    f"for a BACKWARD convolution FilterBatchCount must equal the input channel "
                    f"count {inp.sizes[1]}")
        ctx.require(inp.sizes[1] % v.GroupCount == 0, "GroupCount", v.GroupCount,
                    f"must divide the input channel count {inp.sizes[1]}")
        exp = [inp.sizes[0], flt.sizes[1] * v.GroupCount]
        for i in range(v.DimensionCount):
            window = (flt.sizes[i + 2] - 1) * v.Dilations[i] + 1
            full = (inp.sizes[i + 2] - 1) * v.Strides[i] + window + v.OutputPadding[i]
            trimmed = full - v.StartPadding[i] - v.EndPadding[i]
            ctx.require(trimmed >= 1, "EndPadding", v.EndPadding,
                        f"the padding removes the whole output along spatial dimension {i}")
            exp.append(trimmed)
        expected = tuple(exp)
    _check_out(ctx, out, expected)
    if v.BiasTensor is not None:
        bias = (1, out.sizes[1]) + (1,) * (out.dim_count - 2)
        ctx.require(v.BiasTensor.sizes == bias, "BiasTensor.Sizes", v.BiasTensor.sizes,
                    f"must be {{1, OutputChannelCount, 1, ..}} = {fmt(tuple(bias))}")


def gemm(ctx: Context, v: SimpleNamespace) -> None:
    """The matrix sizes; the fused activation's own rules: SOFTMAX1's Axes (6_1) index the
    output's dimensions (as the standalone operator's index its input's); the other
    activations' attributes as for every fusing host."""
    _matmul(ctx, v.ATensor, v.BTensor, v.OutputTensor, trans_a=v.TransA == TRANSPOSE,
            trans_b=v.TransB == TRANSPOSE)
    fused = v.FusedActivation
    if fused is None or fused.operator == DML_OPERATOR_TYPE.DML_OPERATOR_ACTIVATION_SOFTMAX:
        return
    if fused.operator != DML_OPERATOR_TYPE.DML_OPERATOR_ACTIVATION_SOFTMAX1:
        check_fused(ctx, fused)
        return
    rank, axes = v.OutputTensor.dim_count, tuple(fused.values.Axes)
    ctx.require(len(axes) >= 1, "FusedActivation.Desc.AxisCount", len(axes),
                "at least one axis must be given")
    for i, a in enumerate(axes):
        ctx.require(a < rank, f"FusedActivation.Desc.Axes[{i}]", a,
                    f"must be in [0, OutputTensor.DimensionCount - 1] = [0, {rank - 1}]")


# ----------------------------------------------------------------------------------------------
# Pooling


def pooling(ctx: Context, v: SimpleNamespace) -> None:
    """AVERAGE/LP/MAX_POOLING(1, 2), QUANTIZED_LINEAR_AVERAGE_POOLING: the output sizes."""
    _check_out(ctx, v.OutputTensor, _pooled_sizes(ctx, v, v.InputTensor, "InputTensor"))


def lp_pooling_p(ctx: Context, v: SimpleNamespace) -> None:
    ctx.require(v.P >= 1, "P", v.P, "must be at least 1 (the result is raised to 1/P)")


def max_pooling_indices(ctx: Context, v: SimpleNamespace) -> None:
    """The indices tensor has the OutputTensor's sizes (one index per pooled value)."""
    if v.OutputIndicesTensor is not None:
        same(ctx, "OutputTensor", "OutputIndicesTensor", "Sizes", v.OutputTensor.sizes,
             v.OutputIndicesTensor.sizes)


def average_pooling_grad(ctx: Context, v: SimpleNamespace) -> None:
    expected = _pooled_sizes(ctx, v, v.OutputGradientTensor, "OutputGradientTensor")
    _check_out(ctx, v.InputGradientTensor, expected, "InputGradientTensor")


def max_pooling_grad(ctx: Context, v: SimpleNamespace) -> None:
    expected = _pooled_sizes(ctx, v, v.InputTensor, "InputTensor")
    _check_out(ctx, v.InputGradientTensor, expected, "InputGradientTensor")


def quantized_linear_average_pooling(ctx: Context, v: SimpleNamespace) -> None:
    channels = v.InputTensor.sizes[1]
    for name in ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor",
                 "OutputZeroPointTensor"):
        _require_per_channel(ctx, name, getattr(v, name), channels, "ChannelCount")


# ----------------------------------------------------------------------------------------------
# Integer and quantized matrix multiply / convolution


def matrix_multiply_integer(ctx: Context, v: SimpleNamespace) -> None:
    m, n = _matmul(ctx, v.ATensor, v.BTensor, v.OutputTensor)
    _require_per_row(ctx, "AZeroPointTensor", v.AZeroPointTensor, m)
    _require_per_column(ctx, "BZeroPointTensor", v.BZeroPointTensor, n)


def matrix_multiply_integer_to_float(ctx: Context, v: SimpleNamespace) -> None:
    m, n = _matmul(ctx, v.ATensor, v.BTensor, v.OutputTensor)
    _require_per_row(ctx, "AScaleTensor", v.AScaleTensor, m)
    _require_per_row(ctx, "AZeroPointTensor", v.AZeroPointTensor, m)
    _require_per_column(ctx, "BScaleTensor", v.BScaleTensor, n)
    _require_per_column(ctx, "BZeroPointTensor", v.BZeroPointTensor, n)


def convolution_integer(ctx: Context, v: SimpleNamespace) -> None:
    expected = _forward_conv_sizes(ctx, v, v.InputTensor, v.FilterTensor)
    _check_out(ctx, v.OutputTensor, expected)
    _require_per_tensor(ctx, "InputZeroPointTensor", v.InputZeroPointTensor)
    _require_per_channel(ctx, "FilterZeroPointTensor", v.FilterZeroPointTensor,
                         v.FilterTensor.sizes[0], "OutputChannelCount")


def quantized_linear_convolution(ctx: Context, v: SimpleNamespace) -> None:
    expected = _forward_conv_sizes(ctx, v, v.InputTensor, v.FilterTensor)
    _check_out(ctx, v.OutputTensor, expected)
    for name in ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor",
                 "OutputZeroPointTensor"):
        _require_per_tensor(ctx, name, getattr(v, name))
    oc = v.FilterTensor.sizes[0]
    for name in ("FilterScaleTensor", "FilterZeroPointTensor"):
        _require_per_channel(ctx, name, getattr(v, name), oc, "OutputChannelCount")
    if v.BiasTensor is not None:
        bias = (1, oc) + (1,) * (v.OutputTensor.dim_count - 2)
        ctx.require(v.BiasTensor.sizes == bias, "BiasTensor.Sizes", v.BiasTensor.sizes,
                    f"must be {{1, OutputChannelCount, 1, ..}} = {fmt(tuple(bias))}")


# ----------------------------------------------------------------------------------------------
# Recurrent networks


def _recurrent(ctx: Context, v: SimpleNamespace, gates: int, bias_gates: int,
               activations_per_direction: int, state_tensors: Sequence[str] = (),
               other_inputs: Sequence[str] = ()) -> tuple[int, int]:
    """Shared RNN/LSTM/GRU size rules; returns (num_directions, hidden_size)."""
    d = 2 if v.Direction == BIDIRECTIONAL else 1
    x, w, r = v.InputTensor, v.WeightTensor, v.RecurrenceTensor
    _rank(ctx, "InputTensor", x, 4)
    _rank(ctx, "WeightTensor", w, 4)
    ctx.require(x.sizes[0] == 1, "InputTensor.Sizes", x.sizes,
                "must be {1, seq_length, batch_size, input_size}")
    seq, batch, input_size = x.sizes[1:]
    ctx.require(w.sizes[0] == 1 and w.sizes[1] == d and w.sizes[2] % gates == 0
                and w.sizes[2] >= gates and w.sizes[3] == input_size, "WeightTensor.Sizes",
                w.sizes, f"must be {{1, num_directions = {d}, {gates} * hidden_size, "
                f"input_size = {input_size}}}")
    hidden = w.sizes[2] // gates
    _check_out(ctx, r, (1, d, gates * hidden, hidden), "RecurrenceTensor")
    if v.BiasTensor is not None:
        _check_out(ctx, v.BiasTensor, (1, 1, d, bias_gates * hidden), "BiasTensor")
    for name in ("HiddenInitTensor", "OutputSingleTensor", *state_tensors):
        t = getattr(v, name)
        if t is not None:
            _check_out(ctx, t, (1, d, batch, hidden), name)
    if v.SequenceLengthsTensor is not None:
        _check_out(ctx, v.SequenceLengthsTensor, (1, 1, 1, batch), "SequenceLengthsTensor")
    if v.OutputSequenceTensor is not None:
        _check_out(ctx, v.OutputSequenceTensor, (seq, d, batch, hidden), "OutputSequenceTensor")
    count = activations_per_direction * d
    given = len(v.ActivationDescs)
    ctx.require(given == count, "ActivationDescCount", given,
                f"must be {count}: {activations_per_direction} activation(s) per direction, "
                f"{d} direction(s)")
    for name in ("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor",
                 "HiddenInitTensor", "SequenceLengthsTensor", *other_inputs):
        t = getattr(v, name)
        if t is not None:
            ctx.require(not t.owned_by_dml, f"{name}.Flags", t.flags,
                        "this input does not support DML_TENSOR_FLAG_OWNED_BY_DML")
    return d, hidden


def rnn(ctx: Context, v: SimpleNamespace) -> None:
    _recurrent(ctx, v, gates=1, bias_gates=2, activations_per_direction=1)


def gru(ctx: Context, v: SimpleNamespace) -> None:
    _recurrent(ctx, v, gates=3, bias_gates=6, activations_per_direction=2)


def lstm(ctx: Context, v: SimpleNamespace) -> None:
    d, hidden = _recurrent(ctx, v, gates=4, bias_gates=8, activations_per_direction=3,
                           state_tensors=("CellMemInitTensor", "OutputCellSingleTensor"),
                           other_inputs=("CellMemInitTensor", "PeepholeTensor"))
    if v.PeepholeTensor is not None:
        _check_out(ctx, v.PeepholeTensor, (1, 1, d, 3 * hidden), "PeepholeTensor")
    if v.UseClipThreshold:
        ctx.require(v.ClipThreshold > 0, "ClipThreshold", v.ClipThreshold,
                    "must be positive when UseClipThreshold is set")


# ----------------------------------------------------------------------------------------------
# Multi-head attention


def _strip_leading_ones(ctx: Context, name: str, t: Tensor, rank: int) -> tuple[int, ...]:
    _rank(ctx, name, t, rank, 5)
    extra = t.dim_count - rank
    ctx.require(all(s == 1 for s in t.sizes[:extra]), f"{name}.Sizes", t.sizes,
                f"beyond {rank} dimensions, the leading dimensions must be 1")
    return t.sizes[extra:]


def _attention(ctx: Context, v: SimpleNamespace, q_heads: int, kv_heads: int,
               q_heads_field: str, kv_heads_field: str) -> None:
    q, k, val = v.QueryTensor, v.KeyTensor, v.ValueTensor
    sqk, skv, sqkv = v.StackedQueryKeyTensor, v.StackedKeyValueTensor, v.StackedQueryKeyValueTensor
    present = {n for n in ("QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor",
                           "StackedKeyValueTensor", "StackedQueryKeyValueTensor")
               if getattr(v, n) is not None}
    layouts = ({"QueryTensor", "KeyTensor", "ValueTensor"},
               {"StackedQueryKeyTensor", "ValueTensor"},
               {"QueryTensor", "StackedKeyValueTensor"},
               {"StackedQueryKeyValueTensor"})
    if present not in layouts:
        ctx.fail("QueryTensor", q, "exactly one query, one key and one value source must be "
                 "given: Query+Key+Value, StackedQueryKey+Value, Query+StackedKeyValue, or "
                 f"StackedQueryKeyValue alone (given: {sorted(present)})")
    # query: batch, sequence length, head size (d); keys: kvSequence; values: head size (dv)
    kv_seq = dv = -1
    if sqkv is not None or sqk is not None:
        st = sqkv if sqkv is not None else sqk
        name = "StackedQueryKeyValueTensor" if sqkv is not None else "StackedQueryKeyTensor"
        assert st is not None
        _rank(ctx, name, st, 5)
        stack = 3 if sqkv is not None else 2
        ctx.require(st.sizes[2] == q_heads and st.sizes[3] == stack, f"{name}.Sizes", st.sizes,
                    f"must be {{batch, sequence, {q_heads_field} = {q_heads}, {stack}, "
                    "headSize}")
        ctx.require(q_heads == kv_heads, kv_heads_field, kv_heads,
                    f"must equal {q_heads_field} = {q_heads} with {name} (one head count "
                    "for the stacked queries and keys)")
        batch, seq, d = st.sizes[0], st.sizes[1], st.sizes[4]
        kv_seq = seq
        if sqkv is not None:
            dv = d
    else:
        assert q is not None
        batch, seq, hidden = _strip_leading_ones(ctx, "QueryTensor", q, 3)
        ctx.require(hidden % q_heads == 0, q_heads_field, q_heads,
                    f"must divide the query hidden size {hidden}")
        d = hidden // q_heads
    # key/value batch
    if skv is not None:
        _rank(ctx, "StackedKeyValueTensor", skv, 5)
        ctx.require(skv.sizes[2] == kv_heads and skv.sizes[3] == 2, "StackedKeyValueTensor.Sizes",
                    skv.sizes, f"must be {{batch, kvSequence, {kv_heads_field} = {kv_heads}, 2, "
                    "headSize}")
        ctx.require(skv.sizes[0] == batch and skv.sizes[4] == d, "StackedKeyValueTensor.Sizes",
                    skv.sizes, f"must be {{batch = {batch}, kvSequence, {kv_heads}, 2, "
                    f"headSize = {d}}} (the query's batch and head size)")
        kv_seq, dv = skv.sizes[1], d
    for name, what, t in (("KeyTensor", "key", k), ("ValueTensor", "value", val)):
        if t is None:
            continue
        tb, t_seq, thidden = _strip_leading_ones(ctx, name, t, 3)
        ctx.require(tb == batch, f"{name}.Sizes", t.sizes,
                    f"the batch size must equal the query's {batch}")
        ctx.require(thidden % kv_heads == 0, kv_heads_field, kv_heads,
                    f"must divide the {what} hidden size {thidden}")
        if t is k:
            ctx.require(thidden == kv_heads * d, f"{name}.Sizes", t.sizes,
                        f"must be {{{batch}, kvSequence, {kv_heads_field} x the query's head "
                        f"size = {kv_heads * d}}}")
            kv_seq = t_seq
        else:
            ctx.require(t_seq == kv_seq, f"{name}.Sizes", t.sizes,
                        f"its sequence length must equal the keys' {kv_seq}")
            dv = thidden // kv_heads
    out = _strip_leading_ones(ctx, "OutputTensor", v.OutputTensor, 3)
    ctx.require(out[0] == batch and out[1] == seq and out[2] == q_heads * dv,
                "OutputTensor.Sizes", v.OutputTensor.sizes,
                f"must be {{batch = {batch}, sequence = {seq}, {q_heads_field} x value head "
                f"size = {q_heads * dv}}}")
    _attention_extras(ctx, v, batch, seq, kv_seq, q_heads, kv_heads, d, dv)
    # optional tensors that go together
    ctx.require((v.MaskTensor is None) == (v.MaskType == MASK_NONE), "MaskType", v.MaskType,
                "must be DML_MULTIHEAD_ATTENTION_MASK_TYPE_NONE exactly when MaskTensor is null")
    ctx.require((v.PastKeyTensor is None) == (v.PastValueTensor is None), "PastValueTensor",
                v.PastValueTensor, "PastKeyTensor and PastValueTensor must be given together")
    ctx.require((v.OutputPresentKeyTensor is None) == (v.OutputPresentValueTensor is None),
                "OutputPresentValueTensor", v.OutputPresentValueTensor,
                "OutputPresentKeyTensor and OutputPresentValueTensor must be given together")


def _broadcasts(t: Tensor, to: tuple[int, ...]) -> bool:
    """NumPy's rule: sizes aligned on the right, each 1 or the target's; extra leading 1s."""
    extra = t.dim_count - len(to)
    if extra > 0 and any(n != 1 for n in t.sizes[:extra]):
        return False
    tail = t.sizes[max(extra, 0):]
    return all(n in (1, m) for n, m in zip(tail, to[len(to) - len(tail):]))


def _attention_extras(ctx: Context, v: SimpleNamespace, batch: int, seq: int, kv_seq: int,
                      q_heads: int, kv_heads: int, d: int, dv: int) -> None:
    """The optional tensors' shapes, from the sizes the inputs give (ONNX Runtime's provider
    checks the same relations before it builds a desc)."""
    if v.BiasTensor is not None:
        bias = _strip_leading_ones(ctx, "BiasTensor", v.BiasTensor, 1)
        want = q_heads * d + kv_heads * d + kv_heads * dv
        ctx.require(bias[0] == want, "BiasTensor.Sizes", v.BiasTensor.sizes,
                    f"must hold the query's, the key's and the value's biases: {q_heads * d} + "
                    f"{kv_heads * d} + {kv_heads * dv} = {want} elements")
    past = 0
    if v.PastKeyTensor is not None and v.PastValueTensor is not None:
        pk = _strip_leading_ones(ctx, "PastKeyTensor", v.PastKeyTensor, 4)
        pv = _strip_leading_ones(ctx, "PastValueTensor", v.PastValueTensor, 4)
        past = pk[2]
        ctx.require(pk[:2] == (batch, kv_heads) and pk[3] == d, "PastKeyTensor.Sizes",
                    v.PastKeyTensor.sizes, f"must be {{batch = {batch}, {kv_heads} key/value "
                    f"heads, pastSequence, headSize = {d}}}")
        ctx.require(pv == (batch, kv_heads, past, dv), "PastValueTensor.Sizes",
                    v.PastValueTensor.sizes, f"must be {{{batch}, {kv_heads}, {past} (the past "
                    f"keys'), value head size = {dv}}}")
    total = past + kv_seq
    lengths = getattr(v, "PastSequenceLengthsTensor", None)
    cache = lengths is not None and v.PastKeyTensor is None  # the past lives in the present
    if lengths is not None:
        ctx.require(lengths.data_type in (DML_TENSOR_DATA_TYPE.DML_TENSOR_DATA_TYPE_INT32,
                                          v.OutputTensor.data_type),
                    "PastSequenceLengthsTensor.DataType", lengths.data_type.name,
                    f"must be INT32 (as ONNX Runtime passes it) or the OutputTensor's "
                    f"{v.OutputTensor.data_type.name} (the page's table)")
        ctx.require(lengths.sizes[-1] == batch and lengths.element_count == batch,
                    "PastSequenceLengthsTensor.Sizes", lengths.sizes,
                    f"must hold one past length per batch item: {{batch = {batch}}} (leading "
                    "1s allowed)")
    if v.OutputPresentKeyTensor is not None and v.OutputPresentValueTensor is not None:
        for name, size in (("OutputPresentKeyTensor", d), ("OutputPresentValueTensor", dv)):
            t = getattr(v, name)
            got = _strip_leading_ones(ctx, name, t, 4)
            if cache and name == "OutputPresentKeyTensor":
                # a KV cache: any capacity that holds the current keys, the values' the same
                ctx.require(got[:2] == (batch, kv_heads) and got[2] >= kv_seq and
                            got[3] == size, f"{name}.Sizes", t.sizes,
                            f"must be {{{batch}, {kv_heads}, capacity >= kvSequence = {kv_seq}, "
                            f"{size}}} (the KV cache PastSequenceLengthsTensor indexes)")
                total = got[2]
            else:
                ctx.require(got == (batch, kv_heads, total, size), f"{name}.Sizes", t.sizes,
                            f"must be {{{batch}, {kv_heads}, past + kvSequence = {total}, "
                            f"{size}}}")
    scores = (batch, q_heads, seq, total)
    rpb = v.RelativePositionBiasTensor
    if rpb is not None:
        ctx.require(_broadcasts(rpb, scores), "RelativePositionBiasTensor.Sizes", rpb.sizes,
                    f"must broadcast to {{batch, heads, sequence, past + kvSequence}} = "
                    f"{list(scores)}")
    m = v.MaskTensor
    if m is None:
        return
    if v.MaskType == MASK_BOOLEAN:
        ctx.require(_broadcasts(m, scores), "MaskTensor.Sizes", m.sizes,
                    f"a boolean mask must broadcast to {{batch, heads, sequence, past + "
                    f"kvSequence}} = {list(scores)}")
    elif v.MaskType in MASK_ROWS:
        rows = MASK_ROWS[v.MaskType]
        ctx.require(m.sizes[-1] == batch and m.element_count == rows * batch, "MaskTensor.Sizes",
                    m.sizes, f"must be {{{rows}, batch = {batch}}} for {v.MaskType.name}")
    elif v.MaskType == MASK_RANGES:  # the page's layout: 3 * batch + 2 values in one row
        n = 3 * batch + 2
        ctx.require(m.sizes[-1] == n and m.element_count == n, "MaskTensor.Sizes", m.sizes,
                    f"must be {{3 x batch + 2 = {n}}} (leading 1s allowed) for "
                    f"{v.MaskType.name}")


def multihead_attention(ctx: Context, v: SimpleNamespace) -> None:
    ctx.require(v.HeadCount >= 1, "HeadCount", v.HeadCount, "must be at least 1")
    _attention(ctx, v, v.HeadCount, v.HeadCount, "HeadCount", "HeadCount")


def multihead_attention1(ctx: Context, v: SimpleNamespace) -> None:
    ctx.require(v.QueryHeadCount >= 1, "QueryHeadCount", v.QueryHeadCount, "must be at least 1")
    ctx.require(v.KeyValueHeadCount >= 1, "KeyValueHeadCount", v.KeyValueHeadCount,
                "must be at least 1")
    ctx.require(v.QueryHeadCount % v.KeyValueHeadCount == 0, "QueryHeadCount", v.QueryHeadCount,
                f"must be a multiple of KeyValueHeadCount = {v.KeyValueHeadCount} "
                "(each key/value head serves a whole group of query heads)")
    _attention(ctx, v, v.QueryHeadCount, v.KeyValueHeadCount, "QueryHeadCount",
               "KeyValueHeadCount")
