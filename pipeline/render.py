"""The video render: decode -> detect (+ track) -> swap -> enhance -> blend -> encode as concurrent stages.

Each stage is one thread (a method of :class:`Render`) that takes items in order from a bounded queue and
hands results on in order, so decode, inference, paste-back and encoding overlap while memory stays
bounded whatever the clip length (at most ``execution.queue_size`` items wait in front of each stage,
plus the tracker's look-ahead). Batches are formed across frames: the detector sees B frames at once,
the swapper and the enhancer every crop of those B frames. Before the first frame :func:`plan_render`
loads the models, runs that frame through every stage, gives the heaviest model stage the cores that the
others and decode/encode leave (light ones get one thread) and, for ``execution.batch_size=auto``, probes
batch sizes within a time box; that first frame is the render's own (it is not swapped again). The frames
go to a frame sink: an encoder on the output file (:func:`pipeline.video.encode.encoder_for`), or the
segments of a resumable job.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from pipeline.errors import Cancelled, UserError
from pipeline.faces.base import region_detection
from pipeline.faces.keyframes import KeyframeDetector, interval_for
from pipeline.faces.track import Tracker
from pipeline.models.sessions import CatalogSession
from pipeline.process import FaceProcessor, Swapped
from pipeline.progress import Progress, RunControl
from pipeline.settings import Settings
from pipeline.types import Face, Frame
from pipeline.video import integrity
from pipeline.video.decode import DecodeReport, read_frames
from pipeline.video.encode import FrameSink, encoder_for, padded_size_notice
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
    threads: dict[str, int] = field(default_factory=dict)  # intra-op threads per model stage
    load_s: float = 0.0  # loading the models (before the first frame)
    probe_s: float = 0.0  # batch probe beyond the first frame (that one counts in ``seconds``)

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


IO_MS_PER_MEGAPIXEL = 25.0
"""CPU time (ms) that decoding and encoding take per megapixel of a frame, beside the stages: a 1080p
transcode used most of both cores at 33 fps (BENCHMARKS.md, "Video pipeline"), ≈ 52 ms of CPU per frame."""

PROBE_SHARE = 0.05  # the batch probe may cost at most this share of the render of (at most) 10 s of clip
PROBE_SECONDS = 10.0


def no_face_notice(target: Path, settings: Settings) -> str:
    """Said of a whole render in which no face was replaced: the output is the target, re-encoded."""
    return (f"no face to replace was found in any frame of {target.name} "
            f"(selector.mode={settings.selector.mode}); the output is an unchanged copy")


@dataclass
class RenderPlan:
    """What a render decided before its first frame: batch size, intra-op threads per model stage, the
    CPU time each stage took on the first frame (ms; a stage run on n threads counts n × its wall time),
    and the seconds spent loading models, on the first frame (the render's own first frame: it counts in
    the render's time) and probing beyond it."""

    batch: int = 1
    threads: dict[str, int] = field(default_factory=dict)
    cost_ms: dict[str, float] = field(default_factory=dict)
    load_s: float = 0.0
    first_s: float = 0.0
    probe_s: float = 0.0
    free_cores: float = 0.0  # cores that other processes left during the first frame
    first: FirstFrame | None = field(default=None, repr=False)  # what the first frame's swap gave


@dataclass
class FirstFrame:
    """The plan's run of the first frame, kept so that the render does not swap that frame again (on a
    heavy model on a CPU that is seconds: 3 % of a 1 s clip)."""

    frame: Frame
    faces: list[Face]
    swapped: list[Swapped]  # before the enhancer (it works in place)
    seconds: float = 0.0  # the swap took

    def take(self, frame: Frame, faces: Sequence[Face]) -> list[Swapped] | None:
        """The swapped faces if ``frame`` is this very frame with the same faces (the tracker did not move
        them); else None."""
        if frame is not self.frame or len(faces) != len(self.faces) or not all(
                np.array_equal(a.landmarks, b.landmarks) and np.array_equal(a.box, b.box)
                for a, b in zip(faces, self.faces, strict=True)):
            return None
        return self.swapped


def cores() -> int:
    """Cores for onnxruntime's intra-op threads: the physical cores this process may run on (onnxruntime's
    own default, ``threads=0``, is the physical core count too)."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = os.cpu_count() or 1
    return max(1, min(allowed, psutil.cpu_count(logical=False) or allowed))


def stage_models(processor: FaceProcessor) -> dict[str, list[CatalogSession]]:
    """The onnxruntime-backed models each stage runs (built-in classic code has none)."""
    m = processor.face_models

    def of(*objects: object) -> list[CatalogSession]:
        found: list[CatalogSession] = []
        for obj in objects:
            for candidate in (obj, getattr(obj, "runner", None)):
                if isinstance(candidate, CatalogSession) and candidate not in found:
                    found.append(candidate)
        return found

    recogniser = m.recogniser if processor.selects_by_identity else None  # runs on every frame's faces
    return {"detect": of(m.detector, m.landmarker, recogniser), "swap": of(m.swapper, m.occluder, m.parser),
            "enhance": of(m.enhancer)}


def share_threads(cost_ms: dict[str, float], io_ms: float, n_cores: float) -> dict[str, int]:
    """Intra-op threads per model stage from what each costs per frame (CPU ms).

    The heaviest stage sets the pace; while it takes one frame, every other stage and decode+encode
    (``io_ms``) need their own CPU time, so it gets the cores they leave: ``n`` threads with
    ``n + n·rest/heaviest ≤ cores`` (rounded, at least 1). Every other model stage gets one thread.
    """
    models = {k: v for k, v in cost_ms.items() if k in ("detect", "swap", "enhance")}
    if not models:
        return {}
    heaviest = max(models, key=lambda k: models[k])
    rest = io_ms + sum(v for k, v in cost_ms.items() if k != heaviest)
    share = n_cores / (1.0 + rest / max(models[heaviest], 1e-6))
    return {k: max(1, min(round(n_cores), round(share))) if k == heaviest else 1 for k in models}


CpuSample = tuple[float, float, float]  # (wall clock, CPU seconds busy on the whole machine, ours)


def cpu_sample() -> CpuSample:
    t = psutil.cpu_times()
    own = psutil.Process().cpu_times()
    return time.perf_counter(), sum(t) - t.idle - getattr(t, "iowait", 0.0), own.user + own.system


def free_cores(n_cores: int, before: CpuSample, after: CpuSample) -> float:
    """The cores not taken by other processes between two samples (at least 1): on a machine shared
    with other jobs, a stage given every core would only fight them (measured: inswapper twin at
    load ≈ 30 on 2 cores, 15.5 s a face on one thread, 26 s on two)."""
    wall = after[0] - before[0]
    if wall < 0.05:
        return float(n_cores)
    others = max(0.0, (after[1] - before[1]) - (after[2] - before[2])) / wall  # logical CPUs busy with others
    logical = psutil.cpu_count() or n_cores
    return max(1.0, n_cores * (1.0 - min(1.0, others / logical)))


def _set_threads(models: dict[str, list[CatalogSession]], threads: dict[str, int], n_cores: int) -> None:
    """Give each stage's CPU models their threads; a model on onnxruntime's default (0 = every core) keeps
    it where the plan gives it every core, so that a loaded 554 MB session is not made again. A model on a
    GPU provider is left as it is: its intra-op threads only drive the nodes that fall back to the CPU,
    and re-making it (a TensorRT engine: seconds) twice per render, per farm segment, bought nothing."""
    for stage, found in models.items():
        for model in found:
            n = threads.get(stage, 1)
            if model.on_cpu and not (model.threads == 0 and n == n_cores):
                model.set_threads(n)


def unload_unused(processor: FaceProcessor) -> None:
    """Drop what no stage of a render runs: the swapper's recogniser has made the source identities (with
    the arcface twin: 174 MB held for nothing). The selector's recogniser stays: it picks faces per frame."""
    recogniser = getattr(processor.face_models.swapper, "recogniser", None)
    if isinstance(recogniser, CatalogSession):
        recogniser.unload()


