"""Recording a render's quality frame by frame, from the :class:`~pipeline.chain.Work` the chain hands on.

:meth:`Recorder.look` runs in the detect stage (each frame as decoded, before any processor changes it:
the render blends into the decoded frame itself) and keeps the chosen faces' crops for the judge;
:meth:`Recorder.add` runs on the finished frames (the render's ``quality`` stage, or after a still's one
frame) and counts:

- the faces found (``Work.detected``) and swapped (``Work.faces``); each found face not swapped is left
  alone as ``too_small`` (under the swap's smallest face or ``selector.min_size``) or ``not_chosen`` (the
  selector's choice); a swapped face the tracker interpolated across a missed detection is ``refilled``;
- ``missed``: a face the last frames had (a track) that is neither swapped nor found here, while its last
  box was inside the frame (a face that walked out is not missed), until a face is swapped there again or
  the scene cuts;
- per swapped face, its identity after the swap and before it (:mod:`pipeline.quality.identity`), on
  every frame or every ``report.identity_every``-th (the judge is the report's costly part);
- per track, the jitter: the second difference of its five aligned points (their motion beyond a steady
  motion) over three frames, in face sizes, given to the middle frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipeline.process import FaceProcessor
from pipeline.process.processor import MIN_FACE_PX
from pipeline.quality.identity import Crops, IdentityJudge
from pipeline.quality.report import FLAGS, FrameRecord, QualityReport, TrackRecord
from pipeline.settings import Settings
from pipeline.types import Face

if TYPE_CHECKING:
    from pipeline.chain import Work

EDGE = 0.1  # of a face's size: a lost face whose box came this near the frame's edge walked out


def _side(face: Face, scale: float = 1.0) -> float:
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return min(x2 - x1, y2 - y1) / scale


def _size(face: Face) -> float:
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return max(1.0, math.hypot(x2 - x1, y2 - y1))


def turn(face: Face) -> float:
    """How far ``face`` is turned aside: its nose tip's distance from the middle of its eyes, in eye
    distances, across (about 0.0–0.1 facing the camera, over 1 side-on)."""
    p = np.asarray(face.landmarks, np.float64).reshape(-1, 2)
    eyes = float(np.linalg.norm(p[1] - p[0]))
    return abs(float(p[2, 0] - (p[0, 0] + p[1, 0]) / 2)) / max(eyes, 1.0)


def _near(a: Face, b: Face) -> bool:
    """Whether ``b`` is where ``a`` was (centres within half a face)."""
    (ax, ay), (bx, by) = a.center, b.center
    return math.hypot(ax - bx, ay - by) < 0.5 * _size(a)


def _track(face: Face) -> int | None:
    """The tracker's number for ``face`` (a video's; None in a still)."""
    tid = face.extra.get("track")
    return tid if isinstance(tid, int) else None


def _inside(face: Face, width: int, height: int) -> bool:
    pad = EDGE * _size(face)
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return x1 >= pad and y1 >= pad and x2 <= width - pad and y2 <= height - pad


@dataclass
class _Track:
    record: TrackRecord
    points: list[tuple[int, npt.NDArray[np.float64], float]] = field(default_factory=list)  # last 3


class Recorder:
    """The quality of one render, frame by frame (frames given in order; ``look`` may run ahead of ``add``
    on another thread)."""

    def __init__(self, settings: Settings, judge: IdentityJudge | None, who: Callable[[Face], int],
                 min_face_px: int, fps: float | None = None) -> None:
        self.settings, self.judge, self.who, self.fps = settings, judge, who, fps
        self.smallest = max(min_face_px, settings.selector.min_size)
        self.frames: list[FrameRecord] = []
        self._before: dict[int, Crops] = {}
        self._tracks: dict[int, _Track] = {}
        self._previous: dict[int, Face] = {}  # track id -> its face in the last frame
        self._lost: list[Face] = []

    # --- the detect stage -----------------------------------------------------------------------------
    def look(self, works: Sequence[Work]) -> None:
        """Keep the chosen faces as they were before the swap (frames as decoded)."""
        if self.judge is None:
            return
        for w in works:
            if not self._judged(w.index):
                continue
            faces = [f.scaled(1 / w.scale) for f in w.faces] if w.scale != 1 else w.faces
            assert w.decoded is not None
            self._before[w.index] = self.judge.crops(w.decoded, faces)

    # --- the finished frames --------------------------------------------------------------------------
    def add(self, works: Sequence[Work]) -> None:
        """Record finished frames (``Work`` with ``out`` set), in order."""
        scores = self._identities(works)
        for w in works:
            self._record(w, scores.pop(0) if scores else [])

    def _identities(self, works: Sequence[Work]) -> list[list[tuple[float, float | None]]]:
        """Per frame, per swapped face: (identity after, identity before); one embedding run for the batch."""
        judge = self.judge
        if judge is None:
            return []
        parts: list[Crops] = []
        who: list[int] = []
        plan: list[tuple[int, bool]] = []  # per frame: its faces, whether their crops before are known
        for w in works:
            assert w.out is not None
            if not self._judged(w.index):
                plan.append((0, False))
                continue
            after = judge.crops(w.out, w.faces)
            before = self._before.pop(w.index, None)
            ids = [self.who(f) for f in w.faces]
            known = before is not None and len(before) == len(after)
            parts += [after, *([before] if known and before is not None else [])]
            who += ids * (2 if known else 1)
            plan.append((len(after), known))
        scores = judge.scores(np.concatenate(parts), who) if who else []
        out, at = [], 0
        for n, known in plan:
            after_s = scores[at:at + n]
            before_s: list[float | None] = list(scores[at + n:at + 2 * n]) if known else [None] * n
            at += 2 * n if known else n
            out.append(list(zip(after_s, before_s, strict=True)))
        return out

    def _judged(self, index: int) -> bool:
        """Whether frame ``index`` is one the judge looks at (``report.identity_every``)."""
        return index % self.settings.report.identity_every == 0

    def _record(self, w: Work, scores: list[tuple[float, float | None]]) -> None:
        assert w.out is not None
        height, width = w.out.shape[:2]
        if w.cut:
            self._lost, self._previous = [], {}
        rec = FrameRecord(w.index, found=0, swapped=len(w.faces))
        left = [f for f in w.detected if all(not _near(f, s) for s in w.faces)]
        rec.too_small = sum(_side(f, w.scale) < self.smallest for f in left)
        rec.not_chosen = len(left) - rec.too_small
        rec.found = len(w.faces) + len(left)
        rec.refilled = sum(bool(f.extra.get("interpolated")) for f in w.faces)
        rec.missed = self._missed(w, width, height)
        rec.profile = sum(self._side_on(f, w.detected) for f in w.faces)
        rec.identity = [s[0] for s in scores]
        rec.before = [s[1] for s in scores]
        rec.points = [[round(float(v), 2) for v in f.landmarks.ravel()] for f in w.faces]
        self.frames.append(rec)
        for face in w.faces:
            self._follow(face, w.index)

    def _side_on(self, face: Face, found: Sequence[Face]) -> bool:
        """Whether the swapped ``face`` is seen side-on: as swapped, or as found there (the swapped points
        are smoothed over the frames before, so they come round to a turn a few frames late)."""
        limit = self.settings.report.profile_turn
        return turn(face) > limit or any(_near(face, d) and turn(d) > limit for d in found)

    def _missed(self, w: Work, width: int, height: int) -> int:
        """The lost faces nothing was found near in ``w`` (a face found there but left alone is said as
        such); a lost face is over once a face is swapped where it was."""
        now = {t: f for f in w.faces if (t := _track(f)) is not None}
        self._lost += [f for t, f in self._previous.items() if t not in now and _inside(f, width, height)]
        self._lost = [f for f in self._lost if not any(_near(f, s) for s in w.faces)]
        self._previous = now
        return sum(not any(_near(f, d) for d in w.detected) for f in self._lost)

    def _follow(self, face: Face, index: int) -> None:
        """Add ``face`` to its track; the jitter of the frame before, once three frames in a row are known."""
        tid = _track(face)
        if tid is None:
            return
        track = self._tracks.setdefault(tid, _Track(TrackRecord(tid, index, index)))
        track.record.last = index
        track.record.frames += 1
        size = _size(face)
        track.points = [p for p in track.points if p[0] >= index - 2][-2:] + [
            (index, np.asarray(face.landmarks, np.float64), size)]
        if [p[0] for p in track.points] != [index - 2, index - 1, index]:
            return
        (_, a, _), (_, b, unit), (_, c, _) = track.points
        jitter = round(float(np.linalg.norm(a - 2 * b + c, axis=1).mean() / unit), 5)
        track.record.add(jitter)
        middle = self.frames[-2] if len(self.frames) >= 2 and self.frames[-2].frame == index - 1 else None
        if middle is not None:
            middle.jitter = max(middle.jitter or 0.0, jitter)

    # --- the end --------------------------------------------------------------------------------------
    def report(self, output: str = "") -> QualityReport:
        r = self.settings.report
        thresholds = {"identity_min": r.identity_min, "jitter_max": r.jitter_max,
                      "identity_every": r.identity_every, "profile_turn": r.profile_turn}
        for rec in self.frames:
            rec.flags = [k for k in FLAGS if rec.flagged(k, r.identity_min, r.jitter_max)]
        return QualityReport(output=output, fps=self.fps, identity=self.judge is not None,
                             thresholds=thresholds, frames=self.frames,
                             tracks=[self._tracks[t].record for t in sorted(self._tracks)])


def recorder_for(processor: FaceProcessor, fps: float | None = None) -> Recorder:
    """The recorder of a render by ``processor`` (the judge only with ``report.identity`` and a source)."""
    groups = processor.identities.groups
    judge = None
    if processor.settings.report.identity and groups:
        judge = IdentityJudge(processor.face_models.recogniser, groups)
    return Recorder(processor.settings, judge, processor.identities.index_of, MIN_FACE_PX, fps)


def quality_summary(report: QualityReport | None, path: Path | None) -> dict[str, Any] | None:
    """What a render's summary (and a job's result) says of its report: its summary and where it is."""
    if report is None:
        return None
    return {**report.summary(), "path": None if path is None else str(path),
            "stretches_at": [[s.start, s.end, s.kinds] for s in report.stretches]}
