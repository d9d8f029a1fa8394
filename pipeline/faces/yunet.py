"""YuNet face detector (built in, OpenCV Zoo, MIT): box, five landmarks and score per face.

Each frame is resized with its aspect kept so the long side is ``size``, padded right and bottom to
a multiple of 32, and run through the graph; frames of the same padded shape share one batch.
Outputs per stride s in (8, 16, 32) hold one anchor per cell, row-major: score = sqrt(cls · obj),
centre = (cell + offset) · s, side = exp(log-side) · s, landmark = (cell + offset) · s.
YuNet's five points are already in image orientation: left eye (smaller x), right eye, nose, left
mouth, right mouth.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.faces.nms import nms as suppress
from pipeline.models.sessions import CatalogSession
from pipeline.types import Face, Frame, Provider

log = logging.getLogger(__name__)

STRIDES = (8, 16, 32)
ALIGN = 32  # input sides must be multiples of the largest stride
TOP_K = 5000  # candidates kept before NMS
REGION_MARGIN = 1.0  # detect_regions: window margin around a box, in box sizes


def to_bgr(frame: npt.NDArray[np.uint8]) -> Frame:
    """A 3-channel BGR view of a grey (H,W), (H,W,1), BGR or BGRA frame."""
    if frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] == 1):
        return np.asarray(cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))
    if frame.ndim == 3 and frame.shape[2] == 4:
        return np.asarray(cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR))
    if frame.ndim == 3 and frame.shape[2] == 3:
        return frame
    raise ValueError(f"expected a grey, BGR or BGRA image, got shape {frame.shape}")


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class YuNetDetector(CatalogSession):
    """The built-in YuNet detector behind the faces.base.Detector protocol."""

    def __init__(self, score: float = 0.5, nms: float = 0.3, size: int = 640,
                 providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        if size < ALIGN:
            raise ValueError(f"detector size must be at least {ALIGN}, got {size}")
        self.score = float(score)
        self.nms = float(nms)
        self.size = int(size)
        super().__init__("yunet", providers, threads)

    def _input_shape(self) -> tuple[int | None, int | None, int | None]:
        """(batch, height, width) fixed by the graph, None where dynamic."""
        shape = self.session.get_inputs()[0].shape
        n, h, w = (d if isinstance(d, int) else None for d in (shape[0], shape[2], shape[3]))
        return n, h, w

    def resized(self, frame: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], float]:
        """The BGR frame resized (aspect kept) so its long side is ``size``, and the frame -> input scale."""
        image = to_bgr(frame)
        height, width = image.shape[:2]
        scale = self.size / max(height, width)
        new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
        # halve with a 2×2 box filter while at least 2× too big (fast and alias-free), then bilinear
        while image.shape[1] >= 2 * new_w and image.shape[0] >= 2 * new_h:
            half = (image.shape[1] // 2, image.shape[0] // 2)
            image = np.asarray(cv2.resize(image, half, interpolation=cv2.INTER_AREA), dtype=np.uint8)
        if (new_w, new_h) != image.shape[1::-1]:
            image = np.asarray(cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR),
                               dtype=np.uint8)
        return image, scale

    def prepare(self, frame: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.float32], float]:
        """(3,H,W) float32 network input and the frame -> input scale."""
        image, scale = self.resized(frame)
        new_h, new_w = image.shape[:2]
        _, fixed_h, fixed_w = self._input_shape()
        pad_h = fixed_h or _round_up(new_h, ALIGN)
        pad_w = fixed_w or _round_up(new_w, ALIGN)
        if new_h > pad_h or new_w > pad_w:
            raise ValueError(f"detector size {self.size} does not fit "
                             f"the model's fixed input {pad_w}×{pad_h}")
        blob = np.zeros((3, pad_h, pad_w), dtype=np.float32)
        blob[:, :new_h, :new_w] = image.transpose(2, 0, 1)
        return blob, scale

    def detect(self, frames: Sequence[npt.NDArray[np.uint8]]) -> list[list[Face]]:
        """One list of faces per frame, in frame pixels, best score first."""
        prepared = [self.prepare(f) for f in frames]
        results: list[list[Face]] = [[] for _ in frames]
        groups: dict[tuple[int, int], list[int]] = {}
        for index, (blob, _) in enumerate(prepared):
            groups.setdefault(blob.shape[1:], []).append(index)
        fixed_batch, _, _ = self._input_shape()
        step = fixed_batch or len(frames) or 1
        for (height, width), indices in groups.items():
            for start in range(0, len(indices), step):
                chunk = indices[start:start + step]
                blobs = [prepared[i][0] for i in chunk]
                outputs = self._run(blobs[0][None] if len(chunk) == 1 else np.stack(blobs))
                for row, index in enumerate(chunk):
                    results[index] = self._decode(outputs, row, height, width, prepared[index][1])
        return results

    @property
    def regions(self) -> bool:
        """Whether :meth:`detect_regions` is available: the graph takes inputs of any size."""
        _, fixed_h, fixed_w = self._input_shape()
        return fixed_h is None and fixed_w is None

    def detect_regions(self, frame: Frame, boxes: Sequence[npt.NDArray[np.float32]]) -> list[list[Face]]:
        """For each box (x1, y1, x2, y2, frame px), the faces :meth:`detect` would find around it, found by
        running the network on a window of the full input only.

        The frame is resized exactly as for :meth:`detect`; the window spans the box plus ``REGION_MARGIN``
        of its longer side on every side, its corners on multiples of 32 (the largest stride) so that every
        anchor keeps its place on the grid. Inside the window the input pixels are those of the full input;
        the outputs differ only where the zeros beyond the window's edge reach an anchor's receptive field,
        which the margin keeps away from the face (measured in BENCHMARKS.md, "Keyframe detection").
        """
        if not self.regions:
            raise ValueError("this yunet graph has a fixed input size: no region detection")
        image, scale = self.resized(frame)
        full_w, full_h = _round_up(image.shape[1], ALIGN), _round_up(image.shape[0], ALIGN)
        results: list[list[Face]] = []
        for box in boxes:
            x1, y1, x2, y2 = (float(v) * scale for v in np.asarray(box, np.float64).ravel()[:4])
            pad = REGION_MARGIN * max(x2 - x1, y2 - y1, 1.0)
            left, top = (max(0, int(math.floor((v - pad) / ALIGN)) * ALIGN) for v in (x1, y1))
            right = min(full_w, _round_up(math.ceil(x2 + pad), ALIGN))
            bottom = min(full_h, _round_up(math.ceil(y2 + pad), ALIGN))
            if right <= left or bottom <= top:  # the box is outside the frame
                results.append([])
                continue
            blob = np.zeros((1, 3, bottom - top, right - left), dtype=np.float32)
            crop = image[top:bottom, left:right]  # less than the window where it reaches the padding
            blob[0, :, :crop.shape[0], :crop.shape[1]] = crop.transpose(2, 0, 1)
            outputs = self._run(blob)
            results.append(self._decode(outputs, 0, bottom - top, right - left, scale, (left, top)))
        return results

    def _run(self, batch: npt.NDArray[np.float32]) -> dict[str, npt.NDArray[np.float32]]:
        output_names = [f"{k}_{s}" for k in ("cls", "obj", "bbox", "kps") for s in STRIDES]
        arrays = self.session.run(output_names, {self.session.get_inputs()[0].name: batch})
        return dict(zip(output_names, arrays, strict=True))

    def _decode(self, outputs: dict[str, npt.NDArray[np.float32]], row: int, height: int, width: int,
                scale: float, origin: tuple[int, int] = (0, 0)) -> list[Face]:
        """Faces in frame pixels from the outputs of one ``width`` × ``height`` input whose top-left
        corner is at ``origin`` (input px) of the full input."""
        scores, boxes, points = [], [], []
        for s in STRIDES:
            rows, cols = height // s, width // s
            cls = outputs[f"cls_{s}"][row, :, 0]
            if cls.size != rows * cols:
                raise ValueError(f"yunet stride {s} gave {cls.size} anchors for a {width}×{height} input")
            obj = outputs[f"obj_{s}"][row, :, 0]
            score = np.sqrt(np.clip(cls * obj, 0.0, 1.0))
            keep = np.flatnonzero(score >= self.score)
            if keep.size == 0:
                continue
            cell = np.stack([keep % cols, keep // cols], axis=1).astype(np.float32)  # (x, y) of each anchor
            bbox = outputs[f"bbox_{s}"][row, keep]
            centre = (cell + bbox[:, :2]) * s
            side = np.exp(bbox[:, 2:4]) * s
            boxes.append(np.concatenate([centre - side / 2, centre + side / 2], axis=1))
            kps = outputs[f"kps_{s}"][row, keep].reshape(-1, 5, 2)
            points.append((cell[:, None, :] + kps) * s)
            scores.append(score[keep])
        if not scores:
            return []
        all_scores = np.concatenate(scores)
        shift = np.asarray(origin, np.float32)
        all_boxes = (np.concatenate(boxes) + np.tile(shift, 2)) / scale
        all_points = (np.concatenate(points) + shift) / scale
        if all_scores.size > TOP_K:
            top = np.argsort(-all_scores, kind="stable")[:TOP_K]
            all_scores, all_boxes, all_points = all_scores[top], all_boxes[top], all_points[top]
        kept = suppress(all_boxes, all_scores, self.nms)
        return [
            Face(box=all_boxes[i].astype(np.float32), landmarks=all_points[i].astype(np.float32),
                 score=float(all_scores[i]))
            for i in kept
        ]