def _load(models: dict[str, list[CatalogSession]]) -> float:
    started = time.perf_counter()
    for found in models.values():
        for model in found:
            _ = model.session
    return time.perf_counter() - started


def _first_frame(processor: FaceProcessor, frame: Frame) -> tuple[FirstFrame, dict[str, float]]:
    """What the swap made of ``frame``, and what each stage took on it (s)."""
    took: dict[str, float] = {}
    started = time.perf_counter()
    faces = processor.select(frame, processor.detect([frame])[0])
    took["detect"] = time.perf_counter() - started
    started = time.perf_counter()
    swapped = processor.swap([frame], [faces])
    took["swap"] = time.perf_counter() - started
    first = FirstFrame(frame, faces, copy.deepcopy(swapped[0]), took["swap"])
    started = time.perf_counter()
    processor.enhance([frame], swapped)
    took["enhance"] = time.perf_counter() - started
    started = time.perf_counter()
    processor.blend(frame.copy(), swapped[0], inplace=True)
    took["blend"] = time.perf_counter() - started
    return first, took


def plan_render(processor: FaceProcessor, frame: Frame, frames: int = 0, fps: float = 30.0) -> RenderPlan:
    """Load the models, run the first frame through every stage, share the cores and pick the batch.

    ``frames``/``fps``: the clip, for the probe's time box (:func:`choose_batch_size`).
    """
    execution = processor.settings.execution
    models = stage_models(processor)
    n_cores = cores()
    plan = RenderPlan()
    unload_unused(processor)
    if not execution.threads:
        _set_threads(models, dict.fromkeys(models, n_cores), n_cores)  # measure each stage on every core
    plan.load_s = _load(models)
    started = time.perf_counter()
    before = cpu_sample()
    plan.first, took = _first_frame(processor, frame)
    plan.first_s = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    plan.free_cores = round(free_cores(n_cores, before, cpu_sample()), 2)
    plan.cost_ms = {k: round(1000 * v * (n_cores if models.get(k) and not execution.threads else 1), 2)
                    for k, v in took.items()}
    if execution.threads:
        plan.threads = dict.fromkeys(models, execution.threads)
    else:
        io_ms = IO_MS_PER_MEGAPIXEL * frame.shape[0] * frame.shape[1] / 1e6
        plan.threads = share_threads(plan.cost_ms, io_ms, plan.free_cores)
        _set_threads(models, plan.threads, n_cores)
        reload_s = _load(models)
        plan.load_s += reload_s
        started += reload_s
    first = took["detect"] + took["swap"] + took["enhance"]
    plan.batch = choose_batch_size(processor, frame, execution.batch_size, faces=plan.first.faces,
                                   first_s=first, frames=frames, fps=fps)
    plan.probe_s = round(time.perf_counter() - started, 3)
    plan.load_s = round(plan.load_s, 3)
    log.info("render plan: batch %d, threads %s (%.1f cores free), first frame %s ms, load %.1f s, "
             "probe %.1f s beyond the first frame", plan.batch, plan.threads, plan.free_cores, plan.cost_ms,
             plan.load_s, plan.probe_s)
    return plan


