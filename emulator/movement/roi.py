"""ROI_POOLING, ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD: rows of the data-movement family
(``table.Row``).

Each plan reads the regions (and batch indices) once per dispatch with NumPy, turns them into
per-region integers and float64 geometry, and calls one parallel kernel of ``kernels/roi.py`` per
output. The references below are plain NumPy written from the pages, region by region.

**ROI_POOLING** (the page's formulas): each corner is ``round(coordinate · SpatialScale)``, the
product in float32, rounded half away from zero and converted as Direct3D's ftoi (saturated to
int32, NaN → 0); RegionHeight = max(y2 - y1 + 1, 1) (likewise the width); bin (Y, X) covers rows
[Y·RegionHeight / PooledSize.Height + y1, ⌈(Y + 1)·RegionHeight / PooledSize.Height⌉ + y1) (integer
arithmetic) and the same for columns, clamped to the input; the output is the bin's maximum
(Direct3D's max: a NaN loses to a number; of equal values, the first in row-major order), copied
bit for bit; an empty bin gives +0. BatchID is truncated toward zero; a region whose BatchID is
not in [0, BatchCount) (NaN included) gives +0 everywhere.

**ROI_ALIGN1** (the page's pseudo-code; ROI_ALIGN is ROI_ALIGN1 with InputPixelOffset 0.5,
OutputPixelOffset -0.5 and AlignRegionsToCorners FALSE, as the ROI_ALIGN1 page says): per region
and axis, scaled corners X1 = x1·SpatialScaleX, X2 = x2·SpatialScaleX (exact in float64), size
X2 - X1, samples per output S = clamp(⌈size / OutputSize⌉, Minimum, Maximum) (a NaN ratio takes
Minimum; the ceiling is what ONNX Runtime's mapping of RoiAlign's adaptive sampling_ratio
needs), at least 1 (an empty region still reads its one point); sample s (the output element's
samples are s = out·S … out·S + S - 1, the page's "to <=" read as "<": its ROI_ALIGN_GRAD example
has one sample per element) lies at
``(s - OutputPixelOffset) · size / (OutputSize·S) + X1 - InputPixelOffset`` in input index
coordinates. AlignRegionsToCorners divides by (OutputSize·S - 1) instead, so the first and last
samples lie on the corners; with a single sample per axis it lies at the region's centre
(X1 + size/2 - InputPixelOffset), as TensorFlow's CropAndResize, which DirectML maps onto
ROI_ALIGN1 this way, defines. LINEAR interpolates the elements at floor and ceil of each coordinate
(the ROI_ALIGN_GRAD page's neighbours; a neighbour of weight 0 is not read); NEAREST_NEIGHBOR reads
the element at ⌈p - 1/2⌉ (the nearest, ties to the lower index: the GRAD page's example). Every
element read outside the input reads OutOfBoundsInputValue. AVERAGE is the mean of the samples,
MAX their maximum (Direct3D's max, scanned x outer, y inner as the page's loops), computed in
float64 and rounded once. A region whose batch index is not in [0, BatchCount) reads only
OutOfBoundsInputValue (its output is that value).

**ROI_ALIGN_GRAD** is the adjoint of that forward pass (the GRAD has no OutOfBoundsInputValue:
elements outside read 0): OutputGradientTensor receives each InputGradientTensor element's share
(1/(S_x·S_y) to each sample for AVERAGE; all of it at the maximum sample for MAX, found in
InputTensor) times each interpolation weight, summed over regions in float64 and rounded once;
elements outside the input receive nothing. OutputROIGradientTensor follows the page's pseudo-code
(the bilinear image gradient at each contributing sample, in both interpolation modes, times the
InputGradientTensor share), with the coordinate factors taken as the exact derivatives of the
sample position: ∂px/∂x1 = SpatialScaleX·(1 - t), ∂px/∂x2 = SpatialScaleX·t, t the sample's
fraction of the way from the first corner to the second (likewise y), summed over channels and
samples. A region with an invalid batch index contributes nothing and has a zero ROI gradient.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from descriptors import DML_OPERATOR_TYPE, NUMPY_DTYPE
from descriptors import DML_TENSOR_DATA_TYPE as T

from ..plan import float_view
from ..resources import scratch
from ..validation import Tensor, packed_strides
from .table import FLOATS, Row

OP = DML_OPERATOR_TYPE
ALIGN_TYPES = (*FLOATS, T.DML_TENSOR_DATA_TYPE_UINT32, T.DML_TENSOR_DATA_TYPE_UINT64)
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
LINEAR = "DML_INTERPOLATION_MODE_LINEAR"
MAX = "DML_REDUCE_FUNCTION_MAX"


def _strides(t: Tensor) -> np.ndarray:
    return np.asarray(t.strides, np.int64)


def _rows(t: Tensor, region: np.ndarray, width: int) -> np.ndarray:
    """A {..., NumROIs, width} tensor's rows, as float64."""
    return np.asarray(t.view(region), np.float64).reshape(-1, width)


