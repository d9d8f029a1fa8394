"""``age_modifier``: each chosen face made younger or older (``age_modifier`` settings; docs/processors.md
§5). ``age_modifier.direction=0`` leaves the processor out: the face untouched.

- **fran**: the face framed at ffhq_512 × 1024; its age estimated by FairFace on its arcface_112_v2 crop at
  224 of the frame as it came into this run (the target's own face, as FaceFusion classifies the detected
  face); fed ``[age, age + direction] / 100``; the output is the final image, pasted with the 1024 crop's box
  mask (padding 0).
- **styleganex_age**: the face framed at styleganex_384 with its landmarks scaled 0.875 about the nose tip,
  at 1024 (FaceFusion's 384 "extend" E, pasted with E·1024/384: the same matrix); the model is fed the 256
  ffhq_512 crop and the 384 extend (both cut from what the frame shows there after the earlier processors)
  and ``−direction / 40``; its output is resized to 1024 (INTER_AREA), given the extend's low-frequency
  colour (``match_frame_color``) and pasted with the 384 extend's box mask resized to 1024.

Masks: pasted under this processor's own box (padding 0) and, where ``mask.types`` has it, the occlusion mask
made on the crop it is fed (fran's 1024 crop; styleganex_age's 256 crop, warped into the 1024 crop by M·A⁻¹,
A: frame -> 256 crop, M: frame -> 1024 crop, the map from the one crop to the other; FaceFusion warps with
A⁻¹·E instead (§5 step 8), which puts the mask elsewhere), as FaceFusion's age modifier; no colour matching
beyond styleganex_age's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import cv2
import numpy as np

from pipeline import families
from pipeline.blend import mask as masks
from pipeline.blend.frame_color import match_frame_color
from pipeline.faces import align
from pipeline.faces.classify import FairFace
from pipeline.families import Family, run_options
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.processors.age_modifier.age import (
    FRAN_SIZE,
    STYLEGANEX_CROP,
    STYLEGANEX_EXTEND,
    STYLEGANEX_ZOOM,
    Fran,
    StyleGanExAge,
    fran_direction,
    styleganex_direction,
)
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original
from pipeline.processors.crops import FaceItem, FaceMasks, compose, frame_items
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType, Matrix, Template

CROP_TEMPLATE: Template = "ffhq_512"  # fran's crop, and styleganex_age's 256 one
EXTEND_TEMPLATE: Template = "styleganex_384"

FAMILIES: dict[str, Family] = {
    "fran": Family("age_modifier", lambda name, s: Fran(name, **run_options(s))),
    "styleganex_age": Family("age_modifier", lambda name, s: StyleGanExAge(name, **run_options(s))),
}


class AgeModifierProcessor(FaceProcessorBase):
    name: ClassVar[str] = "age_modifier"
    section: ClassVar[str] = "age_modifier"
    title: ClassVar[str] = "Age modifier"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "age"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"occlusion"})
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        """The model, and the one that estimates each face's age where it takes an age (fran: fairface)."""
        entry = catalog.get(settings.age_modifier.model)
        return (entry.name, entry.classifier) if entry.classifier else (entry.name,)

    @classmethod
    def active(cls, settings: Settings) -> bool:
        """False at ``direction=0``: no age change asked for, the processor is left out."""
        return settings.age_modifier.direction != 0

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.direction = settings.age_modifier.direction
        self.model: Fran | StyleGanExAge = families.build(models[0], settings, "age_modifier", FAMILIES)
        self.classifier: FairFace | None = (families.build(models[1], settings, "classifier")
                                            if len(models) > 1 else None)
        if isinstance(self.model, StyleGanExAge):  # the extend's box, at the size it is pasted at
            self.box: Mask = np.clip(cv2.resize(masks.box_mask(STYLEGANEX_EXTEND, settings.mask.blur),
                                                (FRAN_SIZE, FRAN_SIZE), interpolation=cv2.INTER_LINEAR),
                                     0.0, 1.0).astype(np.float32)
        else:
            self.box = masks.box_mask(FRAN_SIZE, settings.mask.blur)  # FaceFusion: padding 0

    @property
    def crop_size(self) -> int:
        return FRAN_SIZE

    def sessions(self) -> list[CatalogSession]:
        return [self.model] + ([self.classifier] if self.classifier is not None else [])

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        styleganex = isinstance(self.model, StyleGanExAge)
        template, zoom = (EXTEND_TEMPLATE, STYLEGANEX_ZOOM) if styleganex else (CROP_TEMPLATE, 1.0)
        pairs = frame_items(frames, items, template, FRAN_SIZE, self.box, zoom)
        if not pairs:
            return
        group = [item for _, item in pairs]
        views = [item.result for item in group]
        if isinstance(self.model, StyleGanExAge):
            to_crop = [compose(_crop_matrix(item), align.invert(item.matrix)) for item in group]
            results = self._styleganex(views, to_crop)
        else:
            results = self._fran(pairs, views)
        for item, result in zip(group, results, strict=True):
            item.result = result
        if masks is None:
            return
        if styleganex:
            self._crop_masks(group, views, to_crop, masks)
        else:
            masks.apply(group, self.pastes_under, views)

    def _fran(self, pairs: Sequence[tuple[Frame, FaceItem]], views: Sequence[Frame]) -> list[Frame]:
        assert self.classifier is not None and isinstance(self.model, Fran)
        entry = self.classifier.entry
        assert entry.template is not None
        faces = []
        for frame, item in pairs:
            assert item.face is not None
            faces.append(align.align(frame, item.face.landmarks, entry.template, entry.input_size)[0])
        ages = self.classifier.ages(np.stack(faces))
        return self.model.modify(np.stack(views), [fran_direction(a, self.direction) for a in ages])

    def _styleganex(self, views: Sequence[Frame], to_crop: Sequence[Matrix]) -> list[Frame]:
        assert isinstance(self.model, StyleGanExAge)
        side = (STYLEGANEX_EXTEND, STYLEGANEX_EXTEND)
        extends = np.stack([_resize(v, side) for v in views])
        crops = np.stack([_warp(v, m) for v, m in zip(views, to_crop, strict=True)])
        raw = self.model.modify(crops, extends, styleganex_direction(self.direction))
        return [match_frame_color(extend, _resize(out, (FRAN_SIZE, FRAN_SIZE)))
                for extend, out in zip(extends, raw, strict=True)]

    def _crop_masks(self, group: Sequence[FaceItem], views: Sequence[Frame], to_crop: Sequence[Matrix],
                    masks: FaceMasks) -> None:
        """The masks of ``mask.types`` made on each face's 256 crop, warped into its 1024 crop."""
        ones = np.ones((STYLEGANEX_CROP, STYLEGANEX_CROP), np.float32)
        probes = []
        for item, view, m in zip(group, views, to_crop, strict=True):
            crop = _warp(view, m)
            probes.append(FaceItem(_crop_matrix(item), crop, crop, item.face, box=ones))
        masks.apply(probes, self.pastes_under)
        for item, probe, m in zip(group, probes, to_crop, strict=True):
            if probe.mask is not None:
                back = cv2.warpAffine(probe.mask, align.invert(m), (FRAN_SIZE, FRAN_SIZE),
                                      flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
                item.mask = np.minimum(self.box, np.clip(back, 0.0, 1.0)).astype(np.float32)


def _crop_matrix(item: FaceItem) -> Matrix:
    """Frame -> styleganex_age's 256 ffhq_512 crop of ``item``'s face."""
    assert item.face is not None
    return align.estimate(item.face.landmarks, CROP_TEMPLATE, STYLEGANEX_CROP)


def _warp(view: Frame, matrix: Matrix) -> Frame:
    """The 256 crop cut from the 1024 view (``matrix``: 1024 crop -> 256 crop)."""
    return np.asarray(cv2.warpAffine(view, matrix, (STYLEGANEX_CROP, STYLEGANEX_CROP), flags=cv2.INTER_LINEAR,
                                     borderMode=cv2.BORDER_REPLICATE), np.uint8)


def _resize(image: Frame, side: tuple[int, int]) -> Frame:
    return np.asarray(cv2.resize(image, side, interpolation=cv2.INTER_AREA), np.uint8)
