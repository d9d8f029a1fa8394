"""What the face processors share: the face item (``FaceItem``), framing a face at a processor's template, the
paste masks, and the blend (paste back).

One rule for every face processor: it pastes its output under its own paste mask, once, and every pixel
outside that mask is what the processors before it made. An item starts unframed (only its face); the first
face processor of a run of ``processors.order`` aligns it from the frame at its own template and size. A later
one keeps the earlier processors' pastes (``below``: each one's matrix, result and mask, in order) and frames
the face again at its own template and size, where it is fed what the frame will show after those pastes
(:func:`view`). The blend then pastes each layer in turn straight from its own crop into the frame (each pixel
resampled once from the crop that made it; a pixel outside a layer's mask keeps exactly what was there).

Each processor's paste mask is its own (a box, the lip syncer's lower face, a DFM's mask) and those of the
user's ``mask.types`` it pastes under (its ``pastes_under``, as FaceFusion's processor of that name does):
:class:`FaceMasks` makes them on the crop it was fed (occlusion) or on its output (region), or from the face's
landmarks (area, mouth).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cv2
import numpy as np

from pipeline.blend import area, paste
from pipeline.blend import mask as masks
from pipeline.blend.mouth import mouth_mask
from pipeline.faces import align
from pipeline.settings import MaskSettings, Settings
from pipeline.types import Face, FaceArea, Frame, Mask, MaskType, Matrix, Template

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser


@dataclass
class Layer:
    """One face processor's paste: frame -> its crop, what it pastes there and under which mask."""

    matrix: Matrix
    result: Frame
    mask: Mask
    poisson: bool = False  # Poisson-blended first (the face swapper's ``face_swapper.poisson``)


@dataclass
class FaceItem:
    """One face of one frame on its way through the face processors: where it came from and what replaces it.

    ``matrix``/``crop``/``result`` are None until the first face processor frames it (:meth:`unframed`);
    then they are the current processor's: its crop of the frame, what it pastes, ``mask`` (None: its box)."""

    matrix: np.ndarray  # frame -> crop
    crop: Frame  # the aligned crop of the frame as this run of processors found it
    result: Frame  # what replaces it (the processor's input until it has run: the earlier pastes' view)
    face: Face | None = None  # the target face it replaces
    mask: Mask | None = None  # crop-space paste mask; None = the plain box mask
    box: Mask | None = None  # the processor's box mask of its crop (the paste mask where ``mask`` is None)
    below: list[Layer] = field(default_factory=list)  # the earlier processors' pastes of this run, in order
    poisson: bool = False  # the paste is Poisson-blended first (the classic swapper's seam, at the swap)

    @classmethod
    def unframed(cls, face: Face) -> FaceItem:
        return cls(None, None, None, face)  # type: ignore[arg-type]

    @property
    def framed(self) -> bool:
        return self.matrix is not None

    @property
    def paste_mask(self) -> Mask:
        mask = self.mask if self.mask is not None else self.box
        assert mask is not None, "an unframed item has no mask"
        return mask

    def layers(self) -> list[Layer]:
        """Every paste of this face, in order: the earlier processors' and the current one's."""
        if not self.framed:
            return []
        return [*self.below, Layer(self.matrix, self.result, self.paste_mask, self.poisson)]


def compose(outer: Matrix, inner: Matrix) -> Matrix:
    """The 2×3 affine ``outer ∘ inner``."""
    a = np.vstack([np.asarray(outer, np.float64), [0, 0, 1]])
    b = np.vstack([np.asarray(inner, np.float64), [0, 0, 1]])
    return (a @ b)[:2]


def frame_items(frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], template: Template, size: int,
                box: Mask, scale: float = 1.0) -> list[tuple[Frame, FaceItem]]:
    """Frame every item at ``template`` × ``size`` (see the module docstring); the (frame, item) pairs, flat.

    After it an item's ``crop`` is the frame's crop there and its ``result`` what the processor is fed (the
    crop itself for the first of a run, else the earlier pastes over it); ``mask`` is None and ``box`` this
    processor's box mask at this size. ``scale``: the landmarks scaled about the nose tip first (> 1 zooms
    out: the face editor's 1.5)."""
    pairs: list[tuple[Frame, FaceItem]] = []
    for frame, row in zip(frames, items, strict=True):
        for item in row:
            assert item.face is not None
            earlier = item.layers()
            m = _estimate(item.face, template, size, scale)
            target = align.warp(frame, m, size)
            item.matrix, item.crop, item.mask, item.box, item.poisson = m, target, None, box, False
            item.below = earlier
            item.result = view(target, m, earlier) if earlier else target
            pairs.append((frame, item))
    return pairs


