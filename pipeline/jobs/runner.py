"""What executes one claimed job: an image swap, or a segmented (resumable) video render.

The runner knows nothing about threads or heartbeats: the worker hands it a :class:`JobContext`
(a :class:`~pipeline.progress.RunControl` for cancel and progress, the resume and log callbacks) and
gets back a summary dict or an exception (:class:`~pipeline.errors.Cancelled` when the run was stopped).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline import env, paths
from pipeline.errors import BadMedia, Cancelled
from pipeline.image import is_image_path
from pipeline.jobs import markers, segments
from pipeline.jobs.hold import SegmentHold
from pipeline.jobs.model import Job
from pipeline.jobs.resume import ResumeRecord
from pipeline.progress import Progress, RunControl
from pipeline.settings import Settings
from pipeline.video import streams
from pipeline.video.trim import Trim

if TYPE_CHECKING:
    from pipeline.quality import QualityReport
    from pipeline.video.probe import VideoInfo

log = logging.getLogger(__name__)

CHECKPOINT_VAR = env.QUEUE_CHECKPOINT_SECONDS.name


def checkpoint_seconds() -> float:
    """Wall time between two checkpoints (finished segments) of a video job:
    ``$FACESTATION_QUEUE_CHECKPOINT_SECONDS`` or 3 s. A crash loses at most this much work, whatever the
    machine's speed."""
    return max(0.05, env.QUEUE_CHECKPOINT_SECONDS.get())


@dataclass
class JobContext:
    """What a running job may do besides rendering. Its callbacks raise ``ClaimLost`` if the job was taken
    away."""

    control: RunControl  # cancel, its reason, and where progress goes
    save_resume: Callable[[dict[str, Any]], None]
    log: Callable[[str], None]
    pace: segments.Pace = segments.Pace()
    hold: SegmentHold | None = None  # a test's grip after each recorded segment (jobs.hold)
    # raises when the job's output now clashes with another job's files: called just before the rename
    guard: Callable[[], None] | None = None


def work_dir(job_id: int) -> Path:
    """The per-job folder holding finished segments (under the data folder, next to the queue)."""
    return paths.data_dir() / "work" / f"job-{job_id}"


def check_start(job: Job) -> None:
    """What the worker checks before any executor starts ``job``: its inputs are still there (a voice, a
    source deleted since it was queued: the user's error, said in one line, not retried) and its output
    (:func:`pipeline.media.check_output`: it may have become unwritable, or its disk full, since the job was
    queued), so such a job fails before it renders anything."""
    from pipeline.errors import missing, not_a_file
    from pipeline.media import check_output

    inputs = [("target", job.target), *(("source image", s) for s in job.sources)]
    for role, path in inputs + ([("audio file", job.audio)] if job.audio else []):
        special = not_a_file(path, f"the job's {role}")
        if special is not None:
            raise special
        if not Path(path).is_file():
            raise missing(path, role)
    check_output(Path(job.output), [Path(job.target), *(Path(s) for s in job.sources)])


def execute(job: Job, ctx: JobContext) -> dict[str, Any]:
    """Run ``job`` to completion; returns a summary (``output``, ``kind``, ``frames``, ...)."""
    settings = job.settings
    sources = [Path(s) for s in job.sources]
    target, output = Path(job.target), Path(job.output)
    if is_image_path(target) or is_image_path(output):  # a still, or an animated GIF's first frame
        return _image(settings, sources, target, output, ctx)
    return VideoJob(job, ctx).run()


def _image(settings: Settings, sources: list[Path], target: Path, output: Path,
           ctx: JobContext) -> dict[str, Any]:
    from pipeline.still import swap_image

    if ctx.control.cancelled:
        raise Cancelled("job cancelled")
    ctx.control.report(Progress(0, 1, stage={"step": "image"}))
    summary = swap_image(settings, sources, target, output, guard=ctx.guard)
    if ctx.control.cancelled:  # cancelled while the swap ran: the user asked for no output
        output.unlink(missing_ok=True)
        raise Cancelled("job cancelled")
    ctx.control.report(Progress(1, 1, eta_s=0.0, stage={"step": "done"}))
    return summary


