"""The live engine: a capture thread hands frames to the processing loop through a single-slot handoff.

The camera's frames are stamped with their capture time as they arrive and put in :class:`~.handoff.Latest`
(the newest wins, a replaced frame is counted as dropped); the loop takes the newest, processes it with the
current step, writes it to the sink and measures its latency (delivered − captured). :meth:`LiveEngine.update`
builds a new step from new settings and the loop switches to it between two frames, without a restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pipeline.live.camera import Camera
from pipeline.live.handoff import Latest
from pipeline.progress import hold_from_env
from pipeline.settings import Settings
from pipeline.types import Frame

Step = Callable[[Frame], Frame]  # one captured frame -> the frame to deliver
Build = Callable[[Settings], Step]


class Sink(Protocol):
    def write(self, frame: Frame, index: int | None = None) -> None:
        """``frame`` out; ``index``: its number in the camera's stream (a recording fills the numbers
        dropped before it, so that it plays at the camera's pace)."""
        ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


@dataclass(frozen=True)
class Captured:
    index: int  # its number in the camera's stream (0: the first)
    at: float  # when it was captured (the engine's clock, seconds)
    frame: Frame


@dataclass
class LiveStats:
    """What a run delivered: each frame's capture number, capture and delivery times and latency, and the
    frames dropped."""

    captured: int = 0
    dropped: int = 0  # replaced while waiting, or processed but never sent
    unsent: int = 0  # of those: processed but never sent
    indices: list[int] = field(default_factory=list)  # the capture numbers delivered, in order
    latencies: list[float] = field(default_factory=list)  # seconds, per delivered frame
    delivered_at: list[float] = field(default_factory=list)
    captured_at: list[float] = field(default_factory=list)  # when each delivered frame was captured

    def deliver(self, item: Captured, at: float) -> None:
        self.indices.append(item.index)
        self.latencies.append(at - item.at)
        self.delivered_at.append(at)
        self.captured_at.append(item.at)

    @property
    def fps(self) -> float:
        """Frames delivered per second, between the first delivery and the last."""
        return _rate(self.delivered_at)

    def summary(self, last: int | None = None) -> dict[str, Any]:
        """Counts of the whole run; fps and latency of the whole run, or of its ``last`` deliveries (what
        a running stream shows); the latency p50 of the frames captured in the run's first and last
        :data:`EDGE_S` seconds and its growth between them (of the whole run)."""
        window = slice(-last, None) if last else slice(None)
        p50, p95 = _percentiles(self.latencies[window], 50, 95)
        start, end = self.edges()
        return {"frames_captured": self.captured, "frames_delivered": len(self.indices),
                "frames_dropped": self.dropped, "fps": round(_rate(self.delivered_at[window]), 2),
                "latency_p50_ms": round(p50, 1), "latency_p95_ms": round(p95, 1),
                "latency_start_p50_ms": round(start, 1), "latency_end_p50_ms": round(end, 1),
                "latency_growth_ms": round(end - start, 1)}

    def edges(self, seconds: float | None = None) -> tuple[float, float]:
        """Latency p50 (ms) of the frames captured in the first and in the last ``seconds`` (default
        :data:`EDGE_S`) of the run, by their capture times: a latency that grows over a run shows here."""
        if not self.captured_at:
            return 0.0, 0.0
        span = EDGE_S if seconds is None else seconds
        at, lat = self._timeline()
        return (_percentiles(lat[at < at[0] + span], 50)[0], _percentiles(lat[at > at[-1] - span], 50)[0])

    def per_second(self) -> list[float | None]:
        """Latency p50 (ms) of the frames captured in each second of the run, from its first capture
        (None: a second none of whose frames was delivered)."""
        if not self.captured_at:
            return []
        at, lat = self._timeline()
        second = np.floor(at - at[0]).astype(int)
        return [round(_percentiles(lat[second == s], 50)[0], 1) if (second == s).any() else None
                for s in range(int(second[-1]) + 1)]

    def _timeline(self) -> tuple[np.ndarray, np.ndarray]:
        """Capture times and latencies of the frames delivered so far (read while the loop may append:
        ``captured_at`` is appended last, so its length is that of both)."""
        n = len(self.captured_at)
        return np.array(self.captured_at[:n]), np.array(self.latencies[:n])


EDGE_S = 5.0  # the start and the end of a run, for :meth:`LiveStats.edges`


