"""ROI pooling and ROI alignment (ROI_POOLING, ROI_ALIGN, ROI_ALIGN1, ROI_ALIGN_GRAD).

The plan (``movement/roi.py``) reads each region once at dispatch and turns it into per-region
integers and float64 geometry; these kernels then do the per-element work, in parallel:

- ``roi_pool``: one task per output element; the bin (rows [hs, he), columns [ws, we)) is
  computed from the region's rounded corners, clamped to the input, and its maximum (Direct3D's
  max: a NaN loses) is copied bit for bit; an empty bin or an invalid batch writes 0.
- ``roi_align``: one task per output element; the samples of its cell (x outer, y inner, as the
  page's loops) are interpolated in float64 and averaged or maximised, then rounded once.
- ``roi_align_grad_input``: one task per (batch, channel) plane, accumulating every region of that
  batch into a float64 plane (the adjoint of the interpolation), then rounded once.
- ``roi_align_grad_roi``: one task per region, four float64 sums.

A sample at (py, px), in input index coordinates (integers are element centres), reads the
elements floor/ceil of each coordinate (LINEAR; a neighbour of weight 0 is not read) or the one at
ceil(p - 1/2) (NEAREST_NEIGHBOR: ties go to the lower index); an element outside the input reads
``oob``. A sample with both neighbours of one axis outside (p <= -1 or p >= size, or NaN) reads
``oob`` without interpolating.

Region geometry (per region, float64): ``geo[r] = (x_origin, x_scale, y_origin, y_scale, tx_scale,
tx_offset, ty_scale, ty_offset)``; sample s of an axis lies at
``((s - OutputPixelOffset) · scale + origin) - InputPixelOffset`` and at the fraction
``t = (s - OutputPixelOffset) · t_scale + t_offset`` of the way from the first corner to the
second (the gradient's ∂p/∂corner factors). ``counts[r] = (samples_x, samples_y)``; ``batch[r]``
is -1 for a region whose batch index lies outside the input.

Every prange body calls one helper per task (``_pool_one``, ``_align_one``, ``_grad_plane``,
``_grad_region``), which holds the task's loops and early exits.
"""

from __future__ import annotations

import math

import numpy as np

from .floats import load32, load64, store
from .jit import helper, inline, kernel, prange


@inline
def _read(x, base, sh, sw, h, w, iy, ix, oob):  # pragma: no cover
    if iy < 0 or iy >= h or ix < 0 or ix >= w:
        return oob
    return load64(x, base + iy * sh + ix * sw)


@inline
def _inside(py, px, h, w):  # pragma: no cover
    """Some element around (py, px) lies in the input (False for NaN)."""
    return py > -1.0 and py < h and px > -1.0 and px < w


@inline
def _corners(py, px):  # pragma: no cover
    """The bilinear neighbours of (py, px): rows y0 = floor(py), y1 = ceil(py), columns x0, x1
    alike, and the fractions ly = py - y0, lx = px - x0."""
    fy = math.floor(py)
    fx = math.floor(px)
    return (np.int64(fy), np.int64(fx), np.int64(math.ceil(py)), np.int64(math.ceil(px)),
            py - fy, px - fx)


@inline
def sample(x, base, sh, sw, h, w, py, px, oob, linear):  # pragma: no cover
    """The value at (py, px): bilinear over floor/ceil, or the nearest element."""
    if not _inside(py, px, h, w):
        return oob
    if not linear:
        return _read(x, base, sh, sw, h, w, np.int64(math.ceil(py - 0.5)),
                     np.int64(math.ceil(px - 0.5)), oob)
    y0, x0, y1, x1, ly, lx = _corners(py, px)
    top = _read(x, base, sh, sw, h, w, y0, x0, oob)
    if lx != 0.0:
        top = (1.0 - lx) * top + lx * _read(x, base, sh, sw, h, w, y0, x1, oob)
    if ly == 0.0:
        return top
    bottom = _read(x, base, sh, sw, h, w, y1, x0, oob)
    if lx != 0.0:
        bottom = (1.0 - lx) * bottom + lx * _read(x, base, sh, sw, h, w, y1, x1, oob)
    return (1.0 - ly) * top + ly * bottom


