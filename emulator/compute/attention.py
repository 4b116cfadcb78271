"""Multi-head attention (issue 17): DML_OPERATOR_MULTIHEAD_ATTENTION (6_1) and
DML_OPERATOR_MULTIHEAD_ATTENTION1 (6_3) as rows of the compute family, on the BLAS of
``blas.py`` and a FLOAT32 softmax (``attention_kernels.py``).

The page's decomposition, for every batch item b and query head h (MULTIHEAD_ATTENTION1's
KeyValueHeadCount groups the query heads: head h reads key/value head h // (Hq / Hkv)):

    [Q, K, V += Bias] -> S = Scale * Q x K^T -> [S += RelativePositionBias] -> [mask]
      -> P = softmax over the keys -> O = P x V, stored as Output[b, i, h * headSize + e]

- **Inputs**: Query/Key/Value {batch, sequence, heads x headSize} (leading 1s up to 5-D), or
  stacked on the fourth of five dimensions: StackedQueryKey {b, s, H, 2, d} + Value,
  Query + StackedKeyValue {b, kvs, H, 2, d}, StackedQueryKeyValue {b, s, H, 3, d}. The Bias
  {Hq*d + Hkv*d + Hkv*dv} is the query's, key's and value's, each laid out (head, element).
  PastKey/PastValue {b, Hkv, past, d} come before the current keys/values (the concatenated
  sequence is what the queries attend to, and what OutputPresentKey/Value receive).
- **Masks** (MaskFilterValue f; positions index the past + current keys): BOOLEAN, an INT32
  tensor broadcast (NumPy's rule, by its sizes and strides) to {b, Hq, s, keys}, as is the
  RelativePositionBias: where the mask is 0, f is *added* to the score;
  KEY_SEQUENCE_LENGTH {1, b}: keys at or after the length are *set* to f; KEY_SEQUENCE_END_START
  {2, b} (ends, then starts): keys outside [start, end) are *set* to f (the page's words: "added"
  for the boolean mask, "set" for the others; docs/decisions.md, "Attention").
  KEY_QUERY_SEQUENCE_LENGTH_START_END {3b + 2}: [keyLength[b], queryStart[b] + queryEnd,
  keyStart[b] + keyEnd] locate sequences on the batch's flat {b x seq} query and {b x keys}
  key axes (ONNX Runtime's layout for its memory-efficient kernels): sequence c's queries
  attend to its keys [keyStart[c], keyStart[c] + keyLength[c]) only, possibly another batch
  item's (the packed keys are laid out {heads, b, keys, size} so each head's flat axis is one
  matrix); a query row in no sequence, or a sequence without keys, outputs 0.
- **Computation**: FLOAT32 (FLOAT16 widened exactly), one rounding at each store. Operands the
  BLAS can read as they lie (FLOAT32, no bias, no past, one unit stride per head matrix) are
  passed as they are, others packed once per dispatch into dense FLOAT32 copies. Work is cut
  into tasks of (batch, head, block of query rows) from the shape alone; each task runs a
  single-threaded ``?gemm`` for the scores (Scale as alpha), adds the bias and mask in place,
  takes exp(x - rowmax) (vectorised float32 exp), multiplies by V with a second ``?gemm`` and
  divides each row by its sum. The tasks are ``attention_kernels.attention_task``, a task
  kernel on the worker pool (``_launch``); what it does not take (the
  KEY_QUERY_SEQUENCE_LENGTH_START_END mask, a FLOAT16 RelativePositionBias, no callable BLAS)
  runs as Python tasks on a thread pool with NumPy's row maxima and sums. The bytes do not
  depend on the thread count.
- **PastSequenceLengthsTensor** (MULTIHEAD_ATTENTION1; its page says "TBD"; read as ONNX
  Runtime's GroupQueryAttention uses it, docs/decisions.md): a causal KV cache. Item b's keys
  are the first L[b] rows of the past (PastKey/PastValue, or without them the present
  tensors' own rows: the cache) then its current keys; query i sits at key position
  L[b] + kvSequence - sequence + i and sees the keys up to it. The present tensors receive the
  current rows after the past ones; their later rows are not written.
- **Not executed** (valid, E_NOTIMPL at CompileOperator): KEY_QUERY_SEQUENCE_LENGTH_START_END
  together with PastSequenceLengthsTensor, and shapes whose relations the validation does not
  check yet and this plan cannot interpret (``unsupported`` names them).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_MULTIHEAD_ATTENTION_MASK_TYPE as MASK
from descriptors import DML_OPERATOR_TYPE as OP
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..family import Row
from ..ops.common import ieee_reference
from ..resources import scratch, typed_view
from .matmul import Spare, blas_layout

F32 = np.dtype(np.float32)
RANGES = MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_QUERY_SEQUENCE_LENGTH_START_END
# FLOAT32/FLOAT16 tensors; INT32 is the mask's (the bands give it no other tensor)
KERNEL_TYPES = (T.DML_TENSOR_DATA_TYPE_FLOAT32, T.DML_TENSOR_DATA_TYPE_FLOAT16,
                T.DML_TENSOR_DATA_TYPE_INT32)
SCORES = 1 << 18  # elements of one task's score block (1 MB of FLOAT32: stays in L2)
KERNEL = True  # the task kernel where it applies; False: Python tasks (tools/ab_levers.py)
INPUTS = ("QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor",
          "StackedKeyValueTensor", "StackedQueryKeyValueTensor", "BiasTensor", "MaskTensor",
          "RelativePositionBiasTensor", "PastKeyTensor", "PastValueTensor")


class UnsupportedError(Exception):
    """A desc this plan cannot interpret (its message says why)."""


@dataclass(frozen=True)
class Src:
    """One logical 4-D operand {batch, heads, rows, cols} inside a bound tensor: the bind point,
    the element offset and element strides (a stacked slot is an offset)."""

    name: str
    dtype: np.dtype
    offset: int
    sizes: tuple[int, ...]  # 4
    strides: tuple[int, ...]

    def view(self, regions: Mapping[str, np.ndarray]) -> np.ndarray:
        data = typed_view(regions[self.name], self.dtype)[self.offset:]
        item = self.dtype.itemsize
        return np.lib.stride_tricks.as_strided(data, self.sizes, [s * item for s in self.strides],
                                               writeable=False)

    def direct(self) -> bool:
        """Whether the BLAS can read each head's matrix as it lies."""
        return self.dtype == F32 and blas_layout(*self.sizes[2:], *self.strides[2:]) is not None


