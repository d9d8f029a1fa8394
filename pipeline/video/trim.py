"""The trim: the part of a video a render keeps (``video.start`` / ``video.end``, in seconds), as frames.

One value, read by everything that trims: the request's check (:mod:`pipeline.request`), the decoder's seek
(:mod:`pipeline.video.decode`), the render's and a job's frame count, the lip syncer's frames, the sound's
cut (``video/encode.py``, ``jobs/segments.py``), the web UI's timeline and queue.

The rule: frame ``i`` of a video at ``fps`` is shown at ``i / fps``; a trim keeps the frames shown from
``start`` until ``end`` (``start <= i / fps < end``). A time within :data:`TOLERANCE_S` after a frame's is
that frame's (a time typed or sent rounded: 0.9667 s is frame 29 at 30 fps), so the frame a user picked is
the frame rendered. A trim that keeps no frame is refused before any work, in one line (:meth:`Trim.keep`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from pipeline.errors import UserError

if TYPE_CHECKING:
    from pipeline.settings import Settings

TOLERANCE_S = 1e-3  # a rounded time still names its frame (far below a frame: 4 ms at 240 fps)
Rate = float | Fraction  # frames per second: a probe's exact ratio, or a float
SEEK_MARGIN_S = 5e-4  # the decoder seeks this much before a frame's time (ffmpeg's -ss has microseconds)


@dataclass(frozen=True)
class Trim:
    """``start`` / ``end`` in seconds (None: the clip's beginning / end)."""

    start: float | None = None
    end: float | None = None

    def __post_init__(self) -> None:
        if not all(t is None or math.isfinite(t) for t in (self.start, self.end)):
            raise ValueError(f"a trim is finite times in seconds, not {self.start}..{self.end}")

    @classmethod
    def of(cls, settings: Settings) -> Trim:
        """The trim of ``settings`` (``video.start`` / ``video.end``)."""
        return cls(settings.video.start, settings.video.end)

    @property
    def whole(self) -> bool:
        """No trim: every frame."""
        return self.start is None and self.end is None

    def first(self, fps: Rate) -> int:
        """The first frame kept (it may be past the clip's last)."""
        return 0 if not self.start else max(0, math.ceil((self.start - TOLERANCE_S) * float(fps)))

    def frames(self, count: int, fps: Rate) -> range:
        """The frames kept of a clip of ``count`` frames at ``fps`` (empty: the trim keeps none)."""
        if self.end is None:
            return range(self.first(fps), count)
        return range(self.first(fps), min(count, max(0, math.ceil((self.end - TOLERANCE_S) * float(fps)))))

    def problem(self, count: int, fps: Rate, name: str) -> str:
        """Why the trim keeps no frame of ``name`` (``count`` frames at ``fps``), in one line; "" when it
        keeps one."""
        start, end = self.start or 0.0, self.end
        if self.frames(count, fps) or not count:
            return ""
        duration = count / float(fps)
        if start >= duration:
            return f"video.start {start:g} s is past the end of {name} ({duration:.2f} s)"
        if end is not None and end <= start:
            return f"video.end {end:g} s is not after video.start ({start:g} s): nothing to render"
        last = count - 1
        if self.first(fps) > last:
            at = last / float(fps)
            return (f"video.start {start:g} s is after the last frame of {name} (frame {last}, shown from "
                    f"{at:.3f} s): nothing to render; start at {at:.3f} s or before")
        return (f"video.start {start:g} s – video.end {end:g} s keeps no frame of {name} (one every "
                f"{1 / float(fps):.3f} s): widen the trim")

    def keep(self, count: int, fps: Rate, name: str) -> range:
        """The frames kept, or :class:`UserError` saying why none is (:meth:`problem`)."""
        problem = self.problem(count, fps, name)
        if problem:
            raise UserError(problem)
        return self.frames(count, fps)

    def beyond(self, count: int, fps: Rate) -> str:
        """A note for an end after the clip's (the render stops at the clip's end); "" otherwise."""
        duration = count / float(fps)
        if self.end is None or self.end <= duration + TOLERANCE_S:
            return ""
        return (f"video.end {self.end:g} s is after the end of the clip ({duration:.2f} s): the render stops "
                "there")

    def seek(self, count: int, fps: Rate) -> tuple[float | None, float | None]:
        """(input seek, duration) in seconds for the decoder, None where not needed: from just before the
        first kept frame until just before the first frame after them (:data:`SEEK_MARGIN_S`), so that
        rounding a time never drops or adds a frame (ffmpeg keeps the frames at or after the seek, and those
        before its end)."""
        kept = self.frames(count, fps)
        step = 1 / float(fps)
        at = kept.start * step - SEEK_MARGIN_S if kept.start > 0 else None
        if self.end is None or kept.stop >= count:
            return at, None
        return at, kept.stop * step - SEEK_MARGIN_S - (at or 0.0)

    def times(self, count: int, fps: Rate) -> tuple[float | None, float | None]:
        """Where the kept frames begin and end in the clip (s): the first one's time, the time the last one
        ends; None for the clip's own beginning / end. The sound is cut there, so it stays with its frames
        (and a lip syncer hears the frames' own)."""
        kept = self.frames(count, fps)
        step = 1 / float(fps)
        return (kept.start * step if kept.start else None,
                kept.stop * step if self.end is not None and kept.stop < count else None)

    def describe(self, count: int, fps: Rate) -> str:
        """The frames kept in words: "frames 15–29 (0.50–1.00 s)"; "" for a trim that keeps none."""
        kept = self.frames(count, fps)
        if not kept:
            return ""
        step = 1 / float(fps)
        return f"frames {kept.start}–{kept.stop - 1} ({kept.start * step:.2f}–{kept.stop * step:.2f} s)"


WHOLE = Trim()  # no trim: every frame
