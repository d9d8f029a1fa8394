"""``expression_restorer``: the target's own expression put back on the processed face (LivePortrait).

A swap keeps the source's expression (a smile becomes a closed mouth); this reads the expression of the
original target crop and re-renders the processed crop with it, by ``expression_restorer.factor`` and only in
``expression_restorer.areas`` (docs/processors.md §3.3: arcface_128 at 512). ``factor=0`` leaves it out.
The original is the target frame as decoded, whatever processors come before this one (a frame colouriser or
enhancer included; FaceFusion takes the middle frame of its window, ours is this frame); the processed crop is
what the frame shows after them. The re-rendered crop is pasted under the box mask (padding 0) and the
occlusion mask made on the processed crop where chosen, as FaceFusion's restorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline.blend import mask as masks
from pipeline.faces import align
from pipeline.liveportrait.network import OUTPUT_SIZE, RESTORER_PARTS, model_name
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items
from pipeline.processors.expression_restorer.restore import restore
from pipeline.processors.liveportrait_common import build
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType, Matrix, Template

TEMPLATE: Template = "arcface_128"


class ExpressionRestorerProcessor(FaceProcessorBase):
    name: ClassVar[str] = "expression_restorer"
    section: ClassVar[str] = "expression_restorer"
    title: ClassVar[str] = "Expression restorer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "restore"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"occlusion"})
    reads_original: ClassVar[bool] = True

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return tuple(model_name(part) for part in RESTORER_PARTS)

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.expression_restorer.factor > 0

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings.expression_restorer
        self.lp = build(settings, models, RESTORER_PARTS)
        self.box: Mask = masks.box_mask(OUTPUT_SIZE, settings.mask.blur)  # FaceFusion: padding 0

    @property
    def crop_size(self) -> int:
        return OUTPUT_SIZE

    def sessions(self) -> list[CatalogSession]:
        return list(self.lp.sessions())

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        group: list[FaceItem] = []
        targets: list[Frame] = []
        for i, (frame, row) in enumerate(zip(frames, items, strict=True)):
            decoded = originals[i] if originals is not None else Original(frame)
            for _, item in frame_items([frame], [row], TEMPLATE, OUTPUT_SIZE, self.box):
                group.append(item)
                unchanged = decoded.frame is frame and decoded.scale == 1
                targets.append(item.crop if unchanged else
                               align.warp(decoded.frame, _at_scale(item.matrix, decoded.scale), OUTPUT_SIZE))
        if not group:
            return
        fed = [item.result for item in group]
        s = self.settings
        restored = restore(self.lp, np.stack(targets), np.stack(fed), s.factor, s.areas)
        for item, result in zip(group, restored, strict=True):
            item.result = result
        if masks is not None:
            masks.apply(group, self.pastes_under, fed)


def _at_scale(matrix: Matrix, scale: int) -> Matrix:
    """A frame -> crop matrix for the frame ``scale`` × smaller (the decoded frame before an upscaler)."""
    m = np.asarray(matrix, np.float64).copy()
    m[:, :2] *= scale
    return m