class SegmentedJob:
    """A video job as finished segments: keep what an earlier run finished (the keep rules of
    :mod:`pipeline.jobs.resume`), render the rest (:meth:`render_rest`: what a subclass says), record each
    segment as soon as it is complete (:meth:`add_segment`), then join them with the audio into the output.

    ``fixed_segment_frames``: a subclass that renders planned segments of one length (the farm) says it;
    None (a local run) ends segments by its :class:`~pipeline.jobs.segments.Pace`.
    """

    def __init__(self, job: Job, ctx: JobContext, settings: Settings | None = None) -> None:
        from pipeline.alpha import transparent
        from pipeline.media import check_video_output
        from pipeline.video.probe import probe

        self.job, self.ctx, self.settings = job, ctx, settings or job.settings
        self.target, self.output = Path(job.target), Path(job.output)
        self.voice = None if job.audio is None else Path(job.audio)  # the output's new sound, if any
        check_video_output(self.output, transparent(self.settings))
        self.started = time.perf_counter()
        self.info: VideoInfo = probe(self.target)
        self.total = len(Trim.of(self.settings).frames(self.info.frame_count, self.info.fps))
        self.work = work_dir(job.id)
        fresh = ResumeRecord.for_run(self.work, self.target, self.settings, self.fixed_segment_frames())
        self.record = self.keep(fresh.kept(job.resume))
        segments.clear_work(self.work, keep=list(self.record.segments))  # stale or unrecorded files
        segments.remove_temp_outputs(self.output, job.id)
        self.resumed_at = self.record.frames
        self.rendered = 0  # frames rendered by this run
        self.models: list[str] = list(self.record.models)
        self.notices: list[str] = []
        self.notice(self.record.notices)
        self.quality: QualityReport | None = None  # the report of the frames this run rendered
        self._lock = threading.Lock()

    def fixed_segment_frames(self) -> int | None:
        return None

    def keep(self, record: ResumeRecord) -> ResumeRecord:
        """What this run keeps of the segments the keep rules kept (all of them, unless a subclass says)."""
        return record

    def render_rest(self) -> dict[str, Any]:
        """Render what the record lacks, calling :meth:`add_segment` for each segment; details for the
        summary."""
        raise NotImplementedError

    def run(self) -> dict[str, Any]:
        if self.record.segments:
            self.ctx.log(self.resuming())
        details = self.render_rest()
        if self.ctx.control.cancelled:
            raise Cancelled("job cancelled")
        frames = self.record.frames
        self.notice(filter(None, [streams.dropped_notice(self.info, self.output)]))
        self.ctx.control.report(Progress(frames, frames, stage={"step": "joining segments"}))
        segments.join_segments(list(self.record.segments), self.work, self.output, job_id=self.job.id,
                               source=self.info, settings=self.settings, models=self.models,
                               cancel=self.ctx.control.cancel, guard=self.ctx.guard, voice=self.voice)
        self.ctx.control.report(Progress(frames, frames, eta_s=0.0, stage={"step": "done"}))
        from pipeline.quality import write_report
        from pipeline.quality.record import quality_summary

        quality = None
        if self.quality is not None:  # beside the output, and in the job's result
            quality = quality_summary(self.quality, write_report(self.quality, self.output))
        return {"output": str(self.output), "kind": "video", "frames": frames, "quality": quality,
                "frames_rendered_now": self.rendered, "resumed_at": self.resumed_at,
                "segments": len(self.record.segments),
                "seconds": round(time.perf_counter() - self.started, 3), "models": self.models,
                "notices": list(self.notices), **details}

    def resuming(self) -> str:
        return f"resuming at frame {self.resumed_at} ({len(self.record.segments)} finished segments kept)"

    def add_segment(self, segment: segments.Segment, **changes: Any) -> None:
        """Record a finished segment (and other fields of the record) at once; then the job's hold, if
        any, may keep it here."""
        with self._lock:
            self.record = self.record.with_segments([*self.record.segments, segment], **changes)
            self.ctx.save_resume(self.record.to_json())
            count = len(self.record.segments)
        if self.ctx.hold is not None:
            self.ctx.hold.segment_recorded(count, self.ctx.control.cancel)

    def mark_complete(self) -> None:
        """Every frame is in a recorded segment: a run after this one only joins."""
        with self._lock:
            self.record = self.record.with_segments(self.record.segments, complete=True)
            self.ctx.save_resume(self.record.to_json())

    def notice(self, notices: Any) -> None:
        """Add the notices not said yet (each segment's processor repeats its own)."""
        self.notices += [n for n in dict.fromkeys(map(str, notices)) if n not in self.notices]


