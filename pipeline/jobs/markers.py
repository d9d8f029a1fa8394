"""A video job with markers (``Settings.markers``): its stretches rendered one after the other, each into
its own segments (:func:`pipeline.markers.render`), so that no segment spans a marker and a resumed job
starts again at the end of its recorded segments, in whichever stretch that is.
:class:`~pipeline.jobs.runner.VideoJob` hands its rest here when its settings have markers."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.jobs import segments

if TYPE_CHECKING:
    from pipeline.jobs.model import Job
    from pipeline.jobs.resume import ResumeRecord
    from pipeline.progress import Progress, RunControl
    from pipeline.quality import QualityReport
    from pipeline.render import RenderResult
    from pipeline.settings import Settings
    from pipeline.video.probe import VideoInfo

log = logging.getLogger(__name__)


class MarkedRun(Protocol):
    """What of a running :class:`~pipeline.jobs.runner.SegmentedJob` the stretches use."""

    job: Job
    ctx: Any  # runner.JobContext
    settings: Settings
    info: VideoInfo
    target: Path
    output: Path
    voice: Path | None
    work: Path
    record: ResumeRecord
    resumed_at: int
    total: int
    rendered: int
    models: list[str]
    quality: QualityReport | None

    def add_segment(self, segment: segments.Segment, **changes: Any) -> None: ...

    def mark_complete(self) -> None: ...

    def notice(self, notices: Iterable[str]) -> None: ...


def render_rest(run: MarkedRun) -> dict[str, Any]:
    """Render the stretches from the end of the kept segments on; the render's details for the summary."""
    from pipeline import markers
    from pipeline.render import no_face_notice

    details: dict[str, Any] = {}
    if run.record.complete:
        return details
    parts = markers.stretches(run.settings, run.info.frame_count, run.info.fps, run.target.name)
    results = markers.render(parts, list(run.job.sources), run.target, info=run.info,
                             sink_for=lambda first: _writer_at(run, first),
                             control_for=lambda first: _control_at(run, first), audio=run.voice,
                             start=run.resumed_at)
    if results:
        joined = markers.joined_result(results, run.output)
        run.rendered, run.quality = joined.frames, joined.quality
        run.models = list(dict.fromkeys([*run.models, *joined.models]))
        details = {"encoder": joined.encoder, "batch_size": joined.batch_size, "stage_s": joined.stage_s,
                   "faces_swapped": joined.faces_swapped, "faces_left_alone": joined.faces_left_alone,
                   "peak_rss_mb": max(r.peak_rss_mb for r in results),
                   "markers": [[p.start, p.marker.label if p.marker else None] for p in parts]}
        notices = list(joined.notices)
        if joined.faces_swapped == 0 and run.resumed_at == 0:  # the whole clip (a resume saw a part)
            notices += filter(None, [no_face_notice(run.target, run.settings)])
        run.notice(notices)
    run.mark_complete()
    return details


def _writer_at(run: MarkedRun, first: int) -> Callable[[int, int], segments.SegmentWriter]:
    """The segment writer of the stretch that begins (or resumes) at frame ``first``."""
    def writer(width: int, height: int) -> segments.SegmentWriter:
        return segments.SegmentWriter(run.work, first_frame=first, pace=run.ctx.pace, source=run.info,
                                      settings=run.settings, size=(width, height),
                                      on_segment=run.add_segment, cancel=run.ctx.control.cancel,
                                      container=run.output.suffix)
    return writer


def _control_at(run: MarkedRun, first: int) -> RunControl:
    """The stretch's progress as the whole job's."""
    def whole(p: Progress) -> Progress:
        return replace(p, frames_done=first + p.frames_done, frames_total=run.total,
                       stage={**p.stage, "segments": len(run.record.segments)})
    control: RunControl = run.ctx.control.relay(whole)
    return control


def render_file(settings: Settings, sources: Sequence[Path | str], target: Path, output: Path, *,
                info: VideoInfo, control: RunControl, audio: Path | None = None) -> RenderResult:
    """``facestation swap`` of a video with markers: one segment a stretch, joined into ``output`` with the
    sound as a job joins its own (the work folder beside the output, removed afterwards)."""
    from pipeline import markers
    from pipeline.progress import Progress
    from pipeline.quality import write_report

    parts = markers.stretches(settings, info.frame_count, info.fps, target.name)
    total = parts[-1].stop if parts else 0
    work = output.with_name(f".{output.name}.markers")
    done: list[segments.Segment] = []

    def sink_for(first: int) -> Callable[[int, int], segments.SegmentWriter]:
        return lambda width, height: segments.SegmentWriter(
            work, first_frame=first, source=info, settings=parts[0].settings, size=(width, height),
            on_segment=done.append, cancel=control.cancel, container=output.suffix)

    def control_for(first: int) -> RunControl:
        return control.relay(lambda p: replace(p, frames_done=first + p.frames_done, frames_total=total))

    segments.clear_work(work)
    try:
        results = markers.render(parts, sources, target, info=info, sink_for=sink_for,
                                 control_for=control_for, audio=audio)
        models = list(dict.fromkeys(m for r in results for m in r.models))
        control.report(Progress(total, total, stage={"step": "joining segments"}))
        segments.join_segments(done, work, output, job_id=0, source=info, settings=settings, models=models,
                               cancel=control.cancel, voice=audio)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return markers.joined_result(results, output, write=write_report)