def _tail(t: Any, rank: int, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The last ``rank`` sizes and strides of a tensor whose leading dimensions are 1."""
    extra = t.dim_count - rank
    if extra < 0 or any(s != 1 for s in t.sizes[:extra]):
        raise UnsupportedError(f"{name}.Sizes = {list(t.sizes)} is not {rank}-D after leading 1s")
    return tuple(t.sizes[extra:]), tuple(t.strides[extra:])


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise UnsupportedError(what)


def _broadcast(t: Any, target: tuple[int, ...], name: str) -> tuple[int, ...]:
    """Element strides that broadcast ``t`` to ``target`` by NumPy's rule (sizes right-aligned,
    a size-1 dimension repeated, extra leading dimensions of 1)."""
    sizes, strides = list(t.sizes), list(t.strides)
    while len(sizes) > len(target):
        _need(sizes[0] == 1, f"{name}.Sizes = {list(t.sizes)} does not broadcast to "
              f"{list(target)}")
        sizes.pop(0)
        strides.pop(0)
    sizes = [1] * (len(target) - len(sizes)) + sizes
    strides = [0] * (len(target) - len(strides)) + strides
    out = []
    for n, s, want in zip(sizes, strides, target):
        _need(n in (1, want), f"{name}.Sizes = {list(t.sizes)} does not broadcast to "
              f"{list(target)}")
        out.append(s if n == want and want > 1 else 0)
    return tuple(out)


def _heads(v: SimpleNamespace) -> tuple[int, int]:
    if hasattr(v, "HeadCount"):
        return v.HeadCount, v.HeadCount
    return v.QueryHeadCount, v.KeyValueHeadCount


@dataclass(frozen=True)
class Shape:
    """What a desc describes: the operand sources and the sizes of the computation."""

    batch: int
    hq: int
    hkv: int
    seq: int
    kv_seq: int
    past: int
    d: int
    dv: int
    q: Src
    k: Src
    v: Src
    out: Src
    bias: tuple[Src, Src, Src] | None
    past_kv: tuple[Src, Src] | None
    present: tuple[Src, Src] | None
    rpb: Src | None
    mask: Src | None  # BOOLEAN: broadcast to {b, Hq, s, total}; else the raw INT32 rows
    mask_type: MASK
    lengths: Src | None = None  # PastSequenceLengthsTensor {1, 1, 1, b}: a causal KV cache
    cache: bool = False  # the past is read from the present tensors (no PastKeyTensor)

    @property
    def total(self) -> int:
        return self.past + self.kv_seq


def describe(v: SimpleNamespace) -> Shape:
    """The shapes of a validated desc, or ``UnsupportedError``."""
    hq, hkv = _heads(v)
    dt = v.OutputTensor.dtype
    lengths_t = getattr(v, "PastSequenceLengthsTensor", None)
    if lengths_t is not None and v.MaskType == RANGES:
        raise UnsupportedError("MaskType KEY_QUERY_SEQUENCE_LENGTH_START_END with a "
                               "PastSequenceLengthsTensor is not executed (no client builds it "
                               "and neither page says how the two combine)")
    stacked = v.StackedQueryKeyValueTensor if v.StackedQueryKeyValueTensor is not None \
        else v.StackedQueryKeyTensor
    k_src = v_src = None
    if stacked is not None:
        name = "StackedQueryKeyValueTensor" if v.StackedQueryKeyValueTensor is not None \
            else "StackedQueryKeyTensor"
        (b, s, h, _, d), st = _tail(stacked, 5, name)
        _need(h == hkv, f"{name} stacks {h} heads for the keys, KeyValueHeadCount is {hkv}")
        slot = [Src(name, dt, i * st[3], (b, h, s, d), (st[0], st[2], st[1], st[4]))
                for i in range(stacked.sizes[-2])]
        q_src, k_src = slot[0], slot[1]
        if len(slot) == 3:
            v_src = slot[2]
        kv_seq = s
    else:
        (b, s, hidden), st = _tail(v.QueryTensor, 3, "QueryTensor")
        d = hidden // hq
        q_src = Src("QueryTensor", dt, 0, (b, hq, s, d), (st[0], d * st[2], st[1], st[2]))
        kv_seq = -1
    if v.StackedKeyValueTensor is not None:
        (b2, kv_seq, h, _, d2), st = _tail(v.StackedKeyValueTensor, 5, "StackedKeyValueTensor")
        _need(b2 == b and d2 == d, f"StackedKeyValueTensor.Sizes = "
              f"{list(v.StackedKeyValueTensor.sizes)} must be {{{b}, kvSequence, {hkv}, 2, {d}}}")
        k_src, v_src = [Src("StackedKeyValueTensor", dt, i * st[3], (b, h, kv_seq, d),
                            (st[0], st[2], st[1], st[4])) for i in (0, 1)]
    if v.KeyTensor is not None:
        (b2, kv_seq, hidden), st = _tail(v.KeyTensor, 3, "KeyTensor")
        _need(b2 == b and hidden == hkv * d, f"KeyTensor.Sizes = {list(v.KeyTensor.sizes)} "
              f"must be {{{b}, kvSequence, {hkv * d}}} (key heads x the query's head size)")
        k_src = Src("KeyTensor", dt, 0, (b, hkv, kv_seq, d), (st[0], d * st[2], st[1], st[2]))
    if v.ValueTensor is not None:
        (b2, kv2, hidden), st = _tail(v.ValueTensor, 3, "ValueTensor")
        _need(b2 == b and kv2 == kv_seq and hidden % hkv == 0,
              f"ValueTensor.Sizes = {list(v.ValueTensor.sizes)} must be {{{b}, {kv_seq}, "
              f"{hkv} x valueHeadSize}}")
        dv = hidden // hkv
        v_src = Src("ValueTensor", dt, 0, (b, hkv, kv_seq, dv), (st[0], dv * st[2], st[1], st[2]))
    assert k_src is not None and v_src is not None  # the validated input layouts
    dv = v_src.sizes[3]
    (_, _, hidden), st = _tail(v.OutputTensor, 3, "OutputTensor")
    _need(hidden == hq * dv, f"OutputTensor.Sizes = {list(v.OutputTensor.sizes)} must be "
          f"{{{b}, {s}, {hq * dv}}} (query heads x value head size)")
    out = Src("OutputTensor", dt, 0, (b, hq, s, dv), (st[0], dv * st[2], st[1], st[2]))
    bias = None
    if v.BiasTensor is not None:
        (n,), (bs,) = _tail(v.BiasTensor, 1, "BiasTensor")
        _need(n == hq * d + hkv * d + hkv * dv, f"BiasTensor.Sizes = {list(v.BiasTensor.sizes)} "
              f"must hold {hq * d} + {hkv * d} + {hkv * dv} elements")
        bias = (Src("BiasTensor", dt, 0, (1, hq, 1, d), (0, d * bs, 0, bs)),
                Src("BiasTensor", dt, hq * d * bs, (1, hkv, 1, d), (0, d * bs, 0, bs)),
                Src("BiasTensor", dt, (hq + hkv) * d * bs, (1, hkv, 1, dv), (0, dv * bs, 0, bs)))
    past = 0
    past_kv = None
    if v.PastKeyTensor is not None:
        (pb, ph, past, pd), pk = _tail(v.PastKeyTensor, 4, "PastKeyTensor")
        (vb, vh, vp, vd), pv = _tail(v.PastValueTensor, 4, "PastValueTensor")
        _need((pb, ph, pd, vb, vh, vp, vd) == (b, hkv, d, b, hkv, past, dv),
              f"PastKeyTensor/PastValueTensor must be {{{b}, {hkv}, past, {d}}} and "
              f"{{{b}, {hkv}, past, {dv}}}")
        past_kv = (Src("PastKeyTensor", dt, 0, (b, hkv, past, d), pk),
                   Src("PastValueTensor", dt, 0, (b, hkv, past, dv), pv))
    lengths = None
    cache = False
    if lengths_t is not None:
        lengths = Src("PastSequenceLengthsTensor", lengths_t.dtype, 0, (1, 1, 1, b),
                      (0, 0, 0, lengths_t.strides[-1]))
        if past_kv is None and v.OutputPresentKeyTensor is not None:
            cache = True  # the past is what the present tensors hold: their capacity's rest
            past = _tail(v.OutputPresentKeyTensor, 4, "OutputPresentKeyTensor")[0][2] - kv_seq
    total = past + kv_seq
    present = None
    if v.OutputPresentKeyTensor is not None:
        sk, pk = _tail(v.OutputPresentKeyTensor, 4, "OutputPresentKeyTensor")
        sv, pv = _tail(v.OutputPresentValueTensor, 4, "OutputPresentValueTensor")
        _need(sk == (b, hkv, total, d) and sv == (b, hkv, total, dv),
              f"OutputPresentKeyTensor/OutputPresentValueTensor must be {{{b}, {hkv}, {total}, "
              f"{d}}} and {{{b}, {hkv}, {total}, {dv}}}")
        present = (Src("OutputPresentKeyTensor", dt, 0, (b, hkv, total, d), pk),
                   Src("OutputPresentValueTensor", dt, 0, (b, hkv, total, dv), pv))
    scores = (b, hq, s, total)
    rpb = None
    if v.RelativePositionBiasTensor is not None:
        rpb = Src("RelativePositionBiasTensor", dt, 0, scores,
                  _broadcast(v.RelativePositionBiasTensor, scores, "RelativePositionBiasTensor"))
    mask = None
    m = v.MaskTensor
    i32 = np.dtype(np.int32)
    if v.MaskType == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN:
        mask = Src("MaskTensor", i32, 0, scores, _broadcast(m, scores, "MaskTensor"))
    elif v.MaskType == RANGES:  # 3 * batch + 2 values (validated)
        mask = Src("MaskTensor", i32, 0, (1, 1, 1, 3 * b + 2), (0, 0, 0, m.strides[-1]))
    elif m is not None:
        rows = 1 if v.MaskType == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH \
            else 2
        sizes = tuple(m.sizes)
        _need(sizes[-1] == b and (m.element_count == b * rows),
              f"MaskTensor.Sizes = {list(sizes)} must be {{{rows}, {b}}} for {v.MaskType.name}")
        r_stride = next((st for n, st in zip(sizes[:-1], m.strides[:-1]) if n == rows), 0)
        mask = Src("MaskTensor", i32, 0, (1, 1, rows, b), (0, 0, r_stride, m.strides[-1]))
    return Shape(b, hq, hkv, s, kv_seq, past, d, dv, q_src, k_src, v_src, out, bias, past_kv,
                 present, rpb, mask, v.MaskType, lengths, cache)


def unsupported(v: SimpleNamespace) -> str | None:
    try:
        describe(v)
    except UnsupportedError as e:
        return str(e)
    return None


def _no_overlap(src: Src) -> bool:
    """Whether every addressed element of an output has its own memory (BLAS may write it)."""
    dims = sorted((s, n) for n, s in zip(src.sizes, src.strides) if n > 1)
    extent = 1
    for s, n in dims:
        if s < extent:
            return False
        extent = s * (n - 1) + extent
    return True


def _data(a: np.ndarray | None) -> int:
    """An array's data address (0 for none)."""
    return 0 if a is None else int(a.__array_interface__["data"][0])