def _valid_batches(values: np.ndarray, batch_count: int) -> np.ndarray:
    """Each region's batch index, -1 where it is not in [0, batch_count)."""
    values = np.asarray(values).ravel()
    return np.where(values < batch_count, values.astype(np.int64), np.int64(-1))


# --- ROI_POOLING ----------------------------------------------------------------------------

def _pool_corners(rois: np.ndarray, scale: float) -> np.ndarray:
    """round(coordinate · SpatialScale) (float32 product, half away from zero), as int32 ftoi."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = (rois[:, 1:].astype(np.float32) * np.float32(scale)).astype(np.float64)
        r = np.sign(p) * np.floor(np.abs(p) + 0.5)
    return np.clip(np.nan_to_num(r, nan=0.0), INT32_MIN, INT32_MAX).astype(np.int64)


def _pool_batches(rois: np.ndarray, batch_count: int) -> np.ndarray:
    """trunc(BatchID), or -1 where that is not in [0, batch_count) (NaN included)."""
    with np.errstate(invalid="ignore"):
        b = np.trunc(rois[:, 0])
        ok = (b >= 0) & (b < batch_count)
    return np.where(ok, np.nan_to_num(b), -1).astype(np.int64)


@dataclass(frozen=True, eq=False)
class PoolingPlan:
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.roi import roi_pool

        v = self.values
        x, out = v.InputTensor, v.OutputTensor
        rois = _rows(v.ROITensor, regions["ROITensor"], 5)
        roi_pool(float_view(regions["InputTensor"], x.element_size), _strides(x), x.sizes[2],
                 x.sizes[3], float_view(regions["OutputTensor"], out.element_size),
                 _strides(out), x.sizes[1], v.PooledSize.Height, v.PooledSize.Width,
                 _pool_batches(rois, x.sizes[0]), _pool_corners(rois, v.SpatialScale))


def roi_pooling_plan(v: SimpleNamespace) -> PoolingPlan:
    return PoolingPlan(v)


def roi_pooling_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    x = inputs["InputTensor"]
    rois = np.asarray(inputs["ROITensor"], np.float64).reshape(-1, 5)
    ph, pw = v.PooledSize.Height, v.PooledSize.Width
    n, c, h, w = x.shape
    out = np.zeros((rois.shape[0], c, ph, pw), x.dtype)
    for r, roi in enumerate(rois):
        batch = np.trunc(roi[0])
        if not 0 <= batch < n:  # (NaN fails too)
            continue
        corners = []
        for value in roi[1:]:
            scaled = float(np.float32(value) * np.float32(v.SpatialScale))
            rounded = np.floor(abs(scaled) + 0.5) * np.sign(scaled) if np.isfinite(scaled) \
                else scaled
            corners.append(0 if np.isnan(rounded) else int(min(max(rounded, INT32_MIN),
                                                                INT32_MAX)))
        x1, y1, x2, y2 = corners
        region_h, region_w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for yy in range(ph):
            start_y = min(max(yy * region_h // ph + y1, 0), h)
            end_y = min(max(((yy + 1) * region_h + ph - 1) // ph + y1, 0), h)
            for xx in range(pw):
                start_x = min(max(xx * region_w // pw + x1, 0), w)
                end_x = min(max(((xx + 1) * region_w + pw - 1) // pw + x1, 0), w)
                if end_y <= start_y or end_x <= start_x:
                    continue
                block = x[int(batch), :, start_y:end_y, start_x:end_x].reshape(c, -1)
                for ch in range(c):
                    out[r, ch, yy, xx] = _d3d_max(block[ch])
    return {"OutputTensor": out}


def _d3d_max(values: np.ndarray) -> np.generic:
    """The maximum with Direct3D's max folded in order: the first of equal values; a NaN loses
    to any number (all NaN: the last one)."""
    numbers = ~np.isnan(values.astype(np.float64))
    if not numbers.any():
        return values[-1]
    return values[int(np.flatnonzero(numbers)[np.argmax(values[numbers])])]


# --- ROI_ALIGN, ROI_ALIGN1 ------------------------------------------------------------------

def _offsets(v: SimpleNamespace) -> tuple[float, float, bool]:
    """(InputPixelOffset, OutputPixelOffset, AlignRegionsToCorners); ROI_ALIGN's are those the
    ROI_ALIGN1 page names as its behaviour."""
    return (float(getattr(v, "InputPixelOffset", 0.5)),
            float(getattr(v, "OutputPixelOffset", -0.5)),
            bool(getattr(v, "AlignRegionsToCorners", False)))


def _axis(first: np.ndarray, second: np.ndarray, scale: float, out_size: int, v: SimpleNamespace,
          aligned: bool) -> tuple[np.ndarray, ...]:
    """Per region, one axis: (origin, step, t_scale, t_offset, samples) for the kernels."""
    with np.errstate(all="ignore"):
        a, b = first * scale, second * scale
        size = b - a
        ratio = size / out_size
        samples = np.where(np.isnan(ratio), float(v.MinimumSamplesPerOutput),
                           np.clip(np.ceil(ratio), v.MinimumSamplesPerOutput,
                                   v.MaximumSamplesPerOutput))
        samples = np.maximum(samples, 1.0)
        d = out_size * samples - (1.0 if aligned else 0.0)
        single = d == 0
        d = np.where(single, 1.0, d)
        origin = np.where(single, a + size * 0.5, a)
        step = np.where(single, 0.0, size / d)
        t_scale = np.where(single, 0.0, 1.0 / d)
        t_offset = np.where(single, 0.5, 0.0)
    return origin, step, t_scale, t_offset, samples.astype(np.int64)


def _geometry(v: SimpleNamespace, rois: np.ndarray, oh: int, ow: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """geo (R, 8) float64 and counts (R, 2) int64 (see kernels/roi.py)."""
    aligned = _offsets(v)[2]
    ox, sx_step, tx_scale, tx_offset, sx = _axis(rois[:, 0], rois[:, 2], v.SpatialScaleX, ow, v,
                                                 aligned)
    oy, sy_step, ty_scale, ty_offset, sy = _axis(rois[:, 1], rois[:, 3], v.SpatialScaleY, oh, v,
                                                 aligned)
    geo = np.stack([ox, sx_step, oy, sy_step, tx_scale, tx_offset, ty_scale, ty_offset], axis=1)
    return np.ascontiguousarray(geo, np.float64), np.stack([sx, sy], axis=1)


@dataclass(frozen=True, eq=False)
class AlignPlan:
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.roi import roi_align

        v = self.values
        x, out = v.InputTensor, v.OutputTensor
        ipo, opo, _ = _offsets(v)
        rois = _rows(v.ROITensor, regions["ROITensor"], 4)
        geo, counts = _geometry(v, rois, out.sizes[2], out.sizes[3])
        batch = _valid_batches(v.BatchIndicesTensor.view(regions["BatchIndicesTensor"]),
                               x.sizes[0])
        # float64 results in dense scratch, rounded once into the output at its strides (one
        # compiled signature for FLOAT32 and FLOAT16, whose input is widened exactly)
        values = scratch(tuple(out.sizes), np.float64, "DML_OPERATOR_ROI_ALIGN",
                         "the float64 results")
        roi_align(_float32(x, regions["InputTensor"]), _strides(x), x.sizes[2], x.sizes[3],
                  values.reshape(-1), np.asarray(packed_strides(out.sizes), np.int64),
                  x.sizes[1], out.sizes[2], out.sizes[3], batch, counts, geo, opo, ipo,
                  float(v.OutOfBoundsInputValue), v.InterpolationMode.name == LINEAR,
                  v.ReductionFunction.name == MAX)
        np.copyto(out.view(regions["OutputTensor"]), values, casting="unsafe")


def roi_align_plan(v: SimpleNamespace) -> AlignPlan:
    return AlignPlan(v)


# The references: per region, the samples of every output element as arrays, from the page.

@dataclass(frozen=True)
class Samples:
    """One axis of one region: the positions (input index coordinates) of each output
    element's samples, shape (OutputSize, S), and their fractions t from corner 1 to corner 2."""

    positions: np.ndarray
    fractions: np.ndarray


