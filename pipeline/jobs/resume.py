"""The resume record of a segmented video job, and which of its segments a new run keeps.

One record for the local worker and the farm, kept in the job row (JSON, ``Lease.save_resume``)::

    {"v": 2, "work": "/.../job-7", "target": {"size": .., "mtime_ns": ..},
     "settings": "<sha1 of the settings JSON>",
     "segment_frames": 30,                              # the farm's fixed segment length (local: absent)
     "segments": [{"file": "seg-00000000.mkv", "start": 0, "frames": 41}, ...],   # farm: + node, pid...
     "complete": true,                                  # local: every frame is in a recorded segment
     "models": [...], "notices": [...]}                 # farm: what the segments were rendered with

The keep rules (:meth:`ResumeRecord.kept`):

- a record is **stale**, and keeps nothing, when it is of another version or work folder, the settings
  changed, the target file changed (size or modification time), or — for a run with a fixed segment length
  (the farm) — that length changed;
- a segment is kept only while its file is there and not empty;
- a run paced by time (the local worker) renders on from the end of what it keeps, so it keeps the gap-free
  run of segments from frame 0 (a missing one drops everything after it); a run with a fixed segment length
  renders any missing segment, so it keeps every segment that starts on a multiple of that length.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.jobs.segments import Segment
from pipeline.settings import Settings

RESUME_VERSION = 2


def fingerprint(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def settings_digest(settings: Settings) -> str:
    # no markers: digested as before markers existed (a job queued then still resumes after an upgrade)
    dropped = None if settings.markers else {"markers"}
    return hashlib.sha1(settings.model_dump_json(exclude=dropped).encode()).hexdigest()


@dataclass(frozen=True)
class ResumeRecord:
    """What a run of a job has finished, and which run it was (the fields that make an old record stale)."""

    work: str
    target: dict[str, int]  # the target file's fingerprint
    settings: str  # settings_digest
    segment_frames: int | None = None  # fixed segment length (the farm); None: paced by wall time
    segments: tuple[Segment, ...] = ()
    complete: bool = False
    models: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()

    @classmethod
    def for_run(cls, work: Path, target: Path, settings: Settings,
                segment_frames: int | None = None) -> ResumeRecord:
        """An empty record for a run of ``settings`` on ``target`` in ``work`` (OSError: no target)."""
        return cls(str(work), fingerprint(target), settings_digest(settings), segment_frames)

    def with_segments(self, segments: Iterable[Segment], **changes: Any) -> ResumeRecord:
        """This record with ``segments`` (ordered by start) and other fields changed."""
        return replace(self, segments=tuple(sorted(segments, key=lambda s: s.start)), **changes)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"v": RESUME_VERSION, "work": self.work, "target": self.target,
                                "settings": self.settings}
        if self.segment_frames is not None:
            data["segment_frames"] = self.segment_frames
        data["segments"] = [s.row() for s in self.segments]
        if self.complete:
            data["complete"] = True
        if self.models or self.notices:
            data["models"], data["notices"] = list(self.models), list(self.notices)
        return data

    def stale(self, saved: dict[str, Any]) -> bool:
        """Whether ``saved`` (a job's resume JSON) belongs to another run than this one (see the module)."""
        same = (saved.get("v") == RESUME_VERSION and saved.get("work") == self.work
                and saved.get("settings") == self.settings and saved.get("target") == self.target)
        fixed = self.segment_frames is None or saved.get("segment_frames") == self.segment_frames
        return not (same and fixed)

    def kept(self, saved: dict[str, Any]) -> ResumeRecord:
        """This run's record with what it keeps of ``saved`` (nothing from a stale one)."""
        if self.stale(saved):
            return self
        work = Path(self.work)
        kept: list[Segment] = []
        for raw in saved.get("segments", []):
            seg = Segment.parse(raw)
            if seg is None:
                if self.segment_frames is None:
                    break
                continue
            path = work / seg.file
            there = seg.frames > 0 and path.is_file() and path.stat().st_size > 0
            if self.segment_frames is None:
                if not there or seg.start != sum(s.frames for s in kept):
                    break
            elif not there or seg.start % self.segment_frames:
                continue
            kept.append(seg)
        recorded = saved.get("segments", [])
        complete = bool(saved.get("complete")) and len(kept) == len(recorded)
        extra = {"models": tuple(map(str, saved.get("models", []))),
                 "notices": tuple(map(str, saved.get("notices", [])))} if kept else {}
        return self.with_segments(kept, complete=complete, **extra)

    @property
    def frames(self) -> int:
        return sum(s.frames for s in self.segments)
