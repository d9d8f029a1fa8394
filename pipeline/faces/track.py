"""Temporal tracking of selected faces: fill missed detections, smooth landmarks, reset at cuts.

Frames go in in order with the faces chosen for them and come out in the same order, delayed by at
most ``max_gap`` frames (the look-ahead): when a face is lost and found again within that window, the
frames in between get landmarks interpolated from both ends. At emission every face is smoothed with a
One-Euro filter per track, in units of the face's size so the same settings suit small and large faces.
A scene cut (grey-histogram distance between consecutive frames) or a jump of more than a face's size
ends every track: nothing is interpolated or smoothed across it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

import cv2
import numpy as np

from pipeline.settings import TrackerSettings
from pipeline.types import Face, Frame

T = TypeVar("T")


class OneEuro:
    """One-Euro filter (Casiez et al. 2012) over a vector, elementwise."""

    def __init__(self, freq: float, min_cutoff: float, beta: float, d_cutoff: float = 0.3) -> None:
        self.freq, self.min_cutoff, self.beta, self.d_cutoff = freq, min_cutoff, beta, d_cutoff
        self.x: np.ndarray | None = None
        self.dx: np.ndarray = np.zeros(0)

    def _alpha(self, cutoff: np.ndarray | float) -> np.ndarray | float:
        tau = 1.0 / (2 * math.pi * cutoff)
        return 1.0 / (1.0 + tau * self.freq)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.x is None:
            self.x, self.dx = x.copy(), np.zeros_like(x)
            return x.copy()
        dx = (x - self.x) * self.freq
        a_d = self._alpha(self.d_cutoff)
        self.dx = a_d * dx + (1 - a_d) * self.dx
        a = self._alpha(self.min_cutoff + self.beta * np.abs(self.dx))
        self.x = a * x + (1 - a) * self.x
        return self.x.copy()


def _scale(face: Face) -> float:
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return max(1.0, math.hypot(x2 - x1, y2 - y1))


def _interpolate(a: Face, b: Face, t: float) -> Face:
    box = (a.box * (1 - t) + b.box * t).astype(np.float32)
    lm = (a.landmarks * (1 - t) + b.landmarks * t).astype(np.float32)
    return Face(box=box, landmarks=lm, score=min(a.score, b.score), embedding=a.embedding,
                extra={**a.extra, "interpolated": True})


@dataclass
class _Track:
    id: int
    last_index: int
    last_face: Face
    scale: float
    filter: OneEuro | None = None


@dataclass
class _Slot(Generic[T]):
    index: int
    payload: T
    faces: dict[int, Face] = field(default_factory=dict)  # track id -> face
    cut: bool = False  # first frame of a new scene


def histogram(frame: Frame) -> np.ndarray:
    """The normalised 32-bin grey histogram of a thumbnail of ``frame`` (for scene cuts)."""
    small = cv2.resize(frame, (64, 36), interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY) if small.ndim == 3 else small
    h = cv2.calcHist([grey], [0], None, [32], [0, 256]).ravel()
    return h / max(1.0, float(h.sum()))


def is_cut(previous: np.ndarray, current: np.ndarray, threshold: float) -> bool:
    """Whether two consecutive frames' histograms are far enough apart to start a new scene."""
    return 0.5 * float(np.abs(current - previous).sum()) > threshold


class Tracker(Generic[T]):
    def __init__(self, settings: TrackerSettings, fps: float) -> None:
        self.s, self.fps = settings, max(1.0, fps)
        self._tracks: dict[int, _Track] = {}
        self._next_id = 0
        self._pending: deque[_Slot[T]] = deque()
        self._index = 0
        self._prev_hist: np.ndarray | None = None
        self._filters: dict[int, OneEuro] = {}
        self._units: dict[int, float] = {}  # track id -> the face size its filter works in

    # --- input ----------------------------------------------------------------------------------------
    def push(self, frame: Frame, faces: list[Face], payload: T,
             cut: bool | None = None) -> Iterator[tuple[T, list[Face]]]:
        """Add the next frame; yields (payload, faces) for every frame that is now final. ``cut``: whether
        it starts a new scene, when the caller has decided that already (else the histogram test here)."""
        slot: _Slot[T] = _Slot(self._index, payload)
        if cut is None:
            hist = histogram(frame)
            cut = self._prev_hist is not None and is_cut(self._prev_hist, hist, self.s.scene_cut)
            self._prev_hist = hist
        if cut:
            slot.cut = True
            yield from self.flush()
            self._tracks.clear()
        self._pending.append(slot)
        for face in faces:
            self._assign(slot, face)
        self._index += 1
        while self._pending and self._pending[0].index < self._index - self.s.max_gap:
            yield self._emit(self._pending.popleft())
        if not self.s.enabled:
            while self._pending:
                yield self._emit(self._pending.popleft())

    def flush(self) -> Iterator[tuple[T, list[Face]]]:
        while self._pending:
            yield self._emit(self._pending.popleft())

    # --- matching and gap filling ----------------------------------------------------------------------
    def _assign(self, slot: _Slot[T], face: Face) -> None:
        best, best_d = None, math.inf
        cx, cy = face.center
        for track in self._tracks.values():
            if track.id in slot.faces or slot.index - track.last_index > self.s.max_gap + 1:
                continue
            tx, ty = track.last_face.center
            d = math.hypot(cx - tx, cy - ty) / track.scale
            if d < best_d:
                best, best_d = track, d
        if best is None or best_d > 0.5 or not self.s.enabled:
            track = _Track(self._next_id, slot.index, face, _scale(face))
            self._next_id += 1
            self._tracks[track.id] = track
        else:
            track = best
            gap = slot.index - track.last_index - 1
            if gap > 0:
                for s in self._pending:
                    if track.last_index < s.index < slot.index:
                        t = (s.index - track.last_index) / (gap + 1)
                        s.faces[track.id] = _interpolate(track.last_face, face, t)
            track.last_index, track.last_face = slot.index, face
        slot.faces[track.id] = face

    # --- output ---------------------------------------------------------------------------------------
    def _emit(self, slot: _Slot[T]) -> tuple[T, list[Face]]:
        if slot.cut:
            self._filters.clear()
        out = []
        for tid, face in slot.faces.items():
            face = replace(face, extra={**face.extra, "track": tid})  # which track (the quality report)
            out.append(self._smooth(tid, face) if self.s.enabled else face)
        for tid in [t for t in self._filters if t not in slot.faces and t not in self._tracks]:
            del self._filters[tid]
        return slot.payload, out

    def _smooth(self, tid: int, face: Face) -> Face:
        f = self._filters.get(tid)
        if f is None:
            f = self._filters[tid] = OneEuro(self.fps, self.s.min_cutoff, self.s.beta)
        # one unit per track (the face's size when the filter starts): dividing each frame by its own
        # detected size would turn a 1 % size jitter into 1 % of the face's distance from the corner
        if f.x is None:
            self._units[tid] = _scale(face)
        unit = self._units[tid]
        vec = np.concatenate([face.landmarks.ravel(), face.box.ravel()]).astype(np.float64) / unit
        if f.x is not None and np.abs(vec[:10] - f.x[:10]).max() > 1.0:  # jumped more than a face: restart
            f.x, unit = None, _scale(face)
            self._units[tid] = unit
            vec = np.concatenate([face.landmarks.ravel(), face.box.ravel()]).astype(np.float64) / unit
        sm = f(vec) * unit
        return replace(face, landmarks=sm[:10].reshape(5, 2).astype(np.float32),
                       box=sm[10:].astype(np.float32))
