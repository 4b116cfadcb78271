"""CONVOLUTION on the matrix-multiply core: per batch item and group, Output = W x col + Bias,
then the fused activation.

- **W** (``filter``): the filter packed at dispatch into a dense FLOAT32 [G, Cout/G, Cin/G * taps]
  matrix in the orientation the mode and direction give (flipped along every spatial dimension
  for CONVOLUTION/FORWARD and CROSS_CORRELATION/BACKWARD: the pages' "mode interactions" table).
- **col** (``kernels.im2col``): the input windows as a dense FLOAT32 [N, G, Cin/G * taps,
  output positions] matrix. A backward (transposed) convolution is the forward convolution of the
  input upsampled by its Strides (zeros between elements), stride 1, start pad
  ``(kernel - 1) * dilation - StartPadding``, its filter's two channel dimensions swapped; its
  EndPadding and OutputPadding are only the output's size. A 1x1 filter at stride 1 without
  padding reads the input itself (no col; the core packs it only if the BLAS cannot read it).
- **A 3x3 filter at stride 1** with channels enough takes Winograd's F(2x2, 3x3) instead
  (``winograd.py``) where the BLAS is called directly, unless the dispatch's compiled form has
  DML_EXECUTION_FLAG_DISABLE_META_COMMANDS; otherwise, there, tiles of output positions each
  lay out their own columns and call a single-threaded sgemm (``kernels.conv_tiles``).
- **The product** is ``matmul.MatmulPlan`` with the bias as C (stride 0 along the positions);
  it writes the output itself (and applies the activation) when the output's spatial dimensions
  are one FLOAT32 run, else a dense FLOAT32 scratch that an element-wise plan (the activation's,
  or CAST's) copies out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..plan import collapse, float_view, int64s
from ..resources import scratch
from ..validation import Tensor, packed_strides
from .matmul import DTYPE, MatmulPlan, Spare, activation_epilogue

BACKWARD = DML_CONVOLUTION_DIRECTION.DML_CONVOLUTION_DIRECTION_BACKWARD
CONVOLUTION = DML_CONVOLUTION_MODE.DML_CONVOLUTION_MODE_CONVOLUTION
F32 = T.DML_TENSOR_DATA_TYPE_FLOAT32
TILE_BYTES = 1 << 19  # a tile's column matrix (kernels.conv_tiles): 256 KiB-2 MiB measured alike


def _tensor(data_type: T, sizes: tuple[int, ...], strides: tuple[int, ...]) -> SimpleNamespace:
    """A tensor the core reads or writes that no desc holds (a view of a bound one, scratch)."""
    return SimpleNamespace(data_type=data_type, sizes=tuple(sizes), strides=tuple(strides),
                           dim_count=len(sizes), element_size=DTYPE[data_type].itemsize)


@dataclass(frozen=True, eq=False)
class ConvPlan:
    """A convolution as (filter packing, im2col, MatmulPlan, epilogue); see the module doc."""

    filter: Tensor  # as bound
    bias: Tensor | None  # as bound (read here only by the depthwise path)
    backward: bool
    flip: bool
    groups: int
    geo: np.ndarray  # the geometry of im2col / depthwise
    col_shape: tuple[int, ...] | None  # im2col's matrix; None: the input is the column matrix
    input_strides: np.ndarray  # n, c and three spatial element strides
    input_size: int  # the input's element size (its storage: float_view)
    matmul: MatmulPlan | None  # None: the depthwise kernel instead
    w_shape: tuple[int, ...]  # [G, Cout/G, Cin/G * taps]
    target: tuple[int, ...] | None  # the dense scratch output's shape; None: the output itself
    epilogue: Any
    out_strides: np.ndarray | None = None  # depthwise: n, c and three spatial element strides
    # The tile path (kernels.conv_tiles, where the BLAS is called directly): the product's
    # element strides (image, channel; positions at unit stride), the positions per tile, and
    # the fused activation applied in place when the product is the output itself.
    tile_strides: np.ndarray | None = None
    tile_block: int = 0
    tile_activation: Any = None
    input_extent: int = 0  # elements from the input's first to one past its last
    winograd: int = 0  # rows of tiles a task of F(2x2, 3x3) takes (winograd.py); 0: none
    widen: Any = None  # a FLOAT16 input's copy to FLOAT32 (CAST's element-wise plan)
    spare: Spare = field(default_factory=Spare)

    @classmethod
    def build(cls, v: SimpleNamespace) -> ConvPlan:
        plan = cls._build(v)
        x = v.InputTensor
        if x.element_size != 2:
            return plan
        flat = (x.extent,)
        widen = activation_epilogue(None, _tensor(x.data_type, flat, (1,)),
                                    _tensor(F32, flat, (1,)))
        return replace(plan, widen=widen)

    @classmethod
    def _build(cls, v: SimpleNamespace) -> ConvPlan:
        x, f, out, bias = v.InputTensor, v.FilterTensor, v.OutputTensor, v.BiasTensor
        backward = v.Direction == BACKWARD
        flip = (v.Mode == CONVOLUTION) != backward
        g = v.GroupCount
        spatial = v.DimensionCount
        n, c_in = x.sizes[:2]
        c_out = out.sizes[1]
        cig, cog = c_in // g, c_out // g
        kernel = tuple(f.sizes[2:])
        taps = math.prod(kernel)
        o_sp, i_sp = tuple(out.sizes[2:]), tuple(x.sizes[2:])
        positions = math.prod(o_sp)
        pad3 = 3 - spatial
        dims = []
        for d in range(spatial):
            k, dil = kernel[d], v.Dilations[d]
            if backward:
                dims.append((k, o_sp[d], i_sp[d], 1, dil, (k - 1) * dil - v.StartPadding[d],
                             v.Strides[d]))
            else:
                dims.append((k, o_sp[d], i_sp[d], v.Strides[d], dil, v.StartPadding[d], 1))
        dims = [(1, 1, 1, 1, 1, 0, 1)] * pad3 + dims
        geo = int64s([n, g, cig, *[q for d in dims for q in d]])
        xs = int64s([x.strides[0], x.strides[1], *[0] * pad3, *x.strides[2:]])
        kc = cig * taps
        shape = (n, g, cog, positions)
        extent = x.extent

        def from_scratch() -> Any:
            """The epilogue from a dense FLOAT32 scratch output to the output."""
            dense = _tensor(F32, out.sizes, packed_strides(out.sizes))
            return activation_epilogue(v.FusedActivation, dense, out)

        if g > 1 and cig == 1 and cog == 1 and not backward:  # depthwise: no matrix product
            if out.data_type == F32 and v.FusedActivation is None:  # straight into Output
                os = [out.strides[0], out.strides[1], *[0] * pad3, *out.strides[2:]]
                return cls(f, bias, backward, flip, g, geo, None, xs, x.element_size, None,
                           (g, cog, kc), None, None, int64s(os), input_extent=extent)
            os = [g * positions, positions, *[0] * pad3, *packed_strides(o_sp)]
            return cls(f, bias, backward, flip, g, geo, None, xs, x.element_size, None,
                       (g, cog, kc), shape, from_scratch(), int64s(os), input_extent=extent)
        # B: the column matrix (dense scratch), or the input itself viewed [N, G, Cin/G, P].
        identity = all(d[0] == 1 and d[3] == 1 and d[5] == 0 and d[6] == 1 and d[1] == d[2]
                       for d in dims)
        sp = collapse(i_sp, x.strides[2:])
        col_shape: tuple[int, ...] | None = (n, g, kc, positions)
        if identity and len(sp[0]) == 1:
            b = _tensor(x.data_type, (n, g, cig, positions),
                        (x.strides[0], cig * x.strides[1], x.strides[1], sp[1][0]))
            col_shape = None
        else:
            b = _tensor(F32, (n, g, kc, positions), packed_strides((n, g, kc, positions)))
        a = _tensor(F32, (n, g, cog, kc), (0, cog * kc, kc, 1))
        c = None
        if bias is not None:
            b1 = bias.strides[1]
            c = _tensor(bias.data_type, shape, (0, cog * b1, b1, 0))
        out_sp = collapse(o_sp, out.strides[2:])
        if out.data_type == F32 and len(out_sp[0]) == 1:  # the product straight into Output
            mm_out = _tensor(F32, shape, (out.strides[0], cog * out.strides[1], out.strides[1],
                                          out_sp[1][0]))
            fused, target, epilogue = v.FusedActivation, None, None
        else:
            mm_out = _tensor(F32, shape, packed_strides(shape))
            fused, target, epilogue = None, shape, from_scratch()
        names = ("filter", "InputTensor" if col_shape is None else "col", "BiasTensor",
                 "OutputTensor" if target is None else "conv_out")
        matmul = MatmulPlan.build("DML_OPERATOR_CONVOLUTION", a, b, mm_out, False, False, 1.0,
                                  c, 1.0, fused, names)
        tile_strides, tile_act = None, None
        if col_shape is not None:
            if target is None and out_sp[1][0] == 1 and out.strides[1] >= positions:
                tile_strides = int64s([out.strides[0], out.strides[1]])
                if fused is not None:  # in place on the output, as the core does
                    tile_act = activation_epilogue(fused, out, out)
            elif target is not None:
                tile_strides = int64s([c_out * positions, positions])
        # Positions per tile: its column matrix within 512 KiB (a core's cache), from the shape
        # alone, so the sums never depend on the thread count.
        block = min(positions, max(64, (TILE_BYTES // (4 * kc)) // 16 * 16))
        from . import winograd  # (here: importing it loads Numba, which `import emulator` must not)

        fast = winograd.rows(geo, cog) if tile_strides is not None else 0
        return cls(f, bias, backward, flip, g, geo, col_shape, xs, x.element_size, matmul,
                   (g, cog, kc), target, epilogue, None, tile_strides, block, tile_act, extent,
                   fast)

    def reserve(self) -> dict[str, np.ndarray]:
        """Every scratch array of a dispatch (the last dispatch's, when kept)."""
        kept = self.spare.take()
        return kept if kept is not None else self.allocate()

    def allocate(self) -> dict[str, np.ndarray]:
        """Fresh scratch: the core's, the packed filter, im2col's matrix, the dense output."""
        op = "DML_OPERATOR_CONVOLUTION"
        space = self.matmul.allocate() if self.matmul is not None else {}
        space["filter"] = scratch(self.w_shape, np.float32, op, "the packed filter")
        if self.winograd:
            g, cog, kc = self.w_shape
            space["winograd"] = scratch((g * 16 * cog * (kc // 9),), np.float32, op,
                                        "the Winograd-transformed filter")
        if self.input_size == 2:  # FLOAT16 widened once: the kernels read FLOAT32 only
            space["input32"] = scratch((self.input_extent,), np.float32, op,
                                       "the FLOAT16 input widened to FLOAT32")
        if self.matmul is not None and self.col_shape is not None and not self.tiled():
            space["col"] = scratch(self.col_shape, np.float32, op, "the input windows (im2col)")
        if self.target is not None:
            space["conv_out"] = scratch(self.target, np.float32, op,
                                        "the sums before the epilogue")
        return space

    def tiled(self) -> bool:
        """Whether a dispatch takes the tile path (im2col per tile and the BLAS called by the
        kernel itself), which needs no column matrix of the whole input."""
        from . import blas

        return self.tile_strides is not None and blas.direct(np.dtype(np.float32))

    def pack_filter(self, region: np.ndarray, w: np.ndarray) -> None:
        """The filter as bound → ``w`` [G, Cout/G, Cin/G * taps] in the compute orientation."""
        sizes, g = self.filter.sizes, self.groups
        f = self.filter.view(region).reshape(g, sizes[0] // g, *sizes[1:])
        if self.backward:  # [G, Cin/G, Cout/G, k..] -> [G, Cout/G, Cin/G, k..]
            f = f.swapaxes(1, 2)
        if self.flip:
            f = np.flip(f, tuple(range(3, f.ndim)))
        np.copyto(w.reshape(f.shape), f, casting="unsafe")

    def _depthwise(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray,
                   out: np.ndarray) -> None:
        """The depthwise kernel, a task per (image, channel) plane on the worker pool
        (``kernels.depthwise_task``), or its ``prange`` form where the pool is unavailable."""
        import numba

        from ..kernels import pool, tasks
        from . import kernels

        assert self.out_strides is not None
        if not pool.available():
            kernels.depthwise(x, self.input_strides, self.geo, w, bias, out, self.out_strides)
            return
        planes = int(self.geo[kernels.G_N] * self.geo[kernels.G_G])
        f = kernels.FIELDS
        per = int(self.geo[4] * self.geo[4 + f] * self.geo[4 + 2 * f])  # outputs a plane
        # a task: planes enough for ~16K outputs (its buffers allocated once), or fewer where
        # that would leave a thread idle
        threads = numba.get_num_threads()
        each = max(1, min(-(-16384 // max(per, 1)), -(-planes // threads)))
        block = tasks.block([x.size, out.size, w.size, bias.size, *[0] * 6, each])
        tasks.store_arrays(block, kernels.DW_XS, self.input_strides, self.geo, self.out_strides)
        fn = tasks.address(kernels.depthwise_task, str(x.dtype), "float32")
        tasks.run(fn, block, -(-planes // each), x, out, w, bias, work=out.size)

    def _tiles(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray, out: np.ndarray,
               gemm: int, wide: bool) -> None:
        """``kernels.conv_tiles``: a range of tiles per thread, on the worker pool (the task
        kernel ``conv_tiles_task``), or on ``prange`` where the pool is unavailable."""
        import numba

        from ..kernels import pool, tasks
        from . import kernels

        assert self.tile_strides is not None
        parts = min(numba.get_num_threads(), kernels.tile_count(self.geo, self.tile_block))
        if not pool.available():
            kernels.conv_tiles(x, self.input_strides, self.geo, w, bias, out, self.tile_strides,
                               gemm, wide, self.tile_block, parts)
            return
        block = tasks.block([x.size, out.size, w.size, bias.size, gemm, int(wide),
                             self.tile_block, parts, *[0] * 6])
        tasks.store_arrays(block, kernels.CT_XS, self.input_strides, self.geo, self.tile_strides)
        fn = tasks.address(kernels.conv_tiles_task, "float32", "float32")
        tasks.run(fn, block, parts, x, out, w, bias)

    def bias_values(self, regions: Mapping[str, np.ndarray], count: int) -> np.ndarray:
        """The bias, one float32 per output channel (zeros without a bias)."""
        bias = np.zeros(count, np.float32)
        if self.bias is not None:
            bias[:] = self.bias.view(regions["BiasTensor"]).reshape(-1)
        return bias

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: dict[str, np.ndarray] | None = None) -> None:
        from . import blas, kernels, winograd

        space = reserved if reserved is not None else self.reserve()
        self.pack_filter(regions["FilterTensor"], space["filter"])
        x = float_view(regions["InputTensor"], self.input_size)
        if self.input_size == 2:  # (exact; one compiled kernel per computation, not two)
            self.widen.run({"InputTensor": regions["InputTensor"],
                            "OutputTensor": space["input32"].view(np.uint8)})
            x = space["input32"]
        inner = dict(regions)
        inner["filter"] = space["filter"].reshape(-1).view(np.uint8)
        if self.target is not None:
            inner["conv_out"] = space["conv_out"].reshape(-1).view(np.uint8)
        product = space["conv_out"].reshape(-1) if self.target is not None else \
            float_view(regions["OutputTensor"], 4)
        if self.matmul is None:
            self._depthwise(x, space["filter"].reshape(-1),
                            self.bias_values(regions, self.w_shape[0]), product)
        elif self.tiled():
            gemm, wide = blas.address(np.dtype(np.float32))
            bias = self.bias_values(regions, self.w_shape[0] * self.w_shape[1]) \
                if self.bias is not None else np.zeros(0, np.float32)
            assert self.tile_strides is not None
            u = space.get("winograd")
            if u is not None and not (winograd.allowed() and winograd.transform_filter(
                    space["filter"].reshape(-1), self.groups, u)):
                u = None
            with blas.single_threaded_calls():  # one single-threaded sgemm per tile
                if u is not None:
                    winograd.run(x, self.input_strides, self.geo, u,
                                 space["filter"].reshape(-1), bias, product, self.tile_strides,
                                 gemm, wide, winograd.OWN_GEMM, self.winograd)
                else:
                    self._tiles(x, space["filter"].reshape(-1), bias, product, gemm, wide)
            if self.tile_activation is not None:
                self.tile_activation.run({"InputTensor": regions["OutputTensor"],
                                          "OutputTensor": regions["OutputTensor"]})
        else:
            if self.col_shape is not None:
                kernels.im2col(x, self.input_strides, self.geo, space["col"].reshape(-1))
                inner["col"] = space["col"].reshape(-1).view(np.uint8)
            self.matmul.run(inner, space, keep=False)
        if self.epilogue is not None:
            self.epilogue.run({"InputTensor": inner["conv_out"],
                               "OutputTensor": regions["OutputTensor"]})
        self.spare.keep(space)
