"""The quality report of a live recording (``facestation live --output FILE``, the Live tab's recording):
``NAME.quality.json`` beside it, as a render writes one.

The live chain step (:class:`pipeline.live.step.ChainStep`) hands each frame it finished to :meth:`add`;
the recording (:class:`pipeline.live.outputs.Recording`) says where that frame went in the file
(:meth:`placed`: both live loops, the CLI's and the browser's, write each processed frame once, in order,
right after processing it), and
writes the report when it closes. Frames the recording repeats in place of dropped ones are the frame before
them again (what a viewer saw), recorded as such.

No identity judge live: SFace costs more per face than a live frame may take (it runs twice per face; see
BENCHMARKS.md "The quality report's cost"), so ``identity`` is false and the identities are empty; faces
found, swapped, left alone and missed, and jitter are recorded (a fraction of a millisecond a frame).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from pipeline.chain import Work
from pipeline.quality.record import MIN_FACE_PX, Recorder
from pipeline.quality.report import FrameRecord, QualityReport, write_report
from pipeline.settings import Settings


class LiveReport:
    """One recording's report, filled frame by frame (steps replaced by a settings update share it)."""

    def __init__(self, fps: float) -> None:
        self.fps = fps
        self._recorder: Recorder | None = None
        self._placed: list[int] = []  # per processed frame: its frame number in the recording
        self._lock = threading.Lock()
        self.written: QualityReport | None = None  # the report as written (once the recording closed)

    def add(self, settings: Settings, work: Work, restart: bool = False) -> None:
        """A frame the chain finished (``settings``: the step's; the first step's thresholds are kept);
        ``restart``: its faces are followed afresh (a new step, or the camera's size changed): as after a
        scene cut, the faces of the frames before are not looked for in it."""
        with self._lock:
            if self._recorder is None:
                self._recorder = Recorder(settings, None, lambda face: 0, MIN_FACE_PX, self.fps)
            n = len(self._recorder.frames)
            self._recorder.add([replace(work, index=n, cut=work.cut or (restart and n > 0))])

    def placed(self, at: int) -> None:
        """The frame processed last went into the recording as its frame ``at``."""
        with self._lock:
            self._placed.append(at)

    def report(self, output: str) -> QualityReport | None:
        """The report, one record per frame of the recording; None before any frame."""
        with self._lock:
            if self._recorder is None:
                return None
            recorded = self._recorder.report(output)
            placed = self._placed[:len(recorded.frames)]
        frames: list[FrameRecord] = []
        for rec, at in zip(recorded.frames, placed, strict=False):
            if frames:  # the dropped frames' places: the frame before, shown again (it does not move)
                frames += [replace(frames[-1], frame=n, jitter=None) for n in range(frames[-1].frame + 1, at)]
            frames.append(replace(rec, frame=at))
        where = dict(enumerate(placed))
        tracks = [replace(t, first=where.get(t.first, t.first), last=where.get(t.last, t.last))
                  for t in recorded.tracks]
        return replace(recorded, frames=frames, tracks=tracks)

    def write(self, path: Path) -> Path | None:
        """Write the report beside the recording ``path``; its path (None before any frame)."""
        self.written = self.report(path.name)
        return None if self.written is None else write_report(self.written, path)