@inline
def _element(e, channels, oh, ow):  # pragma: no cover
    """(region, channel, y, x) of output element e (row-major)."""
    k = np.int64(e)
    qx = k % ow
    rest = k // ow
    qy = rest % oh
    rest = rest // oh
    return rest // channels, rest % channels, qy, qx


@inline
def _coord(s, opo, scale, origin, ipo):  # pragma: no cover
    return (np.float64(s) - opo) * scale + origin - ipo


@inline
def _span(o, count, opo, scale, origin, ipo, size):  # pragma: no cover
    """The samples [lo, hi) of output coordinate ``o`` (``count`` per output) whose coordinate
    lies in (-1, size), where an element of the input is read: the coordinate is monotonic in
    the sample, so they are one run, found from the line's two crossings and then checked
    sample by sample at its ends (rounding). Every other sample reads only outside elements,
    whatever the region (a corner at 1e30 with MaximumSamplesPerOutput = UINT_MAX asked for
    1.8e19 samples per element; now its samples inside the input are visited, and those are at
    most about the input's size when the count is the adaptive ceil(size / output))."""
    p0 = _coord(o * count, opo, scale, origin, ipo)
    if p0 != p0 or scale != scale:
        return np.int64(0), np.int64(0)
    if scale == 0.0 or not math.isfinite(p0):
        return (np.int64(0), count) if -1.0 < p0 < size else (np.int64(0), np.int64(0))
    a = (-1.0 - p0) / scale
    b = (size - p0) / scale
    top = np.float64(count)
    lo = np.int64(max(min(math.floor(min(a, b)), top), 0.0))
    hi = np.int64(max(min(math.ceil(max(a, b)) + 1.0, top), 0.0))
    while lo < hi and not -1.0 < _coord(o * count + lo, opo, scale, origin, ipo) < size:
        lo += 1
    while lo > 0 and -1.0 < _coord(o * count + lo - 1, opo, scale, origin, ipo) < size:
        lo -= 1
    while hi > lo and not -1.0 < _coord(o * count + hi - 1, opo, scale, origin, ipo) < size:
        hi -= 1
    while hi < count and hi > lo and -1.0 < _coord(o * count + hi, opo, scale, origin, ipo) < size:
        hi += 1
    return lo, hi


@inline
def _spans(geo, r, ox, oy, sx, sy, opo, ipo, h, w):  # pragma: no cover
    x0, x1 = _span(ox, sx, opo, geo[r, 1], geo[r, 0], ipo, np.float64(w))
    y0, y1 = _span(oy, sy, opo, geo[r, 3], geo[r, 2], ipo, np.float64(h))
    if x0 >= x1 or y0 >= y1:
        return np.int64(0), np.int64(0), np.int64(0), np.int64(0)
    return x0, x1, y0, y1


@inline
def _first_outside(x0, x1, y0, y1, sx, sy):  # pragma: no cover
    """The first sample (x outer, y inner) outside the box [x0, x1) x [y0, y1), or (-1, -1)."""
    if x0 > 0 or x1 == x0:
        return np.int64(0), np.int64(0)
    if y0 > 0:
        return np.int64(0), np.int64(0)
    if y1 < sy:
        return np.int64(0), y1
    if x1 < sx:
        return x1, np.int64(0)
    return np.int64(-1), np.int64(-1)