def _head(a: np.ndarray) -> np.ndarray:
    """A one-element view at an array's first element: a task launch passes its address."""
    return np.lib.stride_tricks.as_strided(a, (1,), (a.itemsize,))


_pools: dict[tuple[int, int], Any] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    key = (os.getpid(), threads)  # a forked child has none of its parent's threads
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(threads, "dml-emulator-attention")
    return pool


def _gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: float) -> None:
    """c = alpha * a x b on FLOAT32 2-D views: one single-threaded BLAS call where the views'
    strides allow it (the caller packed them so), else NumPy."""
    from . import blas

    m, k = a.shape
    n = b.shape[1]
    la = blas_layout(m, k, a.strides[0] // 4, a.strides[1] // 4)
    lb = blas_layout(k, n, b.strides[0] // 4, b.strides[1] // 4)
    lc = blas_layout(m, n, c.strides[0] // 4, c.strides[1] // 4)
    if la is None or lb is None or lc is None or not blas.direct(F32):
        np.matmul(a, b, out=c)
        if alpha != 1.0:
            c *= np.float32(alpha)
        return
    pa, pb, pc = (x.__array_interface__["data"][0] for x in (a, b, c))
    if lc[0]:  # a column-major target: its transpose is B^T x A^T
        blas.gemm(F32, not lb[0], not la[0], n, m, k, alpha, pb, lb[1], pa, la[1], 0.0, pc,
                  lc[1])
    else:
        blas.gemm(F32, la[0], lb[0], m, n, k, alpha, pa, la[1], pb, lb[1], 0.0, pc, lc[1])


@dataclass(frozen=True, eq=False)
class AttentionPlan:
    """The attention of one desc (module doc)."""

    operator: str
    shape: Shape
    scale: float
    filter: float
    pack_q: bool
    pack_kv: bool
    direct_out: bool
    rows: int  # query rows per task
    spare: Spare = field(default_factory=Spare)

    @classmethod
    def build(cls, v: SimpleNamespace) -> AttentionPlan:
        sh = describe(v)
        pack_q = sh.bias is not None or not sh.q.direct()
        ranges = sh.mask_type == RANGES  # keys are read from one axis across the batch
        pack_kv = sh.bias is not None or sh.past_kv is not None or not sh.k.direct() or \
            not sh.v.direct() or ranges or sh.lengths is not None
        direct_out = sh.out.direct() and _no_overlap(sh.out)
        rows = max(1, min(sh.seq, SCORES // cls.width(sh)))
        op = "DML_OPERATOR_MULTIHEAD_ATTENTION" if hasattr(v, "HeadCount") \
            else "DML_OPERATOR_MULTIHEAD_ATTENTION1"
        return cls(op, sh, float(v.Scale), float(v.MaskFilterValue), pack_q, pack_kv,
                   direct_out, rows)

    @staticmethod
    def width(sh: Shape) -> int:
        """Keys one query row can attend to: its batch item's, or with
        KEY_QUERY_SEQUENCE_LENGTH_START_END any range of the whole batch's key axis."""
        return sh.total * (sh.batch if sh.mask_type == RANGES else 1)

    def tasks(self) -> list[tuple[int, int, int, int]]:
        sh = self.shape
        return [(b, h, r, min(r + self.rows, sh.seq)) for b in range(sh.batch)
                for h in range(sh.hq) for r in range(0, sh.seq, self.rows)]

    def workers(self) -> int:
        import numba

        sh = self.shape
        count = sh.batch * sh.hq * -(-sh.seq // self.rows)
        return max(1, min(numba.get_num_threads(), count))

    def reserve(self) -> dict[str, np.ndarray]:
        kept = self.spare.take()
        if kept is not None and kept["scores"].shape[0] == self.workers():
            return kept
        sh, op = self.shape, self.operator
        out = {"scores": scratch((self.workers(), self.rows, self.width(sh)), F32, op,
                                 "the attention scores")}
        if self.pack_q:
            out["q"] = scratch((sh.batch, sh.hq, sh.seq, sh.d), F32, op, "the packed query")
        if self.pack_kv:
            # laid out {heads, batch, keys, size}: each head's keys one axis over the batch
            out["k"] = scratch((sh.hkv, sh.batch, sh.total, sh.d), F32, op,
                               "the packed keys").transpose(1, 0, 2, 3)
            out["v"] = scratch((sh.hkv, sh.batch, sh.total, sh.dv), F32, op,
                               "the packed values").transpose(1, 0, 2, 3)
        if not self.direct_out:
            out["out"] = scratch((sh.batch, sh.hq, sh.seq, sh.dv), F32, op, "the output")
        return out

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: dict[str, np.ndarray] | None = None) -> None:
        from . import blas
        from .attention_kernels import exp_shifted

        sh = self.shape
        space = reserved if reserved is not None else self.reserve()
        q = self._pack(regions, space, "q", sh.q, 0) if self.pack_q else sh.q.view(regions)
        past = self._past_lengths(regions) if sh.lengths is not None else None
        if self.pack_kv:
            k = self._pack(regions, space, "k", sh.k, 1, past)
            v = self._pack(regions, space, "v", sh.v, 2, past)
        else:
            k, v = sh.k.view(regions), sh.v.view(regions)
        if self.direct_out:
            item = F32.itemsize
            o = np.lib.stride_tricks.as_strided(
                typed_view(regions["OutputTensor"], F32), sh.out.sizes,
                [s * item for s in sh.out.strides])
        else:
            o = space["out"]
        rpb = sh.rpb.view(regions) if sh.rpb is not None else None
        mask = sh.mask.view(regions) if sh.mask is not None else None
        group = sh.hq // sh.hkv
        scale, f = self.scale, np.float32(self.filter)
        boolean = self.shape.mask_type == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN
        if KERNEL and blas.direct(F32) and sh.mask_type != RANGES and (
                sh.rpb is None or sh.rpb.dtype == F32):
            self._launch(q, k, v, o, rpb, mask, past)
            if not self.direct_out:
                self._store(regions, sh.out, o)
            if sh.present is not None:
                self._present(regions, space, k, v, past)
            self.spare.keep(space)
            return
        tasks = self.tasks()
        workers = space["scores"].shape[0]
        if sh.mask_type == RANGES:
            assert mask is not None
            owner, spans = self._ranges(mask[0, 0, 0])
            flat_k = k.transpose(1, 0, 2, 3).reshape(sh.hkv, -1, sh.d)  # views (reserve)
            flat_v = v.transpose(1, 0, 2, 3).reshape(sh.hkv, -1, sh.dv)
            columns = np.arange(flat_k.shape[1]) % sh.total  # a flat key's position

        def task(t: tuple[int, int, int, int], scores: np.ndarray) -> None:
            with np.errstate(all="ignore"):  # per thread: NumPy's error state is a context
                if sh.mask_type == RANGES:
                    ranged(t, scores)
                else:
                    work(t, scores)

        def ranged(t: tuple[int, int, int, int], scores: np.ndarray) -> None:
            """KEY_QUERY_SEQUENCE_LENGTH_START_END: each run of query rows of one sequence
            attends to that sequence's keys on the batch's flat key axis (docs/decisions.md)."""
            b, h, r0, r1 = t
            own = owner[b * sh.seq + r0: b * sh.seq + r1]
            i = r0
            while i < r1:
                c = own[i - r0]
                j = i + 1
                while j < r1 and own[j - r0] == c:
                    j += 1
                out = o[b, h, i:j]
                k0, k1 = spans[c] if c >= 0 else (0, 0)
                if k1 <= k0:  # no key: the empty sum
                    out[...] = 0.0
                else:
                    s = scores[: j - i, : k1 - k0]
                    _gemm(q[b, h, i:j], flat_k[h // group, k0:k1].T, s, scale)
                    if rpb is not None:
                        np.add(s, rpb[b, h, i:j][:, columns[k0:k1]], out=s, casting="unsafe")
                    top = s.max(axis=1, keepdims=True)
                    exp_shifted(s, top)
                    total = s.sum(axis=1, keepdims=True)
                    _gemm(s, flat_v[h // group, k0:k1], out, 1.0)
                    np.divide(out, total, out=out)
                i = j

        def work(t: tuple[int, int, int, int], scores: np.ndarray) -> None:
            b, h, r0, r1 = t
            # the keys: all of the batch item's, or with past lengths its cache's valid rows
            n = sh.total if past is None else int(past[b]) + sh.kv_seq
            s = scores[: r1 - r0, :n]
            _gemm(q[b, h, r0:r1], k[b, h // group, :n].T, s, scale)
            if rpb is not None:
                np.add(s, rpb[b, h, r0:r1, :n], out=s, casting="unsafe")
            if mask is not None:
                if boolean:
                    np.add(s, f, out=s, where=mask[b, h, r0:r1, :n] == 0)
                else:
                    rows = mask[0, 0, :, b]
                    end = min(max(int(rows[0]), 0), sh.total)
                    start = min(max(int(rows[1]), 0), sh.total) if len(rows) > 1 else 0
                    s[:, :start] = f
                    s[:, end:] = f
            if past is not None:  # causal: query i sits at key position n - seq + i
                position = np.arange(r0, r1) + (n - sh.seq)
                np.copyto(s, -np.inf, where=np.arange(n) > position[:, None])
            top = s.max(axis=1, keepdims=True)
            exp_shifted(s, top)  # s = exp(s - top), FLOAT32 within 1 ULP
            total = s.sum(axis=1, keepdims=True)
            out = o[b, h, r0:r1]
            _gemm(s, v[b, h // group, :n], out, 1.0)
            np.divide(out, total, out=out)
            if past is not None and n - sh.seq + r0 < 0:  # rows before every key: the empty sum
                out[: min(r1, sh.seq - n) - r0] = 0.0

        with np.errstate(all="ignore"), blas.single_threaded_calls():
            if workers > 1:
                share = -(-len(tasks) // workers)

                def part(i: int) -> None:
                    for t in tasks[i * share:(i + 1) * share]:
                        task(t, space["scores"][i])

                for future in [_pool(workers).submit(part, i) for i in range(workers)]:
                    future.result()
            else:
                for t in tasks:
                    task(t, space["scores"][0])
            if not self.direct_out:
                self._store(regions, sh.out, o)
            if sh.present is not None:
                self._present(regions, space, k, v, past)
        self.spare.keep(space)

    def _ranges(self, values: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The sequences of a KEY_QUERY_SEQUENCE_LENGTH_START_END mask: for every row of the
        flat {batch x sequence} query axis the sequence it belongs to (-1: none; the lowest
        where ranges overlap), and each sequence's [start, end) on the flat {batch x keys} key
        axis, clamped to the axes."""
        sh = self.shape
        b = sh.batch
        vals = values.astype(np.int64)
        lengths, starts, keys = vals[:b], vals[b:2 * b + 1], vals[2 * b + 1:]
        rows, flat = b * sh.seq, b * sh.total
        owner = np.full(rows, -1, np.int64)
        spans = []
        for c in range(b):
            k0 = min(max(int(keys[c]), 0), flat)
            spans.append((k0, min(max(int(keys[c]) + int(lengths[c]), k0), flat)))
        for c in reversed(range(b)):
            lo, hi = (min(max(int(x), 0), rows) for x in (starts[c], starts[c + 1]))
            owner[lo:hi] = c
        return owner, spans

    def _launch(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray,
                rpb: np.ndarray | None, mask: np.ndarray | None,
                past: np.ndarray | None) -> None:
        """Every task as ``attention_kernels.attention_task`` on the worker pool: the FLOAT32
        operands (packed or as bound) by address and element strides, single-threaded BLAS
        calls inside the tasks, no Python per task."""
        from ..kernels import tasks
        from . import attention_kernels as ak
        from . import blas

        sh = self.shape
        table = np.empty((sh.batch, 3), np.int64)  # per item: lo, hi (a key range), keys read
        table[:, 0], table[:, 1] = 0, sh.total
        table[:, 2] = sh.total if past is None else past + sh.kv_seq
        kind = ak.NO_MASK
        if mask is not None:
            if sh.mask_type == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN:
                kind = ak.BOOLEAN
            else:
                kind = ak.KEY_RANGE
                rows = mask[0, 0, :, :].astype(np.int64)
                table[:, 1] = np.clip(rows[0], 0, sh.total)
                if len(rows) > 1:
                    table[:, 0] = np.clip(rows[1], 0, sh.total)
        gemm, wide = blas.address(F32)
        layout = []
        for a, rows_, cols in ((q, sh.seq, sh.d), (k, sh.total, sh.d), (v, sh.total, sh.dv),
                               (o, sh.seq, sh.dv)):
            found = blas_layout(rows_, cols, a.strides[2] // 4, a.strides[3] // 4)
            assert found is not None  # packed where not (build)
            layout += [int(found[0]), int(found[1])]

        def strides(a: np.ndarray | None) -> list[int]:
            return [0] * 4 if a is None else [s // a.itemsize for s in a.strides]

        blocks = -(-sh.seq // self.rows)
        fields = [gemm, wide, sh.hq, sh.hq // sh.hkv, sh.seq, self.rows, blocks, sh.d, sh.dv,
                  *np.array([self.scale, self.filter]).view(np.int64).tolist(), kind,
                  int(past is not None), _data(mask), _data(rpb), _data(table),
                  *strides(q), *strides(k), *strides(v), *strides(o), *strides(mask),
                  *strides(rpb), *layout]
        block = tasks.block(fields)
        fn = tasks.address(ak.attention_task, "float32", "float32")
        with blas.single_threaded_calls():
            tasks.run(fn, block, sh.batch * sh.hq * blocks, _head(q), _head(o), _head(k),
                      _head(v), claim=True)

    def _past_lengths(self, regions: Mapping[str, np.ndarray]) -> np.ndarray:
        """PastSequenceLengthsTensor's valid past rows per batch item: its values (a FLOAT
        length truncated toward zero, NaN as 0) clamped to [0, the past axis]."""
        sh = self.shape
        assert sh.lengths is not None
        values = np.array(sh.lengths.view(regions)[0, 0, 0], np.float64)
        values = np.trunc(np.nan_to_num(values, nan=0.0, posinf=sh.past, neginf=0.0))
        return np.clip(values, 0, sh.past).astype(np.int64)

    def _pack(self, regions: Mapping[str, np.ndarray], space: dict[str, np.ndarray], key: str,
              src: Src, which: int, past: np.ndarray | None = None) -> np.ndarray:
        """A dense FLOAT32 copy of the query (0), keys (1) or values (2): the past first, then
        the current rows plus their bias (one FLOAT32 rounding). With past lengths, batch item
        b's first past[b] rows of the past (PastKey/Value, or the present tensors' own rows: a
        KV cache), then its current rows; the rows after them are not read."""
        sh = self.shape
        dense = space[key]
        if which and past is not None:
            source = sh.past_kv if sh.past_kv is not None else sh.present if sh.cache else None
            old = source[which - 1].view(regions) if source is not None else None
            current = src.view(regions)
            bias = sh.bias[which].view(regions)[0] if sh.bias is not None else None
            for b, n in enumerate(past.tolist()):
                if n:
                    assert old is not None  # past is clamped to the past axis, 0 without one
                    np.copyto(dense[b, :, :n], old[b, :, :n], casting="unsafe")
                rows = dense[b, :, n:n + sh.kv_seq]
                np.copyto(rows, current[b], casting="unsafe")
                if bias is not None:
                    np.add(rows, bias, out=rows, casting="unsafe")
            return dense
        rows = dense
        if which and sh.past_kv is not None:
            np.copyto(dense[:, :, :sh.past], sh.past_kv[which - 1].view(regions),
                      casting="unsafe")
            rows = dense[:, :, sh.past:]
        np.copyto(rows, src.view(regions), casting="unsafe")
        if sh.bias is not None:
            np.add(rows, sh.bias[which].view(regions), out=rows, casting="unsafe")
        return dense

    @staticmethod
    def _target(regions: Mapping[str, np.ndarray], src: Src) -> np.ndarray:
        """The addressed elements of an output, writable."""
        data = typed_view(regions[src.name], src.dtype)[src.offset:]
        item = src.dtype.itemsize
        return np.lib.stride_tricks.as_strided(data, src.sizes, [s * item for s in src.strides])

    @classmethod
    def _store(cls, regions: Mapping[str, np.ndarray], src: Src, values: np.ndarray) -> None:
        """Write FLOAT32 ``values`` to the addressed elements of an output (rounded once)."""
        cls._target(regions, src)[...] = values

    def _present(self, regions: Mapping[str, np.ndarray], space: dict[str, np.ndarray],
                 k: np.ndarray, v: np.ndarray, past: np.ndarray | None) -> None:
        """OutputPresentKey/Value: the past, then the current keys/values (with their bias).
        With past lengths, batch item b's rows up to past[b] + kvSequence (a KV cache keeps
        its past rows, which it already holds); the rows after them are not written."""
        sh = self.shape
        assert sh.present is not None
        for which, dst, packed, src in ((1, sh.present[0], k, sh.k), (2, sh.present[1], v, sh.v)):
            if past is not None:
                target = self._target(regions, dst)
                current = src.view(regions)
                bias = sh.bias[which].view(regions)[0] if sh.bias is not None else None
                for b, n in enumerate(past.tolist()):
                    first = n if sh.cache else 0
                    target[b, :, first:n + sh.kv_seq] = packed[b, :, first:n + sh.kv_seq]
                    if bias is not None and dst.dtype != F32:  # one rounding of the exact sum
                        target[b, :, n:n + sh.kv_seq] = current[b].astype(np.float64) + bias
            elif sh.bias is not None and dst.dtype != F32:
                # FLOAT16 with a bias: the sum in float64 (exact), rounded once to FLOAT16.
                rows = src.view(regions).astype(np.float64) + \
                    sh.bias[which].view(regions).astype(np.float64)
                if sh.past_kv is not None:
                    rows = np.concatenate([sh.past_kv[which - 1].view(regions), rows], axis=2)
                self._store(regions, dst, rows)
            elif self.pack_kv:
                self._store(regions, dst, packed)
            else:
                self._store(regions, dst, src.view(regions))


@ieee_reference
def reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page's steps in float64 on the logical arrays, rounded once per output."""
    hq, hkv = _heads(v)
    out_t = v.OutputTensor
    dtype = out_t.dtype

    def get(name: str) -> np.ndarray | None:
        a = inputs.get(name)
        return None if a is None else a.astype(np.float64)

    def heads(x: np.ndarray, n: int) -> np.ndarray:
        """{b, seq, n * size} (any leading 1s) -> {b, n, seq, size}."""
        x = x.reshape(x.shape[-3], x.shape[-2], n, -1)
        return x.transpose(0, 2, 1, 3)

    qkv, qk, kv = (get(n) for n in ("StackedQueryKeyValueTensor", "StackedQueryKeyTensor",
                                     "StackedKeyValueTensor"))
    stacked = qkv if qkv is not None else qk
    if stacked is not None:  # {b, s, H, 2 or 3, d}: slot i on the fourth dimension
        slots = [stacked[..., i, :].transpose(0, 2, 1, 3) for i in range(stacked.shape[3])]
        q, k = slots[0], slots[1]
        val = slots[2] if len(slots) == 3 else None
    else:
        q = heads(get("QueryTensor"), hq)  # type: ignore[arg-type]
        k = val = None
    if kv is not None:
        kv = kv.reshape(kv.shape[-5:])
        k, val = kv[..., 0, :].transpose(0, 2, 1, 3), kv[..., 1, :].transpose(0, 2, 1, 3)
    if inputs.get("KeyTensor") is not None:
        k = heads(get("KeyTensor"), hkv)  # type: ignore[arg-type]
    if inputs.get("ValueTensor") is not None:
        val = heads(get("ValueTensor"), hkv)  # type: ignore[arg-type]
    assert k is not None and val is not None
    d, dv = q.shape[3], val.shape[3]
    bias = get("BiasTensor")
    if bias is not None:  # [query's | key's | value's], each (head, element)
        bias = bias.reshape(-1)
        q = q + bias[:hq * d].reshape(1, hq, 1, d)
        k = k + bias[hq * d:(hq + hkv) * d].reshape(1, hkv, 1, d)
        val = val + bias[(hq + hkv) * d:].reshape(1, hkv, 1, dv)
    past_k, past_v = get("PastKeyTensor"), get("PastValueTensor")
    lengths = inputs.get("PastSequenceLengthsTensor")
    present: dict[str, np.ndarray] = {}
    valid = None
    if lengths is not None:
        k, val, valid, present = _kv_cache(v, inputs, k, val, past_k, past_v, lengths)
    elif past_k is not None and past_v is not None:  # the past comes first
        k = np.concatenate([past_k.reshape(past_k.shape[-4:]), k], axis=2)
        val = np.concatenate([past_v.reshape(past_v.shape[-4:]), val], axis=2)
    group = hq // hkv  # query head h attends with key/value head h // group
    rpb = get("RelativePositionBiasTensor")
    rpb = np.zeros(1) if rpb is None else rpb.reshape(rpb.shape[-4:]) if rpb.ndim > 4 else rpb
    given = inputs.get("MaskTensor")
    mask = np.zeros(0, np.int32) if given is None else given
    if v.MaskType == RANGES:
        o = _ranged_reference(v, q, k, val, rpb, mask.reshape(-1), group)
    else:
        o = _padded_reference(v, q, k, val, rpb, mask, group, valid)
    o = o.transpose(0, 2, 1, 3).reshape(out_t.sizes)
    result = {"OutputTensor": o.astype(dtype)}
    if v.OutputPresentKeyTensor is not None:
        for name, rows in (("OutputPresentKeyTensor", k), ("OutputPresentValueTensor", val)):
            result[name] = present.get(name, rows).reshape(getattr(v, name).sizes).astype(dtype)
    return result


def _kv_cache(v: SimpleNamespace, inputs: Mapping[str, np.ndarray], k: np.ndarray,
              val: np.ndarray, past_k: np.ndarray | None, past_v: np.ndarray | None,
              lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """PastSequenceLengthsTensor (docs/decisions.md, "Attention"): batch item b's keys are the
    first L[b] rows of the past, then its current keys; the past is PastKey/PastValue, or
    without them the present tensors' contents before the call (given in ``inputs`` under
    their names: a KV cache). L[b] is the value (truncated, NaN 0) clamped to [0, past
    rows]. Returns the keys and values {b, heads, past rows + kvSequence, size} (zeros after
    each item's valid rows), the valid counts L + kvSequence, and the present tensors (rows
    after the valid ones keep their contents before the call, NaN where none was given)."""
    batch, kv_seq = k.shape[0], k.shape[2]
    before = [inputs.get(n) for n in ("OutputPresentKeyTensor", "OutputPresentValueTensor")]
    if past_k is None and v.OutputPresentKeyTensor is not None:  # the cache is the present
        cap = v.OutputPresentKeyTensor.sizes[-2]
        past_k, past_v = (np.full((batch, x.shape[1], cap, x.shape[3]), np.nan) if b is None
                          else b.astype(np.float64).reshape(batch, x.shape[1], cap, x.shape[3])
                          for b, x in zip(before, (k, val)))
        past_k, past_v = past_k[:, :, :cap - kv_seq], past_v[:, :, :cap - kv_seq]
    if past_k is None or past_v is None:
        past_k, past_v = np.zeros((*k.shape[:2], 0, k.shape[3])), \
            np.zeros((*val.shape[:2], 0, val.shape[3]))
    past_k, past_v = past_k.reshape(past_k.shape[-4:]), past_v.reshape(past_v.shape[-4:])
    rows = int(np.size(past_k, -2))
    length = np.nan_to_num(lengths.reshape(-1).astype(np.float64), nan=0.0, posinf=rows)
    length = np.clip(np.trunc(length), 0, rows).astype(np.int64)
    keys, values = (np.zeros((*x.shape[:2], rows + kv_seq, x.shape[3])) for x in (k, val))
    present: dict[str, np.ndarray] = {}
    for name, cache, old, new, prior in (("OutputPresentKeyTensor", keys, past_k, k, before[0]),
                                         ("OutputPresentValueTensor", values, past_v, val,
                                          before[1])):
        out = np.full(cache.shape, np.nan) if prior is None else \
            prior.astype(np.float64).reshape(cache.shape).copy()
        for b, n in enumerate(length):
            cache[b, :, :n] = old[b, :, :n]
            cache[b, :, n:n + kv_seq] = new[b]
            out[b, :, :n + kv_seq] = cache[b, :, :n + kv_seq]
        present[name] = out
    return keys, values, length + kv_seq, present


def _padded_reference(v: SimpleNamespace, q: np.ndarray, k: np.ndarray, val: np.ndarray,
                      rpb: np.ndarray, mask: np.ndarray, group: int,
                      valid: np.ndarray | None = None) -> np.ndarray:
    """Every mask type but KEY_QUERY_SEQUENCE_LENGTH_START_END: each batch item's queries
    attend to its own keys, masked as the page words it (module doc). With ``valid`` (past
    lengths), item b's query i sees only keys j < valid[b] with j <= valid[b] - seq + i
    (causal); a query that sees none outputs 0."""
    s = np.float64(v.Scale) * np.einsum("bhid,bhjd->bhij", q, np.repeat(k, group, axis=1))
    s = s + rpb
    f = np.float64(v.MaskFilterValue)
    keys = np.arange(s.shape[3])
    if v.MaskType == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_BOOLEAN:
        s = s + np.where(np.broadcast_to(mask.reshape(mask.shape[-4:]) if mask.ndim > 4
                                         else mask, s.shape) == 0, f, 0.0)
    elif v.MaskType == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_LENGTH:
        lengths = mask.reshape(-1)
        s = np.where(keys[None, :] >= lengths[:, None], f, s[...].transpose(1, 2, 0, 3)) \
            .transpose(2, 0, 1, 3)
    elif v.MaskType == MASK.DML_MULTIHEAD_ATTENTION_MASK_TYPE_KEY_SEQUENCE_END_START:
        ends, starts = mask.reshape(2, -1)
        outside = (keys[None, :] < starts[:, None]) | (keys[None, :] >= ends[:, None])
        s = np.where(outside, f, s.transpose(1, 2, 0, 3)).transpose(2, 0, 1, 3)
    seen = np.ones(s.shape, bool)
    if valid is not None:
        position = valid[:, None] - s.shape[2] + np.arange(s.shape[2])[None, :]  # {b, i}
        seen = np.broadcast_to((keys[None, None, :] <= position[:, :, None])[:, None],
                               s.shape)
        s = np.where(seen, s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=3, keepdims=True))
        p = e / e.sum(axis=3, keepdims=True)
    p = np.where(seen.any(axis=3, keepdims=True), p, 0.0)
    return np.einsum("bhij,bhje->bhie", p, np.repeat(val, group, axis=1))


def _ranged_reference(v: SimpleNamespace, q: np.ndarray, k: np.ndarray, val: np.ndarray,
                      rpb: np.ndarray, mask: np.ndarray, group: int) -> np.ndarray:
    """KEY_QUERY_SEQUENCE_LENGTH_START_END, ONNX Runtime's reading of the layout (its
    memory-efficient kernels; docs/decisions.md): the batch's rows are one flat token axis.
    Sequence c's queries are rows [queryStart[c], queryStart[c + 1]) of the flat query axis
    (queryStart[batch] = queryEnd), its keys rows [keyStart[c], keyStart[c] + keyLength[c])
    of the flat key axis; each query attends to its sequence's keys only. A row in no
    sequence, or a sequence without keys, outputs 0 (the empty sum)."""
    batch, heads, seq, _ = q.shape
    total = k.shape[2]
    flat_k = k.transpose(1, 0, 2, 3).reshape(k.shape[1], batch * total, -1)
    flat_v = val.transpose(1, 0, 2, 3).reshape(val.shape[1], batch * total, -1)
    lengths, q_start, k_start = mask[:batch], mask[batch:2 * batch + 1], mask[2 * batch + 1:]
    o = np.zeros((*q.shape[:3], val.shape[3]))
    for r in range(batch * seq):
        b, i = divmod(r, seq)
        c = next((c for c in range(batch) if q_start[c] <= r < q_start[c + 1]), None)
        if c is None:
            continue
        first = min(max(int(k_start[c]), 0), batch * total)
        keys = np.arange(first, min(max(int(k_start[c]) + int(lengths[c]), first), batch * total))
        if len(keys) == 0:
            continue
        for h in range(heads):
            x = np.float64(v.Scale) * (flat_k[h // group, keys] @ q[b, h, i]) + \
                np.broadcast_to(rpb, (*q.shape[:3], total))[b, h, i, keys % total]
            e = np.exp(x - x.max())
            o[b, h, i] = (e / e.sum()) @ flat_v[h // group, keys]
    return o


ROWS = (
    Row(OP.DML_OPERATOR_MULTIHEAD_ATTENTION, AttentionPlan.build, reference, KERNEL_TYPES,
        unsupported),
    Row(OP.DML_OPERATOR_MULTIHEAD_ATTENTION1, AttentionPlan.build, reference, KERNEL_TYPES,
        unsupported),
)
