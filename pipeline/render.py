"""The video render: decode -> detect -> track -> swap -> blend -> encode as concurrent stages.

Each stage is one thread that takes items in order from a bounded queue and hands results on in order,
so decode, inference, paste-back and encoding overlap while memory stays bounded whatever the clip
length (at most ``execution.queue_size`` frames wait between two stages, plus the tracker's look-ahead).
Batches are formed across frames: the detector sees B frames at once and the swapper every crop of those
B frames. ``execution.batch_size=auto`` probes 1, 2, 4, 8… on the first frame and keeps the size past
which throughput stops improving.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from pipeline.errors import Cancelled, UserError
from pipeline.faces.track import Tracker
from pipeline.process import FaceProcessor
from pipeline.settings import Settings
from pipeline.types import Face, Frame
from pipeline.video.decode import read_frames
from pipeline.video.encode import Encoder
from pipeline.video.probe import VideoInfo, probe

log = logging.getLogger(__name__)

STAGES = ("decode", "detect", "swap", "blend", "encode")
_END = object()


@dataclass
class Progress:
    frames_done: int
    frames_total: int
    fps: float
    eta_s: float | None
    elapsed_s: float
    stage_s: dict[str, float]
    batch_size: int
    rss_mb: float
    device_mb: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RenderResult:
    output: Path
    frames: int
    seconds: float
    fps: float
    batch_size: int
    encoder: str
    encoder_reason: str
    stage_s: dict[str, float]
    models: list[str]
    notices: list[str] = field(default_factory=list)
    faces_swapped: int = 0
    peak_rss_mb: float = 0.0

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        d["output"] = str(self.output)
        d["kind"] = "video"
        return d


class FrameSink(Protocol):
    """Where rendered frames go: an :class:`Encoder`, or anything that writes frames like one."""

    encoder: str
    encoder_reason: str

    def write(self, frame: Frame) -> None: ...

    def close(self) -> Path: ...

    def abort(self) -> None: ...


class _Stop(Exception):
    """Another stage failed or the job was cancelled: leave quietly."""


class _Pipe:
    """A bounded queue whose get/put give up when the render is stopping."""

    def __init__(self, size: int, stop: threading.Event) -> None:
        self.q: queue.Queue[Any] = queue.Queue(maxsize=size)
        self.stop = stop

    def put(self, item: Any) -> None:
        while True:
            if self.stop.is_set():
                raise _Stop
            try:
                self.q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def get(self) -> Any:
        while True:
            if self.stop.is_set():
                raise _Stop
            try:
                return self.q.get(timeout=0.1)
            except queue.Empty:
                continue

    def __iter__(self) -> Iterator[Any]:
        while (item := self.get()) is not _END:
            yield item


def for_video(settings: Settings) -> Settings:
    """Settings for a staged render: one onnxruntime thread per session unless the user chose a number.

    The stages already run side by side (and ffmpeg beside them); letting every session also spread over
    all cores only makes them fight: measured 18.9 -> 22.0 fps at 1080p on 2 cores.
    """
    if settings.execution.threads:
        return settings
    return settings.model_copy(update={"execution": settings.execution.model_copy(update={"threads": 1})})


def choose_batch_size(processor: FaceProcessor, frame: Frame, requested: int | str, limit: int = 16) -> int:
    """``requested`` if fixed; else the batch size past which detect+swap throughput stops improving."""
    if requested != "auto":
        return int(requested)
    faces = processor.select(frame, processor.detect([frame])[0])
    best_b, best_rate, b = 1, 0.0, 1
    available = psutil.virtual_memory().available
    while b <= limit:
        frames = [frame] * b
        started = time.perf_counter()
        processor.detect(frames)
        processor.swap(frames, [faces] * b)
        rate = b / max(1e-6, time.perf_counter() - started)
        log.debug("batch %d: %.1f frames/s", b, rate)
        if rate < best_rate * 1.05:  # less than 5 % better: stop growing
            break
        best_b, best_rate = b, rate
        frame_bytes = frame.nbytes * 4 * processor.settings.execution.queue_size
        if frame_bytes * b * 2 > available * 0.25:
            break
        b *= 2
    return best_b


def _device_mb() -> float | None:
    """GPU memory in use (MB) while a CUDA/TensorRT session is loaded; None on CPU."""
    from pipeline.models import sessions

    if not any(p != "CPUExecutionProvider" for row in sessions.loaded() for p in row["providers"][:1]):
        return None
    return sessions.device_memory_mb()


class Render:
    """One video render. ``run()`` blocks; ``cancel`` (an Event) stops it within about a second."""

    def __init__(self, settings: Settings, sources: Sequence[Path | str], target: Path | str, output: Path | str, *,
                 processor: FaceProcessor | None = None, cancel: threading.Event | None = None,
                 progress: Callable[[Progress], None] | None = None, progress_every: float = 0.5,
                 info: VideoInfo | None = None, frames: tuple[int, int | None] | None = None,
                 sink: Callable[[int, int], FrameSink] | None = None) -> None:
        """``frames=(a, b)``: render only frames a..b-1 of the (trimmed) clip, picked by index (b None: to
        the end); progress counts from a. ``sink(width, height)``: where frames go instead of an
        :class:`Encoder` on ``output`` (a resumable job writes segments); it must have ``write``,
        ``close`` (-> Path), ``abort``, ``encoder`` and ``encoder_reason``."""
        settings = for_video(settings)
        self.settings = settings
        self.frames = frames
        self.sink = sink
        self.target, self.output = Path(target), Path(output)
        self.info = info or probe(self.target)
        self.processor = processor or FaceProcessor(settings, list(sources))
        self.cancel = cancel or threading.Event()
        self.progress = progress
        self.progress_every = progress_every
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        self._busy = dict.fromkeys(STAGES, 0.0)
        self._done = 0
        self._faces = 0
        self._peak_rss = 0.0

    # --- stages ---------------------------------------------------------------------------------------
    def _stage(self, name: str, body: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                body()
            except _Stop:
                pass
            except BaseException as exc:  # handed to the caller of run()
                self._errors.append(exc)
                self._stop.set()

        t = threading.Thread(target=run, name=f"render-{name}", daemon=True)
        t.start()
        return t

    def _timed(self, name: str, items: Iterable[Any]) -> Iterator[Any]:
        it = iter(items)
        while True:
            started = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            self._busy[name] += time.perf_counter() - started
            yield item

    def run(self) -> RenderResult:
        s, info = self.settings, self.info
        start, end = s.video.start, s.video.end
        if start is not None and end is not None and end <= start:
            raise UserError(f"video.end ({end}) must be after video.start ({start})")
        total = info.frames_between(start, end)
        if self.frames is not None:
            first_i, stop_i = self.frames
            total = max(0, min(total, stop_i if stop_i is not None else total) - first_i)
        qsize = s.execution.queue_size
        frames_in = read_frames(info.path, info=info, start=start, end=end, cancel=self._stop, frames=self.frames)
        first = next(frames_in, None)
        if first is None:
            raise UserError(f"{info.path.name}: no frames to process in the chosen range")
        self.batch = choose_batch_size(self.processor, first, s.execution.batch_size)
        log.info("batch size %d (%s)", self.batch, s.execution.batch_size)
        encoder: FrameSink
        if self.sink is not None:
            encoder = self.sink(first.shape[1], first.shape[0])
        else:
            encoder = Encoder(self.output, width=first.shape[1], height=first.shape[0], fps=info.fps, source=info,
                              start=start, end=end, keep_audio=s.video.keep_audio, encoder=s.output.encoder,
                              quality=s.output.quality, preset=s.output.preset, models=self.processor.models,
                              cancel=self._stop)
        decoded, detected, swapped, blended = (_Pipe(qsize, self._stop) for _ in range(4))
        started = time.perf_counter()
        watcher = threading.Thread(target=self._watch_cancel, daemon=True)
        watcher.start()

        def decode() -> None:
            decoded.put(first)
            for frame in self._timed("decode", frames_in):
                decoded.put(frame)
            decoded.put(_END)

        def detect() -> None:
            tracker: Tracker[Frame] = Tracker(s.tracker, float(info.fps))
            batch: list[Frame] = []

            def run_batch() -> None:
                t0 = time.perf_counter()
                found = self.processor.detect(batch)
                ready: list[tuple[Frame, list[Face]]] = []
                for frame, faces in zip(batch, found, strict=True):
                    ready.extend(tracker.push(frame, self.processor.select(frame, faces), frame))
                self._busy["detect"] += time.perf_counter() - t0
                for item in ready:
                    detected.put(item)
                batch.clear()

            for frame in decoded:
                batch.append(frame)
                if len(batch) >= self.batch:
                    run_batch()
            if batch:
                run_batch()
            for item in tracker.flush():
                detected.put(item)
            detected.put(_END)

        def swap() -> None:
            batch: list[tuple[Frame, list[Face]]] = []

            def run_batch() -> None:
                t0 = time.perf_counter()
                frames = [f for f, _ in batch]
                items = self.processor.swap(frames, [faces for _, faces in batch])
                self._busy["swap"] += time.perf_counter() - t0
                for frame, its in zip(frames, items, strict=True):
                    swapped.put((frame, its))
                batch.clear()

            for frame, faces in detected:
                batch.append((frame, faces))
                if len(batch) >= self.batch:
                    run_batch()
            if batch:
                run_batch()
            swapped.put(_END)

        def blend() -> None:
            for frame, items in swapped:
                t0 = time.perf_counter()
                self._faces += len(items)
                out = self.processor.blend(frame, items, inplace=True)
                self._busy["blend"] += time.perf_counter() - t0
                blended.put(out)
            blended.put(_END)

        def encode() -> None:
            last = 0.0
            for frame in blended:
                t0 = time.perf_counter()
                encoder.write(frame)
                self._busy["encode"] += time.perf_counter() - t0
                self._done += 1
                now = time.perf_counter()
                if now - last >= self.progress_every:
                    last = now
                    self._report(total, started)

        threads = [self._stage(n, b) for n, b in
                   (("decode", decode), ("detect", detect), ("swap", swap), ("blend", blend), ("encode", encode))]
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)
                    self._sample_rss()
            if self.cancel.is_set():
                raise Cancelled("render cancelled")
            if self._errors:
                raise self._errors[0]
            path = encoder.close()
        except BaseException:
            self._stop.set()
            for t in threads:
                t.join(timeout=5)
            encoder.abort()
            try:
                frames_in.close()  # type: ignore[attr-defined]
            except ValueError:  # still running in a stage that did not stop in time
                log.warning("decoder did not stop within 5 s")
            if self.cancel.is_set():
                raise Cancelled("render cancelled") from None
            raise
        finally:
            self._stop.set()
        seconds = time.perf_counter() - started
        self._report(total, started, final=True)
        return RenderResult(
            output=path, frames=self._done, seconds=round(seconds, 3), fps=round(self._done / max(seconds, 1e-9), 2),
            batch_size=self.batch, encoder=encoder.encoder, encoder_reason=encoder.encoder_reason,
            stage_s={k: round(v, 3) for k, v in self._busy.items()}, models=self.processor.models,
            notices=list(self.processor.notices), faces_swapped=self._faces, peak_rss_mb=round(self._peak_rss, 1),
        )

    def _watch_cancel(self) -> None:
        while not self._stop.is_set():
            if self.cancel.wait(0.1):
                self._stop.set()
                return

    def _sample_rss(self) -> None:
        self._peak_rss = max(self._peak_rss, psutil.Process().memory_info().rss / 1e6)

    def _report(self, total: int, started: float, final: bool = False) -> None:
        if self.progress is None:
            return
        elapsed = time.perf_counter() - started
        fps = self._done / elapsed if elapsed > 0 else 0.0
        remaining = max(0, total - self._done)
        self._sample_rss()
        self.progress(Progress(
            frames_done=self._done, frames_total=max(total, self._done), fps=round(fps, 2),
            eta_s=0.0 if final else (round(remaining / fps, 1) if fps > 0 else None), elapsed_s=round(elapsed, 2),
            stage_s={k: round(v, 3) for k, v in self._busy.items()}, batch_size=self.batch,
            rss_mb=round(self._peak_rss, 1), device_mb=_device_mb(),
        ))


def render(settings: Settings, sources: Sequence[Path | str], target: Path | str, output: Path | str,
           **kwargs: Any) -> RenderResult:
    return Render(settings, sources, target, output, **kwargs).run()