def axis_samples(corner1: float, corner2: float, spatial_scale: float, output_size: int,
                 v: SimpleNamespace) -> Samples:
    """The ROI_ALIGN1 page's per-axis computation (see the module docstring)."""
    input_offset, output_offset, aligned = _offsets(v)
    with np.errstate(all="ignore"):
        scaled1 = corner1 * np.float64(spatial_scale)
        scaled2 = corner2 * np.float64(spatial_scale)
        scaled_size = scaled2 - scaled1
        ratio = scaled_size / output_size
        count = v.MinimumSamplesPerOutput if np.isnan(ratio) else \
            min(max(np.ceil(ratio), v.MinimumSamplesPerOutput), v.MaximumSamplesPerOutput)
        count = int(max(count, 1))
        sample = np.arange(output_size * count, dtype=np.float64).reshape(output_size, count)
        spread = output_size * count - (1 if aligned else 0)
        if spread == 0:  # one sample, aligned to the corners: the centre
            positions = np.full((output_size, count), scaled1 + scaled_size * 0.5 - input_offset)
            fractions = np.full((output_size, count), 0.5)
        else:
            scale = scaled_size / spread
            positions = (sample - output_offset) * scale + scaled1 - input_offset
            fractions = (sample - output_offset) / spread
    return Samples(positions, fractions)


