"""The video render: decode -> detect (+ track) -> swap -> enhance -> blend -> encode as concurrent stages.

Each stage is one thread (a method of :class:`Render`) that takes items in order from a bounded queue and
hands results on in order, so decode, inference, paste-back and encoding overlap while memory stays
bounded whatever the clip length (at most ``execution.queue_size`` items wait in front of each stage,
plus the tracker's look-ahead). Batches are formed across frames: the detector sees B frames at once,
the swapper and the enhancer every crop of those B frames. ``execution.batch_size=auto`` probes 1, 2, 4,
8... on the first frame and keeps the size past which throughput stops improving. The frames go to a
frame sink: an encoder on the output file (:func:`pipeline.video.encode.encoder_for`), or the segments
of a resumable job.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from pipeline.errors import Cancelled, UserError
from pipeline.faces.keyframes import KeyframeDetector, interval_for
from pipeline.faces.track import Tracker
from pipeline.process import FaceProcessor
from pipeline.progress import Progress, RunControl
from pipeline.settings import Settings
from pipeline.types import Face, Frame
from pipeline.video.decode import read_frames
from pipeline.video.encode import FrameSink, encoder_for
from pipeline.video.probe import VideoInfo, probe

log = logging.getLogger(__name__)

STAGES = ("decode", "detect", "swap", "enhance", "blend", "encode")
_END = object()

SinkFactory = Callable[[int, int], FrameSink]  # (width, height) of the frames -> where they go


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
    """``requested`` if fixed; else the batch size past which detect+swap+enhance throughput stops
    improving."""
    if requested != "auto":
        return int(requested)
    faces = processor.select(frame, processor.detect([frame])[0])
    best_b, best_rate, b = 1, 0.0, 1
    available = psutil.virtual_memory().available
    while b <= limit:
        frames = [frame] * b
        started = time.perf_counter()
        processor.detect(frames)
        processor.enhance(frames, processor.swap(frames, [faces] * b))
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
    """One video render. ``run()`` blocks; ``control.stop()`` stops it within about a second."""

    def __init__(self, settings: Settings, sources: Sequence[Path | str], target: Path | str,
                 output: Path | str | None = None, *, sink: SinkFactory | None = None,
                 processor: FaceProcessor | None = None, control: RunControl | None = None,
                 info: VideoInfo | None = None, frames: tuple[int, int | None] | None = None) -> None:
        """Frames go to ``output`` (a video file) or to ``sink(width, height)`` (a resumable job's segments),
        never both. ``frames=(a, b)``: render only frames a..b-1 of the (trimmed) clip, picked by index
        (b None: to the end); progress counts from a. ``control``: cancel, and where progress goes."""
        if (output is None) == (sink is None):
            raise ValueError("a render writes to an output file or to a sink: give exactly one")
        self.settings = for_video(settings)
        self.frames = frames
        self.target = Path(target)
        self.output = None if output is None else Path(output)
        self.info = info or probe(self.target)
        self.processor = processor or FaceProcessor(self.settings, list(sources))
        self.control = control or RunControl()
        self.open_sink: SinkFactory = sink or self._output_encoder
        self.batch = 1
        self._stop = threading.Event()  # set when the render ends, fails or is cancelled: every stage leaves
        self._errors: list[BaseException] = []
        self._inbox: dict[str, _Pipe] = {}  # the queue in front of each stage after decode
        self._busy = dict.fromkeys(STAGES, 0.0)
        self._total = self._done = self._faces = 0
        self._started = self._peak_rss = 0.0

    def _output_encoder(self, width: int, height: int) -> FrameSink:
        assert self.output is not None
        return encoder_for(self.output, self.info, self.settings, size=(width, height),
                           models=self.processor.models, cancel=self._stop)

    def run(self) -> RenderResult:
        self._total = self._frame_count()
        s, info = self.settings, self.info
        frames_in = read_frames(info.path, info=info, start=s.video.start, end=s.video.end, cancel=self._stop,
                                frames=self.frames)
        first = next(frames_in, None)
        if first is None:
            raise UserError(f"{info.path.name}: no frames to process in the chosen range")
        self.batch = choose_batch_size(self.processor, first, s.execution.batch_size)
        log.info("batch size %d (%s)", self.batch, s.execution.batch_size)
        sink = self.open_sink(first.shape[1], first.shape[0])
        self._inbox = {name: _Pipe(s.execution.queue_size, self._stop) for name in STAGES[1:]}
        self._started = time.perf_counter()
        threading.Thread(target=self._watch_cancel, name="render-cancel", daemon=True).start()
        threads = [self._thread("decode", self._decode, first, frames_in),
                   self._thread("detect", self._detect), self._thread("swap", self._swap),
                   self._thread("enhance", self._enhance), self._thread("blend", self._blend),
                   self._thread("encode", self._encode, sink)]
        path = self._wait(threads, sink, frames_in)
        seconds = time.perf_counter() - self._started
        self.control.report(self._progress(final=True))
        return RenderResult(
            output=path, frames=self._done, seconds=round(seconds, 3),
            fps=round(self._done / max(seconds, 1e-9), 2), batch_size=self.batch, encoder=sink.encoder,
            encoder_reason=sink.encoder_reason, stage_s=self._stage_seconds(), models=self.processor.models,
            notices=list(self.processor.notices), faces_swapped=self._faces,
            peak_rss_mb=round(self._peak_rss, 1),
        )

    def _frame_count(self) -> int:
        start, end = self.settings.video.start, self.settings.video.end
        if start is not None and end is not None and end <= start:
            raise UserError(f"video.end ({end}) must be after video.start ({start})")
        total = self.info.frames_between(start, end)
        if self.frames is not None:
            first_i, stop_i = self.frames
            total = max(0, min(total, stop_i if stop_i is not None else total) - first_i)
        return total

    # --- stages: one thread each, in order ------------------------------------------------------------
    def _decode(self, first: Frame, frames_in: Iterator[Frame]) -> None:
        out = self._inbox["detect"]
        out.put(first)
        for frame in self._timed("decode", frames_in):
            out.put(frame)
        out.put(_END)

    def _detect(self) -> None:
        """Detect and select the faces of B frames at once (on keyframes only: ``detector.interval``, faces
        followed in between); the tracker fills short gaps (it holds frames back for that)."""
        s, fps = self.settings, float(self.info.fps)
        tracker: Tracker[Frame] = Tracker(s.tracker, fps)
        keys = KeyframeDetector(self.processor.detect, self.processor.select,
                                interval_for(s.detector.interval, fps), s.tracker.scene_cut)
        out = self._inbox["swap"]
        for batch in self._batches("detect"):
            ready: list[tuple[Frame, list[Face]]] = []
            with self._timing("detect"):
                for frame, faces in zip(batch, keys.faces(batch), strict=True):
                    ready.extend(tracker.push(frame, faces, frame))
            for item in ready:
                out.put(item)
        for item in tracker.flush():
            out.put(item)
        log.info("detection on %d of %d frames (interval %d)", keys.keyframes, keys.keyframes + keys.followed,
                 keys.interval)
        out.put(_END)

    def _swap(self) -> None:
        out = self._inbox["enhance"]
        for batch in self._batches("swap"):
            frames = [frame for frame, _ in batch]
            with self._timing("swap"):
                swapped = self.processor.swap(frames, [faces for _, faces in batch])
            for pair in zip(frames, swapped, strict=True):
                out.put(pair)
        out.put(_END)

    def _enhance(self) -> None:
        out = self._inbox["blend"]
        for batch in self._batches("enhance", self.batch if self.processor.enhances else 1):
            with self._timing("enhance"):
                self.processor.enhance([frame for frame, _ in batch], [items for _, items in batch])
            for pair in batch:
                out.put(pair)
        out.put(_END)

    def _blend(self) -> None:
        out = self._inbox["encode"]
        for frame, items in self._inbox["blend"]:
            with self._timing("blend"):
                self._faces += len(items)
                frame = self.processor.blend(frame, items, inplace=True)
            out.put(frame)
        out.put(_END)

    def _encode(self, sink: FrameSink) -> None:
        for frame in self._inbox["encode"]:
            with self._timing("encode"):
                sink.write(frame)
            self._done += 1
            if self.control.due():
                self.control.report(self._progress())

    # --- running the stages ---------------------------------------------------------------------------
    def _thread(self, name: str, body: Callable[..., None], *args: Any) -> threading.Thread:
        def run() -> None:
            try:
                body(*args)
            except _Stop:
                pass
            except BaseException as exc:  # handed to the caller of run()
                self._errors.append(exc)
                self._stop.set()

        t = threading.Thread(target=run, name=f"render-{name}", daemon=True)
        t.start()
        return t

    def _batches(self, stage: str, size: int | None = None) -> Iterator[list[Any]]:
        """The items waiting for ``stage`` in lists of ``size`` (default: the batch size; the last may be
        shorter)."""
        size = size or self.batch
        batch: list[Any] = []
        for item in self._inbox[stage]:
            batch.append(item)
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch

    @contextlib.contextmanager
    def _timing(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self._busy[stage] += time.perf_counter() - started

    def _timed(self, stage: str, items: Iterable[Any]) -> Iterator[Any]:
        """``items``, with the time spent waiting for each counted as ``stage``'s."""
        it = iter(items)
        while True:
            started = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            self._busy[stage] += time.perf_counter() - started
            yield item

    def _wait(self, threads: list[threading.Thread], sink: FrameSink, frames_in: Iterator[Frame]) -> Path:
        """Wait for every stage and close the sink; on failure or cancel, stop them all, drop the output."""
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)
                    self._sample_rss()
            if self.control.cancelled:
                raise Cancelled("render cancelled")
            if self._errors:
                raise self._errors[0]
            return sink.close()
        except BaseException:
            self._stop.set()
            for t in threads:
                t.join(timeout=5)
            sink.abort()
            try:
                frames_in.close()  # type: ignore[attr-defined]
            except ValueError:  # still running in a stage that did not stop in time
                log.warning("decoder did not stop within 5 s")
            if self.control.cancelled:
                raise Cancelled("render cancelled") from None
            raise
        finally:
            self._stop.set()

    def _watch_cancel(self) -> None:
        while not self._stop.is_set():
            if self.control.cancel.wait(0.1):
                self._stop.set()
                return

    # --- progress -------------------------------------------------------------------------------------
    def _sample_rss(self) -> None:
        self._peak_rss = max(self._peak_rss, psutil.Process().memory_info().rss / 1e6)

    def _stage_seconds(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self._busy.items()}

    def _progress(self, final: bool = False) -> Progress:
        elapsed = time.perf_counter() - self._started
        fps = self._done / elapsed if elapsed > 0 else 0.0
        remaining = max(0, self._total - self._done)
        self._sample_rss()
        eta = 0.0 if final else (round(remaining / fps, 1) if fps > 0 else None)
        return Progress(self._done, max(self._total, self._done), round(fps, 2), eta, {
            "elapsed_s": round(elapsed, 2), "stage_s": self._stage_seconds(), "batch_size": self.batch,
            "rss_mb": round(self._peak_rss, 1), "device_mb": _device_mb()})


def render(settings: Settings, sources: Sequence[Path | str], target: Path | str, output: Path | str,
           **kwargs: Any) -> RenderResult:
    return Render(settings, sources, target, output, **kwargs).run()
