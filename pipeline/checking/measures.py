"""The independent figures a model check judges by: pure numpy/cv2 on images, boxes, points and vectors."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

Image = npt.NDArray[np.uint8]  # (H, W, 3) BGR
Region = npt.NDArray[np.bool_]  # (H, W)

SSIM_C1 = (0.01 * 255) ** 2
SSIM_C2 = (0.03 * 255) ** 2


def iou(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes."""
    ax1, ay1, ax2, ay2 = (float(v) for v in np.asarray(a).ravel()[:4])
    bx1, by1, bx2, by2 = (float(v) for v in np.asarray(b).ravel()[:4])
    inter = max(0.0, min(ax2, bx2) - max(ax1, bx1)) * max(0.0, min(ay2, by2) - max(ay1, by1))
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return inter / union if union > 0 else 0.0


def box_side(box: npt.ArrayLike) -> float:
    """sqrt(area) of an (x1, y1, x2, y2) box: the scale point errors are measured in."""
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box).ravel()[:4])
    return float(np.sqrt(max((x2 - x1) * (y2 - y1), 1e-6)))


def point_error(points: npt.ArrayLike, reference: npt.ArrayLike, box: npt.ArrayLike) -> float:
    """Mean distance between matching points, as a fraction of the reference box's side."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    q = np.asarray(reference, np.float64).reshape(-1, 2)
    return float(np.linalg.norm(p - q, axis=1).mean() / box_side(box))


def inside(points: npt.ArrayLike, box: npt.ArrayLike, margin: float = 0.1) -> float:
    """The fraction of ``points`` inside ``box`` grown by ``margin`` of its size on every side."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box).ravel()[:4])
    mx, my = margin * (x2 - x1), margin * (y2 - y1)
    ok = (p[:, 0] >= x1 - mx) & (p[:, 0] <= x2 + mx) & (p[:, 1] >= y1 - my) & (p[:, 1] <= y2 + my)
    return float(ok.mean()) if len(p) else 0.0


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two vectors (0 where either is all zeros; NaN stays NaN)."""
    u, v = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    norm = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(u @ v / norm) if norm > 0 else 0.0


def grey(image: Image) -> npt.NDArray[np.float64]:
    return np.asarray(cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_BGR2GRAY), np.float64)


def ssim(a: Image, b: Image, side: int = 128) -> float:
    """Mean structural similarity of two images' grey levels (Gaussian window, σ 1.5), both resized to
    ``side`` first so that it judges the face's structure, not the fine texture a restorer invents."""
    x = np.asarray(cv2.resize(grey(a), (side, side), interpolation=cv2.INTER_AREA), np.float64)
    y = np.asarray(cv2.resize(grey(b), (side, side), interpolation=cv2.INTER_AREA), np.float64)

    def blur(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.asarray(cv2.GaussianBlur(z, (11, 11), 1.5), np.float64)

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    num = (2 * mx * my + SSIM_C1) * (2 * cxy + SSIM_C2)
    den = (mx * mx + my * my + SSIM_C1) * (vx + vy + SSIM_C2)
    return float((num / den)[5:-5, 5:-5].mean())  # the border, where the window runs off, left out


def sharpness(image: Image) -> float:
    """Variance of the Laplacian of the grey levels (higher = more fine detail)."""
    return float(cv2.Laplacian(grey(image), cv2.CV_64F).var())


def face_region(side: int) -> Region:
    """The central ellipse of an aligned face crop: the face itself, without hair and background."""
    yy, xx = np.mgrid[0:side, 0:side] + 0.5
    inner = ((xx - side * 0.5) / (side * 0.3)) ** 2 + ((yy - side * 0.56) / (side * 0.36)) ** 2
    return np.asarray(inner <= 1)


def colour_shift(image: Image, reference: Image, region: Region) -> float:
    """The largest per-channel change of the mean colour inside ``region`` (0..255 levels)."""
    a = np.asarray(image, np.float64)[region].mean(axis=0)
    b = np.asarray(reference, np.float64)[region].mean(axis=0)
    return float(np.abs(a - b).max())


def contrast(image: Image, reference: Image, region: Region) -> float:
    """The grey-level standard deviation inside ``region`` relative to the reference's (1 = kept)."""
    ref = float(grey(reference)[region].std())
    return float(grey(image)[region].std()) / ref if ref > 0 else 0.0


def coverage(mask: npt.NDArray[np.floating]) -> tuple[float, float]:
    """(mean of the face centre, mean of the four corners) of an (S, S) mask in [0, 1] on an aligned crop."""
    m = np.asarray(mask, np.float64)
    s = m.shape[0]
    c, h = round(s * 0.5), max(1, round(s * 0.1))
    cy = round(s * 0.55)
    centre = m[cy - h:cy + h, c - h:c + h]
    k = max(1, round(s * 0.1))
    corners = np.concatenate([m[:k, :k].ravel(), m[:k, -k:].ravel(), m[-k:, :k].ravel(), m[-k:, -k:].ravel()])
    return float(centre.mean()), float(corners.mean())
