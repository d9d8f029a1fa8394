"""What a browser's camera should send so that this machine keeps up: its frame rate, then its size.

A frame the server drops still cost the browser its encoding and the server its decoding (a video's frames
depend on the ones before: every one is decoded). When the server delivers well under what the camera
sends, :class:`Adapter` advises a camera rate a little above what it delivers (the page asks its camera
for it, and says so); at the lowest rate, a smaller size. Once the server keeps up again with room to spare
it steps back towards what the user chose, but not past a level it fell behind at in the last
:data:`REMEMBER_S` seconds (no see-saw). Counts, not speeds: the rates are frames counted over a window of
an injected clock.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 3.0  # rates over the last this many seconds
GRACE_S = 5.0  # after the first frame out, this long unjudged (the models' first runs, the encoders' start)
SETTLE_S = 4.0  # after a change, this long before the next (the camera follows, the rates settle)
REMEMBER_S = 30.0  # a level fallen behind at is not tried again for this long
BEHIND = 0.8  # delivered under this share of what the camera sends: behind
KEEPS_UP = 0.95  # delivered at least this share: keeping up
MIN_FPS = 10
STEP_FPS = 5
SIZES = ((320, 240), (480, 360), (640, 480), (960, 720), (1280, 720), (1920, 1080))


@dataclass(frozen=True)
class Advice:
    """What to ask the camera for (``None``: what the user chose), and why, in words for the page."""

    fps: int | None
    size: tuple[int, int] | None
    note: str

    def as_dict(self) -> dict[str, object]:
        return {"fps": self.fps, "size": f"{self.size[0]}x{self.size[1]}" if self.size else None,
                "note": self.note}


class Adapter:
    """Advice for one run's camera from its frame counts (:meth:`observe`, about once a second)."""

    def __init__(self, fps: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.chosen_fps = int(round(fps))
        self.fps = self.chosen_fps  # advised now
        self.size: tuple[int, int] | None = None  # advised now (None: the camera's own)
        self.camera: tuple[int, int] | None = None  # the camera's size before it was first lowered
        self.clock = clock
        self._counts: deque[tuple[float, int, int]] = deque()  # (time, captured, delivered)
        self._changed = -math.inf
        self._first: float | None = None  # when the first frame went out
        self._fell: dict[tuple[int, tuple[int, int] | None], float] = {}  # level -> when it fell behind
        self.advice = Advice(None, None, "")

    def observe(self, captured: int, delivered: int, size: tuple[int, int] | None) -> Advice:
        """The run's counts so far and its camera's size now: the advice (changed at most every
        :data:`SETTLE_S`)."""
        now = self.clock()
        if not delivered:  # nothing out yet: the models' first run, the connection's start
            return self.advice
        self._first = now if self._first is None else self._first
        if now - self._first < GRACE_S:
            return self.advice
        self._counts.append((now, captured, delivered))
        while self._counts[0][0] < now - WINDOW_S:
            self._counts.popleft()
        t0, c0, d0 = self._counts[0]
        span = now - t0
        if span < WINDOW_S * 0.9 or now - self._changed < SETTLE_S or c0 == captured:
            return self.advice
        sent, made = (delivered - d0) / span, (captured - c0) / span
        if sent < BEHIND * made:
            self._fell[(self.fps, self.size)] = now
            self._down(sent, size)
        elif sent >= KEEPS_UP * made:
            self._up()
        return self.advice

    def _down(self, sent: float, size: tuple[int, int] | None) -> None:
        fps = max(MIN_FPS, math.ceil(sent * 1.15))
        if fps < self.fps:
            self._set(fps, self.size)
            return
        smaller = [s for s in SIZES if size and s[0] < size[0]]
        if smaller:
            self.camera = self.camera or size
            self._set(self.fps, smaller[-1])

    def _up(self) -> None:
        if self.size is not None:
            bigger = [s for s in SIZES if s[0] > self.size[0] and self.camera and s[0] < self.camera[0]]
            level: tuple[int, tuple[int, int] | None] = (self.fps, bigger[0] if bigger else None)
        elif self.fps < self.chosen_fps:
            level = (min(self.chosen_fps, self.fps + STEP_FPS), None)
        else:
            return
        if self.clock() - self._fell.get(level, -math.inf) >= REMEMBER_S:
            self._set(*level)

    def _set(self, fps: int, size: tuple[int, int] | None) -> None:
        self.fps, self.size, self._changed = fps, size, self.clock()
        self._counts.clear()
        if fps >= self.chosen_fps and size is None:
            self.advice = Advice(None, None, "")
            return
        asked = [f"{fps} fps"] + ([f"{size[0]}×{size[1]}"] if size else [])
        self.advice = Advice(fps if fps < self.chosen_fps else None, size,
                             f"camera lowered to {' '.join(asked)}: what this machine keeps up with")