@helper
def _argmax(x, base, sh, sw, h, w, geo, r, ox, oy, sx, sy, opo, ipo, oob,
            linear):  # pragma: no cover
    """The (x, y) sample indices of the cell's maximum: the first of equal ones, a NaN losing
    (Direct3D's max), scanned x outer, y inner. The samples outside the input all read ``oob``:
    the first of them stands for them all."""
    x0, x1, y0, y1 = _spans(geo, r, ox, oy, sx, sy, opo, ipo, h, w)
    best = 0.0
    bi = np.int64(0)
    bj = np.int64(0)
    first = True
    for i in range(x0, x1):
        px = _coord(ox * sx + i, opo, geo[r, 1], geo[r, 0], ipo)
        for j in range(y0, y1):
            py = _coord(oy * sy + j, opo, geo[r, 3], geo[r, 2], ipo)
            v = sample(x, base, sh, sw, h, w, py, px, oob, linear)
            if first or v > best or best != best:
                best = v
                bi = np.int64(i)
                bj = np.int64(j)
                first = False
    oi, oj = _first_outside(x0, x1, y0, y1, sx, sy)
    if oi < 0:
        return bi, bj
    if first:
        return oi, oj
    # The scan's rule between the inside maximum and the outside value: the larger wins (a NaN
    # loses), of equal ones the earlier in the scan.
    if best != best and oob == oob:
        return oi, oj
    if oob > best or (oob == best and oi * sy + oj < bi * sy + bj):
        return oi, oj
    return bi, bj


