"""Where a live run's time goes: per-frame stage durations, the CPU each thread used, the event loop's lag.

A :class:`Timeline` keeps the last :data:`KEPT` durations of each stage a frame went through (the camera's
frame converted to BGR, the chain, the frame converted for the encoder, the encoder, ...: whatever the path
names) and the gaps between frames arriving; :class:`ThreadCpu` reads the CPU time each of this process's
threads used (Linux's ``/proc``), grouped by the job its threads do; :class:`LoopLag` measures how late
the event loop runs a callback it was asked to run (a loop busy with conversions or encoding is late).
Their summaries are part of a run's live stats (``/facestation/live/stats``) and of
``scripts/bench_live_browser.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

KEPT = 300  # durations kept per stage: 10 s at 30 fps
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Timeline:
    """The last :data:`KEPT` durations of each named stage (seconds), thread-safe for one writer a stage."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._stages: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        samples = self._stages.get(stage)
        if samples is None:
            with self._lock:
                samples = self._stages.setdefault(stage, deque(maxlen=KEPT))
        samples.append(seconds)

    @contextlib.contextmanager
    def span(self, stage: str) -> Iterator[None]:
        """Time the block as one ``stage`` sample (also when it raises)."""
        started = self.clock()
        try:
            yield
        finally:
            self.add(stage, self.clock() - started)

    def summary(self) -> dict[str, dict[str, float]]:
        """``{stage: {"p50_ms", "p95_ms", "max_ms", "n"}}`` of the samples kept (first-seen order)."""
        with self._lock:
            stages = list(self._stages.items())
        out: dict[str, dict[str, float]] = {}
        for name, samples in stages:
            ms = np.asarray(list(samples), float) * 1000.0
            if len(ms):
                p50, p95 = np.percentile(ms, (50, 95))
                out[name] = {"p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2),
                             "max_ms": round(float(ms.max()), 2), "n": len(ms)}
        return out


def thread_group(name: str) -> str:
    """A thread's job from its Python name: ``Thread-7 (decoder_worker)`` -> ``decoder_worker``,
    ``asyncio_3`` -> ``asyncio`` (the executor's threads together)."""
    target = re.fullmatch(r"Thread-\d+ \((.+)\)", name)
    return re.sub(r"_\d+$", "", target.group(1) if target else name)


class ThreadCpu:
    """CPU seconds of this process's threads between :meth:`start` and :meth:`summary`, by job (Python
    threads by their name's group; the threads Python did not start — onnxruntime's, the codecs' — together
    as ``native``). Empty where ``/proc`` is not there."""

    def __init__(self, proc: Path = Path("/proc/self/task"), clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.proc, self.clock = proc, clock
        self._start: tuple[float, dict[int, float]] | None = None

    def _times(self) -> dict[int, float]:
        times: dict[int, float] = {}
        with contextlib.suppress(OSError):
            for task in self.proc.iterdir():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    fields = (task / "stat").read_text().rpartition(")")[2].split()
                    times[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
        return times

    def start(self) -> None:
        self._start = (self.clock(), self._times())

    def summary(self) -> dict[str, float]:
        """``{group: percent of one core}`` since :meth:`start`, the busiest first (a thread gone since is
        not counted)."""
        if self._start is None:
            return {}
        started, before = self._start
        wall = self.clock() - started
        if wall <= 0:
            return {}
        names = {t.native_id: thread_group(t.name) for t in threading.enumerate() if t.native_id}
        used: dict[str, float] = {}
        for tid, seconds in self._times().items():
            group = names.get(tid, "native")
            used[group] = used.get(group, 0.0) + seconds - before.get(tid, 0.0)
        return {g: round(100.0 * s / wall, 1) for g, s in sorted(used.items(), key=lambda kv: -kv[1])
                if s > 0}


class LoopLag:
    """How late the event loop runs a callback due every ``every`` seconds (its lateness, a
    :class:`Timeline` stage ``loop_lag``): run as a task on the loop until cancelled."""

    def __init__(self, timeline: Timeline, every: float = 0.05) -> None:
        self.timeline, self.every = timeline, every

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.every
            await asyncio.sleep(self.every)
            self.timeline.add("loop_lag", max(0.0, loop.time() - due))

