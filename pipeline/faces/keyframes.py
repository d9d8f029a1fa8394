"""Detection on keyframes: the detector runs in full on every Nth frame, the faces are followed in between.

A keyframe gets full detection and selection (``detect`` then ``select``, exactly as on every frame with
``detector.interval=1``). Between keyframes each selected face is followed in one of two ways:

- **re-detection around it** where the detector can look at regions only
  (:func:`pipeline.faces.base.region_detection`: YuNet): the detector runs on a window around the face's
  last box, at the scale and on the pixel grid of a full detection, so it finds what a full detection
  would (within a fraction of a pixel) at about a third of the cost. The found face that overlaps the
  followed box most (IoU >= ``MIN_IOU``) replaces its box, landmarks and score; everything selection gave
  it (embedding, extra) is kept, and ``refine`` (the 68-point landmarker, if any) runs on it again;
- **optical flow** for the other detectors (fixed input sizes): corners found inside the face's box (on
  the keyframe, and again when the face nears the crop's edge or too few survive) are tracked from the
  previous frame into this one with pyramidal Lucas-Kanade, kept only if tracking them back lands within
  half a pixel of where they started (forward-backward check), and a similarity transform (rotation,
  scale, shift) fitted to them with RANSAC moves the five landmarks and the box. The work is done on a
  grey crop around the face scaled so the face is about ``TRACK_SIZE`` px, so it costs the same for a
  small or a large face.

A frame is detected in full, off schedule, when following is not to be trusted:
- a scene cut (the grey-histogram distance of :mod:`pipeline.faces.track`) or the first frame;
- re-detection finds no face on a followed one, or two followed faces on the same face;
- flow: too few points survive the forward-backward check or RANSAC;
- the face's size jumps by more than ``MAX_SCALE_STEP`` in one frame;
- flow: a followed face's box leaves the frame by more than a quarter of its area (a face walking out is
  handed back to the detector, which then finds it or not; it is never followed for more than N-1 frames).
A face that appears between keyframes is found at the next keyframe.

``detector.interval=auto`` is a fixed rule (see :func:`interval_for`), not a timing probe: the same clip
with the same settings gives the same faces on any machine, whatever else it is running.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.faces.base import Regions
from pipeline.faces.track import histogram, is_cut
from pipeline.types import Face, Frame

TRACK_SIZE = 160  # px: the face's diagonal in the crop the flow runs on
MARGIN = 0.6  # of the face's size, around its box: how far it may move in one frame
MIN_POINTS = 8  # fewer good points than this: detect
FB_MAX = 0.5  # px (working scale): forward-backward disagreement above this drops the point
MAX_SCALE_STEP = 0.15  # the face grows or shrinks more than this in one frame: detect
MIN_IOU = 0.3  # re-detection: the found face must overlap the followed box at least this much
KEYFRAMES_PER_S = 6.0  # interval=auto: a full detection at least this often
MAX_AUTO = 8

Detect = Callable[[Sequence[Frame]], list[list[Face]]]
Select = Callable[[Frame, list[Face]], list[Face]]
Refine = Callable[[Frame, list[Face]], list[Face]]


def interval_for(requested: int | str, fps: float) -> int:
    """N for ``detector.interval``: the number given, or for ``auto`` one full detection every 1/6 s
    (N = fps/6: 5 at 30 fps, 4 at 24-25, 8 at 60 and above), never more than 8 frames apart.

    Why 1/6 s: a face that enters between keyframes is swapped at most 1/6 s late, and a face's motion
    within 1/6 s stays well inside what a similarity transform follows (measured in BENCHMARKS.md).
    """
    if requested != "auto":
        return max(1, int(requested))
    return max(1, min(MAX_AUTO, int(fps / KEYFRAMES_PER_S + 0.5)))


@dataclass
class _Patch:
    """What following one face into the next frame needs from the frame it was last seen in."""

    face: Face
    rect: tuple[int, int, int, int]  # x0, y0, x1, y1 of the crop in frame pixels
    scale: float  # frame px -> working px
    grey: npt.NDArray[np.uint8]
    points: npt.NDArray[np.float32]  # (K, 1, 2) corners in working px


def _size(face: Face) -> float:
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return max(1.0, math.hypot(x2 - x1, y2 - y1))


def _grey(frame: Frame, rect: tuple[int, int, int, int], scale: float) -> npt.NDArray[np.uint8]:
    x0, y0, x1, y1 = rect
    crop = frame[y0:y1, x0:x1]
    if scale < 1.0:  # shrink first (bilinear: the flow needs no more), then one channel
        size = (max(1, round((x1 - x0) * scale)), max(1, round((y1 - y0) * scale)))
        crop = np.asarray(cv2.resize(crop, size, interpolation=cv2.INTER_LINEAR), dtype=np.uint8)
    return np.asarray(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY) if crop.ndim == 3 else crop, dtype=np.uint8)


def _patch(frame: Frame, face: Face) -> _Patch | None:
    """The crop around ``face`` and the corners to follow in it; None where the face has too little
    texture (or is outside the frame)."""
    height, width = frame.shape[:2]
    size = _size(face)
    scale = min(1.0, TRACK_SIZE / size)
    x1, y1, x2, y2 = (float(v) for v in face.box)
    pad = MARGIN * size
    rect = (max(0, int(x1 - pad)), max(0, int(y1 - pad)), min(width, int(x2 + pad) + 1),
            min(height, int(y2 + pad) + 1))
    if rect[2] - rect[0] < 8 or rect[3] - rect[1] < 8:
        return None
    grey = _grey(frame, rect, scale)
    mask = np.zeros_like(grey)
    bx0, by0 = (max(0, round((v - o) * scale)) for v, o in ((x1, rect[0]), (y1, rect[1])))
    bx1, by1 = round((x2 - rect[0]) * scale), round((y2 - rect[1]) * scale)
    mask[by0:by1, bx0:bx1] = 255
    points = cv2.goodFeaturesToTrack(grey, maxCorners=60, qualityLevel=0.01, minDistance=4, mask=mask)
    if points is None or len(points) < MIN_POINTS:
        return None
    return _Patch(face, rect, scale, grey, np.asarray(points, dtype=np.float32))


def _lk(a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8],
        points: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
    moved, status, _ = cv2.calcOpticalFlowPyrLK(  # type: ignore[call-overload, unused-ignore]  # opencv 4.x stubs need it, 5.x not
        a, b, points, None, winSize=(15, 15), maxLevel=3)
    return np.asarray(moved, np.float32), np.asarray(status).ravel().astype(bool)


def _follow(patch: _Patch, frame: Frame) -> tuple[Face, _Patch] | None:
    """``patch``'s face moved into ``frame``, and the patch to follow it further; None when the flow is
    not to be trusted."""
    grey = _grey(frame, patch.rect, patch.scale)
    if grey.shape != patch.grey.shape:
        return None
    ahead, ok_a = _lk(patch.grey, grey, patch.points)
    back, ok_b = _lk(grey, patch.grey, ahead)
    error = np.linalg.norm((back - patch.points).reshape(-1, 2), axis=1)
    good = ok_a & ok_b & (error < FB_MAX)
    if int(good.sum()) < MIN_POINTS:
        return None
    src, dst = patch.points[good].reshape(-1, 2), ahead[good].reshape(-1, 2)
    matrix, inliers = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=1.0)
    if matrix is None or inliers is None or int(inliers.sum()) < max(MIN_POINTS, 0.5 * len(src)):
        return None
    step = math.hypot(matrix[0, 0], matrix[1, 0])
    if abs(step - 1.0) > MAX_SCALE_STEP:
        return None
    face = _moved(patch, matrix, step, frame.shape[1], frame.shape[0])
    if face is None:
        return None
    kept = dst[inliers.ravel().astype(bool)]
    if len(kept) >= 2 * MIN_POINTS and _within(face, patch.rect, MARGIN / 2, frame.shape[1], frame.shape[0]):
        # keep the crop and the points that held (Lucas-Kanade-Tomasi): no new corners to find
        return face, _Patch(face, patch.rect, patch.scale, grey, kept.reshape(-1, 1, 2).astype(np.float32))
    again = _patch(frame, face)
    return None if again is None else (face, again)


def _within(face: Face, rect: tuple[int, int, int, int], margin: float, width: int, height: int) -> bool:
    """Whether ``face``'s box, grown by ``margin`` of its size, is inside ``rect`` (a side of ``rect`` on
    the frame's edge, ``width`` × ``height``, does not count)."""
    pad = margin * _size(face)
    x1, y1, x2, y2 = (float(v) for v in face.box)
    x0, y0, rx1, ry1 = rect
    return ((x1 - pad >= x0 or x0 == 0) and (y1 - pad >= y0 or y0 == 0)
            and (x2 + pad <= rx1 or rx1 == width) and (y2 + pad <= ry1 or ry1 == height))