def choose_batch_size(processor: FaceProcessor, frame: Frame, requested: int | str, *, faces: list[Face],
                      first_s: float, frames: int = 0, fps: float = 30.0, limit: int = 16) -> int:
    """``requested`` if fixed; else the batch size past which detect+swap+enhance throughput stops
    improving, found by a time-boxed probe on ``frame``.

    ``faces``: the frame's; ``first_s``: what one frame already took (the plan's first run). The probe
    tries 1 (again), 2, 4… while the next try still fits: all of it, first run included, costs at most
    ``PROBE_SHARE`` of the render at batch 1 of ``frames`` (capped at ``PROBE_SECONDS`` of clip). On a
    heavy model on a CPU (seconds per face) that leaves batch 1 untried again or one try of 2; on a GPU,
    1…16.
    """
    if requested != "auto":
        return int(requested)
    per_frame = first_s
    spent = per_frame
    budget_frames = min(frames, PROBE_SECONDS * fps) if frames > 0 else PROBE_SECONDS * fps
    budget = PROBE_SHARE * per_frame * budget_frames
    best_b, best_t = 1, per_frame
    available = psutil.virtual_memory().available
    b = 1
    while b <= limit and spent + b * best_t <= budget:
        t = _probe_run(processor, frame, faces, b) / b
        spent += t * b
        log.debug("batch %d: %.1f frames/s", b, 1 / max(t, 1e-9))
        if b == 1:
            best_t = t
        elif t * 1.05 > best_t:  # less than 5 % better: stop growing
            break
        else:
            best_b, best_t = b, t
        frame_bytes = frame.nbytes * 4 * processor.settings.execution.queue_size
        if frame_bytes * b * 2 > available * 0.25:
            break
        b *= 2
    return best_b


