"""The video render: decode -> detect (+ track) -> the face processors -> blend -> encode as concurrent
stages.

:class:`Render` is the threaded driver of the chain (pipeline/chain.py): one thread per stage
(pipeline/stages.py has the plumbing), each taking items in order from a bounded queue and handing results
on in order, so decode, inference, paste-back and encoding overlap while memory stays bounded whatever the
clip length (at most ``execution.queue_size`` items wait in front of each stage, plus the tracker's
look-ahead). Batches are formed across frames: the detector sees B frames at once, each face processor
every crop of those B frames. Before the first frame :func:`pipeline.renderplan.plan_render` loads the
models, runs that frame through every stage, places the heavy stages on the cores (side by side, or taking
turns: :meth:`pipeline.stages.Stages.turn`) and picks the batch; that first frame is the render's own (its
first face processor does not run on it again). The frames go to a frame sink: an
encoder on the output file (:func:`pipeline.video.encode.encoder_for`), or the segments of a resumable
job."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from pipeline.alpha import transparent, with_alpha
from pipeline.chain import Chain, Finder, Stage, Work
from pipeline.chain import no_face_notice as chain_no_face_notice
from pipeline.errors import Cancelled, UserError
from pipeline.process import FaceProcessor
from pipeline.processors import Media
from pipeline.progress import Progress, RateMeter, RunControl
from pipeline.quality import QualityReport, write_report
from pipeline.quality.record import quality_summary, recorder_for
from pipeline.renderplan import RenderPlan, plan_render
from pipeline.settings import Settings
from pipeline.stages import END, Stages
from pipeline.types import Frame
from pipeline.video import integrity, streams
from pipeline.video.decode import DecodeReport, read_frames
from pipeline.video.encode import FrameSink, encoder_for, padded_size_notice
from pipeline.video.probe import VideoInfo, probe
from pipeline.video.trim import Trim

log = logging.getLogger(__name__)

STAGES = ("decode", "detect", "swap", "enhance", "blend", "quality", "encode")  # with the default order
REPORT_AT_LEAST_EVERY_S = 1.0  # a run whose frames stall (a segment closing) still reports this often

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
    faces_left_alone: int = 0  # faces the selector's filters turned away (on the frames fully detected)
    peak_rss_mb: float = 0.0
    threads: dict[str, int] = field(default_factory=dict)  # intra-op threads per model stage
    load_s: float = 0.0  # loading the models (before the first frame)
    probe_s: float = 0.0  # batch probe beyond the first frame (that one counts in ``seconds``)
    measure_s: float = 0.0  # measuring the heavy stages at fewer threads (the plan, before the first frame)
    plan: dict[str, Any] = field(default_factory=dict)  # where the stages ran (RenderPlan.summary)
    turn_wait_s: dict[str, float] = field(default_factory=dict)  # stages taking turns: seconds waited
    cpu_s: float = 0.0  # CPU seconds of this process (every thread; not ffmpeg's) from the first frame on
    quality: QualityReport | None = None  # the quality report of the frames rendered
    quality_path: Path | None = None  # where it was written (beside the output; a job writes its own)

    def summary(self) -> dict[str, Any]:
        d = asdict(replace(self, quality=None))  # the report's frames are not the summary's
        d["output"] = str(self.output)
        d["kind"] = "video"
        d["quality"] = quality_summary(self.quality, self.quality_path)
        return d


def fallback_notice(requested: str, used: str, reason: str) -> str | None:
    """Said when the encoder asked for by name (not ``auto``) is not the one that encodes, and why."""
    if requested in ("auto", used) or not used:
        return None
    return f"output.encoder={requested} is not used: {reason}"


def no_face_notice(target: Path, settings: Settings) -> str | None:
    """Said of a whole render in which no face was replaced (:func:`pipeline.chain.no_face_notice`: an
    unchanged copy, or changed only by its frame processors; None: no face was asked for)."""
    return chain_no_face_notice(target.name, settings.processors.order, settings.selector.mode)


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
                 info: VideoInfo | None = None, frames: tuple[int, int | None] | None = None,
                 audio: Path | None = None, finder: Finder | None = None,
                 plan: RenderPlan | None = None) -> None:
        """Frames go to ``output`` (a video file) or to ``sink(width, height)`` (a resumable job's segments),
        never both. ``frames=(a, b)``: render only frames a..b-1 of the (trimmed) clip, picked by index
        (b None: to the end); progress counts from a. ``control``: cancel, and where progress goes. ``audio``:
        a new voice for the output (the processors hear it: a lip syncer follows it). ``finder``: the faces
        found and tracked so far by the render of the frames just before ``frames`` (a marker's stretch goes
        on finding faces where the stretch before it stopped: pipeline/markers.py); ``self.finder`` is this
        render's afterwards. ``plan``: the plan of an earlier render of the same models on frames of this
        size, taken instead of planning again (:func:`pipeline.renderplan.plan_render`'s ``known``)."""
        if (output is None) == (sink is None):
            raise ValueError("a render writes to an output file or to a sink: give exactly one")
        self.settings = settings
        self.frames = frames
        self.audio = audio
        self.finder = finder
        self.target = Path(target)
        self.output = None if output is None else Path(output)
        self.info = info or probe(self.target)
        self.processor = processor or FaceProcessor(self.settings, list(sources))
        self.chain = Chain(self.processor, inplace=True)
        self.control = control or RunControl()
        self.open_sink: SinkFactory = sink or self._output_encoder
        self.batch = 1
        self.plan = RenderPlan()
        self._known = plan
        names = ["decode", "detect", *(s.name for s in self.chain.stages), "quality", "encode"]
        self.stages = Stages(names, settings.execution.queue_size)
        self._total = self._done = self._faces = 0
        self._started = self._peak_rss = 0.0
        self._rate = RateMeter()  # the ETA's rate, from the first frame encoded
        self._reporting = threading.Lock()  # the watcher's report never lands after the final one
        self.recorder = recorder_for(self.processor, float(self.info.fps))
        self._look_s = 0.0  # the report's part of the detect thread (the faces before the swap)

    def _output_encoder(self, width: int, height: int) -> FrameSink:
        assert self.output is not None
        return encoder_for(self.output, self.info, self.settings, size=(width, height), voice=self.audio,
                           models=self.processor.models, cancel=self.stages.stop)

    def run(self) -> RenderResult:
        self._total = self._frame_count()
        s, info, trim = self.settings, self.info, Trim.of(self.settings)
        begins = trim.times(info.frame_count, info.fps)[0] or 0.0  # the first kept frame's time
        promised = integrity.promise(info, self._total, begins)
        report = DecodeReport()
        frames_in = read_frames(info.path, info=info, trim=trim, cancel=self.stages.stop, frames=self.frames,
                                report=report, hold_gaps=s.video.allow_damaged)
        first = next(frames_in, None)
        if first is None:
            raise UserError(f"{info.path.name}: no frames to process in the chosen range")
        start = self.frames[0] if self.frames else 0
        self.processor.prepare(Media(info.path, float(info.fps), begins, self.audio))
        self.plan = plan_render(self.processor, first, self._total, float(info.fps), chain=self.chain,
                                start=start, known=self._known)
        self.batch = self.plan.batch
        self.stages.take_turns(self.plan.groups)
        log.info("batch size %d (%s)", self.batch, s.execution.batch_size)
        sink = self.open_sink(*self.plan.out_size)
        if notice := padded_size_notice(*self.plan.out_size, info.path.name):
            self.processor.notices.append(notice)
        if self.output is not None and (notice := streams.dropped_notice(info, self.output)):
            self.processor.notices.append(notice)  # a job's segments are video only: its join says it
        self._started, cpu = time.perf_counter(), time.process_time()
        stages = self.stages
        threading.Thread(target=self._watch_cancel, name="render-cancel", daemon=True).start()
        stages.start("decode", self._decode, first, frames_in, promised, report)
        stages.start("detect", self._detect)
        kept = self.chain.first_face_run
        for stage in self.chain.stages:
            stages.start(stage.name, self._step, stage, stage.name in kept)
        stages.start("quality", self._quality)
        stages.start("encode", self._encode, sink)
        path = self._wait(sink, frames_in)
        # what the container's rule left of the asked encoder (its changes were said before the run)
        if notice := fallback_notice(sink.asked, sink.encoder, sink.encoder_reason):
            self.processor.notices.append(notice)
        seconds = time.perf_counter() - self._started + self.plan.first_s  # the first frame was the plan's
        cpu = time.process_time() - cpu + self.plan.first_cpu_s
        with self._reporting:
            self.control.report(self._progress(final=True))
        quality = self.recorder.report(path.name if self.output is not None else self.target.name)
        return RenderResult(
            output=path, frames=self._done, seconds=round(seconds, 3),
            fps=round(self._done / max(seconds, 1e-9), 4), batch_size=self.batch, encoder=sink.encoder,
            encoder_reason=sink.encoder_reason, stage_s=self._stage_seconds(), models=self.processor.models,
            notices=list(self.processor.notices), faces_swapped=self._faces,
            faces_left_alone=self.processor.face_models.turned_away,
            peak_rss_mb=round(self._peak_rss, 1), threads=dict(self.plan.threads),
            load_s=self.plan.load_s, probe_s=self.plan.probe_s, measure_s=self.plan.measure_s,
            plan=self.plan.summary(),
            turn_wait_s={k: round(v, 3) for k, v in self.stages.waited.items() if v}, cpu_s=round(cpu, 3),
            quality=quality, quality_path=None if self.output is None else write_report(quality, path),
        )

    def _frame_count(self) -> int:
        info = self.info
        total = len(Trim.of(self.settings).keep(info.frame_count, info.fps, info.path.name))
        if self.frames is not None:
            first_i, stop_i = self.frames
            total = max(0, min(total, stop_i if stop_i is not None else total) - first_i)
        return total

    # --- stages: one thread each, in order ------------------------------------------------------------
    def _decode(self, first: Frame, frames_in: Iterator[Frame], promised: integrity.Promise,
                report: DecodeReport) -> None:
        """Hand the frames on; at the end, a damaged target fails the render (or, when the user allowed
        damaged inputs, is a notice)."""
        out = self.stages.after("decode")
        out.put(first)
        for frame in self.stages.timed("decode", frames_in):
            out.put(frame)
        video = self.settings.video
        notice = integrity.check(promised, report, video.allow_damaged,
                                 audio=video.keep_audio and self.info.has_audio)
        if notice:
            log.info("%s", notice)
            self.processor.notices.append(notice)
        out.put(END)

    def _detect(self) -> None:
        """Detect and select the faces of B frames at once (on keyframes only: ``detector.interval``, faces
        followed in between); the tracker fills short gaps (it holds frames back for that)."""
        finder = self.finder or self.chain.finder(float(self.info.fps), self.frames[0] if self.frames else 0)
        self.finder = finder
        out = self.stages.after("detect")
        for batch in self.stages.inbox["detect"].batches(self.batch):
            with self.stages.turn("detect"), self.stages.timing("detect"):
                ready = finder.push(batch)
            started = time.perf_counter()
            self.recorder.look(ready)
            self._look_s += time.perf_counter() - started
            for work in ready:
                out.put(work)
        rest = finder.flush()
        self.recorder.look(rest)
        for work in rest:
            out.put(work)
        keys = finder.keys
        if keys is not None:
            log.info("detection on %d of %d frames (interval %d)", keys.keyframes,
                     keys.keyframes + keys.followed, keys.interval)
        out.put(END)

    def _step(self, stage: Stage, first: bool) -> None:
        """One stage after detection on batches of frames (one frame a run where it does not batch); each
        face processor of the first run (``first``) takes the plan's run of the first frame instead of
        running on it again."""
        out = self.stages.after(stage.name)
        for n, batch in enumerate(self.stages.inbox[stage.name].batches(self.batch if stage.batches else 1)):
            with self.stages.turn(stage.name), self.stages.timing(stage.name):
                todo = self._take_first(stage.name, batch) if first and n == 0 else batch
                if todo:
                    stage.run(todo)
            if stage.name == "blend":  # the first blend: the faces of the first run of face processors
                self._faces += sum(len(w.items) for w in batch)
            for work in batch:
                out.put(work)
        out.put(END)

    def _quality(self) -> None:
        """Record the finished frames' quality (pipeline/quality/), a batch at a time (one judge run)."""
        out = self.stages.after("quality")
        for batch in self.stages.inbox["quality"].batches(self.batch):
            with self.stages.timing("quality"):
                self.recorder.add(batch)
            for work in batch:
                out.put(work)
        out.put(END)

    def _take_first(self, stage: str, batch: list[Work]) -> list[Work]:
        """``batch`` (the stage's first) less its first frame where the plan has already run ``stage`` on
        it: that frame takes the plan's result. Once a stage cannot take it (the tracker moved the faces),
        none after it does either: they work on what it made."""
        first = self.plan.first
        ready = first.take(stage, batch[0].frame, batch[0].faces) if first else None
        if ready is None:
            self.plan.first = None
            return batch
        batch[0].items, seconds = ready
        self.stages.busy[stage] += seconds
        return batch[1:]

    def _encode(self, sink: FrameSink) -> None:
        """Each frame to the sink: BGR, or BGRA where the output is transparent (pipeline/alpha.py)."""
        alpha = transparent(self.settings)
        for work in self.stages.inbox["encode"]:
            assert work.out is not None
            with self.stages.timing("encode"):
                sink.write(with_alpha(work.out, work.alpha) if alpha else work.out)
            self._done += 1
            self._rate.add(self._done)
            if self.control.due():
                self.control.report(self._progress())

    # --- running the stages ---------------------------------------------------------------------------
    def _wait(self, sink: FrameSink, frames_in: Iterator[Frame]) -> Path:
        """Wait for every stage and close the sink; on failure or cancel, stop them all, drop the output."""
        stages = self.stages
        try:
            stages.join(self._sample_rss)
            if self.control.cancelled:
                raise Cancelled("render cancelled")
            if stages.errors:
                raise stages.errors[0]
            return sink.close()
        except BaseException:
            stages.halt()
            sink.abort()
            try:
                frames_in.close()  # type: ignore[attr-defined]
            except ValueError:  # still running in a stage that did not stop in time
                log.warning("decoder did not stop within 5 s")
            if self.control.cancelled:
                raise Cancelled("render cancelled") from None
            raise
        finally:
            stages.stop.set()

    def _watch_cancel(self) -> None:
        """Stop the stages on cancel; while frames stall (a segment closing, a slow batch) report anyway, so
        that progress is said at least every second."""
        while not self.stages.stop.is_set():
            if self.control.cancel.wait(0.1):
                self.stages.stop.set()
                return
            with self._reporting:
                if not self.stages.stop.is_set() and self.control.quiet(REPORT_AT_LEAST_EVERY_S):
                    self.control.report(self._progress())

    # --- progress -------------------------------------------------------------------------------------
    def _sample_rss(self) -> None:
        self._peak_rss = max(self._peak_rss, psutil.Process().memory_info().rss / 1e6)

    def _stage_seconds(self) -> dict[str, float]:
        seconds = {**dict.fromkeys(STAGES, 0.0), **self.stages.seconds()}
        seconds["quality"] = round(seconds["quality"] + self._look_s, 3)  # its look in the detect thread
        return seconds

    def _progress(self, final: bool = False) -> Progress:
        elapsed = time.perf_counter() - self._started
        remaining = max(0, self._total - self._done)
        self._sample_rss()
        if final:
            fps: float | None = self._done / elapsed if elapsed > 0 else None
            eta: float | None = 0.0
        else:  # the measured rate of late, none until a few frames are measured (no wild first ETA)
            fps, eta = self._rate.rate(), self._rate.eta(remaining)
        return Progress(self._done, max(self._total, self._done), None if fps is None else round(fps, 2),
                        None if eta is None else round(eta, 1), {
            "elapsed_s": round(elapsed, 2), "stage_s": self._stage_seconds(), "batch_size": self.batch,
            "rss_mb": round(self._peak_rss, 1), "device_mb": _device_mb()})


def render(settings: Settings, sources: Sequence[Path | str], target: Path | str, output: Path | str,
           **kwargs: Any) -> RenderResult:
    return Render(settings, sources, target, output, **kwargs).run()
