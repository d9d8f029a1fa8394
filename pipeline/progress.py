"""How far a render or a job is, and how whoever started it steers it.

:class:`Progress` is the one shape of progress everywhere: the render makes it, the job runner passes it
on, the worker writes it to the job store (columns ``frames_done``, ``frames_total``, ``fps``, ``eta_s`` and
the ``stage`` JSON), and the UI and CLI read it back as ``Job.progress``.

:class:`RunControl` is what a run shares with its starter: the cancel event, why it was set, and where
progress goes, at most every ``every`` seconds (on an injectable clock).

:class:`RateMeter` measures a run's frame rate over its last seconds, from its first finished frame (the
pipeline filling up is no part of it), and gives no rate, so no ETA, until a few frames are measured.

:class:`FrameHold` is for tests only: it stops a run at a known frame (see :func:`hold_from_env`), so that a
test can act while the run is surely in the middle (truncate its input, send it a signal) on any machine.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Literal, TypedDict

from pipeline import env
from pipeline.errors import UserError


class StageInfo(TypedDict, total=False):
    """The details beside the frame counts (every key optional)."""

    stage_s: dict[str, float]  # busy seconds per render stage (decode, detect, swap, enhance, blend, encode)
    elapsed_s: float
    batch_size: int
    rss_mb: float  # peak resident memory of the process
    device_mb: float | None  # GPU memory in use; None on CPU
    segments: int  # finished segments of a resumable job
    segments_total: int  # segments planned (render farm)
    running: int  # segments of the job rendering at once (render farm)
    step: str  # what a job does outside the render: "image", "joining segments", "done"


@dataclass(frozen=True)
class Progress:
    frames_done: int = 0
    frames_total: int | None = None
    fps: float | None = None
    eta_s: float | None = None  # 0.0 once finished; None while unknown
    stage: StageInfo = field(default_factory=StageInfo)

    @property
    def fraction(self) -> float | None:
        if not self.frames_total:
            return None
        return min(1.0, self.frames_done / self.frames_total)

    @property
    def final(self) -> bool:
        return self.eta_s == 0.0

    @property
    def stage_s(self) -> dict[str, float]:
        """Busy seconds per render stage ({} outside a render)."""
        return dict(self.stage.get("stage_s") or {})


class RateMeter:
    """Frames per second over the last ``window`` seconds of ``clock``, counted from the first frame
    :meth:`add` saw; None until ``min_frames`` frames after that one over at least ``min_s`` seconds are
    measured (by default: from the 8th frame; a first ETA from two frames, or from the time the stages took
    to fill, would be wild). The ETA divides by a
    smoothed rate: an exponential average of that recent rate with the time constant ``smoothing_s``,
    started at the rate since the first frame, so that frames coming in bursts (batches, a busy machine)
    do not swing it. Thread-safe."""

    def __init__(self, *, window: float = 5.0, min_frames: int = 7, min_s: float = 0.2,
                 smoothing_s: float = 8.0, clock: Callable[[], float] = time.perf_counter) -> None:
        self.window, self.min_frames, self.min_s, self.clock = window, min_frames, min_s, clock
        self.smoothing_s = smoothing_s
        self._samples: deque[tuple[float, int]] = deque()
        self._first: tuple[float, int] | None = None
        self._smoothed: tuple[float, float] | None = None  # (rate, when)
        self._lock = threading.Lock()

    def add(self, done: int) -> None:
        """``done`` frames are finished now."""
        now = self.clock()
        with self._lock:
            if self._first is None:
                self._first = (now, done)
            self._samples.append((now, done))
            while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
                self._samples.popleft()
            self._smooth(now)

    def _smooth(self, now: float) -> None:
        lately = self._lately()
        if lately is None:
            return
        if self._smoothed is None:
            assert self._first is not None
            first_t, first_d = self._first
            self._smoothed = ((self._samples[-1][1] - first_d) / (now - first_t), now)
            return
        rate, when = self._smoothed
        weight = 1.0 - math.exp(-(now - when) / self.smoothing_s)
        self._smoothed = (rate + weight * (lately - rate), now)

    def _lately(self) -> float | None:
        if self._first is None or not self._samples:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        first_t, first_d = self._first
        if d1 - first_d < self.min_frames or t1 - first_t < self.min_s or t1 <= t0:
            return None
        return (d1 - d0) / (t1 - t0)

    def rate(self) -> float | None:
        """Frames per second lately (None: not measured enough yet)."""
        with self._lock:
            return self._lately()

    def smoothed(self) -> float | None:
        """The smoothed rate the ETA uses (None: not measured enough yet)."""
        with self._lock:
            return self._smoothed[0] if self._smoothed else None

    def eta(self, remaining: int) -> float | None:
        """Seconds left for ``remaining`` frames at the smoothed rate (None: not measured enough yet)."""
        fps = self.smoothed()
        return remaining / fps if fps else None


HOLD_VARIABLE = env.TEST_HOLD_FRAME.name


class FrameHold:
    """Test-only: at its first report of frame ``frame`` or later, a run writes the file ``flag`` and waits
    there until the file is removed, the run is cancelled or :meth:`release` is called (see
    :meth:`release_on_signals`)."""

    def __init__(self, frame: int, flag: Path | str) -> None:
        self.frame = frame
        self.flag = Path(flag)
        self.reached = False
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def release_on_signals(self) -> None:
        """Let SIGTERM and SIGHUP end the wait, then run their handlers (call in the main thread)."""
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._releasing(signal.getsignal(sig)))

    def due(self, progress: Progress) -> bool:
        """Whether the run should stop here (once: after the wait the run goes on unheld)."""
        return not self.reached and progress.frames_done >= self.frame

    def wait(self, cancel: threading.Event) -> None:
        self.reached = True
        writing = self.flag.with_name(f".{self.flag.name}.writing")
        writing.write_text(f"{self.frame}\n", encoding="utf-8")
        writing.replace(self.flag)  # whoever waits for the flag finds it whole
        while self.flag.exists() and not cancel.is_set() and not self._released.wait(0.02):
            pass

    def _releasing(self, previous: Callable[[int, FrameType | None], object] | int | None
                   ) -> Callable[[int, FrameType | None], None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.release()
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:  # the default: die of the signal, as without the hold
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        return handler


def hold_from_env() -> FrameHold | None:
    """The hold asked for by ``FACESTATION_TEST_HOLD_FRAME=FRAME:FLAGFILE`` (tests only), None when unset."""
    raw = env.TEST_HOLD_FRAME.get()
    if not raw:
        return None
    frame, _, flag = raw.partition(":")
    if not frame.strip().isdigit() or not flag:
        raise UserError(f"{HOLD_VARIABLE}={raw!r}: expected FRAME:FLAGFILE (a frame number and a file path, "
                        "e.g. 30:/tmp/held)")
    hold = FrameHold(int(frame), flag)
    if threading.current_thread() is threading.main_thread():  # a signal to the held process ends the hold
        hold.release_on_signals()
    return hold


class RunControl:
    """Cancel, its reason, and the pace of progress reports for one run (a render, a queued job).

    ``on_progress`` receives every :meth:`report`; a producer asks :meth:`due` first so that it builds a
    report at most every ``every`` seconds of ``clock`` (the final one it always sends). ``hold``: a
    :class:`FrameHold` (tests), None, or by default the one ``FACESTATION_TEST_HOLD_FRAME`` asks for; while it
    waits to be reached every report is due.
    """

    def __init__(self, on_progress: Callable[[Progress], None] | None = None, *, every: float = 0.5,
                 cancel: threading.Event | None = None, clock: Callable[[], float] = time.monotonic,
                 hold: FrameHold | Literal["env"] | None = "env") -> None:
        self.on_progress = on_progress
        self.every = every
        self.cancel = cancel or threading.Event()
        self.clock = clock
        self._hold = hold_from_env() if hold == "env" else hold
        self._reason: str | None = None
        self._parent: RunControl | None = None
        self._last = -math.inf

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    @property
    def reason(self) -> str | None:
        """Why the run was stopped (the first reason given to :meth:`stop`), None while it runs."""
        return self._parent.reason if self._parent is not None else self._reason

    def stop(self, reason: str = "cancel") -> None:
        """Stop the run: set the cancel event; the first reason given is kept."""
        if self._parent is not None:
            self._parent.stop(reason)
            return
        if self._reason is None:
            self._reason = reason
        self.cancel.set()

    def due(self) -> bool:
        """Whether a progress report is wanted now (someone listens and ``every`` seconds have passed)."""
        if self._hold_ahead():
            return True
        return self.on_progress is not None and self.clock() - self._last >= self.every

    def quiet(self, seconds: float) -> bool:
        """Whether no report was made for ``seconds`` (and no hold waits to be reached: a run reports its
        held frame from where it makes frames): a run whose frames stall reports anyway."""
        return (self.on_progress is not None and not self._hold_ahead()
                and self.clock() - self._last >= seconds)

    def _hold_ahead(self) -> bool:
        """Whether a hold on this run (or on the run this is a part of) is still to be reached."""
        if self._parent is not None:
            return self._parent._hold_ahead()
        return self._hold is not None and not self._hold.reached

    def report(self, progress: Progress) -> None:
        """Hand ``progress`` to ``on_progress`` (then wait at the hold, if this is its frame)."""
        self._last = self.clock()
        if self.on_progress is not None:
            self.on_progress(progress)
        if self._hold is not None and self._hold.due(progress):
            self._hold.wait(self.cancel)

    def relay(self, convert: Callable[[Progress], Progress]) -> RunControl:
        """A control for one part of this run (the render inside a job): the same cancel event, reason,
        pace and clock; its reports are converted, then reported here (where a hold waits)."""
        part = RunControl(lambda p: self.report(convert(p)), every=self.every, cancel=self.cancel,
                          clock=self.clock, hold=None)
        part._parent = self
        return part
