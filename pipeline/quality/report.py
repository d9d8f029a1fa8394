"""The quality report's data, its file (``NAME.quality.json`` beside the output) and its stretches.

Schema (version 1; README "Quality report" describes it for users): ``version``, ``output``, ``fps``,
``identity`` (judged or not), ``thresholds``, ``summary``, ``stretches`` ([{start, end, kinds}]), ``tracks``
([{track, first, last, frames, jitter_mean, jitter_max}]) and ``frames`` ([{frame, found, swapped,
too_small, not_chosen, refilled, missed, identity, before, points, jitter, flags}], one per output frame:
:class:`FrameRecord`). Frame numbers count the output's frames from 0; identities are SFace cosines.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline.errors import UserError
from pipeline.filenames import fitted_stem
from pipeline.paths import write_atomic

VERSION = 1
SUFFIX = ".quality.json"
# what flags a frame: a swapped face unlike the source, a found face too small to swap, a face the tracks
# expected but nothing found, faces that shake (a face the selector did not choose is the user's choice)
FLAGS = ("identity", "too_small", "missed", "profile", "jitter")
JOIN_GAP = 2  # flagged frames this close (or closer) make one stretch
PARTIAL = 16  # bytes pipeline.paths.write_atomic adds to a name for its partial file


@dataclass
class FrameRecord:
    frame: int
    found: int
    swapped: int
    too_small: int = 0
    not_chosen: int = 0
    refilled: int = 0
    missed: int = 0
    profile: int = 0  # swapped faces seen side-on (report.profile_turn): where swaps break most
    identity: list[float] = field(default_factory=list)  # per swapped face, after the swap
    before: list[float | None] = field(default_factory=list)  # the same faces before it
    points: list[list[float]] = field(default_factory=list)  # per swapped face: its 5 points (x1, y1, …)
    jitter: float | None = None  # the largest of its tracks'
    flags: list[str] = field(default_factory=list)

    def flagged(self, kind: str, identity_min: float, jitter_max: float) -> bool:
        if kind == "identity":
            return any(s < identity_min for s in self.identity)
        if kind == "jitter":
            return self.jitter is not None and self.jitter > jitter_max
        return bool(getattr(self, kind))


@dataclass
class TrackRecord:
    track: int
    first: int
    last: int
    frames: int = 0
    jitter_mean: float = 0.0
    jitter_max: float = 0.0
    _n: int = 0

    def add(self, jitter: float) -> None:
        self._n += 1
        self.jitter_mean = round(self.jitter_mean + (jitter - self.jitter_mean) / self._n, 5)
        self.jitter_max = max(self.jitter_max, jitter)


@dataclass
class Stretch:
    start: int
    end: int  # inclusive
    kinds: list[str]


def stretches(frames: list[FrameRecord], gap: int = JOIN_GAP) -> list[Stretch]:
    """The flagged frames joined into stretches (frames at most ``gap`` apart)."""
    out: list[Stretch] = []
    for rec in frames:
        if not rec.flags:
            continue
        if out and rec.frame - out[-1].end <= gap:
            out[-1].end = rec.frame
            out[-1].kinds = [k for k in FLAGS if k in out[-1].kinds or k in rec.flags]
        else:
            out.append(Stretch(rec.frame, rec.frame, list(rec.flags)))
    return out


@dataclass
class QualityReport:
    output: str
    fps: float | None
    identity: bool  # whether identities were judged (``report.identity``)
    thresholds: dict[str, float]
    frames: list[FrameRecord]
    tracks: list[TrackRecord]

    @property
    def stretches(self) -> list[Stretch]:
        """Flagged frames joined: at most :data:`JOIN_GAP` apart, or one judged frame to the next."""
        return stretches(self.frames, max(JOIN_GAP, int(self.thresholds.get("identity_every", 1))))

    def summary(self) -> dict[str, Any]:
        after = [s for f in self.frames for s in f.identity]
        gains = [a - b for f in self.frames for a, b in zip(f.identity, f.before, strict=True)
                 if b is not None]
        return {
            "frames": len(self.frames),
            "frames_with_faces": sum(f.found > 0 for f in self.frames),
            "frames_swapped": sum(f.swapped > 0 for f in self.frames),
            "faces_found": sum(f.found for f in self.frames),
            "faces_swapped": sum(f.swapped for f in self.frames),
            "identity_mean": round(sum(after) / len(after), 4) if after else None,
            "identity_min": round(min(after), 4) if after else None,
            "gain_mean": round(sum(gains) / len(gains), 4) if gains else None,
            "jitter_max": max((t.jitter_max for t in self.tracks), default=0.0),
            "stretches": len(self.stretches),
        }

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "output": self.output, "fps": self.fps, "identity": self.identity,
                "thresholds": self.thresholds, "summary": self.summary(),
                "stretches": [asdict(s) for s in self.stretches],
                "tracks": [{k: v for k, v in asdict(t).items() if not k.startswith("_")}
                           for t in self.tracks],
                "frames": [asdict(f) for f in self.frames]}


def sidecar_of(output: Path | str) -> Path:
    """Where the report of ``output`` lives: ``NAME.quality.json`` beside it (``out.mp4`` ->
    ``out.quality.json``), the stem cut as :func:`~pipeline.filenames.fitted_stem` cuts it where that name
    and its partial would pass the file system's limit (an output name of 255 bytes is written)."""
    output = Path(output)
    if output.name.endswith(SUFFIX):
        return output
    reserved = len(SUFFIX) + PARTIAL  # write_atomic's partial: ".NAME.XXXXXXXX.part"
    return output.with_name(fitted_stem(output.stem, reserved, output.parent) + SUFFIX)


