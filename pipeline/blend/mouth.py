"""The mouth-area mask: keep the target's mouth interior (teeth, tongue) under the swapped face.

Built from landmarks in crop coordinates: the inner-lip polygon of 68-point landmarks (points 60–67)
where they are known, otherwise an ellipse between the two mouth corners of the 5 points. The mask
is 0 on that area (exactly), 1 elsewhere, with a feathered rim outside it.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import Mask

INNER_LIPS = slice(60, 68)
ELLIPSE_AXES = (0.45, 0.14)  # semi-axes in mouth-corner distances (width, height)


def mouth_area(size: int, landmarks5: npt.ArrayLike,
               landmarks68: npt.ArrayLike | None = None) -> npt.NDArray[np.uint8]:
    """(size, size) uint8, 1 on the mouth interior."""
    area = np.zeros((size, size), np.uint8)
    if landmarks68 is not None:
        poly = np.asarray(landmarks68, np.float64).reshape(68, 2)[INNER_LIPS]
        cv2.fillPoly(area, [np.round(poly * 16).astype(np.int32)], 1, cv2.LINE_8, shift=4)
        return area
    p = np.asarray(landmarks5, np.float64).reshape(5, 2)
    left, right = p[3], p[4]
    width = float(np.linalg.norm(right - left))
    if width <= 1e-6:
        return area
    centre = (left + right) / 2
    angle = float(np.degrees(np.arctan2(right[1] - left[1], right[0] - left[0])))
    axes = (width * ELLIPSE_AXES[0], width * ELLIPSE_AXES[1])
    centre16 = (round(centre[0] * 16), round(centre[1] * 16))
    axes16 = (round(axes[0] * 16), round(axes[1] * 16))
    cv2.ellipse(area, centre16, axes16, angle, 0, 360, 1, -1, cv2.LINE_8, shift=4)
    return area


def mouth_mask(size: int, landmarks5: npt.ArrayLike, landmarks68: npt.ArrayLike | None = None,
               feather: float = 0.02) -> Mask:
    """1 everywhere but the mouth interior (0 there); ``feather`` = rim width as a fraction of ``size``."""
    area = mouth_area(size, landmarks5, landmarks68).astype(np.float32)
    sigma = max(feather * size / 2, 0.5)
    soft = cv2.GaussianBlur(area, (0, 0), sigma) * 2.0
    covered = np.clip(np.maximum(area, soft), 0.0, 1.0)
    return (1.0 - covered).astype(np.float32)