@helper
def _pool_one(x, xs, h, w, b, c, box, r, qy, qx, ph, pw):  # pragma: no cover
    """The offset in ``x`` of bin (qy, qx)'s maximum, -1 for an empty bin or invalid batch."""
    x1 = box[r, 0]
    y1 = box[r, 1]
    rw = max(box[r, 2] - x1 + 1, np.int64(1))
    rh = max(box[r, 3] - y1 + 1, np.int64(1))
    hs = min(max(qy * rh // ph + y1, np.int64(0)), h)
    he = min(max(((qy + 1) * rh + ph - 1) // ph + y1, np.int64(0)), h)
    ws = min(max(qx * rw // pw + x1, np.int64(0)), w)
    we = min(max(((qx + 1) * rw + pw - 1) // pw + x1, np.int64(0)), w)
    at = np.int64(-1)
    if b < 0:
        return at
    base = b * xs[0] + c * xs[1]
    best = np.float32(0.0)
    for yy in range(hs, he):
        for xx in range(ws, we):
            i = base + yy * xs[2] + xx * xs[3]
            v = load32(x, i)
            if at < 0 or v > best or best != best:
                best = v
                at = i
    return at


@kernel
def roi_pool(x, xs, h, w, out, os, channels, ph, pw, batch, box):  # pragma: no cover
    """ROI_POOLING: out[r, c, py, px] = the maximum of the region's bin, 0 if it is empty."""
    for e in prange(box.shape[0] * channels * ph * pw):
        r, c, qy, qx = _element(e, channels, ph, pw)
        dst = r * os[0] + c * os[1] + qy * os[2] + qx * os[3]
        at = _pool_one(x, xs, h, w, batch[r], c, box, r, qy, qx, ph, pw)
        if at < 0:
            store(out, dst, np.float32(0.0))
        else:
            out[dst] = x[at]


@helper
def _align_one(x, xs, h, w, b, c, r, qy, qx, counts, geo, opo, ipo, oob, linear,
               use_max):  # pragma: no cover
    """Output element (r, c, qy, qx) of ROI_ALIGN1, in float64."""
    if b < 0:
        return oob
    base = b * xs[0] + c * xs[1]
    sx = counts[r, 0]
    sy = counts[r, 1]
    if use_max:
        bi, bj = _argmax(x, base, xs[2], xs[3], h, w, geo, r, qx, qy, sx, sy, opo, ipo, oob,
                         linear)
        px = _coord(qx * sx + bi, opo, geo[r, 1], geo[r, 0], ipo)
        py = _coord(qy * sy + bj, opo, geo[r, 3], geo[r, 2], ipo)
        return sample(x, base, xs[2], xs[3], h, w, py, px, oob, linear)
    x0, x1, y0, y1 = _spans(geo, r, qx, qy, sx, sy, opo, ipo, h, w)
    acc = 0.0
    for i in range(x0, x1):
        px = _coord(qx * sx + i, opo, geo[r, 1], geo[r, 0], ipo)
        for j in range(y0, y1):
            py = _coord(qy * sy + j, opo, geo[r, 3], geo[r, 2], ipo)
            acc += sample(x, base, xs[2], xs[3], h, w, py, px, oob, linear)
    total = np.float64(sx) * np.float64(sy)
    outside = total - np.float64((x1 - x0) * (y1 - y0))
    if outside > 0:  # every sample outside the input reads oob
        acc += outside * oob
    return acc / total


@kernel
def roi_align(x, xs, h, w, out, os, channels, oh, ow, batch, counts, geo, opo, ipo, oob,
              linear, use_max):  # pragma: no cover
    """ROI_ALIGN / ROI_ALIGN1: every output element reduces its cell's samples."""
    for e in prange(batch.shape[0] * channels * oh * ow):
        r, c, qy, qx = _element(e, channels, oh, ow)
        store(out, r * os[0] + c * os[1] + qy * os[2] + qx * os[3],
              _align_one(x, xs, h, w, batch[r], c, r, qy, qx, counts, geo, opo, ipo, oob,
                         linear, use_max))


@inline
def _spread(acc, h, w, py, px, g, linear):  # pragma: no cover
    """Add g times each interpolation weight of (py, px) to the plane ``acc`` (the adjoint of
    ``sample``: elements outside the input and weights of 0 receive nothing)."""
    if not _inside(py, px, h, w):
        return
    if not linear:
        iy = np.int64(math.ceil(py - 0.5))
        ix = np.int64(math.ceil(px - 0.5))
        if 0 <= iy < h and 0 <= ix < w:
            acc[iy * w + ix] += g
        return
    y0, x0, y1, x1, ly, lx = _corners(py, px)
    for dy in range(2):
        if dy == 1 and ly == 0.0:
            break
        iy = y0 if dy == 0 else y1
        wy = 1.0 - ly if dy == 0 else ly
        if iy < 0 or iy >= h:
            continue
        for dx in range(2):
            if dx == 1 and lx == 0.0:
                break
            ix = x0 if dx == 0 else x1
            wx = 1.0 - lx if dx == 0 else lx
            if 0 <= ix < w:
                acc[iy * w + ix] += g * wy * wx


@helper
def _grad_plane(x, xs, dy, gs, acc, b, c, h, w, oh, ow, batch, counts, geo, opo, ipo, linear,
                use_max):  # pragma: no cover
    """Accumulate into ``acc`` (H·W float64) every share that plane (b, c) receives."""
    base = b * xs[0] + c * xs[1]
    for r in range(batch.shape[0]):
        if batch[r] != b:
            continue
        sx = counts[r, 0]
        sy = counts[r, 1]
        for qy in range(oh):
            for qx in range(ow):
                g = load64(dy, r * gs[0] + c * gs[1] + qy * gs[2] + qx * gs[3])
                if use_max:
                    bi, bj = _argmax(x, base, xs[2], xs[3], h, w, geo, r, qx, qy, sx, sy, opo,
                                     ipo, 0.0, linear)
                    px = _coord(qx * sx + bi, opo, geo[r, 1], geo[r, 0], ipo)
                    py = _coord(qy * sy + bj, opo, geo[r, 3], geo[r, 2], ipo)
                    _spread(acc, h, w, py, px, g, linear)
                else:  # (samples outside the input spread nothing)
                    share = g / (np.float64(sx) * np.float64(sy))
                    x0, x1, y0, y1 = _spans(geo, r, qx, qy, sx, sy, opo, ipo, h, w)
                    for i in range(x0, x1):
                        px = _coord(qx * sx + i, opo, geo[r, 1], geo[r, 0], ipo)
                        for j in range(y0, y1):
                            py = _coord(qy * sy + j, opo, geo[r, 3], geo[r, 2], ipo)
                            _spread(acc, h, w, py, px, share, linear)


@kernel
def roi_align_grad_input(x, xs, dy, gs, out, os, n, channels, h, w, oh, ow, batch, counts,
                         geo, opo, ipo, linear, use_max):  # pragma: no cover
    """OutputGradientTensor: each (batch, channel) plane sums, over the regions of its batch,
    every sample's share of InputGradientTensor (1/samples for AVERAGE, all of it for the
    MAX sample, found in ``x`` with outside elements read as 0)."""
    for task in prange(n * channels):
        b = np.int64(task) // channels
        c = np.int64(task) % channels
        acc = np.zeros(h * w, np.float64)
        _grad_plane(x, xs, dy, gs, acc, b, c, h, w, oh, ow, batch, counts, geo, opo, ipo,
                    linear, use_max)
        o = b * os[0] + c * os[1]
        for k in range(h * w):
            store(out, o + (k // w) * os[2] + (k % w) * os[3], acc[k])


@inline
def _image_gradient(x, base, sh, sw, h, w, py, px):  # pragma: no cover
    """(∂/∂x, ∂/∂y) of the bilinear interpolation at (py, px), the grad page's formulas over the
    floor/ceil neighbours (outside elements read 0)."""
    if not _inside(py, px, h, w):
        return 0.0, 0.0
    y0, x0, y1, x1, ly, lx = _corners(py, px)
    tl = _read(x, base, sh, sw, h, w, y0, x0, 0.0)
    tr = _read(x, base, sh, sw, h, w, y0, x1, 0.0)
    bl = _read(x, base, sh, sw, h, w, y1, x0, 0.0)
    br = _read(x, base, sh, sw, h, w, y1, x1, 0.0)
    grad_y = (1.0 - lx) * (bl - tl) + lx * (br - tr)
    grad_x = (1.0 - ly) * (tr - tl) + ly * (br - bl)
    return grad_x, grad_y


@helper
def _grad_region(x, xs, dy, gs, d, r, b, channels, h, w, oh, ow, counts, geo, opo, ipo, ssx,
                 ssy, linear, use_max):  # pragma: no cover
    """d[0:4] = region r's gradient with respect to (x1, y1, x2, y2)."""
    sx = counts[r, 0]
    sy = counts[r, 1]
    for c in range(channels):
        base = b * xs[0] + c * xs[1]
        for qy in range(oh):
            for qx in range(ow):
                g = load64(dy, r * gs[0] + c * gs[1] + qy * gs[2] + qx * gs[3])
                # (samples outside the input have no image gradient)
                i0, i1, j0, j1 = _spans(geo, r, qx, qy, sx, sy, opo, ipo, h, w)
                share = g / (np.float64(sx) * np.float64(sy))
                if use_max:
                    bi, bj = _argmax(x, base, xs[2], xs[3], h, w, geo, r, qx, qy, sx, sy, opo,
                                     ipo, 0.0, linear)
                    i0 = bi
                    i1 = bi + 1
                    j0 = bj
                    j1 = bj + 1
                    share = g
                for i in range(i0, i1):
                    s = qx * sx + i
                    px = _coord(s, opo, geo[r, 1], geo[r, 0], ipo)
                    tx = (np.float64(s) - opo) * geo[r, 4] + geo[r, 5]
                    for j in range(j0, j1):
                        t = qy * sy + j
                        py = _coord(t, opo, geo[r, 3], geo[r, 2], ipo)
                        ty = (np.float64(t) - opo) * geo[r, 6] + geo[r, 7]
                        gx, gy = _image_gradient(x, base, xs[2], xs[3], h, w, py, px)
                        gx *= share
                        gy *= share
                        d[0] += gx * (ssx * (1.0 - tx))
                        d[1] += gy * (ssy * (1.0 - ty))
                        d[2] += gx * (ssx * tx)
                        d[3] += gy * (ssy * ty)


@kernel
def roi_align_grad_roi(x, xs, dy, gs, out, os, channels, h, w, oh, ow, batch, counts, geo,
                       opo, ipo, ssx, ssy, linear, use_max):  # pragma: no cover
    """OutputROIGradientTensor: per region, Σ image gradient · share of InputGradientTensor ·
    ∂p/∂corner, with ∂px/∂x1 = SpatialScaleX·(1 - t), ∂px/∂x2 = SpatialScaleX·t (y alike)."""
    for r in prange(batch.shape[0]):
        d = np.zeros(4, np.float64)
        if batch[r] >= 0:
            _grad_region(x, xs, dy, gs, d, r, batch[r], channels, h, w, oh, ow, counts, geo,
                         opo, ipo, ssx, ssy, linear, use_max)
        for k in range(4):
            store(out, r * os[0] + k * os[1], d[k])
