"""YuNet face detector (built in, OpenCV Zoo, MIT): box, five landmarks and score per face.

Each frame is resized with its aspect kept so the long side is ``size``, padded right and bottom to
a multiple of 32, and run through the graph; frames of the same padded shape share one batch.
Outputs per stride s in (8, 16, 32) hold one anchor per cell, row-major: score = sqrt(cls · obj),
centre = (cell + offset) · s, side = exp(log-side) · s, landmark = (cell + offset) · s.
YuNet's five points are already in image orientation: left eye (smaller x), right eye, nose, left
mouth, right mouth.

``detect_regions`` runs the same graph on windows of that same input around given boxes only (the faces
followed between keyframes, :mod:`pipeline.faces.keyframes`): the faces it finds are within a fraction of
a pixel of what ``detect`` finds, at about half the cost for one face.
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
# detect_regions: the window's margin around a box, in input px: enough that the zeros beyond it barely
# reach the face's anchors (YuNet's receptive field is wide), and for a large face half its size (motion)
REGION_MIN_MARGIN = 96
REGION_MARGIN = 0.5


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


def _halvings(width: int, height: int, new_w: int, new_h: int) -> int:
    """How many 2×2 halvings take a ``width`` × ``height`` frame towards ``new_w`` × ``new_h`` (while it is
    at least twice too big)."""
    count = 0
    while width >= 2 * new_w and height >= 2 * new_h:
        width, height, count = width // 2, height // 2, count + 1
    return count


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

    def _target(self, width: int, height: int) -> tuple[int, int, float]:
        scale = self.size / max(height, width)
        return max(1, round(width * scale)), max(1, round(height * scale)), scale

    def resized(self, frame: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], float]:
        """The BGR frame resized (aspect kept) so its long side is ``size``, and the frame -> input scale."""
        image = to_bgr(frame)
        new_w, new_h, scale = self._target(image.shape[1], image.shape[0])
        # halve with a 2×2 box filter while at least 2× too big (fast and alias-free), then bilinear
        for _ in range(_halvings(image.shape[1], image.shape[0], new_w, new_h)):
            half = (image.shape[1] // 2, image.shape[0] // 2)
            image = np.asarray(cv2.resize(image, half, interpolation=cv2.INTER_AREA), dtype=np.uint8)
        if (new_w, new_h) != image.shape[1::-1]:
            image = np.asarray(cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR),
                               dtype=np.uint8)
        return image, scale

    def resized_window(self, frame: npt.NDArray[np.uint8],
                       window: tuple[int, int, int, int]) -> npt.NDArray[np.uint8] | None:
        """``resized(frame)[top:bottom, left:right]`` for ``window`` = (left, top, right, bottom) on
        multiples of 32, computed from that part of the frame only; None where that would not give the
        same pixels (so: call :meth:`resized`).

        Exact where every step maps the window's edges onto whole pixels: each 2×2 halving works on whole
        blocks (the frame's sides divisible by 2^halvings), and the bilinear step's ratio is a multiple of
        1/32 (1080p and 4K at 640: 1.5), so a window corner on a multiple of 32 falls on a source pixel and
        each output pixel is interpolated from the same pixels with the same weights as in the whole image.
        """
        image = to_bgr(frame)
        height, width = image.shape[:2]
        new_w, new_h, _ = self._target(width, height)
        halvings = _halvings(width, height, new_w, new_h)
        block = 2 ** halvings
        src_w, src_h = width // block, height // block  # after the halvings
        if width % block or height % block or (ALIGN * src_w) % new_w or (ALIGN * src_h) % new_h:
            return None
        left, top, right, bottom = window
        right, bottom = min(right, new_w), min(bottom, new_h)  # beyond: the zero padding
        x0, x1 = left * src_w // new_w, right * src_w // new_w
        y0, y1 = top * src_h // new_h, bottom * src_h // new_h
        crop = image[y0 * block:y1 * block, x0 * block:x1 * block]
        for _ in range(halvings):
            half = (crop.shape[1] // 2, crop.shape[0] // 2)
            crop = np.asarray(cv2.resize(crop, half, interpolation=cv2.INTER_AREA), dtype=np.uint8)
        if (right - left, bottom - top) != crop.shape[1::-1]:
            crop = np.asarray(cv2.resize(crop, (right - left, bottom - top), interpolation=cv2.INTER_LINEAR),
                              dtype=np.uint8)
        return crop

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

        The frame is resized exactly as for :meth:`detect`; the window spans the box plus a margin on every
        side (``REGION_MIN_MARGIN`` input px, or ``REGION_MARGIN`` of the box's longer side if more), its
        corners on multiples of 32 (the largest stride) so that every anchor keeps its place on the grid.
        Inside the window the input pixels are those of the full input (:meth:`resized_window`); the
        outputs differ only where the zeros beyond the window's edge reach into an anchor's receptive
        field, which the margin keeps small (measured in BENCHMARKS.md, "Keyframe detection").
        """
        if not self.regions:
            raise ValueError("this yunet graph has a fixed input size: no region detection")
        image = to_bgr(frame)
        new_w, new_h, scale = self._target(image.shape[1], image.shape[0])
        full_w, full_h = _round_up(new_w, ALIGN), _round_up(new_h, ALIGN)
        whole: npt.NDArray[np.uint8] | None = None  # the whole resized frame, where a window is not exact
        results: list[list[Face]] = []
        for box in boxes:
            x1, y1, x2, y2 = (float(v) * scale for v in np.asarray(box, np.float64).ravel()[:4])
            pad = max(REGION_MARGIN * max(x2 - x1, y2 - y1), REGION_MIN_MARGIN)
            left, top = (max(0, int(math.floor((v - pad) / ALIGN)) * ALIGN) for v in (x1, y1))
            right = min(full_w, _round_up(math.ceil(x2 + pad), ALIGN))
            bottom = min(full_h, _round_up(math.ceil(y2 + pad), ALIGN))
            if right <= left or bottom <= top:  # the box is outside the frame
                results.append([])
                continue
            crop = self.resized_window(image, (left, top, right, bottom))
            if crop is None:
                whole = self.resized(image)[0] if whole is None else whole
                crop = whole[top:bottom, left:right]  # less than the window where it reaches the padding
            blob = np.zeros((1, 3, bottom - top, right - left), dtype=np.float32)
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
