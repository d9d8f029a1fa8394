"""``face_enhancer``: each chosen face restored by a face-restoration model (``enhancer`` settings).

The face is framed at the enhancer's own template and size (after a swap: fed the swapped face as the frame
will show it), every face of a batch restored in one run, mixed with its input by ``face_enhancer.blend`` and
pasted under its own box mask (``mask.blur``, no padding) and the occlusion mask where chosen, as FaceFusion's
enhancer; no colour matching. ``face_enhancer.model=none`` (or a blend of 0) leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.blend import mask as masks
from pipeline.families import Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items
from pipeline.processors.face_enhancer.base import Enhancer
from pipeline.processors.face_enhancer.onnx import OnnxEnhancer
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType


def _enhancer(name: str, s: Settings) -> OnnxEnhancer:
    return OnnxEnhancer(name, fidelity=s.face_enhancer.fidelity, **run_options(s))


FAMILIES: dict[str, Family] = {family: Family("enhancer", _enhancer)
                               for family in ("gfpgan", "gpen", "restoreformer", "codeformer")}


class FaceEnhancerProcessor(FaceProcessorBase):
    name: ClassVar[str] = "face_enhancer"
    section: ClassVar[str] = "face_enhancer"
    title: ClassVar[str] = "Face enhancer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "enhance"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"occlusion"})
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return (settings.face_enhancer.model,) if settings.face_enhancer.model != "none" else ()

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.face_enhancer.model != "none" and settings.face_enhancer.blend > 0

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.enhancer: Enhancer = families.build(models[0], settings, "enhancer", FAMILIES)
        self.box: Mask = masks.box_mask(self.enhancer.crop_size, settings.mask.blur)  # FaceFusion: padding 0

    @property
    def crop_size(self) -> int:
        return self.enhancer.crop_size

    def sessions(self) -> list[CatalogSession]:
        runner = getattr(self.enhancer, "runner", self.enhancer)
        return [runner] if isinstance(runner, CatalogSession) else []

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        pairs = frame_items(frames, items, self.enhancer.template, self.enhancer.crop_size, self.box)
        if not pairs:
            return
        group = [item for _, item in pairs]
        fed = [item.result for item in group]
        restored = self.enhancer.enhance(np.stack(fed), self.settings.face_enhancer.blend)
        for item, result in zip(group, restored, strict=True):
            item.result = result
        if masks is not None:
            masks.apply(group, self.pastes_under, fed)
