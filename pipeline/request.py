"""One swap as asked, and the one check every entry point runs before any work.

A :class:`SwapRequest` is what a user asks for: source photos, a target (a still or a video; a camera for
live), a new voice, the settings (their trim: :class:`~pipeline.video.trim.Trim`) and the output file.
:func:`check` is the one check before a swap is previewed, rendered, queued or run live: ``facestation
swap``, ``queue add`` (one target or a batch, through :func:`pipeline.jobs.service.add`), the web UI's
preview, Add to queue and batch, and live (the command and the Live tab) all call it, so what one of them
refuses the others refuse in the same words. The first problem is raised as one
:class:`~pipeline.errors.UserError` (every missing model at once: :class:`~pipeline.checks.ModelsMissing`);
what passed comes back as :class:`Checked`: the model plan (built once per check), the target, the frames
the trim keeps, notices for the user.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pipeline import checks, media
from pipeline.alpha import transparent
from pipeline.errors import NoFaceFound, UserError, missing
from pipeline.image import is_image_path, output_format
from pipeline.plan import ModelPlan
from pipeline.settings import Settings
from pipeline.video import formats
from pipeline.video.trim import Trim


@dataclass(frozen=True)
class SwapRequest:
    """A swap as asked. ``target`` None with ``live``: a camera's frames (nothing to trim, its outputs are
    opened by ``live/outputs.py``); ``output`` None: nothing is written (a preview)."""

    sources: tuple[Path, ...]
    target: Path | None
    settings: Settings
    output: Path | None = None
    voice: Path | None = None  # a new sound for the output (a lip syncer's mouth follows it)
    live: bool = False

    @classmethod
    def of(cls, sources: Sequence[str | Path] | None, target: str | Path | None, settings: Settings,
           output: str | Path | None = None, voice: str | Path | None = None,
           live: bool = False) -> SwapRequest:
        """A request from what a front end holds (strings or paths; "" or None: not given)."""
        return cls(tuple(Path(s) for s in sources or ()), Path(target) if target else None, settings,
                   Path(output) if output else None, Path(voice) if voice else None, live)

    @property
    def trim(self) -> Trim:
        return Trim.of(self.settings)

    @property
    def inputs(self) -> tuple[Path, ...]:
        """Every file the swap reads: the sources, the target, the voice."""
        more = (self.target, self.voice)
        return (*self.sources, *(p for p in more if p is not None))

    def absolute(self) -> SwapRequest:
        """The same request with absolute paths, the output's folder resolved (one file, one name: a queued
        job's files are compared with the other jobs' by their paths)."""
        output = None
        if self.output is not None:
            output = Path(self.output).absolute()
            output = Path(os.path.realpath(output.parent)) / output.name
        return replace(self, sources=tuple(s.absolute() for s in self.sources),
                       target=self.target.absolute() if self.target else None, output=output,
                       voice=self.voice.absolute() if self.voice else None)

    def kept(self, keep: Callable[[Path], Path]) -> SwapRequest:
        """The same request reading ``keep(path)`` for each input (an upload's copy that a job outlives)."""
        return replace(self, sources=tuple(keep(s) for s in self.sources),
                       target=keep(self.target) if self.target else None,
                       voice=keep(self.voice) if self.voice else None)


@dataclass(frozen=True)
class Checked:
    """What passed: the request, its model plan, its target (None live), the frames its trim keeps (a video
    target's; None otherwise) and notices for the user."""

    request: SwapRequest
    plan: ModelPlan
    target: media.MediaInfo | None
    frames: range | None
    notices: tuple[str, ...] = ()
    output_notices: tuple[str, ...] = ()  # those of ``notices`` that say how the output file is written


def check(request: SwapRequest) -> Checked:
    """Raise the first reason ``request`` would fail; else what will run. In this order: the inputs (given,
    readable, of their kind; the voice has a sound), the output (not an input, writable, a format that holds
    what is made), the models (all missing ones named), a face in each source photo (when a processor puts
    theirs in), the output's size, the trim (it keeps a frame of the video), a sound for a processor that
    follows one. Its notices say what runs differently than chosen (the plan's: a fallback for "auto"; a
    setting the order leaves unused; a video output's codec or container changed, :func:`output_notices`)."""
    settings = request.settings
    plan = ModelPlan.from_settings(settings)
    target = _inputs(request, plan.needs_sound)
    if request.output is not None and target is not None:
        _output(request, target)
    checks.require_models(plan)
    if plan.needs_sources:
        for source in request.sources:
            if checks.faces_in_source(source, settings) == 0:
                raise NoFaceFound(f"no face found in the source photo {source.name}: use a photo where the "
                                  "face is clearly visible")
    frames = None
    if target is not None:
        checks.check_output_size(settings, target.path, plan)
        if target.kind == "video":
            frames = request.trim.keep(target.frames, target.fps, target.path.name)
        checks.check_lip_sync_sound(settings, target.path, request.voice, plan)
    planned = _marked(request, target, plan)
    said = output_notices(request, target)
    return Checked(request, plan, target, frames, (*plan.planned, *planned, *checks.unused_settings(settings),
                                                   *said), said)


def _marked(request: SwapRequest, target: media.MediaInfo | None, plan: ModelPlan) -> tuple[str, ...]:
    """The markers (settings that change at frames: :mod:`pipeline.markers`) checked against the target, and
    the models of each stretch's plan (every missing one named, as for the request's own); their plans'
    notices that the request's own plan did not say."""
    from pipeline import markers

    settings = request.settings
    if not settings.markers:
        return ()
    if target is None:
        raise UserError("markers change settings along a video; live has none: remove the markers")
    parts = markers.check(settings, target.kind, target.frames, target.fps, target.path.name)
    plans = [ModelPlan.from_settings(p.settings) for p in parts if p.marker is not None]
    for marked in plans:
        checks.require_models(marked)
    return tuple(n for marked in plans for n in marked.planned if n not in plan.planned)


def output_notices(request: SwapRequest, target: media.MediaInfo | None) -> tuple[str, ...]:
    """What a video output is written as where it differs from what was asked (:func:`formats.choose`): for
    its output file, or (a preview: none yet) for the file the app would name, whose container is refused
    here already where it cannot keep the transparency asked (as Add to queue would refuse it)."""
    if target is None or target.kind != "video" or request.live:
        return ()
    settings = request.settings
    output = request.output
    if output is None:
        output = Path(target.path.stem + formats.suffix_for(settings, transparent(settings)))
        checks.check_alpha_output(settings, output)
    elif is_image_path(output):
        return ()
    return formats.choose(settings, output, transparent(settings)).notices


def _inputs(request: SwapRequest, follows_sound: bool) -> media.MediaInfo | None:
    """The inputs checked by content; the target's description (None live). A voice goes with a still only
    where a processor of the order (``follows_sound``) follows it."""
    if not request.sources:
        raise UserError("add a source photo (the face to put in)")
    if request.target is None and not request.live:
        raise UserError("add a target image or video")
    for source in request.sources:
        _found(source, "source image")
        media.check_media(source, ("image",))
    target = None
    if request.target is not None:
        _found(request.target, "target")
        target = media.check_media(request.target)
        if target.kind == "video" and request.output is not None and is_image_path(request.output) \
                and request.target.suffix.lower() == ".gif":  # an animation to a still: its first frame
            target = media.check_media(request.target, ("image",), as_kind="image")
    if request.voice is not None:
        checks.check_audio(request.voice)
        if target is not None and target.kind == "image" and not follows_sound:
            # a lip syncer draws a still's mouth for the voice's first words; nothing else would use it
            raise UserError(f"the voice {request.voice.name} cannot go with {target.path.name}: a still "
                            "image carries no sound; give a video target, or leave the voice out")
    return target


def _found(path: Path, role: str) -> None:
    if not path.exists():  # a folder, a pipe: check_media names what it is
        raise missing(path, role)


def _output(request: SwapRequest, target: media.MediaInfo) -> None:
    """The output file: not one of the inputs, writable, in a format that holds the target's kind (and its
    transparency)."""
    assert request.output is not None
    output, settings = request.output, request.settings
    media.check_output(output, list(request.inputs))
    checks.check_alpha_output(settings, output)
    if target.kind == "image":
        output_format(output)
    else:
        media.check_video_output(output, transparent(settings))
