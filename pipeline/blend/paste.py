"""Paste swapped crops back into their frame.

A crop was cut out of the frame with a 2×3 affine ``matrix`` (frame -> crop). Pasting warps the crop
and its crop-space mask back through that transform, but only over the region of interest that the
mask can reach (a face on a 4K frame touches a few hundred thousand pixels, not eight million), and
alpha-blends there. Every frame pixel where the warped mask is 0 keeps its exact input value.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import Frame, Mask, Matrix

log = logging.getLogger(__name__)



def _support(mask: npt.NDArray[np.floating] | npt.NDArray[np.bool_]) -> tuple[int, int, int, int] | None:
    """Bounding box (x0, y0, x1, y1), exclusive end, of the mask's non-zero pixels; None if empty."""
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def _frame_roi(matrix: Matrix, box: tuple[int, int, int, int],
               shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
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


@lru_cache(maxsize=16)
def _sine_basis(n: int) -> npt.NDArray[np.float32]:
    """Orthonormal type-I sine transform matrix of order ``n`` (symmetric, its own inverse)."""
    k = np.arange(1, n + 1, dtype=np.float64)
    basis = np.sqrt(2.0 / (n + 1)) * np.sin(np.pi * np.outer(k, k) / (n + 1))
    return basis.astype(np.float32)


@lru_cache(maxsize=16)
def _laplacian_eigenvalues(n: int, m: int) -> npt.NDArray[np.float32]:
    """Eigenvalues of the 5-point Laplacian on an n×m grid with zero boundary, in the sine basis."""
    ky = 2.0 * np.cos(np.pi * np.arange(1, n + 1) / (n + 1)) - 2.0
    kx = 2.0 * np.cos(np.pi * np.arange(1, m + 1) / (m + 1)) - 2.0
    return (ky[:, None] + kx[None, :]).astype(np.float32)


def poisson_blend(src: npt.NDArray[np.uint8], dst: npt.NDArray[np.uint8],
                  mask: Mask) -> npt.NDArray[np.uint8]:
    """Gradient-domain (Poisson) blend of ``src`` into ``dst`` where ``mask`` > 0; same-size H×W×C images.

    Solves the discrete Poisson equation whose guidance field is ``src``'s gradient on every pixel
    edge touching the mask and ``dst``'s elsewhere, with ``dst`` as the boundary value around the
    mask's bounding box (Pérez et al. 2003), exactly, by diagonalising the Laplacian in the sine basis.
    Pixels outside that box are ``dst``'s; inside the box only the masked part is meaningful (callers
    alpha-blend through their mask). Written here because OpenCV 5.0's seamlessClone gives different
    results on successive identical calls.
    """
    inside = mask > 0
    out = dst.copy()
    box = _support(inside)
    if box is None:
        return out
    # Solve on the mask's bounding box plus a one-pixel ring of boundary values.
    x0, y0 = max(box[0] - 1, 0), max(box[1] - 1, 0)
    x1, y1 = min(box[2] + 1, inside.shape[1]), min(box[3] + 1, inside.shape[0])
    if x1 - x0 < 3 or y1 - y0 < 3:
        return out
    inside = inside[y0:y1, None, x0:x1]
    # Layout H×C×W so that each sine transform is a single matrix product (one GEMM per side).
    s = src[y0:y1, x0:x1].astype(np.float32).transpose(0, 2, 1)
    d = dst[y0:y1, x0:x1].astype(np.float32).transpose(0, 2, 1)
    use_x, use_y = inside[:, :, 1:] | inside[:, :, :-1], inside[1:] | inside[:-1]
    gx = np.where(use_x, s[:, :, 1:] - s[:, :, :-1], d[:, :, 1:] - d[:, :, :-1])
    gy = np.where(use_y, s[1:] - s[:-1], d[1:] - d[:-1])
    rhs = (gx[1:-1, :, 1:] - gx[1:-1, :, :-1]) + (gy[1:, :, 1:-1] - gy[:-1, :, 1:-1])
    # The known boundary values move to the right-hand side; the interior is solved with zero boundary.
    rhs[0] -= d[0, :, 1:-1]
    rhs[-1] -= d[-1, :, 1:-1]
    rhs[:, :, 0] -= d[1:-1, :, 0]
    rhs[:, :, -1] -= d[1:-1, :, -1]
    n, channels, m = rhs.shape
    sn, sm = _sine_basis(n), _sine_basis(m)

    def transform(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        # cv2.gemm rather than numpy's matmul: OpenBLAS threads spin badly when the cores are busy
        # (10x slower under load), and these products are small.
        left = cv2.gemm(sn, np.ascontiguousarray(x).reshape(n, channels * m), 1.0, None, 0.0)  # type: ignore[call-overload]
        right = cv2.gemm(left.reshape(n * channels, m), sm, 1.0, None, 0.0)  # type: ignore[call-overload]
        return np.asarray(right, dtype=np.float32).reshape(n, channels, m)

    interior = transform(transform(rhs) / _laplacian_eigenvalues(n, m)[:, None, :])
    result = np.clip(np.rint(interior.transpose(0, 2, 1)), 0, 255).astype(np.uint8)
    out[y0 + 1:y1 - 1, x0 + 1:x1 - 1] = result
    return out


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
    Poisson-blends (:func:`poisson_blend`) the crop into the frame before the alpha blend.
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
    warped = np.asarray(cv2.warpAffine(crop, m, size, flags=flags, borderMode=cv2.BORDER_REPLICATE),
                        dtype=np.uint8)
    region = out[y0:y1, x0:x1]
    if poisson:
        warped = poisson_blend(warped, region, alpha)
    base = region.astype(np.float32)
    blended = base + (warped.astype(np.float32) - base) * alpha[..., None]
    # Where alpha is 0 ``blended`` equals ``base`` exactly; the explicit select makes that a guarantee.
    result = np.where(alpha[..., None] > 0, np.rint(blended), base)
    region[...] = np.clip(result, 0, 255).astype(np.uint8)
    return out