def _percentiles(seconds: Any, *qs: float) -> list[float]:
    ms = np.asarray(seconds, float) * 1000.0
    return [float(np.percentile(ms, q)) for q in qs] if len(ms) else [0.0] * len(qs)


def _rate(times: list[float]) -> float:
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    return (len(times) - 1) / span if span > 0 else 0.0


class LiveEngine:
    """Runs one camera into one sink with the step ``build`` makes from the settings."""

    def __init__(self, settings: Settings, build: Build, clock: Callable[[], float] = time.monotonic) -> None:
        self._build = build
        self._step = build(settings)
        self._next: Step | None = None  # the step of an update, taken between two frames
        self._lock = threading.Lock()
        self.clock = clock
        self.handoff: Latest[Captured] = Latest()
        self.stats = LiveStats()
        self._stop = threading.Event()
        self._error: BaseException | None = None

    def update(self, settings: Settings, build: Build | None = None) -> None:
        """Process the frames from the next one on with ``settings`` (``build``: from now on, steps built
        by it; the step is built here, the loop switches to it between frames)."""
        self._build = build or self._build
        step = self._build(settings)
        with self._lock:
            self._next = step

    def stop(self) -> None:
        """End the run: the camera stops, the frame waiting is still delivered."""
        self._stop.set()

    def run(self, camera: Camera, sink: Sink, limit: int | None = None) -> LiveStats:
        """Frames of ``camera`` (``limit``: that many at most) into ``sink`` until the camera ends or
        :meth:`stop`; the sink is closed (aborted on an error)."""
        capture = threading.Thread(target=self._capture, args=(camera, limit), name="live-capture",
                                   daemon=True)
        capture.start()
        try:
            self._loop(sink)
        except KeyboardInterrupt:  # Ctrl-C ends a live run as the camera ending would: the recording kept
            self._stop.set()
        except BaseException:
            self._stop.set()
            capture.join()
            sink.abort()
            raise
        capture.join()
        self.stats.dropped = self.handoff.dropped + self.stats.unsent
        if self._error is not None:
            sink.abort()
            raise self._error
        sink.close()
        return self.stats

    @property
    def step(self) -> Step:
        """The step frames go through now."""
        return self._step

    def offer(self, frame: Frame) -> Captured:
        """Hand one camera frame to the loop, stamped now (it replaces one still waiting: a drop)."""
        item = Captured(self.stats.captured, self.clock(), frame)
        self.stats.captured += 1
        self.handoff.put(item)
        return item

    def process_next(self) -> tuple[Captured, Frame] | None:
        """The newest frame waiting (waits for one) through the current step (an update's step from this
        frame on); None once the camera has ended and nothing waits. Call :meth:`delivered` once it is out."""
        item = self.handoff.take()
        if item is None:
            return None
        return item, self.run_step(item.frame)

    def run_step(self, frame: Frame) -> Frame:
        """``frame`` through the current step (an update's step from this frame on)."""
        with self._lock:
            step, self._next = (self._next or self._step), None
        self._step = step
        return step(frame)

    def delivered(self, item: Captured) -> None:
        """``item``'s frame has gone out: its latency counted from its capture until now."""
        self.stats.deliver(item, self.clock())
        self.stats.dropped = self.handoff.dropped + self.stats.unsent

    def unsent(self) -> None:
        """A frame taken from the camera will not go out (the run ended while it was processed): a drop."""
        self.stats.unsent += 1
        self.stats.dropped = self.handoff.dropped + self.stats.unsent

    def _loop(self, sink: Sink) -> None:
        hold = hold_from_env()  # tests: the run waits after that many frames, until a signal or the flag goes
        while (done := self.process_next()) is not None:
            sink.write(done[1], done[0].index)
            self.delivered(done[0])
            if hold is not None and not hold.reached and len(self.stats.indices) >= hold.frame:
                hold.wait(self._stop)

    def _capture(self, camera: Camera, limit: int | None) -> None:
        frames = camera.frames(self._stop)
        try:
            for i, frame in enumerate(frames):
                if self._stop.is_set():
                    break
                self.offer(frame)
                if limit is not None and i + 1 >= limit:
                    break
        except BaseException as exc:  # the loop raises it: a camera that fails is the run's error
            self._error = exc
        finally:
            close = getattr(frames, "close", None)
            if close is not None:
                close()
            self.handoff.close()