def _moved(patch: _Patch, matrix: npt.NDArray[np.float64], step: float, width: int,
           height: int) -> Face | None:
    """Apply ``matrix`` (working px of the crop) to the face (frame px); None when it left the frame."""
    s, ox, oy = patch.scale, patch.rect[0], patch.rect[1]

    def move(points: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        p = (points.reshape(-1, 2).astype(np.float64) - (ox, oy)) * s
        q = p @ matrix[:, :2].T + matrix[:, 2]
        return (q / s + (ox, oy)).astype(np.float32)

    face = patch.face
    x1, y1, x2, y2 = (float(v) for v in face.box)
    (cx, cy), = move(np.array([[(x1 + x2) / 2, (y1 + y2) / 2]], np.float32))
    hw, hh = (x2 - x1) / 2 * step, (y2 - y1) / 2 * step
    box = np.array([cx - hw, cy - hh, cx + hw, cy + hh], np.float32)
    inside = (max(0.0, min(width, box[2]) - max(0.0, box[0]))
              * max(0.0, min(height, box[3]) - max(0.0, box[1])))
    if inside < 0.75 * max(1e-6, 4 * hw * hh):
        return None
    lm68 = None if face.landmarks68 is None else move(face.landmarks68).reshape(face.landmarks68.shape)
    return replace(face, box=box, landmarks=move(face.landmarks).reshape(5, 2), landmarks68=lm68,
                   extra={**face.extra, "tracked": True, "followed_by": "flow"})


def _iou(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    w = min(float(a[2]), float(b[2])) - max(float(a[0]), float(b[0]))
    h = min(float(a[3]), float(b[3])) - max(float(a[1]), float(b[1]))
    inter = max(0.0, w) * max(0.0, h)
    union = float((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])) - inter
    return inter / union if union > 0 else 0.0


def _match(face: Face, found: list[Face]) -> int | None:
    """Index of the face of ``found`` that is ``face`` one frame on: the one overlapping its box most, if
    enough and without a jump in size; None if there is none."""
    if not found:
        return None
    overlaps = [_iou(face.box, f.box) for f in found]
    best = int(np.argmax(overlaps))
    if overlaps[best] < MIN_IOU or abs(_size(found[best]) / _size(face) - 1.0) > MAX_SCALE_STEP:
        return None
    return best


def unselected(detected: Sequence[Face], chosen: Sequence[Face]) -> list[Face]:
    """The faces of ``detected`` that are none of ``chosen`` (by their boxes: selection may refine the
    landmarks)."""
    return [f for f in detected if all(_iou(f.box, c.box) < 0.5 for c in chosen)]


class KeyframeDetector:
    """The selected faces of each frame, in order: detected on keyframes, followed in between.

    ``detect`` and ``select`` are the processor's stages; ``interval`` is N (1: detect every frame, as
    ``detect`` + ``select`` would); ``scene_cut`` is the tracker's histogram threshold; ``regions`` is the
    detector's region detection (None: follow by optical flow); ``refine`` what ``select`` does to the
    five points after choosing the faces (the 68-point landmarker), run again on re-detected faces.
    """

    def __init__(self, detect: Detect, select: Select, interval: int, scene_cut: float,
                 regions: Regions | None = None, refine: Refine | None = None) -> None:
        self.detect, self.select, self.regions, self.refine = detect, select, regions, refine
        self.interval, self.scene_cut = max(1, interval), scene_cut
        self._faces: list[Face] | None = None  # what to follow; None: nothing (start, cut, lost)
        self._patches: list[_Patch] = []  # flow: one per face of _faces
        self._index = 0  # of the next frame in the clip: keyframes fall on multiples of N
        self._prev_hist: npt.NDArray[np.float64] | None = None
        self.cuts: list[bool] = []  # for each frame of the last call: whether a new scene starts there
        # for each frame of the last call: every face found there (a keyframe's detections; between them the
        # followed faces and those the last keyframe left unselected, taken to be where they were)
        self.found: list[list[Face]] = []
        self._unselected: list[Face] = []  # the last keyframe's detected faces that selection left
        self.keyframes = self.followed = 0

    def faces(self, frames: Sequence[Frame]) -> list[list[Face]]:
        """One list of selected faces per frame of ``frames`` (the next frames of the clip); ``cuts`` then
        says where a scene starts (the tracker is given them, so both see the same cuts)."""
        self.cuts = [self._cut(frame) for frame in frames]
        if self.interval == 1:
            self.keyframes += len(frames)
            self.found = self.detect(frames)
            return [self.select(frame, faces) for frame, faces in zip(frames, self.found, strict=True)]
        due = self._plan(frames)
        scheduled = [frame for frame, key in zip(frames, due, strict=True) if key]
        detections = iter(self.detect(scheduled) if scheduled else [])
        out: list[list[Face]] = []
        self.found = []
        for frame, key in zip(frames, due, strict=True):
            followed = None if key else self._follow(frame)
            if followed is None:
                detected = next(detections) if key else self.detect([frame])[0]
                followed = self.select(frame, detected)
                self.keyframes += 1
                self._start(frame, followed)
                self._unselected = unselected(detected, followed)
                self.found.append(detected)
            else:
                self.followed += 1
                self.found.append([*followed, *self._unselected])
            out.append(followed)
        return out

    def _start(self, frame: Frame, faces: list[Face]) -> None:
        """Follow ``faces``, just detected in ``frame``, from now on."""
        self._faces = faces
        if self.regions is None:
            patches = [p for p in (_patch(frame, f) for f in faces) if p is not None]
            # a face we cannot follow: detect the next frame
            self._patches = patches
            if len(patches) != len(faces):
                self._faces = None

    def _plan(self, frames: Sequence[Frame]) -> list[bool]:
        """Which of ``frames`` are keyframes whatever happens in between: every Nth frame of the clip, the
        first of a scene, and the first of the batch when the last frame left nothing to follow from.
        (The schedule does not move when a frame is detected off it, so the faces found do not depend on
        how the frames were batched.)"""
        due = []
        for offset, cut in enumerate(self.cuts):
            lost = offset == 0 and self._faces is None
            due.append(lost or cut or (self._index + offset) % self.interval == 0)
        self._index += len(frames)
        return due

    def _cut(self, frame: Frame) -> bool:
        """Whether ``frame`` starts a new scene: the tracker's histogram test, on a sixth of the pixels."""
        hist = histogram(frame[::6, ::6])
        cut = self._prev_hist is not None and is_cut(self._prev_hist, hist, self.scene_cut)
        self._prev_hist = hist
        return cut

    def _follow(self, frame: Frame) -> list[Face] | None:
        """The followed faces one frame on, in ``frame``; None (and nothing to follow) where not to be
        trusted."""
        if not self._faces:
            return None if self._faces is None else []
        regions = self.regions
        faces = self._flow(frame) if regions is None else self._redetect(frame, self._faces, regions)
        self._faces = faces
        return faces

    def _flow(self, frame: Frame) -> list[Face] | None:
        """The faces moved by optical flow into ``frame`` (their patches kept for the next frame)."""
        out = []
        for patch in self._patches:
            moved = _follow(patch, frame)
            if moved is None:
                return None
            out.append(moved)
        self._patches = [patch for _, patch in out]
        return [face for face, _ in out]

    def _redetect(self, frame: Frame, followed: list[Face], regions: Regions) -> list[Face] | None:
        """``followed`` re-detected around their boxes in ``frame``: new box, landmarks and score, the rest
        as selection left it; None where one is not found (or changed size, or two became one)."""
        found = regions(frame, [face.box for face in followed])
        picked = [_match(face, near) for face, near in zip(followed, found, strict=True)]
        if any(i is None for i in picked):
            return None
        faces = [near[i] for near, i in zip(found, picked, strict=True) if i is not None]
        if any(_iou(a.box, b.box) > 0.5 for k, a in enumerate(faces) for b in faces[k + 1:]):
            return None  # two followed faces ran into one
        out = [replace(face, box=new.box, landmarks=new.landmarks, score=new.score, landmarks68=None,
                       extra={**face.extra, "tracked": True, "followed_by": "region"})
               for face, new in zip(followed, faces, strict=True)]
        return self.refine(frame, out) if self.refine is not None else out
