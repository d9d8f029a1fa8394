"""68-point landmarks (2DFAN4) to refine the detector's five points.

The model takes a 256 crop centred on the face box, scaled so that the box's longer side is 195 px,
RGB in [0, 1] ([1, 3, 256, 256]), and returns [1, 68, 3]: (x, y) on its 64 px heatmap grid plus a
confidence, and the heatmaps. The 68 points go back to frame coordinates; the five alignment points
are taken from them (eye centres, nose tip, mouth corners) where the mean confidence is high enough,
so alignment and the mouth mask follow the real contour instead of the detector's coarse points.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.faces.align import invert, transform_points
from pipeline.models.runner import ModelRunner, normalise
from pipeline.types import Face, Frame, LandmarkerName, Landmarks5, Matrix, Provider

log = logging.getLogger(__name__)

BOX_SIDE = 195.0  # px the box's longer side takes in the 256 input
HEATMAP = 64
MIN_CONFIDENCE = 0.3


def box_matrix(box: npt.ArrayLike, size: int = 256) -> Matrix:
    """Frame -> model-input transform: the box centred, its longer side scaled to ``BOX_SIDE``·size/256."""
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box).ravel()[:4])
    scale = BOX_SIDE * size / 256 / max(x2 - x1, y2 - y1, 1.0)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return np.array([[scale, 0.0, size / 2 - scale * cx], [0.0, scale, size / 2 - scale * cy]], np.float64)


def five_from_68(points: npt.ArrayLike) -> Landmarks5:
    """Left eye, right eye (image left/right), nose tip, left and right mouth corners from 68 points."""
    p = np.asarray(points, np.float64).reshape(68, 2)
    return np.stack([p[36:42].mean(0), p[42:48].mean(0), p[30], p[48], p[54]]).astype(np.float32)


class Landmarker68:
    """Adds ``landmarks68`` (and refined five points) to faces, all faces of a call in one batch."""

    def __init__(self, name: LandmarkerName = "2dfan4", providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0, min_confidence: float = MIN_CONFIDENCE) -> None:
        self.runner = ModelRunner(name, "landmarker", providers, threads)
        self.name = name
        self.size = self.runner.entry.input_size
        self.min_confidence = min_confidence

    def landmarks(self, frame: Frame,
                  faces: Sequence[Face]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """((N, 68, 2) frame-space points, (N,) mean confidence) for ``faces`` of ``frame``."""
        if not faces:
            return np.zeros((0, 68, 2), np.float32), np.zeros(0, np.float32)
        matrices = [box_matrix(f.box, self.size) for f in faces]
        crops = np.stack([np.asarray(cv2.warpAffine(frame, m, (self.size, self.size), flags=cv2.INTER_LINEAR,
                                         borderMode=cv2.BORDER_CONSTANT), np.uint8) for m in matrices])
        raw = self.runner.run(normalise(crops, self.runner.entry))[0]  # (N, 68, 3)
        grid = raw[..., :2] * (self.size / HEATMAP)
        points = np.stack([transform_points(g, invert(m)) for g, m in zip(grid, matrices, strict=True)])
        return points.astype(np.float32), raw[..., 2].mean(axis=1).astype(np.float32)

    def refine(self, frame: Frame, faces: Sequence[Face]) -> list[Face]:
        """``faces`` with ``landmarks68`` set and their five points taken from them where confident."""
        points, confidence = self.landmarks(frame, faces)
        out = []
        for face, p, c in zip(faces, points, confidence, strict=True):
            if c < self.min_confidence:
                log.debug("68-point landmarks not confident (%.2f); keeping the detector's points", c)
                out.append(face)
                continue
            out.append(replace(face, landmarks=five_from_68(p), landmarks68=p,
                               extra={**face.extra, "landmarks68_confidence": float(c)}))
        return out
