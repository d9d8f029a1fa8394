"""``face_enhancer``: each chosen face restored by a face-restoration model (``enhancer`` settings).

The face is re-framed to the enhancer's own template and size (after a swap: the swapped face over the target
there, its paste mask carried along), every face of a batch restored in one run, and mixed with the input by
``enhancer.blend``. ``enhancer.model=none`` (or a blend of 0) leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.blend import mask as masks
from pipeline.enhance.base import Enhancer
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities
from pipeline.processors.crops import FaceMasks, Swapped, frame_items
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, ProcessorName


class FaceEnhancerProcessor(FaceProcessorBase):
    name: ClassVar[ProcessorName] = "face_enhancer"
    section: ClassVar[str] = "enhancer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "enhance"

    @classmethod
    def models(cls, settings: Settings, swapper: str) -> tuple[str, ...]:
        return (settings.enhancer.model,) if settings.enhancer.model != "none" else ()

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.enhancer.model != "none" and settings.enhancer.blend > 0

    def __init__(self, settings: Settings, swapper: str, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.enhancer: Enhancer = families.build(models[0], settings, "enhancer")
        self.box: Mask = masks.box_mask(self.enhancer.crop_size, settings.mask.blur, settings.mask.padding)

    @property
    def crop_size(self) -> int:
        return self.enhancer.crop_size

    def sessions(self) -> list[CatalogSession]:
        runner = getattr(self.enhancer, "runner", self.enhancer)
        return [runner] if isinstance(runner, CatalogSession) else []

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int]) -> None:
        pairs = frame_items(frames, items, self.enhancer.template, self.enhancer.crop_size, self.box)
        if not pairs:
            return
        crops = np.stack([item.result for _, item in pairs])
        restored = self.enhancer.enhance(crops, self.settings.enhancer.blend)
        for (_, item), result in zip(pairs, restored, strict=True):
            item.result = result
        if masks is not None:
            masks.apply([item for _, item in pairs])
