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
from pipeline.jobs import segments
from pipeline.jobs.model import Job
from pipeline.progress import Progress, RunControl
from pipeline.settings import Settings

if TYPE_CHECKING:
    from pipeline.process import FaceProcessor
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


def work_dir(job_id: int) -> Path:
    """The per-job folder holding finished segments (under the data folder, next to the queue)."""
    return paths.data_dir() / "work" / f"job-{job_id}"


def check_start(job: Job) -> None:
    """What the worker checks before any executor starts ``job``: its output
    (:func:`pipeline.media.check_output`: it may have become unwritable, or its disk full, since the job was
    queued), so such a job fails before it renders anything."""
    from pipeline.media import check_output

    check_output(Path(job.output), [Path(job.target), *(Path(s) for s in job.sources)])


def execute(job: Job, ctx: JobContext) -> dict[str, Any]:
    """Run ``job`` to completion; returns a summary (``output``, ``kind``, ``frames``, ...)."""
    settings = job.settings
    sources = [Path(s) for s in job.sources]
    target, output = Path(job.target), Path(job.output)
    if is_image_path(target):
        return _image(settings, sources, target, output, ctx)
    return VideoJob(job, ctx).run()


def _image(settings: Settings, sources: list[Path], target: Path, output: Path,
           ctx: JobContext) -> dict[str, Any]:
    from pipeline.still import swap_image

    if ctx.control.cancelled:
        raise Cancelled("job cancelled")
    ctx.control.report(Progress(0, 1, stage={"step": "image"}))
    summary = swap_image(settings, sources, target, output)
    if ctx.control.cancelled:  # cancelled while the swap ran: the user asked for no output
        output.unlink(missing_ok=True)
        raise Cancelled("job cancelled")
    ctx.control.report(Progress(1, 1, eta_s=0.0, stage={"step": "done"}))
    return summary


class VideoJob:
    """A video job as finished segments: keep what an earlier attempt finished, render the rest segment by
    segment (each recorded as soon as it is complete), then join them with the audio into the output."""

    def __init__(self, job: Job, ctx: JobContext) -> None:
        from pipeline.media import check_video_output
        from pipeline.video.probe import probe

        self.job, self.ctx, self.settings = job, ctx, job.settings
        self.target, self.output = Path(job.target), Path(job.output)
        check_video_output(self.output)
        self.started = time.perf_counter()
        self.info: VideoInfo = probe(self.target)
        self.total = self.info.frames_between(self.settings.video.start, self.settings.video.end)
        self.work = work_dir(job.id)
        self.done = segments.usable_segments(job.resume, self.work, self.target, self.settings)
        segments.clear_work(self.work, keep=self.done)  # stale or unrecorded files from an earlier attempt
        segments.remove_temp_outputs(self.output, job.id)
        recorded = job.resume.get("segments", [])
        self.complete = bool(job.resume.get("complete")) and len(self.done) == len(recorded)
        self.next_frame = sum(s.frames for s in self.done)
        self._lock = threading.Lock()

    def run(self) -> dict[str, Any]:
        from pipeline.process import FaceProcessor

        if self.done:
            self.ctx.log(f"resuming at frame {self.next_frame} ({len(self.done)} finished segments kept)")
        processor = FaceProcessor(self.settings, list(self.job.sources))
        rendered, result_info = (0, {}) if self.complete else self._render_rest(processor)
        if self.ctx.control.cancelled:
            raise Cancelled("job cancelled")
        frames = sum(s.frames for s in self.done)
        self.ctx.control.report(Progress(frames, stage={"step": "joining segments"}))
        segments.join_segments(self.done, self.work, self.output, job_id=self.job.id, source=self.info,
                               settings=self.settings, models=processor.models,
                               cancel=self.ctx.control.cancel)
        self.ctx.control.report(Progress(frames, frames, eta_s=0.0, stage={"step": "done"}))
        return {"output": str(self.output), "kind": "video", "frames": frames,
                "frames_rendered_now": rendered, "resumed_at": self.next_frame, "segments": len(self.done),
                "seconds": round(time.perf_counter() - self.started, 3), "models": processor.models,
                "notices": list(processor.notices), **result_info}

    def _render_rest(self, processor: FaceProcessor) -> tuple[int, dict[str, Any]]:
        """Render from ``next_frame`` to the end into segments; (frames rendered, render details)."""
        from pipeline.render import Render, no_face_notice

        render = Render(self.settings, self.job.sources, self.target, sink=self._segment_writer,
                        processor=processor, control=self.ctx.control.relay(self._job_progress),
                        info=self.info, frames=(self.next_frame, None))
        rendered = 0
        result_info: dict[str, Any] = {}
        try:
            result = render.run()
            rendered = result.frames
            result_info = {"encoder": result.encoder, "batch_size": result.batch_size,
                           "stage_s": result.stage_s, "faces_swapped": result.faces_swapped,
                           "peak_rss_mb": result.peak_rss_mb}
            if result.faces_swapped == 0 and self.next_frame == 0:  # the whole clip (a resume saw a part)
                processor.notices.append(no_face_notice(self.target, self.settings))
        except BadMedia:
            # resumed exactly at the end (the last segment was recorded, "complete" was not): nothing left
            if not self.done or self.next_frame < self.total - 2:
                raise
            log.info("job %d: no frames after %d, the segments are complete", self.job.id, self.next_frame)
        with self._lock:
            self._record({"complete": True})
        return rendered, result_info

    def _job_progress(self, p: Progress) -> Progress:
        """The render's progress (counted from ``next_frame``) as the whole job's."""
        return replace(p, frames_done=self.next_frame + p.frames_done,
                       frames_total=max(self.total, self.next_frame + (p.frames_total or 0)),
                       stage={**p.stage, "segments": len(self.done)})

    def _segment_writer(self, width: int, height: int) -> segments.SegmentWriter:
        return segments.SegmentWriter(self.work, first_frame=self.next_frame,
                                      pace=self.ctx.pace, source=self.info,
                                      settings=self.settings, size=(width, height),
                                      on_segment=self._on_segment, cancel=self.ctx.control.cancel)

    def _on_segment(self, segment: segments.Segment) -> None:
        with self._lock:
            self.done.append(segment)
            self._record()

    def _record(self, extra: dict[str, Any] | None = None) -> None:
        data = segments.resume_record(self.work, self.target, self.settings, self.done)
        self.ctx.save_resume({**data, **(extra or {})})


def discard(job_id: int, output: Path | str) -> None:
    """Remove everything a job left behind: its work folder and a half-joined output."""
    segments.clear_work(work_dir(job_id))
    segments.remove_temp_outputs(Path(output), job_id)
