"""Where the mouth is in a face's 512 crop: the box wav2lip crops to and the lower-face mask it is pasted
back with (PROCESSORS.md §0.4 area mask, §2.6).

With the 68-point landmarker's points (:func:`from_68`) the box is theirs and the mask the convex hull of
the jaw from point 3 to 13 and the nostrils 35..31, feathered (σ 5, then (clip(0.5, 1) − 0.5)·2). Without
them (:func:`from_5`, ``landmarks.model=none``) both are estimated from the five points: the box and a
half-ellipse from the nose to the chin, in proportions of the eye distance (an estimate, not FaceFusion's
fit: a notice says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import Mask

LOWER_FACE = (*range(3, 14), 35, 34, 33, 32, 31)  # of the 68 points
SIGMA = 5.0

Points = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Geometry:
    """``box`` (x1, y1, x2, y2) the model's square is cut from; ``hull`` the lower face's outline."""

    box: tuple[float, float, float, float]
    hull: Points


def from_68(points: Points) -> Geometry:
    """The geometry of the 68 points (in crop pixels)."""
    p = np.asarray(points, np.float64).reshape(68, 2)
    x1, y1 = p.min(axis=0)
    x2, y2 = p.max(axis=0)
    return Geometry((float(x1), float(y1), float(x2), float(y2)), p[list(LOWER_FACE)])


def from_5(points: Points) -> Geometry:
    """An estimate from the five points (in crop pixels): eyes, nose, mouth corners."""
    p = np.asarray(points, np.float64).reshape(5, 2)
    eyes = (p[0] + p[1]) / 2
    d = float(np.linalg.norm(p[1] - p[0])) or 1.0
    right = (p[1] - p[0]) / d
    down = np.array([-right[1], right[0]])
    if np.dot((p[3] + p[4]) / 2 - eyes, down) < 0:
        down = -down

    def at(x: float, y: float, origin: Points = eyes) -> Points:
        return origin + right * x * d + down * y * d

    nose = float(np.dot(p[2] - eyes, down)) / d
    chin = 1.95
    corners = np.stack([at(x, y) for x in (-1.3, 1.3) for y in (-0.45, chin)])
    angles = np.linspace(0.0, np.pi, 13)
    arc = [at(1.05 * np.cos(a), nose + (chin - nose) * np.sin(a)) for a in angles]
    nostrils = [at(x, nose + 0.05) for x in (-0.2, -0.1, 0.0, 0.1, 0.2)]
    x1, y1 = corners.min(axis=0)
    x2, y2 = corners.max(axis=0)
    return Geometry((float(x1), float(y1), float(x2), float(y2)), np.stack([*arc, *nostrils]))


def area_mask(hull: Points, size: int) -> Mask:
    """The hull filled with 1 on a ``size`` crop, feathered as FaceFusion's area masks are."""
    mask = np.zeros((size, size), np.float32)
    outline = cv2.convexHull(np.round(hull).astype(np.int32))
    cv2.fillConvexPoly(mask, outline, 1.0)
    blurred = np.asarray(cv2.GaussianBlur(mask, (0, 0), SIGMA), np.float32)
    return ((np.clip(blurred, 0.5, 1.0) - 0.5) * 2.0).astype(np.float32)


def box_affine(box: tuple[float, float, float, float], size: int) -> npt.NDArray[np.float64]:
    """crop -> model square: (x1, y1) to (0, 0), (x2, y1) to (size, 0), (x1, y2) to (0, size) (the box
    stretched to the square, as FaceFusion's warp by bounding box)."""
    x1, y1, x2, y2 = box
    src = np.array([[x1, y1], [x2, y1], [x1, y2]], np.float32)
    dst = np.array([[0, 0], [size, 0], [0, size]], np.float32)
    return cv2.getAffineTransform(src, dst).astype(np.float64)


def cut(crop: npt.NDArray[np.uint8], box: tuple[float, float, float, float], size: int
        ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float64]]:
    """The box of ``crop`` stretched to ``size`` × ``size`` (border 0) and the affine that did it."""
    m = box_affine(box, size)
    x1, y1, x2, y2 = box
    shrink = (x2 - x1) > size or (y2 - y1) > size
    flags = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    square = cv2.warpAffine(crop, m, (size, size), flags=flags, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return np.asarray(square, np.uint8), m


def uncut(square: npt.NDArray[np.uint8], m: npt.NDArray[np.float64], size: int) -> npt.NDArray[np.uint8]:
    """The model's square back on the ``size`` crop (the inverse of :func:`cut`, border replicated)."""
    back = cv2.invertAffineTransform(m)
    return np.asarray(cv2.warpAffine(square, back, (size, size), flags=cv2.INTER_LINEAR,
                                     borderMode=cv2.BORDER_REPLICATE), np.uint8)
