"""Markers: settings that change at a frame inside one render (``Settings.markers``; README "Markers").

A marker (:class:`pipeline.settings.Marker`) is a place in the clip (a frame of it, or a time in it) and the
settings it changes from there on, applied on top of the settings before it. Here the markers become
STRETCHES of the render (:func:`stretches`: frame ranges counted as a render counts them, 0 = the first frame
the trim keeps, each with its own whole settings), checked against the clip (:func:`check`: inside the trim,
no two on one frame, the same transparency everywhere), and rendered one after the other (:func:`render`),
each stretch by its own :class:`~pipeline.render.Render` into its own segments, so that no segment spans a
marker (the faces found and tracked go on from one stretch's render to the next unless the marker changes how
they are found: :data:`FINDING`): a job's segments (:mod:`pipeline.jobs.markers`) resume at any of them,
and ``facestation swap`` (:func:`pipeline.jobs.markers.render_file`) joins one segment a stretch as a job
joins its own. Models are
loaded once: each stretch's processors take their sessions from the one session cache
(``models/sessions.py``), so a model plan already loaded by an earlier stretch is not loaded again. The
stretches' quality reports make one (:func:`merged_report`: frame numbers are the output's already).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.alpha import transparent
from pipeline.errors import UserError
from pipeline.settings import Marker, Settings, apply_overrides, marker_place
from pipeline.video.trim import TOLERANCE_S, Rate, Trim

if TYPE_CHECKING:
    from pipeline.process import FaceProcessor
    from pipeline.progress import RunControl
    from pipeline.quality import QualityReport
    from pipeline.render import RenderResult
    from pipeline.renderplan import RenderPlan
    from pipeline.video.probe import VideoInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stretch:
    """Frames ``start``..``stop``-1 of a render (0 = the first frame the trim keeps), rendered with
    ``settings`` (whole settings, no markers); ``marker``: the marker it begins at (None: the first)."""

    start: int
    stop: int
    settings: Settings
    marker: Marker | None = None


def frame_of(marker: Marker, fps: Rate) -> int:
    """The clip's frame a marker is at: its frame, or the frame shown at its time (as the trim counts)."""
    if marker.frame is not None:
        return marker.frame
    return max(0, math.ceil(((marker.time or 0.0) - TOLERANCE_S) * float(fps)))


def parse(text: str) -> dict[str, Any]:
    """``PLACE=section.key=value,section.key=value`` (the CLI's ``--marker``) -> a marker's data; a piece
    without ``=`` belongs to the value before it (``mask.types=box,occlusion``). ValueError in words."""
    place, sep, rest = text.partition("=")
    if not sep or not rest.strip():
        raise ValueError(f"--marker expects PLACE=section.key=value[,section.key=value...], got {text!r}")
    pieces: list[str] = []
    for piece in rest.split(","):
        if "=" in piece or not pieces:
            pieces.append(piece)
        else:
            pieces[-1] += "," + piece
    changes: dict[str, str] = {}
    for piece in pieces:
        key, eq, value = piece.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--marker {text!r}: '{piece}' is not section.key=value")
        changes[key.strip()] = value
    return {**marker_place(place), "changes": changes}


def with_markers(settings: Settings, texts: Sequence[str] | None) -> Settings:
    """``settings`` with the ``--marker`` texts added to its markers (validated as the settings validate
    theirs: SettingsError names a bad one)."""
    from pipeline.errors import SettingsError
    from pipeline.settings import validate

    if not texts:
        return settings
    added = []
    for text in texts:
        try:
            added.append(parse(text))
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    data = settings.model_dump()
    data["markers"] = [*data["markers"], *added]
    return validate(data)


