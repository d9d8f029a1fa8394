"""Where the mouth is in a face's 512 crop: the box wav2lip crops to, and the lower face's outline it is
pasted back under (docs/processors.md §0.4, §2.6: the area mask ``lower-face``, pipeline/blend/area.py).

With the 68-point landmarker's points (:func:`from_68`) the box is theirs and the outline their jaw from point
3 to 13 and nostrils 35..31. Without them (:func:`from_5`, ``landmarks.model=none``) both are estimated from
the five points: the box, and the area module's lower-face estimate (a half-ellipse from the nose to the chin,
in proportions of the eye distance: an estimate, not FaceFusion's fit; a notice says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.blend import area
from pipeline.types import Mask

LOWER_FACE = area.AREAS["lower-face"]  # of the 68 points

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
    eyes, d, right, down = area.axes(p)
    corners = np.stack([eyes + right * x * d + down * y * d for x in (-1.3, 1.3) for y in (-0.45, 1.95)])
    x1, y1 = corners.min(axis=0)
    x2, y2 = corners.max(axis=0)
    return Geometry((float(x1), float(y1), float(x2), float(y2)), area.estimated(p, "lower-face"))


def area_mask(hull: Points, size: int) -> Mask:
    """The lower face's mask on a ``size`` crop (:func:`pipeline.blend.area.hull_mask`)."""
    return area.hull_mask(hull, size)


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
