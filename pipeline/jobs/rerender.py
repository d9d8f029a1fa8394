"""Re-rendering a stretch of a finished video job with other settings, the rest of its output untouched.

A finished video job keeps its segments (``work/job-N/``, as its resume record lists them: about one more
copy of the output's video stream on disk; deleting the job removes them). To mend a stretch:

1. :func:`submit` checks the request (the job is done and a video with its segments kept, the frame range
   inside the output, the overrides are ``--set`` keys the settings' one validator takes and leave the
   output's format alone) and queues the job again with a ``rerender`` entry in its resume record::

       "rerender": {"frames": [A, B], "settings": "<the stretch's settings JSON>", "generation": 2,
                    "output": "/.../out.mp4", "beside": false, "covered": [120, 150],
                    "segments": [{"file": "r2/seg-00000120.mkv", "start": 120, "frames": 30}]}

2. A worker runs it (:func:`execute`, which the worker picks for such a job, with or without a farm): only the
   segments covering frames A..B (``covered``: their starts) are rendered again, each exactly as long as
   the one it replaces, into ``work/job-N/rG/`` (G: the generation), each recorded as soon as it is
   complete; a run killed meanwhile is resumed by the queue from what it recorded. Then every segment
   is joined again (``-c copy``: the other segments' packets are the same bytes) with the source's audio,
   by the one join (:func:`pipeline.jobs.segments.join_segments`: a temp name renamed into place when whole,
   the provenance tag), into the output (replacing it) or into ``output`` beside it. Until that rename the
   previous output is there, unchanged.
3. Replacing: the record now lists the new segments and the replaced files go; beside: the new segments
   go, the job still describes its own output.

The settings of the stretch are in the job's log; the job's own settings stay those it was queued with.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import UserError
from pipeline.image import is_image_path
from pipeline.jobs import segments
from pipeline.jobs.model import Job
from pipeline.jobs.runner import JobContext, work_dir
from pipeline.jobs.segments import Segment
from pipeline.jobs.store import JobStore
from pipeline.progress import Progress

if TYPE_CHECKING:
    from pipeline.quality import QualityReport
from pipeline.settings import Settings, apply_overrides, validate

log = logging.getLogger(__name__)

KEY = "rerender"  # the resume record's entry of a pending re-render
FIXED_SECTIONS = ("video", "output")  # what the output's format and sound are: the same for every segment


def pending(job: Job) -> bool:
    """Whether ``job`` is queued or running to re-render a stretch."""
    return isinstance(job.resume.get(KEY), dict)


def parse_frames(text: str) -> tuple[int, int]:
    """``A-B`` (or one frame ``A``): the output's frames A..B, counted from 0, both included."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text or "")
    if match is None:
        raise UserError(f"frames are A-B (the output's frame numbers from 0, e.g. 120-180), got {text!r}")
    a = int(match[1])
    b = int(match[2]) if match[2] is not None else a
    if b < a:
        raise UserError(f"frames {a}-{b}: the first frame comes after the last")
    return a, b


def stretch_frames(output: Path, number: int) -> tuple[int, int]:
    """Frames of flagged stretch ``number`` (from 1, as the report lists them) of ``output``'s report."""
    from pipeline.quality import read_report

    found = read_report(output).get("stretches", [])
    if not 1 <= number <= len(found):
        raise UserError(f"{output.name}'s quality report has {len(found)} flagged stretch(es); "
                        f"there is no stretch {number}")
    return int(found[number - 1]["start"]), int(found[number - 1]["end"])


def kept_segments(job: Job) -> list[Segment]:
    """A done video job's segments, in order, each file there; one line if they are not all there."""
    if job.state != "done":
        raise UserError(f"job {job.label} is {job.state}: only a finished (done) job can re-render a stretch")
    if is_image_path(Path(job.target)) or is_image_path(Path(job.output)):
        raise UserError(f"job {job.label} is an image: re-render it whole (a stretch is a video's)")
    work = work_dir(job.id)
    found = [Segment.parse(raw) for raw in job.resume.get("segments", [])]
    segs = sorted((s for s in found if s is not None), key=lambda s: s.start)
    gap_free = all(s.start == sum(t.frames for t in segs[:i]) for i, s in enumerate(segs))
    if not segs or not gap_free or not all((work / s.file).is_file() for s in segs):
        raise UserError(f"job {job.label} kept no segments to re-render from (finished before segments were "
                        "kept, or its work folder was removed): render it again whole")
    return segs


