"""SCRFD-family detectors (insightface det_10g "retinaface", scrfd_2.5g).

The frame is letterboxed into the top-left corner of a ``size`` × ``size`` input (aspect kept, the
rest zero), normalised RGB (x − 127.5) / 128 (trained with to_rgb: insightface and VisoMaster feed
RGB; the catalog entry's channel order). The graph has nine outputs: scores, box distances
and landmark offsets for strides 8, 16 and 32, with two anchors per grid cell, row-major, each
anchor centred on its cell's corner (col·s, row·s). Scores are probabilities already; a box is
(cx − l·s, cy − t·s, cx + r·s, cy + b·s) and landmark k is (cx + dx_k·s, cy + dy_k·s). Outputs may
carry a leading batch axis ([1, N, C]) or not ([N, C]). Landmarks come in image orientation: left
eye (smaller x), right eye, nose, left mouth, right mouth.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.faces.nms import nms as suppress
from pipeline.faces.yunet import to_bgr
from pipeline.models.catalog import ModelEntry
from pipeline.models.sessions import CatalogSession
from pipeline.types import Face, Frame, Provider

log = logging.getLogger(__name__)

STRIDES = (8, 16, 32)
TOP_K = 5000  # candidates kept before NMS


def letterbox(frame: npt.NDArray[np.uint8], size: int,
              entry: ModelEntry) -> tuple[npt.NDArray[np.float32], float]:
    """(1,3,size,size) normalised input, the frame resized into its top-left corner, and the scale used."""
    image = to_bgr(frame)
    height, width = image.shape[:2]
    scale = size / max(height, width)
    new_w, new_h = min(size, max(1, round(width * scale))), min(size, max(1, round(height * scale)))
    if (new_w, new_h) != (width, height):
        interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        image = np.asarray(cv2.resize(image, (new_w, new_h), interpolation=interpolation), np.uint8)
    canvas = np.zeros((size, size, 3), np.uint8)
    canvas[:new_h, :new_w] = image
    pixels = canvas[..., ::-1] if entry.channels == "rgb" else canvas
    mean, std = np.asarray(entry.mean, np.float32), np.asarray(entry.std, np.float32)
    blob = (pixels.astype(np.float32) / 255.0 - mean) / std
    return np.ascontiguousarray(blob.transpose(2, 0, 1)[None]), scale


def anchor_centres(size: int, stride: int, per_cell: int) -> npt.NDArray[np.float32]:
    """(n·n·per_cell, 2) anchor centres (x, y), row-major, ``per_cell`` consecutive anchors per cell."""
    n = size // stride
    rows, cols = np.mgrid[0:n, 0:n]
    centres = np.stack([cols.ravel(), rows.ravel()], axis=1).astype(np.float32) * stride
    return np.repeat(centres, per_cell, axis=0)


def decode(outputs: Sequence[npt.NDArray[np.float32]], size: int, threshold: float,
           ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(scores (K,), boxes (K,4), landmarks (K,5,2)) in input pixels, from the nine outputs of one image."""
    outs = [o[0] if o.ndim == 3 else o for o in outputs]  # [1, N, C] -> [N, C]
    scores, boxes, points = [], [], []
    for level, stride in enumerate(STRIDES):
        score, dist, kps = outs[level][:, 0], outs[level + 3], outs[level + 6]
        cells = (size // stride) ** 2
        if score.size % cells:
            raise ValueError(f"stride {stride}: {score.size} anchors do not fit a {size}×{size} input")
        centres = anchor_centres(size, stride, score.size // cells)
        keep = np.flatnonzero(score >= threshold)
        if keep.size == 0:
            continue
        c = centres[keep]
        d = dist[keep] * stride
        boxes.append(np.concatenate([c - d[:, :2], c + d[:, 2:]], axis=1))
        points.append(c[:, None, :] + kps[keep].reshape(-1, 5, 2) * stride)
        scores.append(score[keep])
    if not scores:
        return np.zeros(0, np.float32), np.zeros((0, 4), np.float32), np.zeros((0, 5, 2), np.float32)
    return (np.concatenate(scores).astype(np.float32), np.concatenate(boxes).astype(np.float32),
            np.concatenate(points).astype(np.float32))


def to_faces(scores: npt.NDArray[np.float32], boxes: npt.NDArray[np.float32], points: npt.NDArray[np.float32],
             scale: float, iou: float, shape: tuple[int, ...]) -> list[Face]:
    """NMS in input pixels, then frame pixels (boxes clipped to the frame), best score first."""
    if scores.size > TOP_K:
        top = np.argsort(-scores, kind="stable")[:TOP_K]
        scores, boxes, points = scores[top], boxes[top], points[top]
    kept = suppress(boxes, scores, iou)
    height, width = shape[:2]
    limits = np.array([width, height, width, height], np.float32)
    return [Face(box=np.clip(boxes[i] / scale, 0, limits).astype(np.float32),
                 landmarks=(points[i] / scale).astype(np.float32), score=float(scores[i])) for i in kept]


class ScrfdDetector(CatalogSession):
    """faces.base.Detector for det_10g ("retinaface") and scrfd_2.5g ("scrfd")."""

    def __init__(self, name: str, score: float = 0.5, nms: float = 0.4,
                 size: int = 640, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        if size % 32 or not 32 <= size <= 1280:
            raise UserError(f"detector size must be a multiple of 32 between 32 and 1280, got {size}")
        super().__init__(name, providers, threads)
        self.score = float(score)
        self.nms = float(nms)
        self.size = int(size)

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        """One list of faces per frame (frame pixels), best score first. One frame per run."""
        (name,), outputs_named = self.io  # the catalog's nine outputs, in its order
        results = []
        for frame in frames:
            blob, scale = letterbox(frame, self.size, self.entry)
            outputs = self.session.run(list(outputs_named), {name: blob})
            results.append(to_faces(*decode(outputs, self.size, self.score), scale, self.nms, frame.shape))
        return results
