"""The area mask (``mask.types`` area, ``mask.areas``): the convex hull of the chosen areas' landmark points
on a crop, feathered as FaceFusion's area masks are (Gaussian σ 5, then (clip(0.5, 1) − 0.5)·2, so the mask
stays inside the hull and is exactly 0 outside it).

The areas are FaceFusion's sets of the 68 points: ``upper-face`` (the jaw's top, the nostrils, the brows),
``lower-face`` (the jaw from point 3 to 13 and the nostrils: the lip syncer's mask) and ``mouth`` (the lips,
48..67); several areas make one hull of all their points. The points are truncated to whole pixels, as
FaceFusion does. Without the 68 points (``landmarks.model=none``) each area's outline is estimated from the
five points, in proportions of the eye distance (:func:`estimated`: not the landmarks' fit; the plan says so
in a notice).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import FaceArea, Mask

AREAS: dict[FaceArea, tuple[int, ...]] = {
    "upper-face": (0, 1, 2, 31, 32, 33, 34, 35, 14, 15, 16, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17),
    "lower-face": (*range(3, 14), 35, 34, 33, 32, 31),
    "mouth": tuple(range(48, 68)),
}
SIGMA = 5.0
ESTIMATED = ("mask.types area: no 68-point landmarks (landmarks.model=none): the areas are estimated from "
             "the five points; set landmarks.model=2dfan4 for the landmarks' own fit")

Points = npt.NDArray[np.float64]


def hull_mask(points: Points, size: int) -> Mask:
    """The convex hull of ``points`` (crop pixels, truncated) filled with 1 on a ``size`` crop, feathered."""
    mask = np.zeros((size, size), np.float32)
    outline = cv2.convexHull(np.asarray(points, np.float64).reshape(-1, 2).astype(np.int32))
    cv2.fillConvexPoly(mask, outline, 1.0)
    blurred = np.asarray(cv2.GaussianBlur(mask, (0, 0), SIGMA), np.float32)
    return ((np.clip(blurred, 0.5, 1.0) - 0.5) * 2.0).astype(np.float32)


def outline(areas: Sequence[FaceArea], five: npt.ArrayLike,
            sixty_eight: npt.ArrayLike | None = None) -> Points:
    """The points whose hull is the mask of ``areas``: the 68 points' sets where given, else the estimate."""
    if sixty_eight is not None:
        p = np.asarray(sixty_eight, np.float64).reshape(68, 2)
        return p[[i for a in areas for i in AREAS[a]]]
    return np.concatenate([estimated(five, a) for a in areas])


def area_mask(size: int, areas: Sequence[FaceArea], five: npt.ArrayLike,
              sixty_eight: npt.ArrayLike | None = None) -> Mask:
    """The mask of ``areas`` on a ``size`` crop (landmarks in crop pixels)."""
    return hull_mask(outline(areas, five, sixty_eight), size)


def axes(five: npt.ArrayLike) -> tuple[Points, float, Points, Points]:
    """The face's own frame from its five points: (the eyes' midpoint, the eye distance, the unit vector
    from the left eye to the right one, the unit vector across it towards the mouth)."""
    p = np.asarray(five, np.float64).reshape(5, 2)
    eyes = (p[0] + p[1]) / 2
    d = float(np.linalg.norm(p[1] - p[0])) or 1.0
    right = (p[1] - p[0]) / d
    down = np.array([-right[1], right[0]])
    if np.dot((p[3] + p[4]) / 2 - eyes, down) < 0:
        down = -down
    return eyes, d, right, down


def estimated(five: npt.ArrayLike, area: FaceArea) -> Points:
    """An outline of ``area`` from the five points (crop pixels: eyes, nose, mouth corners), in proportions
    of the eye distance along the eyes' line and across it."""
    p = np.asarray(five, np.float64).reshape(5, 2)
    eyes, d, right, down = axes(p)

    def at(x: float, y: float) -> Points:
        return eyes + right * x * d + down * y * d

    nose = float(np.dot(p[2] - eyes, down)) / d
    nostrils = [at(x, nose + 0.05) for x in (-0.2, -0.1, 0.0, 0.1, 0.2)]
    if area == "lower-face":  # the jaw as a half ellipse from the nose's level to the chin
        chin = 1.95
        arc = [at(1.05 * np.cos(a), nose + (chin - nose) * np.sin(a)) for a in np.linspace(0.0, np.pi, 13)]
        return np.stack([*arc, *nostrils])
    if area == "upper-face":  # the jaw's top at the ears, the brows arched above the eyes
        sides = [at(x, y) for x in (-1.05, 1.05) for y in (0.0, 0.3, nose)]
        brows = [at(x, -0.38 - 0.1 * (1 - (x / 0.95) ** 2)) for x in np.linspace(-0.95, 0.95, 10)]
        return np.stack([*sides, *nostrils, *brows])
    centre = (p[3] + p[4]) / 2  # the lips: an ellipse through the mouth corners
    width = float(np.linalg.norm(p[4] - p[3])) or d
    along = (p[4] - p[3]) / width
    across = np.array([-along[1], along[0]])
    angles = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    return np.stack([centre + along * 0.55 * width * np.cos(a) + across * 0.22 * width * np.sin(a)
                     for a in angles])
