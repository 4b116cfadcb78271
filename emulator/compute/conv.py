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
- **The product** is ``matmul.MatmulPlan`` with the bias as C (stride 0 along the positions);
  it writes the output itself (and applies the activation) when the output's spatial dimensions
  are one FLOAT32 run, else a dense FLOAT32 scratch that an element-wise plan (the activation's,
  or CAST's) copies out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from descriptors import DML_CONVOLUTION_DIRECTION, DML_CONVOLUTION_MODE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..plan import collapse, int64s
from ..resources import typed_view
from .matmul import DTYPE, MatmulPlan, Spare, activation_epilogue, scratch

BACKWARD = DML_CONVOLUTION_DIRECTION.DML_CONVOLUTION_DIRECTION_BACKWARD
CONVOLUTION = DML_CONVOLUTION_MODE.DML_CONVOLUTION_MODE_CONVOLUTION
F32 = T.DML_TENSOR_DATA_TYPE_FLOAT32


def _tensor(data_type: T, sizes: tuple[int, ...], strides: tuple[int, ...]) -> SimpleNamespace:
    return SimpleNamespace(data_type=data_type, sizes=tuple(sizes), strides=tuple(strides),
                           dim_count=len(sizes), element_size=4 if data_type == F32 else 2)


def _dense(sizes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(math.prod(sizes[i + 1:])) for i in range(len(sizes)))


@dataclass(frozen=True, eq=False)
class ConvPlan:
    """A convolution as (filter packing, im2col, MatmulPlan, epilogue); see the module doc."""

    filter_view: tuple  # (sizes, strides, dtype) of the filter as bound
    backward: bool
    flip: bool
    groups: int
    geo: np.ndarray | None  # im2col's geometry; None: the input is the column matrix
    col_shape: tuple[int, ...]
    input_strides: np.ndarray  # n, c and three spatial element strides
    input_dtype: np.dtype
    matmul: MatmulPlan
    w_shape: tuple[int, ...]  # [G, Cout/G, Cin/G * taps]
    target: tuple[int, ...] | None  # the dense scratch output's shape; None: the output itself
    epilogue: Any
    depthwise: bool = False  # one input and one output channel per group: kernels.depthwise
    bias_view: tuple | None = None  # (sizes, strides, dtype) of the bias, for depthwise
    spare: Spare = field(default_factory=Spare)

    @classmethod
    def build(cls, v: SimpleNamespace) -> ConvPlan:
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
        xs = [0] * pad3 + list(x.strides[2:])
        identity = all(d[0] == 1 and d[3] == 1 and d[5] == 0 and d[6] == 1 and d[1] == d[2]
                       for d in dims)
        kc = cig * taps
        compute_type = F32
        # B: the column matrix (dense scratch), or the input itself viewed [N, G, Cin/G, P].
        sp = collapse(i_sp, x.strides[2:]) if identity else None
        if identity and sp is not None and len(sp[0]) == 1:
            b = _tensor(x.data_type, (n, g, cig, positions),
                        (x.strides[0], cig * x.strides[1], x.strides[1], sp[1][0]))
            geo = None
        else:
            b = _tensor(compute_type, (n, g, kc, positions), _dense((n, g, kc, positions)))
            geo = int64s([n, g, cig, *[q for d in dims for q in d]])
        a = _tensor(compute_type, (n, g, cog, kc), (0, cog * kc, kc, 1))
        c = None
        if bias is not None:
            b1 = bias.strides[1]
            c = _tensor(bias.data_type, (n, g, cog, positions), (0, cog * b1, b1, 0))
        out_sp = collapse(o_sp, out.strides[2:])
        depthwise = g > 1 and cig == 1 and cog == 1 and not backward
        direct = out.data_type == compute_type and len(out_sp[0]) == 1 and not depthwise
        if direct:
            mm_out = _tensor(out.data_type, (n, g, cog, positions),
                             (out.strides[0], cog * out.strides[1], out.strides[1],
                              out_sp[1][0]))
            fused, target, epilogue = v.FusedActivation, None, None
        else:
            shape = (n, g, cog, positions)
            mm_out = _tensor(compute_type, shape, _dense(shape))
            fused, target = None, shape
            dense = _tensor(compute_type, out.sizes, _dense(out.sizes))
            epilogue = activation_epilogue(v.FusedActivation, dense, out)
        names = ("filter", "col" if geo is not None else "InputTensor", "BiasTensor",
                 "OutputTensor" if direct else "conv_out")
        matmul = MatmulPlan.build("DML_OPERATOR_CONVOLUTION", a, b, mm_out, False, False, 1.0,
                                  c, 1.0, fused, names)
        f_strides = tuple(f.strides)
        if depthwise:
            geo = int64s([n, g, cig, *[q for d in dims for q in d]])
        bias_view = None if bias is None else \
            (tuple(bias.sizes), tuple(bias.strides), DTYPE[bias.data_type])
        return cls((tuple(f.sizes), f_strides, DTYPE[f.data_type]), backward, flip, g, geo,
                   (n, g, kc, positions), int64s([x.strides[0], x.strides[1], *xs]),
                   DTYPE[x.data_type], matmul, (g, cog, kc), target, epilogue, depthwise,
                   bias_view)

    def reserve(self) -> dict[str, np.ndarray]:
        """Every scratch array of a dispatch (the last dispatch's, when kept)."""
        kept = self.spare.take()
        return kept if kept is not None else self.allocate()

    def allocate(self) -> dict[str, np.ndarray]:
        if self.depthwise:
            assert self.target is not None
            return {"filter": scratch(self.w_shape, np.float32, "CONVOLUTION: the filter"),
                    "conv_out": scratch(self.target, np.float32,
                                        "CONVOLUTION: the sums before the epilogue")}
        space = self.matmul.allocate()
        space["filter"] = scratch(self.w_shape, np.float32, "CONVOLUTION: the packed filter")
        if self.geo is not None:
            space["col"] = scratch(self.col_shape, np.float32,
                                   "CONVOLUTION: the input windows (im2col)")
        if self.target is not None:
            space["conv_out"] = scratch(self.target, np.float32,
                                      "CONVOLUTION: the product before its epilogue")
        return space

    def pack_filter(self, region: np.ndarray, w: np.ndarray) -> None:
        """The filter as bound → ``w`` [G, Cout/G, Cin/G * taps] in the compute orientation."""
        sizes, strides, dtype = self.filter_view
        item = dtype.itemsize
        f = np.lib.stride_tricks.as_strided(typed_view(region, dtype), sizes,
                                            tuple(s * item for s in strides), writeable=False)
        g = self.groups
        if self.backward:  # [Cin, Cout/G, k..] -> [G, Cout/G, Cin/G, k..]
            f = f.reshape(g, sizes[0] // g, *sizes[1:]).swapaxes(1, 2)
        else:
            f = f.reshape(g, sizes[0] // g, *sizes[1:])
        if self.flip:
            f = np.flip(f, tuple(range(3, f.ndim)))
        np.copyto(w.reshape(f.shape), f, casting="unsafe")

    def run(self, regions: Mapping[str, np.ndarray],
            reserved: dict[str, np.ndarray] | None = None) -> None:
        space = reserved if reserved is not None else self.reserve()
        self.pack_filter(regions["FilterTensor"], space["filter"])
        inner = dict(regions)
        inner["filter"] = space["filter"].reshape(-1).view(np.uint8)
        if self.depthwise:
            from .kernels import depthwise

            bias = np.zeros(self.w_shape[0], np.float32)
            if self.bias_view is not None:
                sizes, strides, dtype = self.bias_view
                view = np.lib.stride_tricks.as_strided(
                    typed_view(regions["BiasTensor"], dtype), sizes,
                    tuple(s * dtype.itemsize for s in strides), writeable=False)
                bias[:] = view.reshape(-1)
            storage = np.float32 if self.input_dtype == np.float32 else np.uint16
            depthwise(typed_view(regions["InputTensor"], storage), self.input_strides, self.geo,
                      space["filter"].reshape(-1), bias, space["conv_out"].reshape(-1))
            self.epilogue.run({"InputTensor": space["conv_out"].reshape(-1).view(np.uint8),
                               "OutputTensor": regions["OutputTensor"]})
            self.spare.keep(space)
            return
        if self.geo is not None:
            from .kernels import im2col

            storage = np.float32 if self.input_dtype == np.float32 else np.uint16
            im2col(typed_view(regions["InputTensor"], storage), self.input_strides, self.geo,
                   space["col"].reshape(-1))
            inner["col"] = space["col"].reshape(-1).view(np.uint8)
        if self.target is not None:
            inner["conv_out"] = space["conv_out"].reshape(-1).view(np.uint8)
        self.matmul.run(inner, space, keep=False)
        if self.epilogue is not None:
            self.epilogue.run({"InputTensor": inner["conv_out"],
                               "OutputTensor": regions["OutputTensor"]})
        self.spare.keep(space)