def covering(segs: list[Segment], a: int, b: int) -> list[Segment]:
    """The segments holding any of frames a..b (inclusive)."""
    return [s for s in segs if s.start <= b and s.start + s.frames > a]


def stretch_settings(settings: Settings, overrides: list[str]) -> Settings:
    """``settings`` with ``section.key=value`` overrides (the settings' one validator); one line for an
    override that would change the output's format or sound (the other segments keep theirs)."""
    changed = apply_overrides(settings, overrides)
    for section in FIXED_SECTIONS:
        if getattr(changed, section) != getattr(settings, section):
            raise UserError(f"a stretch is re-rendered in the output's own format: {section}.* settings "
                            "cannot change (render the whole job again for that)")
    return changed


def beside_name(output: Path, generation: int) -> Path:
    """Where a re-render written beside ``output`` goes: ``NAME.rerender-G.EXT``."""
    return output.with_name(f"{output.stem}.rerender-{generation}{output.suffix}")


def next_generation(job: Job) -> int:
    """The number of the next re-render of ``job``: after every earlier one the record or the work folder
    knows of (a folder still listed is never written into again)."""
    folders = [int(p.name[1:]) for p in work_dir(job.id).glob("r*") if p.name[1:].isdigit()]
    return max([int(job.resume.get("generation", 0)), *folders]) + 1


def plan(job: Job, frames: tuple[int, int], overrides: list[str], beside: bool = False) -> dict[str, Any]:
    """The ``rerender`` entry for re-rendering ``frames`` of ``job`` with ``overrides`` (one line for a
    request that cannot be done)."""
    segs = kept_segments(job)
    total = segs[-1].start + segs[-1].frames
    a, b = frames
    if not 0 <= a <= b < total:
        raise UserError(f"frames {a}-{b} are outside the output of job {job.label} (frames 0-{total - 1})")
    settings = stretch_settings(job.settings, overrides)
    generation = next_generation(job)
    output = Path(job.output)
    if beside:
        output = beside_name(output, generation)
        if output.exists():
            raise UserError(f"{output.name} is there already: move it away, or re-render in place")
    covered = covering(segs, a, b)
    return {"frames": [a, b], "overrides": list(overrides), "settings": settings.model_dump_json(),
            "generation": generation, "output": str(output), "beside": beside,
            "covered": [s.start for s in covered], "segments": []}


def submit(store: JobStore, job_id: int, frames: tuple[int, int] | str | None = None,
           overrides: list[str] | None = None, *, stretch: int | None = None, beside: bool = False) -> Job:
    """Queue ``job_id`` again to re-render ``frames`` (``A-B``), or flagged ``stretch`` K of its quality
    report, with ``overrides``; the job as queued."""
    job = store.get(job_id)
    if (frames is None) == (stretch is None):
        raise UserError("say which frames to re-render: a range (A-B) or a flagged stretch's number")
    if stretch is not None:
        kept_segments(job)  # a job that cannot is refused for that first
        frames = stretch_frames(Path(job.output), stretch)
    elif isinstance(frames, str):
        frames = parse_frames(frames)
    assert frames is not None
    request = plan(job, frames, list(overrides or []), beside)
    return store.rerender(job_id, request)


def execute(job: Job, ctx: JobContext) -> dict[str, Any]:
    """The worker's executor for a job with a pending re-render."""
    return RerenderJob(job, ctx).run()


