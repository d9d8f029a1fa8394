"""What executes one claimed job: an image swap, or a segmented (resumable) video render.

The runner knows nothing about threads or heartbeats: the worker hands it a :class:`JobContext`
(cancel event, progress and resume callbacks) and gets back a summary dict or an exception
(:class:`~pipeline.errors.Cancelled` when the cancel event stopped it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import paths
from pipeline.errors import BadMedia, Cancelled
from pipeline.image import is_image_path
from pipeline.jobs import segments
from pipeline.jobs.model import Job
from pipeline.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_SECONDS = 3.0


def segment_seconds() -> float:
    """Segment length: ``FACESTATION_SEGMENT_SECONDS`` or 3 s (a crash loses at most this much work)."""
    value = os.environ.get("FACESTATION_SEGMENT_SECONDS")
    try:
        return max(0.05, float(value)) if value else DEFAULT_SEGMENT_SECONDS
    except ValueError:
        log.warning("ignoring FACESTATION_SEGMENT_SECONDS=%r (not a number)", value)
        return DEFAULT_SEGMENT_SECONDS


@dataclass
class JobContext:
    """What a running job may do besides rendering. The callbacks raise ``ClaimLost`` if the job was taken away."""

    cancel: threading.Event
    progress: Callable[[int, int | None, float | None, float | None, dict[str, Any]], None]
    save_resume: Callable[[dict[str, Any]], None]
    log: Callable[[str], None]
    segment_seconds: float = DEFAULT_SEGMENT_SECONDS


def work_dir(job_id: int) -> Path:
    """The per-job folder holding finished segments (under the data folder, next to the queue)."""
    return paths.data_dir() / "work" / f"job-{job_id}"


def execute(job: Job, ctx: JobContext) -> dict[str, Any]:
    """Run ``job`` to completion; returns a summary (``output``, ``kind``, ``frames``, ...)."""
    settings = job.settings
    sources = [Path(s) for s in job.sources]
    target, output = Path(job.target), Path(job.output)
    if is_image_path(target):
        return _image(settings, sources, target, output, ctx)
    return _video(job, settings, sources, target, output, ctx)


def _image(settings: Settings, sources: list[Path], target: Path, output: Path, ctx: JobContext) -> dict[str, Any]:
    from pipeline.process import swap_image

    if ctx.cancel.is_set():
        raise Cancelled("job cancelled")
    ctx.progress(0, 1, None, None, {"step": "image"})
    summary = swap_image(settings, sources, target, output)
    if ctx.cancel.is_set():  # cancelled while the swap ran: the user asked for no output
        output.unlink(missing_ok=True)
        raise Cancelled("job cancelled")
    ctx.progress(1, 1, None, 0.0, {"step": "done"})
    return summary


def _video(job: Job, settings: Settings, sources: list[Path], target: Path, output: Path,
           ctx: JobContext) -> dict[str, Any]:
    from pipeline.media import check_video_output
    from pipeline.process import FaceProcessor
    from pipeline.render import Progress, Render
    from pipeline.video.probe import probe

    check_video_output(output)
    started = time.perf_counter()
    info = probe(target)
    total = info.frames_between(settings.video.start, settings.video.end)
    seg_frames = segments.segment_frames_for(info.fps, ctx.segment_seconds)
    work = work_dir(job.id)
    done = segments.usable_segments(job.resume, work, seg_frames, target, settings)
    segments.clear_work(work, keep=done)  # stale or unrecorded files from an earlier attempt
    segments.remove_temp_outputs(output, job.id)
    complete = bool(job.resume.get("complete")) and len(done) == len(job.resume.get("segments", []))
    next_frame = sum(s.frames for s in done)
    if done:
        ctx.log(f"resuming at frame {next_frame} ({len(done)} finished segments kept)")
    lock = threading.Lock()

    def record(extra: dict[str, Any] | None = None) -> None:
        data = segments.resume_record(work, seg_frames, target, settings, done)
        ctx.save_resume({**data, **(extra or {})})

    def on_segment(segment: segments.Segment) -> None:
        with lock:
            done.append(segment)
            record()

    processor = FaceProcessor(settings, list(sources))
    rendered = 0
    result_info: dict[str, Any] = {}
    if not complete:
        def on_progress(p: Progress) -> None:
            ctx.progress(next_frame + p.frames_done, max(total, next_frame + p.frames_total), p.fps, p.eta_s,
                         {"stage_s": p.stage_s, "batch_size": p.batch_size, "rss_mb": p.rss_mb,
                          "device_mb": p.device_mb, "segments": len(done)})

        def sink(width: int, height: int) -> segments.SegmentWriter:
            return segments.SegmentWriter(work, first_frame=next_frame, segment_frames=seg_frames, width=width,
                                          height=height, fps=info.fps, source=info, settings=settings,
                                          on_segment=on_segment, cancel=ctx.cancel)

        render = Render(settings, sources, target, work / "unused", processor=processor, cancel=ctx.cancel,
                        progress=on_progress, info=info, frames=(next_frame, None), sink=sink)
        try:
            result = render.run()
            rendered = result.frames
            result_info = {"encoder": result.encoder, "batch_size": result.batch_size, "stage_s": result.stage_s,
                           "faces_swapped": result.faces_swapped, "peak_rss_mb": result.peak_rss_mb}
        except BadMedia:
            # resumed exactly at the end (the last segment was recorded, "complete" was not): nothing left
            if not done or next_frame < total - 2:
                raise
            log.info("job %d: no frames after %d, the segments are complete", job.id, next_frame)
        with lock:
            record({"complete": True})
    if ctx.cancel.is_set():
        raise Cancelled("job cancelled")
    ctx.progress(sum(s.frames for s in done), None, None, None, {"step": "joining segments"})
    segments.join_segments(done, work, output, job_id=job.id, source=info, settings=settings,
                           models=processor.models, cancel=ctx.cancel)
    frames = sum(s.frames for s in done)
    ctx.progress(frames, frames, None, 0.0, {"step": "done"})
    seconds = time.perf_counter() - started
    return {"output": str(output), "kind": "video", "frames": frames, "frames_rendered_now": rendered,
            "resumed_at": next_frame, "segments": len(done), "seconds": round(seconds, 3),
            "models": processor.models, "notices": list(processor.notices), **result_info}


def discard(job_id: int, output: Path | str) -> None:
    """Remove everything a job left behind: its work folder and a half-joined output."""
    segments.clear_work(work_dir(job_id))
    segments.remove_temp_outputs(Path(output), job_id)
