"""Paste swapped crops back into their frame.

A crop was cut out of the frame with a 2×3 affine ``matrix`` (frame -> crop). Pasting warps the crop
and its crop-space mask back through that transform, but only over the region of interest that the
mask can reach (a face on a 4K frame touches a few hundred thousand pixels, not eight million), and
alpha-blends there. Every frame pixel where the warped mask is 0 keeps its exact input value.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import Frame, Mask, Matrix

log = logging.getLogger(__name__)

_POISSON_PAD = 4  # seamlessClone misbehaves when the mask touches the image edge


def _support(mask: Mask) -> tuple[int, int, int, int] | None:
    """Bounding box (x0, y0, x1, y1), exclusive end, of the mask's non-zero pixels; None if empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _frame_roi(matrix: Matrix, box: tuple[int, int, int, int], shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """Frame-space box (x0, y0, x1, y1) holding every pixel whose crop-space position falls in ``box``."""
    inverse = cv2.invertAffineTransform(np.asarray(matrix, np.float64))
    x0, y0, x1, y1 = box
    corners = np.array([[x0 - 1, y0 - 1], [x1, y0 - 1], [x1, y1], [x0 - 1, y1]], np.float64)
    mapped = corners @ inverse[:, :2].T + inverse[:, 2]
    height, width = shape[:2]
    fx0 = max(int(np.floor(mapped[:, 0].min())) - 1, 0)
    fy0 = max(int(np.floor(mapped[:, 1].min())) - 1, 0)
    fx1 = min(int(np.ceil(mapped[:, 0].max())) + 2, width)
    fy1 = min(int(np.ceil(mapped[:, 1].max())) + 2, height)
    if fx1 <= fx0 or fy1 <= fy0:
        return None
    return fx0, fy0, fx1, fy1


def _poisson(src: Frame, dst: Frame, mask: Mask) -> Frame:
    """seamlessClone of ``src`` into ``dst`` (same size) where ``mask`` > 0; dst unchanged elsewhere."""
    p = _POISSON_PAD
    binary = np.where(mask > 0, 255, 0).astype(np.uint8)
    src_p = cv2.copyMakeBorder(src, p, p, p, p, cv2.BORDER_REFLECT)
    dst_p = cv2.copyMakeBorder(dst, p, p, p, p, cv2.BORDER_REFLECT)
    mask_p = cv2.copyMakeBorder(binary, p, p, p, p, cv2.BORDER_CONSTANT, value=0)
    bx, by, bw, bh = cv2.boundingRect(mask_p)
    if bw < 3 or bh < 3:
        return src
    # OpenCV places the mask's bounding rect at centre - size // 2: this centre puts it back where it was.
    center = (bx + bw // 2, by + bh // 2)
    cloned = cv2.seamlessClone(src_p, dst_p, mask_p, center, cv2.NORMAL_CLONE)
    return np.asarray(cloned[p:-p, p:-p], dtype=np.uint8)


def paste_back(
    frame: Frame,
    crop: npt.NDArray[np.uint8],
    matrix: Matrix,
    mask: Mask,
    *,
    poisson: bool = False,
    inplace: bool = False,
) -> Frame:
    """Blend ``crop`` (cut from ``frame`` by ``matrix``, frame -> crop) back into the frame through ``mask``.

    ``mask`` is in crop space (same height and width as ``crop``), float in [0, 1]. Returns a new frame
    unless ``inplace`` is set, in which case ``frame`` itself is written and returned. ``poisson``
    Poisson-blends (cv2.seamlessClone) the crop into the frame before the alpha blend.
    """
    if crop.shape[:2] != mask.shape[:2]:
        raise ValueError(f"mask {mask.shape[:2]} and crop {crop.shape[:2]} must have the same size")
    if frame.ndim != 3 or crop.ndim != 3 or frame.shape[2] != crop.shape[2]:
        raise ValueError(f"frame {frame.shape} and crop {crop.shape} must both be H×W×C with the same C")
    out = frame if inplace else frame.copy()
    box = _support(mask)
    roi = _frame_roi(matrix, box, frame.shape) if box is not None else None
    if roi is None:
        return out
    x0, y0, x1, y1 = roi
    size = (x1 - x0, y1 - y0)
    # Map ROI pixels straight into the crop: the shifted frame->crop matrix, used as an inverse map.
    m = np.asarray(matrix, np.float64).copy()
    m[:, 2] += m[:, :2] @ np.array([x0, y0], np.float64)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    alpha = np.asarray(cv2.warpAffine(np.ascontiguousarray(mask, np.float32), m, size, flags=flags,
                                      borderMode=cv2.BORDER_CONSTANT, borderValue=0), dtype=np.float32)
    np.clip(alpha, 0.0, 1.0, out=alpha)
    warped = np.asarray(cv2.warpAffine(crop, m, size, flags=flags, borderMode=cv2.BORDER_REPLICATE), dtype=np.uint8)
    region = out[y0:y1, x0:x1]
    if poisson:
        warped = _poisson(warped, region, alpha)
    base = region.astype(np.float32)
    blended = base + (warped.astype(np.float32) - base) * alpha[..., None]
    # Where alpha is 0 ``blended`` equals ``base`` exactly; the explicit select makes that a guarantee.
    result = np.where(alpha[..., None] > 0, np.rint(blended), base)
    region[...] = np.clip(result, 0, 255).astype(np.uint8)
    return out


def paste_many(
    frame: Frame,
    crops: Sequence[npt.NDArray[np.uint8]] | npt.NDArray[np.uint8],
    matrices: Sequence[Matrix],
    masks: Sequence[Mask] | Mask,
    *,
    poisson: bool = False,
    inplace: bool = False,
) -> Frame:
    """Paste several faces into one frame (one copy of the frame, faces pasted in order).

    ``masks`` is one mask per crop, or a single mask shared by all crops.
    """
    if len(crops) != len(matrices):
        raise ValueError(f"{len(crops)} crops but {len(matrices)} matrices")
    shared = isinstance(masks, np.ndarray) and masks.ndim == 2
    if not shared and len(masks) != len(crops):
        raise ValueError(f"{len(crops)} crops but {len(masks)} masks")
    out = frame if inplace else frame.copy()
    for i, (crop, matrix) in enumerate(zip(crops, matrices, strict=True)):
        mask = masks if shared else masks[i]
        paste_back(out, crop, matrix, mask, poisson=poisson, inplace=True)  # type: ignore[arg-type]
    return out
