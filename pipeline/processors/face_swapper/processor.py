"""``face_swapper``: each chosen face replaced by the source identity (``swapper`` settings).

The swapper (resolved by the model plan: ``auto`` is an installed model or the classic one) takes the faces
of every frame of a batch at once, one batch per source identity; pixel boost splits a larger crop into the
model's size and swaps the pieces together (swap/pixel_boost.py). The swap is pasted under the box mask and
every other mask type chosen (occlusion on the crop it was fed, region on the swapped face, area, mouth), and
its colours are then matched to the crop it replaced under that mask (``color.method``: the swap's step, so
an enhancer or any later processor works on, and keeps, a colour-matched swap).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.errors import UserError
from pipeline.families import Family, run_options
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original, Sources
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items, swap_box
from pipeline.processors.face_swapper import color, pixel_boost
from pipeline.processors.face_swapper.auto import CLASSIC, CLASSIC_NOTICE, resolve_swapper
from pipeline.processors.face_swapper.classic import ClassicSwapper
from pipeline.processors.face_swapper.neural import InswapperSwapper, NeuralSwapper
from pipeline.processors.face_swapper.swapper import Swapper
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType


def _neural(name: str, s: Settings) -> NeuralSwapper:
    return NeuralSwapper(name, **run_options(s))


FAMILIES: dict[str, Family] = {
    "inswapper": Family("swapper", lambda name, s: InswapperSwapper(name, **run_options(s))),
    "hyperswap": Family("swapper", _neural),
    "simswap": Family("swapper", _neural),
    "ghost": Family("swapper", _neural),
    CLASSIC: Family("swapper", lambda name, s: ClassicSwapper(poisson=s.face_swapper.poisson),
                    code_only=True),
}


def boost_factor(settings: Settings, swapper: Swapper, notices: list[str]) -> int:
    """How many swapper crops make one side of the boosted crop (``face_swapper.pixel_boost``; 1: none)."""
    boost = settings.face_swapper.pixel_boost
    if not boost:
        return 1
    if swapper.builtin:
        notices.append("face_swapper.pixel_boost applies to neural swappers only; the classic swapper "
                       "ignores it")
        return 1
    size = swapper.crop_size
    if boost <= size:
        return 1
    if boost % size:
        choices = ", ".join(str(size * k) for k in (2, 4, 8) if size * k <= 1024)
        raise UserError(f"face_swapper.pixel_boost={boost} is not a multiple of {swapper.name}'s size "
                        f"{size}: choose {choices} or 0")
    return pixel_boost.factor(size, boost)


class FaceSwapperProcessor(FaceProcessorBase):
    name: ClassVar[str] = "face_swapper"
    section: ClassVar[str] = "face_swapper"
    title: ClassVar[str] = "Face swapper"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "swap"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"box", "occlusion", "region", "area", "mouth"})
    needs_sources: ClassVar[bool] = True
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        """The swapper (``auto`` resolved) and its recogniser; the classic swapper has no file."""
        swapper = resolve_swapper(settings.face_swapper.model, settings.execution.providers)
        recogniser = None if swapper == CLASSIC else catalog.get(swapper).recogniser
        return (swapper, *([recogniser] if recogniser else []))

    @classmethod
    def planned(cls, settings: Settings) -> list[str]:
        return [CLASSIC_NOTICE] if cls.models(settings)[0] == CLASSIC else []

    @classmethod
    def resolved(cls, settings: Settings) -> Settings:
        swapper = cls.models(settings)[0]
        if swapper == settings.face_swapper.model:
            return settings
        chosen = settings.face_swapper.model_copy(update={"model": swapper})
        return settings.model_copy(update={"face_swapper": chosen})

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.swapper: Swapper = families.build(models[0], settings, "swapper", FAMILIES)
        self._notices: list[str] = []
        self.boost = boost_factor(settings, self.swapper, self._notices)
        self.size = self.swapper.crop_size * self.boost
        self.box: Mask = swap_box(settings.mask, self.size)
        self.identities: list[object] = []

    @property
    def notices(self) -> list[str]:
        return self._notices

    @property
    def crop_size(self) -> int:
        return self.size

    @property
    def poisson(self) -> bool:
        """Whether the paste is Poisson-blended (``face_swapper.poisson``, for the classic swapper's seam)."""
        return self.settings.face_swapper.poisson and not self.swapper.builtin

    def sessions(self) -> list[CatalogSession]:
        runner = getattr(self.swapper, "runner", self.swapper)
        return [runner] if isinstance(runner, CatalogSession) else []

    def helper_sessions(self) -> list[CatalogSession]:
        recogniser = getattr(self.swapper, "recogniser", None)
        return [recogniser] if isinstance(recogniser, CatalogSession) else []

    def take_sources(self, sources: Sources) -> None:
        """Each group of source faces made one identity (the swapper's embedding, averaged)."""
        self.identities = [self.swapper.prepare_source(list(group)) for group in sources]

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        pairs = frame_items(frames, items, self.swapper.template, self.size, self.box)
        group = [item for _, item in pairs]
        fed = [item.result for item in group]
        groups: dict[int, list[FaceItem]] = {}
        for item in group:
            assert item.face is not None
            groups.setdefault(who.index_of(item.face), []).append(item)
        for identity, faces in groups.items():
            crops = np.stack([g.result for g in faces])
            swapped = pixel_boost.boosted_swap(self.swapper, crops, self.identities[identity], self.boost)
            for item, result in zip(faces, swapped, strict=True):
                item.result = result
        if masks is not None:
            masks.apply(group, self.pastes_under, fed)
        c = self.settings.color
        for item, before in zip(group, fed, strict=True):
            item.poisson = self.poisson
            if c.method != "none":
                item.result = color.transfer(item.result, before, c.method, c.strength, item.paste_mask)