class RerenderJob:
    """The worker's side of a queued re-render (see the module text)."""

    def __init__(self, job: Job, ctx: JobContext) -> None:
        from pipeline.video.probe import probe

        self.job, self.ctx = job, ctx
        self.request: dict[str, Any] = dict(job.resume[KEY])
        self.settings = validate(json.loads(self.request["settings"]))
        self.work = work_dir(job.id)
        self.segments = kept_segments_of(job)
        self.sub = f"r{int(self.request['generation'])}"
        self.info = probe(Path(job.target))
        self.started = time.perf_counter()
        self.models: list[str] = []
        self.rendered = 0

    def run(self) -> dict[str, Any]:
        from pipeline.errors import Cancelled

        new = self._recorded()
        todo = [s for s in self.segments if s.start in self.request["covered"] and s.start not in new]
        a, b = self.request["frames"]
        if new:
            self.ctx.log(f"resuming the re-render of frames {a}-{b} ({len(new)} new segment(s) kept)")
        for seg in todo:
            new[seg.start] = self._render(seg)
            self._record(new)
        if self.ctx.control.cancelled:
            raise Cancelled("job cancelled")
        joined = [new.get(s.start, s) for s in self.segments]
        output = Path(self.request["output"])
        segments.join_segments(joined, self.work, output, job_id=self.job.id, source=self.info,
                               settings=self.job.settings, models=self.models or self._old_models(),
                               cancel=self.ctx.control.cancel, guard=self.ctx.guard,
                               voice=None if self.job.audio is None else Path(self.job.audio))
        self._splice_report(output, [new[start] for start in sorted(new)])
        self._settle(joined)
        said = ", ".join(self.request.get("overrides", [])) or "the job's own settings"
        self.ctx.log(f"re-rendered frames {a}-{b} ({len(self.request['covered'])} segment(s)) with {said} "
                     f"into {output}")
        return {"output": str(output), "kind": "video", "frames": sum(s.frames for s in joined),
                "frames_rendered_now": self.rendered, "rerendered": [a, b],
                "segments": len(joined), "seconds": round(time.perf_counter() - self.started, 3),
                "models": self.models, "notices": []}

    def _recorded(self) -> dict[int, Segment]:
        """The new segments an earlier run of this re-render finished (their files there)."""
        found = (Segment.parse(raw) for raw in self.request.get("segments", []))
        return {s.start: s for s in found if s is not None and (self.work / s.file).is_file()}

    def _render(self, seg: Segment) -> Segment:
        """Frames of ``seg`` rendered with the stretch's settings into one new segment of the same length."""
        from pipeline.errors import Cancelled
        from pipeline.process import FaceProcessor
        from pipeline.render import Render

        made: list[Segment] = []
        settings = self._settings_at(seg)
        processor = FaceProcessor(settings, list(self.job.sources))
        self.models = processor.models
        voice = None if self.job.audio is None else Path(self.job.audio)
        control = self.ctx.control.relay(functools.partial(self._progress, seg))
        result = Render(settings, self.job.sources, Path(self.job.target), sink=self._sink(seg, made),
                        processor=processor, control=control, info=self.info,
                        frames=(seg.start, seg.start + seg.frames), audio=voice).run()
        self.rendered += result.frames
        if len(made) != 1 or made[0].frames != seg.frames:
            raise Cancelled("re-render stopped before its segment was whole")
        new = Segment(f"{self.sub}/{made[0].file}", seg.start, seg.frames)
        if result.quality is not None:  # its frames' report, beside it: a resumed run splices it in too
            from pipeline.quality import write_report

            write_report(result.quality, self.work / new.file)
        return new

    def _settings_at(self, seg: Segment) -> Settings:
        """The settings ``seg`` is rendered with again: those its job's markers have in effect there (a
        segment never spans a marker), with the re-render's overrides on top."""
        if not self.job.settings.markers:
            return self.settings
        from pipeline import markers

        info = self.info
        parts = markers.stretches(self.job.settings, info.frame_count, info.fps, info.path.name)
        part = next(p for p in parts if p.start <= seg.start < p.stop)
        return apply_overrides(part.settings, list(self.request.get("overrides", [])))

    def _progress(self, seg: Segment, p: Progress) -> Progress:
        """A segment's render progress as the re-render's: frames of the covered segments done, of all."""
        covered = [s for s in self.segments if s.start in self.request["covered"]]
        before = sum(s.frames for s in covered if s.start < seg.start)
        return replace(p, frames_done=before + p.frames_done, frames_total=sum(s.frames for s in covered),
                       stage={**p.stage, "step": "re-rendering frames {}-{}".format(*self.request["frames"])})

    def _sink(self, seg: Segment, made: list[Segment]) -> Callable[[int, int], segments.SegmentWriter]:
        """The render's sink: one segment as long as ``seg``, of the size of the segments it joins."""
        from pipeline.video.probe import probe

        def sink(width: int, height: int) -> segments.SegmentWriter:
            old = probe(self.work / seg.file)
            if (width, height) != (old.width, old.height):
                raise UserError(f"the stretch's frames would be {width}x{height}, the output's are "
                                f"{old.width}x{old.height}: a stretch keeps the output's size (render the "
                                "whole job again for that)")
            return segments.SegmentWriter(self.work / self.sub, first_frame=seg.start, source=self.info,
                                          settings=self.settings, size=(width, height),
                                          on_segment=made.append, segment_frames=seg.frames,
                                          cancel=self.ctx.control.cancel,
                                          container=Path(self.job.output).suffix)

        return sink

    def _record(self, new: dict[int, Segment]) -> None:
        """Save the new segments in the record; a test's hold may keep the run here (before the join)."""
        self.request["segments"] = [s.row() for s in sorted(new.values(), key=lambda s: s.start)]
        self.ctx.save_resume({**self.job.resume, KEY: self.request})
        if self.ctx.hold is not None:
            self.ctx.hold.segment_recorded(len(new), self.ctx.control.cancel)

    def _settle(self, joined: list[Segment]) -> None:
        """After the join: the record lists the segments of the job's output; files no longer listed go."""
        resume = {k: v for k, v in self.job.resume.items() if k != KEY}
        resume["generation"] = int(self.request["generation"])
        if not self.request["beside"]:
            resume["segments"] = [s.row() for s in joined]
        self.ctx.save_resume(resume)
        listed = {s["file"] for s in resume["segments"]}
        for seg in (*self.segments, *joined):
            if seg.file not in listed:
                (self.work / seg.file).unlink(missing_ok=True)
        for folder in self.work.iterdir():
            if folder.is_dir() and not any(f.startswith(f"{folder.name}/") for f in listed):
                shutil.rmtree(folder, ignore_errors=True)

    def _splice_report(self, output: Path, new: list[Segment]) -> None:
        """The output's quality report with the re-rendered frames' records in place of the old ones (the
        other frames' as they were; no report before, none now), joined as a farm's parts are
        (:func:`pipeline.quality.report.joined`: tracks numbered apart, cut at each new part's edges)."""
        from pipeline.quality import read_report, write_report
        from pipeline.quality.report import joined, sidecar_of

        old = sidecar_of(self.job.output)
        files = [self.work / s.file for s in new]
        if not old.is_file() or not all(sidecar_of(p).is_file() for p in files):
            return
        first = _as_report(read_report(old))
        spans = [range(s.start, s.start + s.frames) for s in new]
        runs: list[list[Any]] = [[]]  # the old frames between the new parts, each run a part of its own
        for rec in first.frames:
            if not any(rec.frame in r for r in spans):
                runs[-1].append(rec)
            elif runs[-1]:
                runs.append([])
        old_parts = [replace(first, frames=run, tracks=first.tracks if i == 0 else []) for i, run in
                     enumerate(r for r in runs if r)]
        report = joined([*old_parts, *(_as_report(read_report(p)) for p in files)], str(output))
        if report is not None:
            write_report(report, output)

    def _old_models(self) -> list[str]:
        return [str(m) for m in self.job.resume.get("models", [])]


def kept_segments_of(job: Job) -> list[Segment]:
    """The job's segments as its record lists them (a running re-render's: the job is not done meanwhile)."""
    found = [Segment.parse(raw) for raw in job.resume.get("segments", [])]
    return sorted((s for s in found if s is not None), key=lambda s: s.start)


def _as_report(data: dict[str, Any]) -> QualityReport:
    """A report as :func:`pipeline.quality.read_report` read it, as the object it was written from."""
    from pipeline.quality.report import FrameRecord, QualityReport, TrackRecord

    return QualityReport(data["output"], data["fps"], data["identity"], data["thresholds"],
                         [FrameRecord(**f) for f in data["frames"]],
                         [TrackRecord(**t) for t in data["tracks"]])