def stretches(settings: Settings, count: int, fps: Rate, name: str = "the video") -> list[Stretch]:
    """The stretches of a render of ``count`` frames at ``fps`` (one without markers); UserError, in one
    line, for a marker outside the trim, two on one frame, or one that changes the transparency."""
    base = settings.model_copy(update={"markers": ()})
    trim = Trim.of(settings)
    kept = trim.frames(count, fps)
    placed = sorted(((frame_of(m, fps), m) for m in settings.markers), key=lambda fm: fm[0])
    for (a, ma), (b, mb) in zip(placed, placed[1:], strict=False):
        if a == b:
            raise UserError(f"the markers at {ma.label} and {mb.label} are both at frame {a} of {name}: "
                            "keep one")
    out = [Stretch(0, len(kept), base)]
    for frame, marker in placed:
        if frame not in kept:
            shown = trim.describe(count, fps) or "no frame"
            raise UserError(f"the marker at {marker.label} (frame {frame}) is outside what is rendered of "
                            f"{name} ({shown}): move it inside or remove it")
        at = frame - kept.start
        now = apply_overrides(out[-1].settings, marker.changes)
        if transparent(now) != transparent(base):
            raise UserError(f"the marker at {marker.label} changes whether the output is transparent: a "
                            "render is transparent throughout or not at all")
        out[-1] = replace(out[-1], stop=at)
        out.append(Stretch(at, len(kept), now, marker))
    return [s for s in out if s.stop > s.start]


def check(settings: Settings, kind: str | None, frames: int, fps: Rate, name: str) -> list[Stretch]:
    """The stretches of a request's target (``kind``: "video", "image", None live), or why not."""
    if not settings.markers:
        return []
    if kind != "video":
        raise UserError(f"markers change settings along a video; {name} is not one: remove the markers")
    if settings.output.fps is not None:
        raise UserError("markers count the target's frames: leave output.fps empty (the target's rate) to "
                        "use them")
    return stretches(settings, frames, fps, name)


def merged_report(reports: Sequence[QualityReport]) -> QualityReport | None:
    """One quality report of the stretches' (in order): their frames, and their tracks numbered apart."""
    from pipeline.quality import QualityReport

    if not reports:
        return None
    frames, tracks, offset = [], [], 0
    for report in reports:
        frames += report.frames
        tracks += [replace(t, track=t.track + offset) for t in report.tracks]
        offset = max((t.track for t in tracks), default=-1) + 1
    first = reports[0]
    return QualityReport(output=first.output, fps=first.fps, identity=any(r.identity for r in reports),
                         thresholds=first.thresholds, frames=frames, tracks=tracks)


SinkFor = Callable[[int], Callable[[int, int], Any]]  # a stretch's first frame -> its sink factory


def render(parts: Sequence[Stretch], sources: Sequence[Path | str], target: Path, *, info: VideoInfo,
           sink_for: SinkFor, control_for: Callable[[int], RunControl], audio: Path | None = None,
           start: int = 0) -> list[RenderResult]:
    """Render the stretches from frame ``start`` on (those before it are done), each by its own render
    into ``sink_for(first frame)``; every stretch's frames the same size (a marker may not change it)."""
    from pipeline.process import FaceProcessor
    from pipeline.render import Render

    results: list[RenderResult] = []
    size: list[tuple[int, int]] = []
    finder, before = None, None  # the faces found so far, and the settings that found them
    plans: dict[Hashable, RenderPlan] = {}  # the plan of each model plan rendered (none planned again)
    todo = [part for part in parts if part.stop > start]
    # every stretch's processor made first: what they read of the sources loads its models once, before
    # the first render's plan gives the models their threads (a session made again at another count)
    processors = [FaceProcessor(part.settings, list(sources)) for part in todo]
    for part, processor in zip(todo, processors, strict=True):
        first = max(part.start, start)
        opened = sink_for(first)

        def sink(width: int, height: int, opened: Callable[[int, int], Any] = opened,
                 part: Stretch = part) -> Any:
            if size and size[0] != (width, height):
                where = part.marker.label if part.marker else "the start"
                raise UserError(f"the marker at {where} changes the output's size ({size[0][0]}x{size[0][1]} "
                                f"-> {width}x{height}): a frame processor that scales runs throughout or not")
            size[:] = [(width, height)]
            return opened(width, height)

        log.info("stretch %d..%d (%s)", first, part.stop, part.marker.label if part.marker else "start")
        going_on = before is not None and _finding(before) == _finding(part.settings)
        models = _model_plan(processor)
        run = Render(part.settings, sources, target, sink=sink, processor=processor,
                     control=control_for(first), info=info, frames=(first, part.stop), audio=audio,
                     finder=finder if going_on else None, plan=plans.get(models))
        results.append(run.run())
        finder, before, plans[models] = run.finder, part.settings, run.plan
    return results


