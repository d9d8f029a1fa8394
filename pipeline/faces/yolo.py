"""YOLOv8-face detector (yoloface_8n): 640 × 640 RGB /255 input, letterboxed top-left.

The single output [1, 20, 8400] holds, per candidate, the box centre and size (cx, cy, w, h) in
input pixels, a face probability, then five landmarks as (x, y, visibility) in input pixels.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.faces.scrfd import letterbox, to_faces
from pipeline.models.sessions import CatalogSession
from pipeline.types import Face, Frame, Provider

log = logging.getLogger(__name__)


def decode(output: npt.NDArray[np.float32], threshold: float,
           ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(scores (K,), boxes (K,4), landmarks (K,5,2)) in input pixels from one [(1,) 20, 8400] output."""
    rows = (output[0] if output.ndim == 3 else output).T  # (8400, 20)
    rows = rows[rows[:, 4] >= threshold]
    centre, side = rows[:, 0:2], rows[:, 2:4]
    boxes = np.concatenate([centre - side / 2, centre + side / 2], axis=1)
    points = rows[:, 5:20].reshape(-1, 5, 3)[:, :, :2]
    scores = rows[:, 4].astype(np.float32)
    return scores, boxes.astype(np.float32), np.ascontiguousarray(points, dtype=np.float32)


class YoloFaceDetector(CatalogSession):
    """faces.base.Detector for YOLOv8-face; its input size is fixed at 640 by the export."""

    def __init__(self, name: str = "yolo_face", score: float = 0.5, nms: float = 0.4, size: int = 640,
                 providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, providers, threads)
        if size != self.entry.input_size:
            log.info("yolo_face runs at its fixed %d px input (asked for %d)", self.entry.input_size, size)
        self.size = self.entry.input_size
        self.score = float(score)
        self.nms = float(nms)

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        """One list of faces per frame (frame pixels), best score first."""
        (name,), (output_name, *_) = self.io
        results = []
        for frame in frames:
            blob, scale = letterbox(frame, self.size, self.entry)
            output = self.session.run([output_name], {name: blob})[0]
            results.append(to_faces(*decode(output, self.score), scale, self.nms, frame.shape))
        return results