class VideoJob(SegmentedJob):
    """A video job rendered here: from the end of the kept segments to the end of the clip, in segments
    ended by the worker's :class:`~pipeline.jobs.segments.Pace`."""

    def render_rest(self) -> dict[str, Any]:
        """Render from the end of the kept segments to the end; the render's details."""
        if self.settings.markers:  # settings that change at frames: a render a stretch (jobs/markers.py)
            return markers.render_rest(self)
        from pipeline.process import FaceProcessor
        from pipeline.render import Render, no_face_notice

        processor = FaceProcessor(self.settings, list(self.job.sources))
        self.models = processor.models
        details: dict[str, Any] = {}
        if not self.record.complete:
            render = Render(self.settings, self.job.sources, self.target, sink=self._segment_writer,
                            processor=processor, control=self.ctx.control.relay(self._job_progress),
                            info=self.info, frames=(self.resumed_at, None), audio=self.voice)
            try:
                result = render.run()
                self.rendered = result.frames
                self.quality = result.quality
                details = {"encoder": result.encoder, "batch_size": result.batch_size,
                           "stage_s": result.stage_s, "faces_swapped": result.faces_swapped,
                           "faces_left_alone": result.faces_left_alone,
                           "peak_rss_mb": result.peak_rss_mb}
                notice = no_face_notice(self.target, self.settings) if result.faces_swapped == 0 else None
                if notice is not None and self.resumed_at == 0:  # the whole clip (a resume saw a part)
                    processor.notices.append(notice)
            except BadMedia:
                # resumed exactly at the end (the last segment was recorded, "complete" was not): nothing left
                if not self.record.segments or self.resumed_at < self.total - 2:
                    raise
                log.info("job %d: no frames after %d, the segments are complete", self.job.id,
                         self.resumed_at)
            self.mark_complete()
        self.notice(processor.notices)
        return details

    def _job_progress(self, p: Progress) -> Progress:
        """The render's progress (counted from where it resumed) as the whole job's."""
        return replace(p, frames_done=self.resumed_at + p.frames_done,
                       frames_total=max(self.total, self.resumed_at + (p.frames_total or 0)),
                       stage={**p.stage, "segments": len(self.record.segments)})

    def _segment_writer(self, width: int, height: int) -> segments.SegmentWriter:
        return segments.SegmentWriter(self.work, first_frame=self.resumed_at,
                                      pace=self.ctx.pace, source=self.info,
                                      settings=self.settings, size=(width, height),
                                      on_segment=self.add_segment, cancel=self.ctx.control.cancel,
                                      container=self.output.suffix)


def discard(job_id: int, output: Path | str) -> None:
    """Remove everything a job left behind: its work folder and a half-joined output."""
    segments.clear_work(work_dir(job_id))
    segments.remove_temp_outputs(Path(output), job_id)


def finished(job_id: int, output: Path | str) -> None:
    """A done job: its half-joined temp files go; its segments stay, to re-render a stretch from
    (:mod:`pipeline.jobs.rerender`), until the job is deleted."""
    segments.remove_temp_outputs(Path(output), job_id)