def _model_plan(processor: FaceProcessor) -> Hashable:
    """The models each stage of ``processor`` runs, where and on how many threads if fixed: two stretches
    alike in these render with one plan (and the same sessions)."""
    return tuple((stage, tuple((m.name, m.providers, m.threads if not m.planned else None) for m in found))
                 for stage, found in sorted(processor.stage_sessions().items()))


FINDING = ("detector", "selector", "tracker", "landmarks")  # the settings that find and follow the faces


def _finding(settings: Settings) -> tuple[Any, ...]:
    """What finds the faces: a stretch whose are the same goes on with the faces found and tracked by the
    stretch before it (its render continues theirs); other changes start finding faces again at the
    marker, as a resumed job does."""
    return tuple(getattr(settings, s) for s in FINDING)


def joined_result(results: Sequence[RenderResult], output: Path,
                  write: Callable[[QualityReport, Path], Path] | None = None) -> RenderResult:
    """The stretches' results as one render's: frames, seconds, faces and notices added up, the models of
    all, one quality report (written beside ``output`` by ``write``)."""
    first = results[0]
    frames = sum(r.frames for r in results)
    seconds = round(sum(r.seconds for r in results), 3)
    quality = merged_report([r.quality for r in results if r.quality is not None])
    if quality is not None:
        quality = replace(quality, output=output.name)
    return replace(first, output=output, frames=frames, seconds=seconds,
                   fps=round(frames / max(seconds, 1e-9), 4),
                   models=list(dict.fromkeys(m for r in results for m in r.models)),
                   notices=list(dict.fromkeys(n for r in results for n in r.notices)),
                   faces_swapped=sum(r.faces_swapped for r in results),
                   faces_left_alone=sum(r.faces_left_alone for r in results),
                   quality=quality,
                   quality_path=None if quality is None or write is None else write(quality, output))


# --- the Swap tab's timeline (webui/markers_area.py): markers made from the settings as they are now -------
def changes_between(before: Settings, now: Settings) -> dict[str, Any]:
    """The ``section.key`` values of ``now`` that differ from ``before``, outside the sections a marker may
    not change (what a marker added with the settings ``now`` stores)."""
    from pipeline.settings import MARKER_FIXED

    a, b = before.model_dump(mode="json"), now.model_dump(mode="json")
    return {f"{section}.{key}": value for section, values in b.items()
            if isinstance(values, dict) and section not in MARKER_FIXED
            for key, value in values.items() if a[section][key] != value}


def in_effect(start: Settings, frame: int, fps: Rate) -> Settings:
    """The settings ``start`` (with its markers) renders frame ``frame`` of the clip with."""
    now = start.model_copy(update={"markers": ()})
    for marker in sorted(start.markers, key=lambda m: frame_of(m, fps)):
        if frame_of(marker, fps) <= frame:
            now = apply_overrides(now, marker.changes)
    return now


def add_here(start: Settings, now: Settings, frame: int, fps: Rate) -> Settings:
    """``start`` with a marker at ``frame`` holding what ``now`` changes against the settings in effect just
    before it; UserError in one line when it changes nothing or a marker is there already."""
    from pipeline.settings import validate

    if any(frame_of(m, fps) == frame for m in start.markers):
        raise UserError(f"there is a marker at frame {frame} already: remove it first")
    changes = changes_between(in_effect(start, frame - 1, fps), now)
    if not changes:
        raise UserError(f"a marker at frame {frame} would change nothing: change the settings this frame on "
                        "should have, then add it")
    data = start.model_dump()
    data["markers"] = [*data["markers"], {"frame": frame, "changes": changes}]
    return validate(data)


def without(start: Settings, index: int) -> Settings:
    """``start`` less its marker number ``index`` (as :func:`listed` lists them)."""
    kept = tuple(m for i, m in enumerate(start.markers) if i != index)
    return start.model_copy(update={"markers": kept})


def listed(start: Settings) -> list[str]:
    """Each marker in one line: "frame 120: color.method=mkl, face_swapper.model=…"."""
    return [f"{m.label}: " + ", ".join(f"{k}={v}" for k, v in m.changes.items()) for m in start.markers]


def for_job(start: Settings, now: Settings) -> Settings:
    """The settings a job with the timeline's markers is queued with: ``start`` and its markers, and the
    settings a marker may not change (trim, output, machine, report) as they are ``now``."""
    from pipeline.settings import MARKER_FIXED

    return start.model_copy(update={s: getattr(now, s) for s in MARKER_FIXED})
