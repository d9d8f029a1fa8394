"""The per-crop stages: align and swap, paste masks, enhance, colour-match and paste back.

Every stage but the last works on all faces of all frames of a batch at once (one swapper batch per
source identity, one occluder/parser batch, one enhancer batch); ``blend`` is plain image work per frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from pipeline.blend import color, paste
from pipeline.blend import mask as masks
from pipeline.blend.mouth import mouth_mask
from pipeline.errors import UserError
from pipeline.faces import align
from pipeline.process.models import FaceModels
from pipeline.swap import pixel_boost
from pipeline.types import Face, Frame, Mask, Matrix, Template

SUPPORT_BLUR = 0.1  # feather of the swapped crop's own footprint when it is re-framed for the enhancer


@dataclass
class Swapped:
    """One face of one frame after the swapper: where it came from and what replaces it."""

    matrix: np.ndarray  # frame -> crop
    crop: Frame  # the aligned target crop
    result: Frame  # the swapped crop
    face: Face | None = None  # the target face it replaces
    mask: Mask | None = None  # crop-space paste mask; None = the plain box mask


def compose(outer: Matrix, inner: Matrix) -> Matrix:
    """The 2×3 affine ``outer ∘ inner``."""
    a = np.vstack([np.asarray(outer, np.float64), [0, 0, 1]])
    b = np.vstack([np.asarray(inner, np.float64), [0, 0, 1]])
    return (a @ b)[:2]


def boost_factor(models: FaceModels) -> int:
    """How many swapper crops make one side of the boosted crop (``swapper.pixel_boost``; 1: none)."""
    boost, swapper = models.settings.swapper.pixel_boost, models.swapper
    if not boost:
        return 1
    if swapper.builtin:
        models.notices.append("swapper.pixel_boost applies to neural swappers only; "
                              "the classic swapper ignores it")
        return 1
    size = swapper.crop_size
    if boost <= size:
        return 1
    if boost % size:
        choices = ", ".join(str(size * k) for k in (2, 4, 8) if size * k <= 1024)
        raise UserError(f"swapper.pixel_boost={boost} is not a multiple of {models.swapper_name}'s size "
                        f"{size}: choose {choices} or 0")
    return pixel_boost.factor(size, boost)


class CropStages:
    """The crop geometry of one swap (``crop_size``, the box ``mask``) and the stages that work on crops."""

    def __init__(self, models: FaceModels) -> None:
        s = models.settings
        self.models = models
        self.boost = boost_factor(models)
        self.crop_size = models.swapper.crop_size * self.boost
        self.mask = masks.box_mask(self.crop_size, s.mask.blur, s.mask.padding)

    def swap(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]], identities: Sequence[object],
             identity_of: Callable[[Face], int]) -> list[list[Swapped]]:
        """Align and swap every given face, then set the paste masks. All crops of all frames go through the
        swapper as one batch per identity (``identities[identity_of(face)]``; pixel boost: all sub-images
        together)."""
        swapper, size = self.models.swapper, self.crop_size
        items: list[list[Swapped]] = [[] for _ in frames]
        groups: dict[int, list[Swapped]] = {}
        for i, (frame, frame_faces) in enumerate(zip(frames, faces, strict=True)):
            for face in frame_faces:
                m = align.estimate(face.landmarks, swapper.template, size)
                crop = align.warp(frame, m, size)
                item = Swapped(m, crop, crop, face)
                items[i].append(item)
                groups.setdefault(identity_of(face), []).append(item)
        for who, group in groups.items():
            crops = np.stack([g.crop for g in group])
            swapped = pixel_boost.boosted_swap(swapper, crops, identities[who], self.boost)
            for item, result in zip(group, swapped, strict=True):
                item.result = result
        flat = [it for row in items for it in row]
        if flat:
            self.masks(flat)
        return items

    def masks(self, items: Sequence[Swapped]) -> None:
        """Set each item's paste mask: the minimum of the chosen mask types (None: the plain box)."""
        s, models = self.models.settings.mask, self.models
        if s.types == ("box",):
            return
        size = self.crop_size
        parts: list[np.ndarray] = [np.broadcast_to(
            self.mask if "box" in s.types else masks.box_mask(size, 0.0), (len(items), size, size))]
        crops = np.stack([it.crop for it in items])
        if models.occluder is not None:
            parts.append(models.occluder.masks(crops))
        if models.parser is not None:
            parts.append(models.parser.masks(crops, s.regions))
        if "mouth" in s.types:
            parts.append(np.stack([self._mouth(it) for it in items]))
        combined = parts[0].astype(np.float32)
        for part in parts[1:]:
            combined = np.minimum(combined, part)
        for item, m in zip(items, combined, strict=True):
            item.mask = np.ascontiguousarray(m)

    def _mouth(self, item: Swapped) -> Mask:
        face = item.face
        if face is None:
            return np.ones((self.crop_size, self.crop_size), np.float32)
        five = align.transform_points(face.landmarks, item.matrix)
        full = None if face.landmarks68 is None else align.transform_points(face.landmarks68, item.matrix)
        return mouth_mask(self.crop_size, five, full)

    @property
    def enhances(self) -> bool:
        """Whether :meth:`enhance` changes anything (an enhancer is set and its blend is above 0)."""
        return self.models.enhancer is not None and self.models.settings.enhancer.blend > 0

    def enhance(self, frames: Sequence[Frame], items: Sequence[Swapped]) -> None:
        """Re-frame each swapped face (``items[i]`` of ``frames[i]``) to the enhancer's template and size,
        restore all of them in one batch, and make the items paste from there (the swap's own footprint and
        masks carried along)."""
        enhancer = self.models.enhancer
        if enhancer is None or not self.enhances or not items:
            return
        e_size = enhancer.crop_size
        support = masks.box_mask(self.crop_size, SUPPORT_BLUR)
        composites, targets, masks_e, matrices = [], [], [], []
        for frame, item in zip(frames, items, strict=True):
            m_e, composite, target, mask_e = self._reframe(frame, item, enhancer.template, e_size, support)
            composites.append(composite)
            targets.append(target)
            masks_e.append(mask_e)
            matrices.append(m_e)
        restored = enhancer.enhance(np.stack(composites), self.models.settings.enhancer.blend)
        for item, m_e, target, result, m in zip(items, matrices, targets, restored, masks_e, strict=True):
            item.matrix, item.crop, item.result, item.mask = m_e, target, result, m

    def _reframe(self, frame: Frame, item: Swapped, template: Template, e_size: int,
                 support: Mask) -> tuple[Matrix, Frame, Frame, Mask]:
        """(frame -> enhancer crop, the swapped face over the target there, the target crop, the mask)."""
        landmarks = item.face.landmarks if item.face is not None else align.transform_points(
            align.template_points(self.models.swapper.template, self.crop_size), align.invert(item.matrix))
        m_e = align.estimate(landmarks, template, e_size)
        to_e = compose(m_e, align.invert(item.matrix))  # swap crop -> enhancer crop
        target = align.warp(frame, m_e, e_size)
        swapped = cv2.warpAffine(item.result, to_e, (e_size, e_size), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REPLICATE)
        inside = cv2.warpAffine(np.ascontiguousarray(support), to_e, (e_size, e_size), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        paste_mask = self.mask if item.mask is None else item.mask
        own = cv2.warpAffine(np.ascontiguousarray(paste_mask, np.float32), to_e, (e_size, e_size),
                             flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        base = target.astype(np.float32)
        mixed = base + (swapped.astype(np.float32) - base) * inside[..., None]
        composite = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
        return m_e, composite, target, np.clip(np.minimum(own, inside), 0.0, 1.0).astype(np.float32)

    def blend(self, frame: Frame, items: Sequence[Swapped], inplace: bool = False) -> Frame:
        """Colour-match each swapped crop to its target crop and paste it back into ``frame``.

        ``inplace`` writes into ``frame`` (the video render owns its decoded frames) instead of a copy.
        """
        s = self.models.settings
        poisson = s.swapper.poisson and not self.models.swapper.builtin
        for item in items:
            result = item.result
            m = self.mask if item.mask is None else item.mask
            if s.color.method != "none":
                result = color.transfer(result, item.crop, s.color.method, s.color.strength, m)
            frame = paste.paste_back(frame, result, item.matrix, m, poisson=poisson, inplace=inplace)
        return frame
