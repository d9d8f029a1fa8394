"""``expression_restorer``: the target's own expression put back on the processed face (LivePortrait).

A swap keeps the source's expression (a smile becomes a closed mouth); this reads the expression of the
original target crop and re-renders the processed crop with it, by ``expression_restorer.factor`` and only in
``expression_restorer.areas`` (shared/PROCESSORS.md §3.3: arcface_128 at 512, box mask). ``factor=0`` leaves
it out. Our chain has the original target at hand in every frame, so the target crop is this frame's
(FaceFusion takes the middle frame of its window). The re-rendered crop is pasted with the box mask, kept
within the paste mask of the processors before it (so an occlusion or region mask still holds; FaceFusion
applies the occlusion mask again).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline.blend import mask as masks
from pipeline.liveportrait.apply import restore
from pipeline.liveportrait.network import OUTPUT_SIZE, RESTORER_PARTS, model_name
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities
from pipeline.processors.crops import FaceMasks, Swapped, frame_items
from pipeline.processors.liveportrait_common import build, processed_view
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, ProcessorName, Template

TEMPLATE: Template = "arcface_128"


class ExpressionRestorerProcessor(FaceProcessorBase):
    name: ClassVar[ProcessorName] = "expression_restorer"
    section: ClassVar[str] = "expression_restorer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "restore"

    @classmethod
    def models(cls, settings: Settings, swapper: str) -> tuple[str, ...]:
        return tuple(model_name(part) for part in RESTORER_PARTS)

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.expression_restorer.factor > 0

    def __init__(self, settings: Settings, swapper: str, models: tuple[str, ...]) -> None:
        self.settings = settings.expression_restorer
        self.lp = build(settings, models, RESTORER_PARTS)
        self.box: Mask = masks.box_mask(OUTPUT_SIZE, settings.mask.blur)  # FaceFusion: padding 0

    @property
    def crop_size(self) -> int:
        return OUTPUT_SIZE

    def sessions(self) -> list[CatalogSession]:
        return list(self.lp.sessions())

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int]) -> None:
        group = [item for _, item in frame_items(frames, items, TEMPLATE, OUTPUT_SIZE, self.box)]
        if not group:
            return
        targets = np.stack([item.crop for item in group])
        processed = np.stack([processed_view(item) for item in group])
        restored = restore(self.lp, targets, processed, self.settings.factor, self.settings.areas)
        for item, result in zip(group, restored, strict=True):
            item.result = result  # pasted with its box, within the earlier processors' mask (occlusion…)
            item.mask = None if item.mask is None else np.minimum(item.mask, self.box)
        if masks is not None:
            masks.apply(group)
