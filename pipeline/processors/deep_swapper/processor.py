"""``deep_swapper``: each chosen face swapped by a DeepFaceLive DFM model (``deep_swapper`` settings).

The identity is baked into the file, so no source photo is used. docs/processors.md §8.3: the face is framed
at the dfl_whole_face template at the model's resolution, pre-sharpened and run (``deep_swapper.morph`` fed
only to an AMP model); the swapped face is colour-matched to the raw crop
(:func:`~pipeline.blend.frame_color.conditional_match_frame_color`: its own colour step, the only one) and
pasted under the least of the box mask, the DFM's own (the least of its two masks, eroded and blurred:
:func:`.dfm.output_mask`) and the other mask types chosen: occlusion on the crop it was fed, region and area
on the swapped face, as FaceFusion's. A file of your own is ``custom/<stem>``: ``<stem>.dfm`` in the models
folder's ``custom/`` folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.blend.frame_color import conditional_match_frame_color
from pipeline.families import Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items, swap_box
from pipeline.processors.deep_swapper.dfm import DfmModel, output_mask
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType

FAMILIES: dict[str, Family] = {
    "dfm": Family("deep_swapper", lambda name, s: DfmModel(name, **run_options(s))),
}


class DeepSwapperProcessor(FaceProcessorBase):
    name: ClassVar[str] = "deep_swapper"
    section: ClassVar[str] = "deep_swapper"
    title: ClassVar[str] = "Deep swapper"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "deep_swap"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"box", "occlusion", "region", "area", "mouth"})
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return (settings.deep_swapper.model,)

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings.deep_swapper
        self.model: DfmModel = families.build(models[0], settings, "deep_swapper", FAMILIES)
        self.mask_settings = settings.mask
        self._box: Mask | None = None

    @property
    def crop_size(self) -> int:
        return self.model.crop_size

    @property
    def box(self) -> Mask:
        """The box mask at the model's resolution (known once a custom file is read)."""
        if self._box is None:
            self._box = swap_box(self.mask_settings, self.crop_size)
        return self._box

    def sessions(self) -> list[CatalogSession]:
        return [self.model]

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        pairs = frame_items(frames, items, self.model.template, self.crop_size, self.box)
        group = [item for _, item in pairs]
        if not group:
            return
        raw = np.stack([item.result for item in group])  # the target, or the earlier processors' face
        face_masks, celebs, celeb_masks = self.model.swap(raw, self.settings.morph / 100.0)
        for item, crop, celeb, a, b in zip(group, raw, celebs, face_masks, celeb_masks, strict=True):
            item.result = conditional_match_frame_color(crop, celeb)
            item.mask = np.minimum(self.box, output_mask(a, b)).astype(np.float32)
        if masks is not None:
            masks.apply(group, self.pastes_under, list(raw))  # region and area on the swapped face
