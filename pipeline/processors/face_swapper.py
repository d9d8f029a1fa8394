"""``face_swapper``: each chosen face replaced by the source identity (``swapper`` settings).

The swapper (resolved by the model plan: ``auto`` is an installed model or the classic one) takes the faces
of every frame of a batch at once, one batch per source identity; pixel boost splits a larger crop into the
model's size and swaps the pieces together (swap/pixel_boost.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.blend import mask as masks
from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities
from pipeline.processors.crops import FaceMasks, Swapped, frame_items
from pipeline.settings import Settings
from pipeline.swap import pixel_boost
from pipeline.swap.base import Swapper
from pipeline.types import Frame, Mask, ProcessorName


def boost_factor(settings: Settings, swapper: Swapper, notices: list[str]) -> int:
    """How many swapper crops make one side of the boosted crop (``swapper.pixel_boost``; 1: none)."""
    boost = settings.swapper.pixel_boost
    if not boost:
        return 1
    if swapper.builtin:
        notices.append("swapper.pixel_boost applies to neural swappers only; the classic swapper ignores it")
        return 1
    size = swapper.crop_size
    if boost <= size:
        return 1
    if boost % size:
        choices = ", ".join(str(size * k) for k in (2, 4, 8) if size * k <= 1024)
        raise UserError(f"swapper.pixel_boost={boost} is not a multiple of {swapper.name}'s size "
                        f"{size}: choose {choices} or 0")
    return pixel_boost.factor(size, boost)


class FaceSwapperProcessor(FaceProcessorBase):
    name: ClassVar[ProcessorName] = "face_swapper"
    section: ClassVar[str] = "swapper"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "swap"

    @classmethod
    def models(cls, settings: Settings, swapper: str) -> tuple[str, ...]:
        if families.code_only(swapper):
            return ()
        recogniser = catalog.get(swapper).recogniser
        return (swapper, *([recogniser] if recogniser else []))

    def __init__(self, settings: Settings, swapper: str, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.swapper: Swapper = families.build(swapper, settings, "swapper")
        self._notices: list[str] = []
        self.boost = boost_factor(settings, self.swapper, self._notices)
        self.size = self.swapper.crop_size * self.boost
        self.box: Mask = masks.box_mask(self.size, settings.mask.blur, settings.mask.padding)

    @property
    def notices(self) -> list[str]:
        return self._notices

    @property
    def crop_size(self) -> int:
        return self.size

    @property
    def poisson(self) -> bool:
        """Whether the paste is Poisson-blended (``swapper.poisson``, for the classic swapper's seam)."""
        return self.settings.swapper.poisson and not self.swapper.builtin

    def sessions(self) -> list[CatalogSession]:
        runner = getattr(self.swapper, "runner", self.swapper)
        return [runner] if isinstance(runner, CatalogSession) else []

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int]) -> None:
        pairs = frame_items(frames, items, self.swapper.template, self.size, self.box)
        groups: dict[int, list[Swapped]] = {}
        for _, item in pairs:
            assert item.face is not None
            groups.setdefault(who.index_of(item.face), []).append(item)
        for identity, group in groups.items():
            crops = np.stack([g.result for g in group])
            swapped = pixel_boost.boosted_swap(self.swapper, crops, who.prepared[identity], self.boost)
            for item, result in zip(group, swapped, strict=True):
                item.result = result
        if masks is not None:
            masks.apply([item for _, item in pairs])
