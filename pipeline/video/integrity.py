"""Was the whole video read? A decode is compared with what the container promised.

Three signs of a damaged target, checked when its decode ends:
- fewer frames than the container promises (a truncated file: an MP4 whose index is at the front still
  promises every frame, but the data stops half way);
- decode errors on ffmpeg's stderr (corrupt data is skipped or concealed; with ``-loglevel error`` every
  line it writes is one);
- the file changed while it was read (its size or mtime moved: it is still being copied or was cut).

A damaged target is a :class:`~pipeline.errors.BadMedia` naming the file and what was lost, unless the user
allowed it (``video.allow_damaged=true``): then :func:`check` returns a notice saying what was lost and how
the output keeps sound and picture in step. Such a render holds: its decode is resampled to the constant rate
(``read_frames(hold_gaps=True)``), so a gap in the timestamps (a cut in the middle of a .ts) is filled by
repeating the last frame before it, and frame i is shown at i / fps as in the source; its audio is re-encoded
to fit the video (``builders.FIT_AUDIO``: gaps filled with silence, padded or cut at the end). Which frames
were held is read from the packets' times (:func:`held_frames`, no decoding).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from pipeline.errors import BadMedia
from pipeline.video.decode import DecodeReport
from pipeline.video.probe import VideoInfo, packet_times
from pipeline.video.process import ToolTimeout

log = logging.getLogger(__name__)

_SLACK = 2  # frames a duration-based count may be off by
_VFR_GAP_S = 0.5  # in a VFR source a shorter gap is its variable rate, not a loss
_RUNS_SAID = 3  # held runs named one by one in a notice


@dataclass(frozen=True)
class Promise:
    """What a decode of ``path`` should give: ``frames`` (at least ``lowest``), from the file as it was."""

    path: Path
    frames: int
    lowest: int
    stamp: tuple[int, int]  # (size, mtime_ns) when the render started
    fps: Fraction = Fraction(0)
    start: float = 0.0  # the trim start (frame 0 of the render)
    vfr: bool = False


def stamp(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def promise(info: VideoInfo, frames: int, start: float | None = None) -> Promise:
    """What a decode of ``frames`` frames of ``info`` (from ``start`` s) must give. A container whose frame
    count is above duration x fps (an edit list that hides some frames) may fall short by that much without
    a loss."""
    by_time = round(info.duration * float(info.fps))
    hidden = max(0, info.frame_count - by_time) if info.frame_count_exact else 0
    return Promise(info.path, frames, max(1, frames - _SLACK - hidden), stamp(info.path), info.fps,
                   start or 0.0, info.is_vfr)


def check(expected: Promise, report: DecodeReport, allow_damaged: bool, *, audio: bool = False) -> str | None:
    """None when the decode is whole; else raise BadMedia, or (``allow_damaged``: the decode held its gaps,
    the audio, if ``audio``, was fitted to the video) return a notice saying what was lost and done."""
    loss = _loss(expected, report)
    name = expected.path.name
    if not allow_damaged:
        if loss is None:
            return None
        raise BadMedia(f"{name} {loss}; set video.allow_damaged=true to render what can be read")
    held = _held(expected)
    if loss is None and not held:
        return None
    what = loss or "has gaps in its timestamps (lost frames)"
    return f"{name} {what}; {repair_notice(held, expected.fps, audio)} (video.allow_damaged=true)"


def repair_notice(held: Sequence[tuple[int, int]], fps: Fraction, audio: bool) -> str:
    """What the output did about a damaged source: the frames held, the audio fitted."""
    parts = []
    if held:
        step = 1 / float(fps)
        runs = ", ".join(f"{a}-{b} ({a * step:.2f}-{(b + 1) * step:.2f} s)" for a, b in held[:_RUNS_SAID])
        more = len(held) - _RUNS_SAID
        count = sum(b - a + 1 for a, b in held)
        runs += f" and {more} more gaps ({count} frames in all)" if more > 0 else ""
        parts.append(f"frames {runs} could not be read and were held (the last good frame repeated)")
    if audio:
        parts.append("the audio was fitted to the video (its gaps filled with silence, its end cut or padded "
                     "to the last frame), so sound and picture stay in step")
    return "; ".join(parts) or "the output has what could be read"


def held_frames(times: Sequence[float], fps: Fraction, start: float = 0.0, min_gap: float = 0.0
                ) -> list[tuple[int, int]]:
    """The runs of frames (first, last: indices from ``start`` s into the video) that a constant-rate decode
    of packets presented at ``times`` fills by holding the frame before: where two packets, in the order
    they are shown, are more than 1.5 frames (and ``min_gap`` s) apart."""
    shown = sorted(times)
    if not shown or fps <= 0:
        return []
    step = 1 / float(fps)
    origin = shown[0] + start
    runs = []
    for before, after in zip(shown, shown[1:], strict=False):
        if after - before > max(1.5 * step, min_gap) and after > origin:
            first = max(0, round((before - origin) / step) + 1)
            last = round((after - origin) / step) - 1
            if last >= first:
                runs.append((first, last))
    return runs


def _held(expected: Promise) -> list[tuple[int, int]]:
    """The frames a held decode of the promised file filled (by its packets' times; [] if unknown)."""
    try:
        times = packet_times(expected.path)
    except (ToolTimeout, OSError) as exc:
        log.warning("cannot list the frames %s lost: %s", expected.path.name, exc)
        return []
    return held_frames(times, expected.fps, expected.start, _VFR_GAP_S if expected.vfr else 0.0)


def _loss(expected: Promise, report: DecodeReport) -> str | None:
    said = _telling(report.errors)
    ffmpeg_says = f" (ffmpeg: {said})" if said else ""
    now = stamp(expected.path)
    if now != expected.stamp:
        size = "is gone" if now[0] < 0 else f"is now {now[0]} bytes, was {expected.stamp[0]}"
        return f"changed while it was read ({size}); {report.frames} frames were decoded"
    if report.frames < expected.lowest:
        return (f"is truncated or damaged: {report.frames} of {expected.frames} frames could be decoded, "
                f"{expected.frames - report.frames} lost{ffmpeg_says}")
    if report.error_lines:
        return (f"is damaged: {report.error_lines} decode error(s) in {report.frames} frames, "
                f"some frames may show corruption{ffmpeg_says}")
    return None


def _telling(errors: list[str]) -> str:
    """The last error line that says something, without ffmpeg's ``[h264 @ 0x...]`` prefix."""
    for line in reversed(errors):
        text = re.sub(r"^\[[^]]*@ 0x[0-9a-f]+\]\s*", "", line.strip())
        if text and not text.startswith("Last message repeated"):
            return text
    return ""