def _estimate(face: Face, template: Template, size: int, scale: float) -> Matrix:
    """Frame -> crop for ``face`` at ``template``, its landmarks scaled by ``scale`` about the nose tip."""
    points = np.asarray(face.landmarks, np.float64).reshape(-1, 2)
    if scale != 1.0:
        points = (points - points[2]) * scale + points[2]
    return align.estimate(points, template, size)


def view(target: Frame, matrix: Matrix, layers: Sequence[Layer]) -> Frame:
    """What the frame will show in the crop ``target`` (cut by ``matrix``) once ``layers`` are pasted: each
    layer's result over it by its mask, moved from its crop into this one."""
    size = target.shape[0]
    out = target.astype(np.float32)
    for layer in layers:
        to_here = compose(matrix, align.invert(layer.matrix))  # its crop -> this crop
        moved: np.ndarray = layer.result
        weight: np.ndarray = np.asarray(layer.mask, np.float32)
        if layer.result.shape[0] != size or not np.allclose(to_here, np.eye(2, 3), atol=1e-9):
            moved = cv2.warpAffine(layer.result, to_here, (size, size), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_REPLICATE)
            weight = cv2.warpAffine(np.ascontiguousarray(weight), to_here, (size, size),
                                    flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        out += (moved.astype(np.float32) - out) * np.clip(weight, 0.0, 1.0)[..., None]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def swap_box(settings: MaskSettings, size: int) -> Mask:
    """A swapper's own box: ``mask.blur`` and ``mask.padding`` where ``box`` is among ``mask.types``, else a
    hard-edged box (the crop's edge only)."""
    s = settings
    return masks.box_mask(size, s.blur, s.padding) if "box" in s.types else masks.box_mask(size, 0.0)


class FaceMasks:
    """The user's ``mask.types`` on a processor's crops: occlusion, region, area, mouth (each made where its
    processor in FaceFusion makes it), combined with each item's own mask by the least."""

    def __init__(self, settings: Settings, occluder: Occluder | None, parser: FaceParser | None) -> None:
        self.settings = settings.mask
        self.occluder = occluder
        self.parser = parser

    def apply(self, items: Sequence[FaceItem], kinds: Collection[MaskType],
              fed: Sequence[Frame] | None = None) -> None:
        """Each item's paste mask: its own (``mask``, else its box) and the least of the ``mask.types`` among
        ``kinds`` (what the processor pastes under): occlusion on ``fed`` (the crops the processor was fed;
        default: the frame's crops), region on its output (``result``), area and mouth from the landmarks."""
        s = self.settings
        wanted = [t for t in s.types if t in kinds and t != "box"]
        if not wanted or not items:
            return
        size = items[0].crop.shape[0]
        parts: list[np.ndarray] = []
        if "occlusion" in wanted and self.occluder is not None:
            parts.append(self.occluder.masks(np.stack(fed if fed is not None else [it.crop for it in items])))
        if "region" in wanted and self.parser is not None:
            parts.append(self.parser.masks(np.stack([it.result for it in items]), s.regions))
        if "area" in wanted:
            parts.append(np.stack([_area(it, size, s.areas) for it in items]))
        if "mouth" in wanted:
            parts.append(np.stack([_mouth(it, size) for it in items]))
        for i, item in enumerate(items):
            least = np.asarray(item.paste_mask, np.float32)
            for part in parts:
                least = np.minimum(least, part[i])
            item.mask = np.ascontiguousarray(least, np.float32)


def _landmarks(item: FaceItem) -> tuple[np.ndarray, np.ndarray | None]:
    """The face's five and (where known) 68 points in the item's crop."""
    face = item.face
    assert face is not None
    five = align.transform_points(face.landmarks, item.matrix)
    full = None if face.landmarks68 is None else align.transform_points(face.landmarks68, item.matrix)
    return five, full


def _area(item: FaceItem, size: int, areas: Sequence[FaceArea]) -> Mask:
    if item.face is None:
        return np.ones((size, size), np.float32)
    five, full = _landmarks(item)
    return area.area_mask(size, areas, five, full)


def _mouth(item: FaceItem, size: int) -> Mask:
    if item.face is None:
        return np.ones((size, size), np.float32)
    five, full = _landmarks(item)
    return mouth_mask(size, five, full)


def blend(frame: Frame, items: Sequence[FaceItem], *, inplace: bool = False) -> Frame:
    """Paste every layer of each item back into ``frame``, in order (see the module docstring).

    ``inplace`` writes into ``frame`` (the video render owns its decoded frames) instead of a copy."""
    out = frame if inplace else frame.copy()
    for item in items:
        for layer in item.layers():
            paste.paste_back(out, layer.result, layer.matrix, layer.mask, poisson=layer.poisson, inplace=True)
    return out