def write_report(report: QualityReport, output: Path | str) -> Path:
    """Write ``report`` beside ``output`` (whole or not at all); its path."""
    path = sidecar_of(output)
    write_atomic(path, json.dumps(report.to_json(), separators=(",", ":")).encode())
    return path


def read_report(path: Path | str) -> dict[str, Any]:
    """The report of an output (the media file or its ``.quality.json``), as written; one line if there is
    none."""
    sidecar = sidecar_of(path)
    if not sidecar.is_file():
        raise UserError(f"no quality report for {Path(path).name}: {sidecar.name} is not there "
                        "(a render writes one beside its output)")
    try:
        data = json.loads(sidecar.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{sidecar.name} is not a quality report ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or "frames" not in data:
        raise UserError(f"{sidecar.name} is not a quality report this facestation reads (version {VERSION})")
    return data


def summary_line(summary: dict[str, Any], path: str | None) -> str:
    """A render's quality in one line: frames swapped, identity and its gain, flagged stretches; the file."""
    said = [f"quality: {summary['frames_swapped']}/{summary['frames']} frames swapped"]
    if summary.get("identity_mean") is not None:
        gain = summary.get("gain_mean")
        said.append(f"identity {summary['identity_mean']:.2f}"
                    + ("" if gain is None else f" (gain {gain:+.2f})"))
    said.append(f"{summary['stretches']} flagged stretch{'es' if summary['stretches'] != 1 else ''}")
    return ", ".join(said) + ("" if path is None else f" -> {path}")


def shifted(report: QualityReport, by: int) -> QualityReport:
    """``report`` with its frame numbers moved ``by`` frames (a farm segment's, rendered from its own start,
    as frames of the whole output)."""
    if by == 0:
        return report
    return replace(report, frames=[replace(f, frame=f.frame + by) for f in report.frames],
                   tracks=[replace(t, first=t.first + by, last=t.last + by) for t in report.tracks])


def joined(parts: list[QualityReport], output: str) -> QualityReport | None:
    """The reports of one output's parts (a farm job's segments, in any order) as one: their frames in
    order, their tracks numbered apart (each part's tracker counts from its own start); None without parts.
    A face followed across a part's edge is two tracks, its jitter restarted there."""
    if not parts:
        return None
    parts = sorted(parts, key=lambda p: p.frames[0].frame if p.frames else 0)
    tracks: list[TrackRecord] = []
    for part in parts:
        base = max((t.track for t in tracks), default=-1) + 1
        tracks += [replace(t, track=t.track + base) for t in part.tracks]
    first = parts[0]
    return QualityReport(output, first.fps, first.identity, first.thresholds,
                         [f for p in parts for f in p.frames], tracks)
