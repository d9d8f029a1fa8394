"""The chain for a live stream, one frame at a time: keyframe detection and the tracker reused, without
the tracker's look-ahead (a live frame cannot wait for later ones), and only the processors that make sense
on a camera (those that need the clip's sound or its whole length are left out with a notice)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline.chain import Chain
from pipeline.errors import UserError
from pipeline.live.engine import Build, Step
from pipeline.process import FaceProcessor
from pipeline.processors import Media
from pipeline.settings import Settings
from pipeline.types import Frame, ProcessorName

log = logging.getLogger(__name__)

NOT_LIVE: dict[ProcessorName, str] = {
    "lip_syncer": "a camera has no sound track for the mouth to follow",
}


def live_settings(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` as a live run uses them, and what was left out (notices)."""
    order = settings.processors.order
    kept = tuple(p for p in order if p not in NOT_LIVE)
    notices = [f"live: {p} left out: {NOT_LIVE[p]}" for p in order if p in NOT_LIVE]
    if not kept:
        raise UserError(f"processors.order={','.join(order)}: nothing of it runs live "
                        f"({'; '.join(notices)})")
    return settings.model_copy(update={
        "processors": settings.processors.model_copy(update={"order": kept}),
        "tracker": settings.tracker.model_copy(update={"max_gap": 0}),  # no look-ahead: no frame waits
    }), notices


class ChainStep:
    """One frame through the chain of ``settings`` (made live), with keyframes and tracking at ``fps``."""

    def __init__(self, settings: Settings, sources: Sequence[Path | str], fps: float) -> None:
        self.settings, self.notices = live_settings(settings)
        self.processor = FaceProcessor(self.settings, list(sources))
        self.processor.prepare(Media(fps=fps))
        self.notices += self.processor.notices
        self.chain = Chain(self.processor, inplace=True)
        self.finder = self.chain.finder(fps)

    @property
    def models(self) -> list[str]:
        return self.processor.models

    def __call__(self, frame: Frame) -> Frame:
        works = self.chain.through(self.finder.push([frame]))
        out = works[0].out if works else None
        return frame if out is None else out


def chain_builder(sources: Sequence[Path | str], fps: float) -> Build:
    """A :data:`~pipeline.live.engine.Build` of chain steps for ``sources`` at the camera's ``fps``."""

    def build(settings: Settings) -> Step:
        step = ChainStep(settings, sources, fps)
        for notice in step.notices:
            log.info("%s", notice)
        return step

    return build
