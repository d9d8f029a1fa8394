"""Was the whole video read? A decode is compared with what the container promised.

Three signs of a damaged target, checked when its decode ends:
- fewer frames than the container promises (a truncated file: an MP4 whose index is at the front still
  promises every frame, but the data stops half way);
- decode errors on ffmpeg's stderr (corrupt data is skipped or concealed; with ``-loglevel error`` every
  line it writes is one);
- the file changed while it was read (its size or mtime moved: it is still being copied or was cut).

A damaged target is a :class:`~pipeline.errors.BadMedia` naming the file and what was lost, unless the user
allowed it (``video.allow_damaged=true``): then :func:`check` returns a notice saying what was lost.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import BadMedia
from pipeline.video.decode import DecodeReport
from pipeline.video.probe import VideoInfo

_SLACK = 2  # frames a duration-based count may be off by


@dataclass(frozen=True)
class Promise:
    """What a decode of ``path`` should give: ``frames`` (at least ``lowest``), from the file as it was."""

    path: Path
    frames: int
    lowest: int
    stamp: tuple[int, int]  # (size, mtime_ns) when the render started


def stamp(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def promise(info: VideoInfo, frames: int) -> Promise:
    """What a decode of ``frames`` frames of ``info`` must give. A container whose frame count is above
    duration x fps (an edit list that hides some frames) may fall short by that much without a loss."""
    by_time = round(info.duration * float(info.fps))
    hidden = max(0, info.frame_count - by_time) if info.frame_count_exact else 0
    return Promise(info.path, frames, max(1, frames - _SLACK - hidden), stamp(info.path))


def check(expected: Promise, report: DecodeReport, allow_damaged: bool) -> str | None:
    """None when the decode is whole; else raise BadMedia, or (``allow_damaged``) return a notice."""
    loss = _loss(expected, report)
    if loss is None:
        return None
    name = expected.path.name
    if not allow_damaged:
        raise BadMedia(f"{name} {loss}; set video.allow_damaged=true to render what can be read")
    return f"{name} {loss}; the output has what could be read (video.allow_damaged=true)"


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
