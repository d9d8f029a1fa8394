"""The chain for a live stream, one frame at a time: keyframe detection and the tracker reused, without
the tracker's look-ahead (a live frame cannot wait for later ones), and only the processors that make sense
on a camera (those that need the clip's sound or its whole length are left out with a notice)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pipeline import env
from pipeline.alpha import maker
from pipeline.chain import Chain
from pipeline.errors import UserError
from pipeline.live.engine import Build, Step
from pipeline.process import FaceProcessor
from pipeline.processors import PROCESSORS, Media
from pipeline.quality.live import LiveReport
from pipeline.settings import Settings
from pipeline.types import Frame

log = logging.getLogger(__name__)

def live_settings(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` as a live run uses them, and what was left out (notices: each processor's reason)."""
    order = settings.processors.order
    kept = tuple(p for p in order if not PROCESSORS[p].not_live)
    notices = [f"live: {p} left out: {PROCESSORS[p].not_live}" for p in order if PROCESSORS[p].not_live]
    if not kept:
        raise UserError(f"processors.order={','.join(order)}: nothing of it runs live "
                        f"({'; '.join(notices)})")
    made = maker(settings)
    if made is not None:  # as swap refuses it into an output that cannot keep it
        raise UserError(f"{made} makes the frames transparent, which live frames cannot keep (a recording, "
                        "a stream and the browser's picture are opaque); choose a fill colour in its "
                        "settings, or turn transparency off")
    return settings.model_copy(update={
        "processors": settings.processors.model_copy(update={"order": kept}),
        "tracker": settings.tracker.model_copy(update={"max_gap": 0}),  # no look-ahead: no frame waits
    }), notices


class ChainStep:
    """One frame through the chain of ``settings`` (made live), with keyframes and tracking at ``fps``.

    Frames may change size at any moment (a browser lowers its camera's under load): the faces found and
    tracked in frames of the old size mean nothing in the new one, so keyframes and tracking start again.
    The chain's models run with onnxruntime's idle threads asleep rather than spinning: a live frame is
    small work on cores that the camera's decoder, the encoder (and a browser) share."""

    def __init__(self, settings: Settings, sources: Sequence[Path | str], fps: float,
                 report: LiveReport | None = None) -> None:
        self.settings, self.notices = live_settings(settings)
        self.report = report  # a recording's quality report: each finished frame goes to it
        self._fresh = True  # faces are followed afresh from the next frame (a new step, a new size)
        self.processor = FaceProcessor(self.settings, list(sources))
        for stage in self.processor.stage_sessions().values():
            for model in stage:
                model.set_spinning(False)
        self.processor.prepare(Media(fps=fps))
        self.notices += self.processor.notices
        self.chain = Chain(self.processor, inplace=True)
        self.fps = fps
        self.finder = self.chain.finder(fps)
        self.shape: tuple[int, ...] | None = None  # the frames' now
        self.frames = 0
        self.fail_at = env.TEST_LIVE_FAIL_FRAME.get()  # tests: the chain fails at this frame

    @property
    def models(self) -> list[str]:
        return self.processor.models

    def __call__(self, frame: Frame) -> Frame:
        self.frames += 1
        if self.frames == self.fail_at:
            raise RuntimeError(f"{env.TEST_LIVE_FAIL_FRAME.name}={self.fail_at}: the chain fails here")
        if frame.shape != self.shape:
            if self.shape is not None:
                self.finder = self.chain.finder(self.fps)
                self._fresh = True
            self.shape = frame.shape
        works = self.chain.through(self.finder.push([frame]))
        if works and self.report is not None:
            self.report.add(self.settings, works[0], restart=self._fresh)
            self._fresh = False
        out = works[0].out if works else None
        return frame if out is None else out


def chain_builder(sources: Sequence[Path | str], fps: float, report: LiveReport | None = None) -> Build:
    """A :data:`~pipeline.live.engine.Build` of chain steps for ``sources`` at the camera's ``fps``, each
    recording its frames in ``report`` (a recording's: every step of the run, one report)."""

    def build(settings: Settings) -> Step:
        step = ChainStep(settings, sources, fps, report)
        for notice in step.notices:
            log.info("%s", notice)
        return step

    return build