def _probe_run(processor: FaceProcessor, frame: Frame, faces: list[Face], b: int) -> float:
    frames = [frame] * b
    started = time.perf_counter()
    processor.detect(frames)
    processor.enhance(frames, processor.swap(frames, [faces] * b))
    return time.perf_counter() - started


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
        self.settings = settings
        self.frames = frames
        self.target = Path(target)
        self.output = None if output is None else Path(output)
        self.info = info or probe(self.target)
        self.processor = processor or FaceProcessor(self.settings, list(sources))
        self.control = control or RunControl()
        self.open_sink: SinkFactory = sink or self._output_encoder
        self.batch = 1
        self.plan = RenderPlan()
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
        promised = integrity.promise(info, self._total)
        report = DecodeReport()
        frames_in = read_frames(info.path, info=info, start=s.video.start, end=s.video.end, cancel=self._stop,
                                frames=self.frames, report=report)
        first = next(frames_in, None)
        if first is None:
            raise UserError(f"{info.path.name}: no frames to process in the chosen range")
        self.plan = plan_render(self.processor, first, self._total, float(info.fps))
        self.batch = self.plan.batch
        log.info("batch size %d (%s)", self.batch, s.execution.batch_size)
        sink = self.open_sink(first.shape[1], first.shape[0])
        if notice := padded_size_notice(first.shape[1], first.shape[0], info.path.name):
            self.processor.notices.append(notice)
        self._inbox = {name: _Pipe(s.execution.queue_size, self._stop) for name in STAGES[1:]}
        self._started = time.perf_counter()
        threading.Thread(target=self._watch_cancel, name="render-cancel", daemon=True).start()
        threads = [self._thread("decode", self._decode, first, frames_in, promised, report),
                   self._thread("detect", self._detect), self._thread("swap", self._swap),
                   self._thread("enhance", self._enhance), self._thread("blend", self._blend),
                   self._thread("encode", self._encode, sink)]
        path = self._wait(threads, sink, frames_in)
        seconds = time.perf_counter() - self._started + self.plan.first_s  # the first frame was the plan's
        self.control.report(self._progress(final=True))
        return RenderResult(
            output=path, frames=self._done, seconds=round(seconds, 3),
            fps=round(self._done / max(seconds, 1e-9), 2), batch_size=self.batch, encoder=sink.encoder,
            encoder_reason=sink.encoder_reason, stage_s=self._stage_seconds(), models=self.processor.models,
            notices=list(self.processor.notices), faces_swapped=self._faces,
            peak_rss_mb=round(self._peak_rss, 1), threads=dict(self.plan.threads),
            load_s=self.plan.load_s, probe_s=self.plan.probe_s,
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
    def _decode(self, first: Frame, frames_in: Iterator[Frame], promised: integrity.Promise,
                report: DecodeReport) -> None:
        """Hand the frames on; at the end, a damaged target fails the render (or, when the user allowed
        damaged inputs, is a notice)."""
        out = self._inbox["detect"]
        out.put(first)
        for frame in self._timed("decode", frames_in):
            out.put(frame)
        notice = integrity.check(promised, report, self.settings.video.allow_damaged)
        if notice:
            log.info("%s", notice)
            self.processor.notices.append(notice)
        out.put(_END)

    def _detect(self) -> None:
        """Detect and select the faces of B frames at once (on keyframes only: ``detector.interval``, faces
        followed in between); the tracker fills short gaps (it holds frames back for that)."""
        s, fps = self.settings, float(self.info.fps)
        tracker: Tracker[Frame] = Tracker(s.tracker, fps)
        models = self.processor.face_models
        keys = KeyframeDetector(self.processor.detect, self.processor.select,
                                interval_for(s.detector.interval, fps), s.tracker.scene_cut,
                                region_detection(models.detector),
                                None if models.landmarker is None else models.landmarker.refine)
        out = self._inbox["swap"]
        for batch in self._batches("detect"):
            ready: list[tuple[Frame, list[Face]]] = []
            with self._timing("detect"):
                found = keys.faces(batch)
                for frame, faces, cut in zip(batch, found, keys.cuts, strict=True):
                    ready.extend(tracker.push(frame, faces, frame, cut=cut))
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
                swapped = self._swapped(frames, [faces for _, faces in batch])
            for pair in zip(frames, swapped, strict=True):
                out.put(pair)
        out.put(_END)

    def _swapped(self, frames: list[Frame], faces: list[list[Face]]) -> list[list[Swapped]]:
        """``processor.swap``, except for the first frame, which the plan has swapped already."""
        first, self.plan.first = self.plan.first, None  # only the first batch can hold it
        ready = first.take(frames[0], faces[0]) if first else None
        if first is None or ready is None:
            return self.processor.swap(frames, faces)
        self._busy["swap"] += first.seconds
        return [ready, *(self.processor.swap(frames[1:], faces[1:]) if len(frames) > 1 else [])]

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
