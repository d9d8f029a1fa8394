"""``frame_enhancer``: whole frames upscaled by one of FaceFusion's upscalers (``frame_enhancer`` settings).

It works on the blended frame (after the face processors before it), tile by tile (tiles.py,
upscaler.py), and mixes the model's output with the frame resized linearly by
``frame_enhancer.blend``. Its frames come out ``scale`` × larger (the model's factor): the faces the later
processors work on are scaled with them (chain.Work.replace_frame), the render's output, a job's segments and
a still follow the size of the first frame through the chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pipeline import families
from pipeline.families import Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FrameProcessorBase
from pipeline.processors.frame_enhancer.upscaler import FrameEnhancer, TiledUpscaler
from pipeline.settings import Settings
from pipeline.types import Frame

FAMILIES: dict[str, Family] = {
    "frame_enhancer": Family("frame_enhancer", lambda name, s: TiledUpscaler(name, **run_options(s))),
}


class FrameEnhancerProcessor(FrameProcessorBase):
    name: ClassVar[str] = "frame_enhancer"
    section: ClassVar[str] = "frame_enhancer"
    title: ClassVar[str] = "Frame enhancer"
    batches: ClassVar[bool] = True  # the tiles of a batch's frames share the model's runs
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "frame_enhance"
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return (settings.frame_enhancer.model,)

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.enhancer: FrameEnhancer = families.build(models[0], settings, "frame_enhancer", FAMILIES)

    @property
    def scale(self) -> int:
        return self.enhancer.scale

    def sessions(self) -> list[CatalogSession]:
        runner = getattr(self.enhancer, "runner", None)
        return [runner] if isinstance(runner, CatalogSession) else []

    def run_frames(self, frames: Sequence[Frame], at: Sequence[int]) -> list[Frame]:
        return self.enhancer.enhance(frames, self.settings.frame_enhancer.blend)
