"""``frame_colorizer``: each whole frame given colour by DDColor or DeOldify (``frame_colorizer`` settings).

A frame processor: it works on the frame as the processors before it left it (their faces pasted back), at
the model's square size (``frame_colorizer.size``), keeps the frame's own lightness, and mixes the colour in
by ``frame_colorizer.blend`` (colorize.py). A blend of 0 leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pipeline import families
from pipeline.families import Factory, Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FrameProcessorBase
from pipeline.processors.frame_colorizer.colorize import Colorizer, DDColor, DeOldify, blend, parse_size
from pipeline.settings import Settings
from pipeline.types import Frame


def _colorizer(kind: type[DDColor] | type[DeOldify]) -> Factory:
    return lambda name, s: kind(name, parse_size(s.frame_colorizer.size), **run_options(s))


FAMILIES: dict[str, Family] = {"ddcolor": Family("colorizer", _colorizer(DDColor)),
                               "deoldify": Family("colorizer", _colorizer(DeOldify))}


class FrameColorizerProcessor(FrameProcessorBase):
    name: ClassVar[str] = "frame_colorizer"
    section: ClassVar[str] = "frame_colorizer"
    title: ClassVar[str] = "Frame colouriser"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "colorize"
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return (settings.frame_colorizer.model,)

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.frame_colorizer.blend > 0

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings.frame_colorizer
        self.colorizer: Colorizer = families.build(models[0], settings, "colorizer", FAMILIES)

    def sessions(self) -> list[CatalogSession]:
        return [self.colorizer.runner]

    def run_frames(self, frames: Sequence[Frame], at: Sequence[int]) -> list[Frame]:
        colours = self.colorizer.colorize(frames)
        return [blend(f, c, self.settings.blend) for f, c in zip(frames, colours, strict=True)]
