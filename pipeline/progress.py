"""How far a render or a job is, and how whoever started it steers it.

:class:`Progress` is the one shape of progress everywhere: the render makes it, the job runner passes it
on, the worker writes it to the job store (columns ``frames_done``, ``frames_total``, ``fps``, ``eta_s`` and
the ``stage`` JSON), and the UI and CLI read it back as ``Job.progress``.

:class:`RunControl` is what a run shares with its starter: the cancel event, why it was set, and where
progress goes, at most every ``every`` seconds.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict


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


class RunControl:
    """Cancel, its reason, and the pace of progress reports for one run (a render, a queued job).

    ``on_progress`` receives every :meth:`report`; a producer asks :meth:`due` first so that it builds a
    report at most every ``every`` seconds (the final one it always sends).
    """

    def __init__(self, on_progress: Callable[[Progress], None] | None = None, *, every: float = 0.5,
                 cancel: threading.Event | None = None) -> None:
        self.on_progress = on_progress
        self.every = every
        self.cancel = cancel or threading.Event()
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
        return self.on_progress is not None and time.monotonic() - self._last >= self.every

    def report(self, progress: Progress) -> None:
        """Hand ``progress`` to ``on_progress``."""
        self._last = time.monotonic()
        if self.on_progress is not None:
            self.on_progress(progress)

    def relay(self, convert: Callable[[Progress], Progress]) -> RunControl:
        """A control for one part of this run (the render inside a job): the same cancel event, reason and
        pace; its reports are converted, then reported here."""
        part = RunControl(lambda p: self.report(convert(p)), every=self.every, cancel=self.cancel)
        part._parent = self
        return part