def _gather(plane: np.ndarray, iy: np.ndarray, ix: np.ndarray, outside: float) -> np.ndarray:
    """plane[..., iy, ix] with ``outside`` for coordinates outside it (iy, ix broadcast)."""
    h, w = plane.shape[-2:]
    inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    got = plane[..., np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
    return np.where(inside, got, outside)


def interpolate(plane: np.ndarray, py: np.ndarray, px: np.ndarray, outside: float,
                linear: bool) -> np.ndarray:
    """The values at (py, px) (broadcast) of every channel of ``plane`` (C, H, W), in float64."""
    plane = plane.astype(np.float64)
    h, w = plane.shape[-2:]
    py, px = np.broadcast_arrays(py, px)
    near = (py > -1) & (py < h) & (px > -1) & (px < w)  # else every neighbour is outside
    py, px = np.where(near, py, 0.0), np.where(near, px, 0.0)
    if linear:
        top, left = np.floor(py), np.floor(px)
        ly, lx = py - top, px - left
        y0, x0 = top.astype(np.int64), left.astype(np.int64)
        y1, x1 = np.ceil(py).astype(np.int64), np.ceil(px).astype(np.int64)

        def row(iy: np.ndarray) -> np.ndarray:
            a = _gather(plane, iy, x0, outside)
            b = _gather(plane, iy, x1, outside)
            return np.where(lx == 0, a, (1 - lx) * a + lx * b)

        upper = row(y0)
        value = np.where(ly == 0, upper, (1 - ly) * upper + ly * row(y1))
    else:
        value = _gather(plane, np.ceil(py - 0.5).astype(np.int64),
                        np.ceil(px - 0.5).astype(np.int64), outside)
    return np.where(near, value, outside)


def _region_samples(v: SimpleNamespace, roi: np.ndarray, oh: int, ow: int
                    ) -> tuple[Samples, Samples]:
    return (axis_samples(roi[1], roi[3], v.SpatialScaleY, oh, v),
            axis_samples(roi[0], roi[2], v.SpatialScaleX, ow, v))


def _cell_values(v: SimpleNamespace, plane: np.ndarray, ys: Samples, xs: Samples,
                 outside: float) -> np.ndarray:
    """Every sample's value, (C, OH, OW, Sx, Sy): the page's loop order (x outer, y inner)
    last."""
    py = ys.positions[:, None, None, :]  # (OH, 1, 1, Sy)
    px = xs.positions[None, :, :, None]  # (1, OW, Sx, 1)
    return interpolate(plane, py, px, outside, v.InterpolationMode.name == LINEAR)


def _reduce_max(values: np.ndarray) -> np.ndarray:
    """Direct3D's max over the last two axes (a NaN loses; all NaN gives NaN)."""
    flat = values.reshape(*values.shape[:-2], -1)
    numbers = np.where(np.isnan(flat), -np.inf, flat)
    return np.where(np.isnan(flat).all(axis=-1), np.nan, numbers.max(axis=-1))


def roi_align_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The reference before rounding to the output type (the tests' bounds use it)."""
    x = inputs["InputTensor"]
    rois = np.asarray(inputs["ROITensor"], np.float64).reshape(-1, 4)
    batches = np.asarray(inputs["BatchIndicesTensor"]).ravel()
    oh, ow = v.OutputTensor.sizes[2:]
    outside = float(v.OutOfBoundsInputValue)
    out = np.full((rois.shape[0], x.shape[1], oh, ow), outside)
    for r, roi in enumerate(rois):
        if int(batches[r]) >= x.shape[0]:
            continue
        ys, xs = _region_samples(v, roi, oh, ow)
        values = _cell_values(v, x[int(batches[r])], ys, xs, outside)
        out[r] = _reduce_max(values) if v.ReductionFunction.name == MAX else \
            values.mean(axis=(-2, -1))
    return out


def roi_align_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                        ) -> dict[str, np.ndarray]:
    return {"OutputTensor": roi_align_float64(v, inputs).astype(
        NUMPY_DTYPE[v.OutputTensor.data_type])}


# --- ROI_ALIGN_GRAD -------------------------------------------------------------------------

def _grad_shape(v: SimpleNamespace) -> tuple[int, int, int, int]:
    """(BatchCount, ChannelCount, InputHeight, InputWidth) of the forward input."""
    t = v.OutputGradientTensor if v.OutputGradientTensor is not None else v.InputTensor
    n, c, h, w = t.sizes
    return n, c, h, w


@dataclass(frozen=True, eq=False)
class AlignGradPlan:
    values: SimpleNamespace

    def run(self, regions: Mapping[str, np.ndarray]) -> None:
        from ..kernels.roi import roi_align_grad_input, roi_align_grad_roi

        v = self.values
        dy = v.InputGradientTensor
        n, c, h, w = _grad_shape(v)
        oh, ow = dy.sizes[2:]
        ipo, opo, _ = _offsets(v)
        rois = _rows(v.ROITensor, regions["ROITensor"], 4)
        geo, counts = _geometry(v, rois, oh, ow)
        batch = _valid_batches(v.BatchIndicesTensor.view(regions["BatchIndicesTensor"]), n)
        grads = _float32(dy, regions["InputGradientTensor"])
        if v.InputTensor is not None:
            x, xs = _float32(v.InputTensor, regions["InputTensor"]), _strides(v.InputTensor)
        else:  # (AVERAGE into OutputGradientTensor reads no input)
            x, xs = grads[:1], np.zeros(4, np.int64)
        linear = v.InterpolationMode.name == LINEAR
        use_max = v.ReductionFunction.name == MAX
        # The kernels sum in float64 into dense float64 scratch, rounded once into each output
        # at its strides: one compiled signature for FLOAT32 and FLOAT16 alike.
        what = "DML_OPERATOR_ROI_ALIGN_GRAD"
        planes = scratch((n, c, h, w), np.float64, what, "the input gradient's sums") \
            if v.OutputGradientTensor is not None else None
        boxes = scratch(tuple(v.OutputROIGradientTensor.sizes), np.float64, what,
                        "the ROI gradient's sums") \
            if v.OutputROIGradientTensor is not None else None
        if planes is not None:
            roi_align_grad_input(x, xs, grads, _strides(dy), planes.reshape(-1),
                                 np.asarray((c * h * w, h * w, w, 1), np.int64), n, c, h, w, oh,
                                 ow, batch, counts, geo, opo, ipo, linear, use_max)
            np.copyto(v.OutputGradientTensor.view(regions["OutputGradientTensor"]), planes,
                      casting="unsafe")
        if boxes is not None:
            roi_align_grad_roi(x, xs, grads, _strides(dy), boxes.reshape(-1),
                               np.asarray((4, 1), np.int64), c, h, w, oh, ow, batch,
                               counts, geo, opo, ipo, float(v.SpatialScaleX),
                               float(v.SpatialScaleY), linear, use_max)
            np.copyto(v.OutputROIGradientTensor.view(regions["OutputROIGradientTensor"]),
                      boxes, casting="unsafe")


def _float32(t: Tensor, region: np.ndarray) -> np.ndarray:
    """A float tensor's storage as FLOAT32 elements at the same offsets (FLOAT16 widened
    exactly over the tensor's extent)."""
    view = float_view(region, t.element_size)
    if t.element_size == 4:
        return view
    return view[:t.extent].view(np.float16).astype(np.float32)


def roi_align_grad_plan(v: SimpleNamespace) -> AlignGradPlan:
    return AlignGradPlan(v)


def roi_align_grad_float64(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                           ) -> dict[str, np.ndarray]:
    """The adjoint of ``roi_align_float64`` (outside elements read 0), before rounding."""
    n, c, h, w = _grad_shape(v)
    dy = np.asarray(inputs["InputGradientTensor"], np.float64)
    oh, ow = dy.shape[2:]
    rois = np.asarray(inputs["ROITensor"], np.float64).reshape(-1, 4)
    batches = np.asarray(inputs["BatchIndicesTensor"]).ravel()
    x = inputs.get("InputTensor")
    linear = v.InterpolationMode.name == LINEAR
    grad = np.zeros((n, c, h, w))
    roi_grad = np.zeros((rois.shape[0], 4))
    for r, roi in enumerate(rois):
        b = int(batches[r])
        if b >= n:
            continue
        ys, xs = _region_samples(v, roi, oh, ow)
        sy, sx = ys.positions.shape[1], xs.positions.shape[1]
        # Each sample's share of its output element's gradient, (C, OH, OW, Sx, Sy).
        share = np.broadcast_to(dy[r][:, :, :, None, None] / (sx * sy), (c, oh, ow, sx, sy))
        if v.ReductionFunction.name == MAX:
            assert x is not None  # (validation: MAX needs InputTensor)
            values = _cell_values(v, x[b], ys, xs, 0.0).reshape(c, oh, ow, -1)
            numbers = np.where(np.isnan(values), -np.inf, values)
            first = np.where(np.isnan(values).all(axis=-1), values.shape[-1] - 1,
                             numbers.argmax(axis=-1))
            chosen = np.arange(values.shape[-1]) == first[..., None]
            share = np.where(chosen, dy[r][..., None], 0.0).reshape(c, oh, ow, sx, sy)
        py = np.broadcast_to(ys.positions[:, None, None, :], (oh, ow, sx, sy))
        px = np.broadcast_to(xs.positions[None, :, :, None], (oh, ow, sx, sy))
        near = (py > -1) & (py < h) & (px > -1) & (px < w)
        _scatter_weights(grad[b], py, px, near, share, linear)
        if x is not None:
            ty = np.broadcast_to(ys.fractions[:, None, None, :], (oh, ow, sx, sy))
            tx = np.broadcast_to(xs.fractions[None, :, :, None], (oh, ow, sx, sy))
            gx, gy = _image_gradients(np.asarray(x[b], np.float64), py, px, near)
            gx, gy = gx * share, gy * share
            roi_grad[r] = [np.sum(gx * (v.SpatialScaleX * (1 - tx))),
                           np.sum(gy * (v.SpatialScaleY * (1 - ty))),
                           np.sum(gx * (v.SpatialScaleX * tx)),
                           np.sum(gy * (v.SpatialScaleY * ty))]
    return {"OutputGradientTensor": grad, "OutputROIGradientTensor": roi_grad}


def _scatter_weights(grad: np.ndarray, py: np.ndarray, px: np.ndarray, near: np.ndarray,
                     share: np.ndarray, linear: bool) -> None:
    """grad (C, H, W) += share · the interpolation weight of each element each sample read."""
    h, w = grad.shape[1:]
    py, px = np.where(near, py, 0.0), np.where(near, px, 0.0)
    if linear:
        ly, lx = py - np.floor(py), px - np.floor(px)
        corners = [(np.floor(py), np.floor(px), (1 - ly) * (1 - lx)),
                   (np.floor(py), np.ceil(px), np.where(lx == 0, 0.0, (1 - ly) * lx)),
                   (np.ceil(py), np.floor(px), np.where(ly == 0, 0.0, ly * (1 - lx))),
                   (np.ceil(py), np.ceil(px), np.where((ly == 0) | (lx == 0), 0.0, ly * lx))]
    else:
        corners = [(np.ceil(py - 0.5), np.ceil(px - 0.5), np.ones_like(py))]
    for iy, ix, weight in corners:
        iy, ix = iy.astype(np.int64), ix.astype(np.int64)
        keep = near & (weight != 0) & (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
        for ch in range(grad.shape[0]):
            np.add.at(grad[ch], (iy[keep], ix[keep]), (share[ch] * weight)[keep])


def _image_gradients(plane: np.ndarray, py: np.ndarray, px: np.ndarray, near: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The ROI_ALIGN_GRAD page's imageGradX, imageGradY at each sample, (C, ...) (0 where every
    neighbour is outside; outside elements read 0)."""
    py, px = np.where(near, py, 0.0), np.where(near, px, 0.0)
    top, bottom, left, right = np.floor(py), np.ceil(py), np.floor(px), np.ceil(px)
    y_lerp, x_lerp = py - top, px - left
    tl, tr, bl, br = (_gather(plane, a.astype(np.int64), b.astype(np.int64), 0.0)
                      for a, b in ((top, left), (top, right), (bottom, left), (bottom, right)))
    grad_y = (1 - x_lerp) * (bl - tl) + x_lerp * (br - tr)
    grad_x = (1 - y_lerp) * (tr - tl) + y_lerp * (br - bl)
    return np.where(near, grad_x, 0.0), np.where(near, grad_y, 0.0)


def roi_align_grad_reference(v: SimpleNamespace, inputs: Mapping[str, np.ndarray]
                             ) -> dict[str, np.ndarray]:
    got = roi_align_grad_float64(v, inputs)
    out = {}
    for name in ("OutputGradientTensor", "OutputROIGradientTensor"):
        t = getattr(v, name)
        if t is not None:
            out[name] = got[name].reshape(t.sizes).astype(NUMPY_DTYPE[t.data_type])
    return out


ROWS: tuple[Row, ...] = (
    Row(OP.DML_OPERATOR_ROI_POOLING, roi_pooling_plan, roi_pooling_reference, FLOATS),
    Row(OP.DML_OPERATOR_ROI_ALIGN, roi_align_plan, roi_align_reference, ALIGN_TYPES),
    Row(OP.DML_OPERATOR_ROI_ALIGN1, roi_align_plan, roi_align_reference, ALIGN_TYPES),
    Row(OP.DML_OPERATOR_ROI_ALIGN_GRAD, roi_align_grad_plan, roi_align_grad_reference,
        ALIGN_TYPES),
)
