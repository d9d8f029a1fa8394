"""Crop-space masks that need no model: the padded box and the template face ellipse.

Every mask here is a (size, size) float32 array in [0, 1], exactly 0 on the crop border so that a
pasted crop never shows its own edge. Masks depend only on their arguments, so they are built once
and cached; the cached arrays are read-only (copy before editing one).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pipeline.types import Mask

Padding = tuple[float, float, float, float]  # top, right, bottom, left, in % of the crop side


def _smoothstep(t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _ramp(size: int, start: float, stop: float, width: float) -> np.ndarray:
    """1-D profile: 0 up to ``start``, rising over ``width`` px, flat, falling to 0 at ``stop``."""
    i = np.arange(size, dtype=np.float64)
    return _smoothstep((i - start) / width) * _smoothstep((stop - i) / width)


@lru_cache(maxsize=64)
def _box_mask(size: int, blur: float, padding: Padding) -> Mask:
    top, right, bottom, left = (p * size / 100.0 for p in padding)
    # Pixel centres run 0..size-1; the box edges are where the mask first reaches 0.
    x0, x1 = left, (size - 1) - right
    y0, y1 = top, (size - 1) - bottom
    if x1 <= x0 or y1 <= y0:
        return _frozen(np.zeros((size, size), np.float32))
    # ``blur`` is the fraction of the crop taken by the feathered band (both sides together);
    # at least 1 px so that the box edge itself is always 0, never capped to more than half the box.
    width = max(blur * size / 2.0, 1.0)
    wx = min(width, (x1 - x0) / 2.0)
    wy = min(width, (y1 - y0) / 2.0)
    mask = np.outer(_ramp(size, y0, y1, wy), _ramp(size, x0, x1, wx)).astype(np.float32)
    return _frozen(mask)


def box_mask(size: int, blur: float = 0.3, padding: Padding = (0, 0, 0, 0)) -> Mask:
    """Feathered box covering the crop minus ``padding`` (top, right, bottom, left, % of the side).

    ``blur`` in [0, 1] is the fraction of the crop used for feathering: the ramp on each side is
    ``blur * size / 2`` pixels wide (at least 1). Outside the padded box and on its edge the mask is 0.
    """
    if size <= 0:
        raise ValueError(f"mask size must be positive, got {size}")
    if not 0.0 <= blur <= 1.0:
        raise ValueError(f"mask blur must be between 0 and 1, got {blur}")
    if len(padding) != 4 or any(not 0 <= p <= 100 for p in padding):
        raise ValueError("mask padding must be four percentages 0..100 (top, right, bottom, left), "
                         f"got {padding}")
    top, right, bottom, left = (float(p) for p in padding)
    return _box_mask(int(size), float(blur), (top, right, bottom, left))


@lru_cache(maxsize=32)
def _ellipse_mask(size: int, center: tuple[float, float], axes: tuple[float, float], feather: float) -> Mask:
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    cx, cy = center
    ax, ay = axes
    # Normalised radius: 1 on the ellipse. The feather band lies inside it, so the ellipse is the 0 line.
    r = np.sqrt(((xx - cx) / ax) ** 2 + ((yy - cy) / ay) ** 2)
    band = max(feather / min(ax, ay), 1e-6)
    mask = _smoothstep((1.0 - r) / band)
    mask *= _box_mask(size, 0.0, (0.0, 0.0, 0.0, 0.0))  # keep the crop border at 0 whatever the axes
    return _frozen(mask.astype(np.float32))


def ellipse_mask(size: int, center: tuple[float, float], axes: tuple[float, float], feather: float) -> Mask:
    """Feathered ellipse (centre and semi-axes in pixels): 1 inside, 0 on and outside the ellipse.

    ``feather`` is the width in pixels of the ramp just inside the ellipse.
    """
    if size <= 0 or min(axes) <= 0:
        raise ValueError(f"ellipse needs a positive size and axes, got size={size} axes={axes}")
    return _ellipse_mask(
        int(size), (float(center[0]), float(center[1])), (float(axes[0]), float(axes[1])), float(feather)
    )


def combine(*masks: Mask) -> Mask:
    """Element-wise minimum of masks of one shape (a pixel is kept only where every mask keeps it)."""
    if not masks:
        raise ValueError("combine() needs at least one mask")
    shapes = {m.shape for m in masks}
    if len(shapes) != 1:
        raise ValueError(f"masks to combine must share one shape, got {sorted(shapes)}")
    if len(masks) == 1:
        return masks[0].astype(np.float32, copy=True)
    out = np.minimum(masks[0], masks[1]).astype(np.float32)
    for m in masks[2:]:
        np.minimum(out, m, out=out)
    return out


def _frozen(mask: Mask) -> Mask:
    mask.setflags(write=False)
    return mask
