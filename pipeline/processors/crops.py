"""What the face processors share: the face item (``Swapped``), framing a face at a processor's template, the
paste masks, and the blend (colour-match and paste back).

An item starts unframed (only its face); the first face processor of ``processors.order`` aligns it from the
frame at its own template and size, each later one re-frames it to its own (the earlier result composited over
the frame there, :func:`reframe`). The masks are set on the first processor's crop (:class:`FaceMasks`: all
faces of a batch in one occluder / parser run); ``blend`` is plain image work per frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np

from pipeline.blend import color, paste
from pipeline.blend import mask as masks
from pipeline.blend.mouth import mouth_mask
from pipeline.faces import align
from pipeline.settings import Settings
from pipeline.types import Face, Frame, Mask, Matrix, Template

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser

SUPPORT_BLUR = 0.1  # feather of the swapped crop's own footprint when it is re-framed for the enhancer


@dataclass
class Swapped:
    """One face of one frame on its way through the face processors: where it came from and what replaces it.

    ``matrix``/``crop``/``result`` are None until the first face processor frames it (:meth:`unframed`)."""

    matrix: np.ndarray  # frame -> crop
    crop: Frame  # the aligned target crop
    result: Frame  # what replaces it (the swapped, enhanced… crop)
    face: Face | None = None  # the target face it replaces
    mask: Mask | None = None  # crop-space paste mask; None = the plain box mask
    box: Mask | None = None  # the plain box mask of its crop (the paste mask where ``mask`` is None)

    @classmethod
    def unframed(cls, face: Face) -> Swapped:
        return cls(None, None, None, face)  # type: ignore[arg-type]

    @property
    def framed(self) -> bool:
        return self.matrix is not None

    @property
    def paste_mask(self) -> Mask:
        mask = self.mask if self.mask is not None else self.box
        assert mask is not None, "an unframed item has no mask"
        return mask


def compose(outer: Matrix, inner: Matrix) -> Matrix:
    """The 2×3 affine ``outer ∘ inner``."""
    a = np.vstack([np.asarray(outer, np.float64), [0, 0, 1]])
    b = np.vstack([np.asarray(inner, np.float64), [0, 0, 1]])
    return (a @ b)[:2]


def frame_items(frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], template: Template, size: int,
                box: Mask, scale: float = 1.0) -> list[tuple[Frame, Swapped]]:
    """Frame every item at ``template`` × ``size`` (see the module docstring); the (frame, item) pairs, flat.

    ``box``: the plain box mask at this size, the paste mask of an item framed here from the frame.
    ``scale``: the landmarks scaled about the nose tip first (> 1 zooms out: the face editor's 1.5)."""
    pairs: list[tuple[Frame, Swapped]] = []
    for frame, row in zip(frames, items, strict=True):
        for item in row:
            if item.framed:
                m, composite, target, mask = reframe(frame, item, template, size, scale)
                item.matrix, item.crop, item.result, item.mask, item.box = m, target, composite, mask, box
            else:
                assert item.face is not None
                item.matrix = _estimate(item.face, template, size, scale)
                item.crop = item.result = align.warp(frame, item.matrix, size)
                item.box = box
            pairs.append((frame, item))
    return pairs


def _estimate(face: Face, template: Template, size: int, scale: float) -> Matrix:
    """Frame -> crop for ``face`` at ``template``, its landmarks scaled by ``scale`` about the nose tip."""
    points = np.asarray(face.landmarks, np.float64).reshape(-1, 2)
    if scale != 1.0:
        points = (points - points[2]) * scale + points[2]
    return align.estimate(points, template, size)


def reframe(frame: Frame, item: Swapped, template: Template, size: int,
            scale: float = 1.0) -> tuple[Matrix, Frame, Frame, Mask]:
    """(frame -> the new crop, the item's result over the target there, the target crop, the mask there)."""
    crop_size = item.crop.shape[0]
    support = masks.box_mask(crop_size, SUPPORT_BLUR)
    assert item.face is not None
    m_e = _estimate(item.face, template, size, scale)
    to_e = compose(m_e, align.invert(item.matrix))  # old crop -> new crop
    target = align.warp(frame, m_e, size)
    moved = cv2.warpAffine(item.result, to_e, (size, size), flags=cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_REPLICATE)
    inside = cv2.warpAffine(np.ascontiguousarray(support), to_e, (size, size), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    own = cv2.warpAffine(np.ascontiguousarray(item.paste_mask, np.float32), to_e, (size, size),
                         flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    base = target.astype(np.float32)
    mixed = base + (moved.astype(np.float32) - base) * inside[..., None]
    composite = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    return m_e, composite, target, np.clip(np.minimum(own, inside), 0.0, 1.0).astype(np.float32)


class FaceMasks:
    """The paste masks of ``mask.types`` on a crop: the least of box, occlusion, region, mouth."""

    def __init__(self, settings: Settings, occluder: Occluder | None, parser: FaceParser | None) -> None:
        self.settings = settings.mask
        self.occluder = occluder
        self.parser = parser

    def apply(self, items: Sequence[Swapped]) -> None:
        """Set each (framed) item's paste mask (left None for the plain box)."""
        s = self.settings
        if s.types == ("box",) or not items:
            return
        size = items[0].crop.shape[0]
        box = items[0].paste_mask
        parts: list[np.ndarray] = [np.broadcast_to(
            box if "box" in s.types else masks.box_mask(size, 0.0), (len(items), size, size))]
        crops = np.stack([it.crop for it in items])
        if self.occluder is not None:
            parts.append(self.occluder.masks(crops))
        if self.parser is not None:
            parts.append(self.parser.masks(crops, s.regions))
        if "mouth" in s.types:
            parts.append(np.stack([_mouth(it, size) for it in items]))
        combined = parts[0].astype(np.float32)
        for part in parts[1:]:
            combined = np.minimum(combined, part)
        for item, m in zip(items, combined, strict=True):
            item.mask = np.ascontiguousarray(m)


def _mouth(item: Swapped, size: int) -> Mask:
    face = item.face
    if face is None:
        return np.ones((size, size), np.float32)
    five = align.transform_points(face.landmarks, item.matrix)
    full = None if face.landmarks68 is None else align.transform_points(face.landmarks68, item.matrix)
    return mouth_mask(size, five, full)


def blend(settings: Settings, frame: Frame, items: Sequence[Swapped], *, poisson: bool = False,
          inplace: bool = False) -> Frame:
    """Colour-match each item's result to its target crop and paste it back into ``frame``.

    ``inplace`` writes into ``frame`` (the video render owns its decoded frames) instead of a copy."""
    for item in items:
        if not item.framed:
            continue
        result, m = item.result, item.paste_mask
        if settings.color.method != "none":
            result = color.transfer(result, item.crop, settings.color.method, settings.color.strength, m)
        frame = paste.paste_back(frame, result, item.matrix, m, poisson=poisson, inplace=inplace)
    return frame
