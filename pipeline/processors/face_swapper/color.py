"""Colour transfer: move a swapped crop's colour statistics toward the original target crop.

Statistics are taken inside the mask only (mask > 0.5: the face, not the background or hair) and the
resulting mapping is applied to the whole crop. Methods:

- ``none``: the input, unchanged.
- ``reinhard``: per-channel mean and standard deviation matching in CIE L*a*b* (Reinhard et al. 2001).
- ``mkl``: the Monge–Kantorovich linear map in L*a*b*: the affine map that sends the source colour
  Gaussian onto the target's with least displacement (Pitié & Kokaram 2007); it also matches the
  correlations between channels, which reinhard ignores. Covariances are regularised before the
  matrix square roots so that a flat (near-singular) crop does not blow up.
- ``histogram``: per-channel CDF matching of the 8-bit B, G and R histograms.

L*a*b* here is OpenCV's float conversion: L in [0, 100], a and b roughly in [-127, 127].
``strength`` blends between the input (0) and the full transfer (1).
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import ColorMethod, Mask

log = logging.getLogger(__name__)

MIN_PIXELS = 16  # fewer masked pixels than this: use the whole crop for the statistics
_EPS = 1e-6

Crop = npt.NDArray[np.uint8]
Pixels = npt.NDArray[np.float64]


def to_lab(crop: Crop) -> npt.NDArray[np.float32]:
    """BGR uint8 -> float32 L*a*b* (L 0..100)."""
    unit = crop.astype(np.float32) * np.float32(1 / 255)
    return np.asarray(cv2.cvtColor(unit, cv2.COLOR_BGR2LAB), np.float32)


def from_lab(lab: npt.NDArray[np.floating]) -> Crop:
    bgr = cv2.cvtColor(np.ascontiguousarray(lab, np.float32), cv2.COLOR_LAB2BGR)
    return np.clip(np.rint(bgr * 255.0), 0, 255).astype(np.uint8)


def _selection(mask: Mask | None, shape: tuple[int, ...]) -> npt.NDArray[np.uint8] | None:
    """The masked pixels as an 8-bit mask (OpenCV's form), or None for the whole crop."""
    if mask is None:
        return None
    if mask.shape[:2] != shape[:2]:
        raise ValueError(f"colour mask {mask.shape[:2]} must match the crop {shape[:2]}")
    select = (mask > 0.5).view(np.uint8)
    count = cv2.countNonZero(select)
    if count < MIN_PIXELS:
        log.debug("colour mask keeps %d pixels: using the whole crop", count)
        return None
    return select


def _pixels(image: npt.NDArray, select: npt.NDArray[np.uint8] | None) -> Pixels:
    flat = image[select.view(bool)] if select is not None else image.reshape(-1, image.shape[-1])
    return flat.astype(np.float64)


def _reinhard(lab_s: npt.NDArray[np.float32], lab_t: npt.NDArray[np.float32],
              select: npt.NDArray[np.uint8] | None) -> tuple[Pixels, Pixels]:
    """(matrix, offset) with out = x @ matrix + offset: a per-channel scale and shift."""
    mu_s, sd_s = (v.ravel() for v in cv2.meanStdDev(lab_s, mask=select))
    mu_t, sd_t = (v.ravel() for v in cv2.meanStdDev(lab_t, mask=select))
    scale = sd_t / np.maximum(sd_s, 1e-3)
    return np.diag(scale), mu_t - mu_s * scale


def _sqrtm(sym: Pixels) -> tuple[Pixels, Pixels]:
    """(A^1/2, A^-1/2) of a symmetric positive semi-definite matrix via its eigen-decomposition."""
    values, vectors = np.linalg.eigh(sym)
    values = np.maximum(values, _EPS)
    root = np.sqrt(values)
    return (vectors * root) @ vectors.T, (vectors / root) @ vectors.T


def _mkl(lab_s: npt.NDArray[np.float32], lab_t: npt.NDArray[np.float32],
         select: npt.NDArray[np.uint8] | None) -> tuple[Pixels, Pixels]:
    """(matrix, offset) with out = x @ matrix + offset; matrix maps N(mu_s, A) onto N(mu_t, B)."""
    src, tgt = _pixels(lab_s, select), _pixels(lab_t, select)
    mu_s, mu_t = src.mean(0), tgt.mean(0)
    a, b = np.cov(src, rowvar=False), np.cov(tgt, rowvar=False)
    reg = 1e-3 * max(np.trace(a), np.trace(b)) / 3 + 1e-4
    a = a + reg * np.eye(3)
    b = b + reg * np.eye(3)
    a_half, a_inv_half = _sqrtm(a)
    middle, _ = _sqrtm(a_half @ b @ a_half)
    t = a_inv_half @ middle @ a_inv_half  # symmetric: T A T = B
    return t, mu_t - mu_s @ t


def _histogram(source: Crop, target: Crop, select: npt.NDArray[np.uint8] | None) -> Crop:
    out = np.empty_like(source)
    chosen = select.view(bool) if select is not None else None
    for c in range(source.shape[-1]):
        s = source[..., c][chosen] if chosen is not None else source[..., c].ravel()
        t = target[..., c][chosen] if chosen is not None else target[..., c].ravel()
        cdf_s = np.cumsum(np.bincount(s, minlength=256)).astype(np.float64) / s.size
        cdf_t = np.cumsum(np.bincount(t, minlength=256)).astype(np.float64) / t.size
        # Each source level goes to the target level at the same quantile (inverse target CDF); a level
        # stands for the middle of its CDF step, so a flat source lands on the target's median.
        mid_s = cdf_s - 0.5 * np.diff(cdf_s, prepend=0.0)
        lut = np.minimum(np.searchsorted(cdf_t, mid_s, side="left"), 255).astype(np.uint8)
        out[..., c] = cv2.LUT(source[..., c], lut)
    return out


def transfer(
    source_crop: Crop,
    target_crop: Crop,
    method: ColorMethod = "reinhard",
    strength: float = 1.0,
    mask: Mask | None = None,
) -> Crop:
    """``source_crop`` with its colours moved toward ``target_crop``'s (statistics inside ``mask`` > 0.5).

    Both crops are BGR uint8, aligned to the same template; ``mask`` (same height and width) picks the
    pixels whose statistics count. Returns a new array; ``none`` or ``strength`` 0 returns a copy of
    ``source_crop``.
    """
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"colour strength must be between 0 and 1, got {strength}")
    if any(crop.ndim != 3 or crop.shape[-1] != 3 for crop in (source_crop, target_crop)):
        raise ValueError("colour transfer needs H×W×3 crops, "
                         f"got {source_crop.shape} and {target_crop.shape}")
    if mask is not None and source_crop.shape[:2] != target_crop.shape[:2]:
        raise ValueError("with a mask the crops must have one size, "
                         f"got {source_crop.shape} and {target_crop.shape}")
    if method == "none" or strength == 0.0:
        return source_crop.copy()
    select = _selection(mask, source_crop.shape)
    if method == "histogram":
        full = _histogram(source_crop, target_crop, select)
    elif method in ("reinhard", "mkl"):
        lab_s, lab_t = to_lab(source_crop), to_lab(target_crop)
        fit = _reinhard if method == "reinhard" else _mkl
        matrix, offset = fit(lab_s, lab_t, select)
        affine = np.hstack([matrix.T, offset[:, None]])  # cv2.transform: out = A[:, :3] @ x + A[:, 3]
        full = from_lab(np.asarray(cv2.transform(lab_s, affine), np.float32))
    else:
        raise ValueError(f"unknown colour method {method!r}; choose one of: none, reinhard, mkl, histogram")
    if strength >= 1.0:
        return full
    src = source_crop.astype(np.float32)
    blended = src + np.float32(strength) * (full.astype(np.float32) - src)
    return np.clip(np.rint(blended), 0, 255).astype(np.uint8)
