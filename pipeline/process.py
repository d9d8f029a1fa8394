"""The per-frame face-swap work, batched across frames: detect -> select -> align -> swap -> masks -> enhance
-> colour -> paste.

:class:`FaceProcessor` is built once per job from the validated settings and the source images, keeps its
models warm, and processes lists of frames. The video renderer calls its stages separately (``detect``,
``select``, ``swap``, ``blend``) so that tracking can run between detection and swapping. Everything
model-driven after the swap (occlusion and region masks, the enhancer) runs inside ``swap`` on all
faces of all frames of a batch at once; ``blend`` is plain image work per frame.

With ``selector.mapping`` each source image is its own identity, swapped onto the person whose
reference image has the same position (faces carry the identity index, see faces.mapping).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from pipeline.blend import color, paste
from pipeline.blend import mask as masks
from pipeline.blend.mouth import mouth_mask
from pipeline.enhance.base import Enhancer
from pipeline.enhance.registry import make_enhancer
from pipeline.errors import NoFaceFound, UserError
from pipeline.faces import align, mapping
from pipeline.faces import select as selection
from pipeline.faces.base import Recogniser
from pipeline.faces.registry import make_detector, make_recogniser
from pipeline.image import output_format, read_image, write_image
from pipeline.models import catalog, store
from pipeline.provenance import provenance_tag
from pipeline.settings import Settings
from pipeline.swap import pixel_boost
from pipeline.swap.registry import make_swapper, resolve_name
from pipeline.types import Embedding, Face, Frame, Mask, Matrix

log = logging.getLogger(__name__)

SUPPORT_BLUR = 0.1  # feather of the swapped crop's own footprint when it is re-framed for the enhancer


@dataclass
class Source:
    label: str
    frame: Frame
    face: Face


@dataclass
class Swapped:
    """One face of one frame after the swapper: where it came from and what replaces it."""

    matrix: np.ndarray  # frame -> crop
    crop: Frame  # the aligned target crop
    result: Frame  # the swapped crop
    face: Face | None = None  # the target face it replaces
    mask: Mask | None = None  # crop-space paste mask; None = the plain box mask


def _compose(outer: Matrix, inner: Matrix) -> Matrix:
    """The 2×3 affine ``outer ∘ inner``."""
    a = np.vstack([np.asarray(outer, np.float64), [0, 0, 1]])
    b = np.vstack([np.asarray(inner, np.float64), [0, 0, 1]])
    return (a @ b)[:2]


@dataclass
class FaceProcessor:
    settings: Settings
    sources: Sequence[Path | str | Frame]
    notices: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        s = self.settings
        providers, threads = s.execution.providers, s.execution.threads
        self.detector = make_detector(s.detector, providers, threads)
        self.swapper_name, notice = resolve_name(s.swapper.model, providers)
        if notice:
            self.notices.append(notice)
        self.swapper = make_swapper(s.swapper, providers, threads, name=self.swapper_name)
        self._recogniser: Recogniser | None = None
        self.source_faces = [self._source_face(src, i) for i, src in enumerate(self.sources)]
        if not self.source_faces:
            raise UserError("no source image given")
        self.references: np.ndarray | None = None  # (M, D) mapping references, one per source
        if s.selector.mapping:
            if len(s.selector.mapping) != len(self.source_faces):
                raise UserError(f"selector.mapping names {len(s.selector.mapping)} reference image(s) but "
                                f"{len(self.source_faces)} source image(s) were given: give one reference per source")
            self.identities = [self.swapper.prepare_source([(src.frame, src.face)]) for src in self.source_faces]
            refs = [self._source_face(r, i, role="reference") for i, r in enumerate(s.selector.mapping)]
            self.references = np.stack([self._embed(r.frame, [r.face])[0] for r in refs])
        else:
            self.identities = [self.swapper.prepare_source([(src.frame, src.face) for src in self.source_faces])]
        self.identity = self.identities[0]
        self.reference: Embedding | None = None
        if s.selector.mode == "reference" and not s.selector.mapping:
            if not s.selector.reference:
                raise UserError("selector.mode=reference needs selector.reference=IMAGE (a photo of the person to replace)")
            ref = self._source_face(s.selector.reference, -1, role="reference")
            self.reference = self._embed(ref.frame, [ref.face])[0]
        self.boost = self._boost_factor()
        self.crop_size = self.swapper.crop_size * self.boost
        self.mask = masks.box_mask(self.crop_size, s.mask.blur, s.mask.padding)
        self._load_quality_models()

    def _boost_factor(self) -> int:
        boost = self.settings.swapper.pixel_boost
        if not boost:
            return 1
        if self.swapper.builtin:
            self.notices.append("swapper.pixel_boost applies to neural swappers only; the classic swapper ignores it")
            return 1
        size = self.swapper.crop_size
        if boost <= size:
            return 1
        if boost % size:
            raise UserError(f"swapper.pixel_boost={boost} is not a multiple of {self.swapper_name}'s size {size}: "
                            f"choose {', '.join(str(size * k) for k in (2, 4, 8) if size * k <= 1024)} or 0")
        return pixel_boost.factor(size, boost)

    def _load_quality_models(self) -> None:
        s = self.settings
        providers, threads = s.execution.providers, s.execution.threads
        self.enhancer: Enhancer | None = make_enhancer(s.enhancer, providers, threads)
        if self.enhancer is not None:
            store.model_path(catalog.get(self.enhancer.name))  # a missing model fails now, not mid-render
        self.occluder = self.parser = self.landmarker = None
        if "occlusion" in s.mask.types:
            from pipeline.blend.occlusion import Occluder

            store.model_path(catalog.get(s.mask.occluder))
            self.occluder = Occluder(s.mask.occluder, providers, threads)
        if "region" in s.mask.types:
            from pipeline.blend.region import FaceParser, region_classes

            region_classes(s.mask.regions)
            store.model_path(catalog.get(s.mask.parser))
            self.parser = FaceParser(s.mask.parser, providers, threads)
        if s.landmarks.model != "none":
            entry = catalog.get(s.landmarks.model)
            if store.is_installed(entry):
                from pipeline.faces.landmark68 import Landmarker68

                self.landmarker = Landmarker68(s.landmarks.model, providers, threads)
            else:
                self.notices.append(f"landmarks.model={entry.name} is not installed: using the detector's five "
                                    f"points (facestation models fetch {entry.name})")

    # --- models ---------------------------------------------------------------------------------------
    @property
    def recogniser(self) -> Recogniser:
        if self._recogniser is None:
            self._recogniser = make_recogniser("sface", self.settings.execution.providers, self.settings.execution.threads)
        return self._recogniser

    @property
    def models(self) -> list[str]:
        s = self.settings
        used = [s.detector.model, self.swapper_name]
        if s.selector.mode == "reference" or s.selector.mapping:
            used.append("sface")
        for model in (self.landmarker, self.occluder, self.parser, self.enhancer):
            if model is not None:
                used.append(model.name)
        return used

    def _embed(self, frame: Frame, faces: Sequence[Face]) -> np.ndarray:
        from pipeline.faces.recognise import embed_faces

        return embed_faces(self.recogniser, frame, list(faces))

    def _source_face(self, src: Path | str | Frame, index: int, role: str = "source") -> Source:
        if isinstance(src, np.ndarray):
            frame, label = src, f"{role} image {index + 1}"
        else:
            frame, label = read_image(src).bgr, Path(src).name
        faces = self.detector.detect([frame])[0]
        if not faces:
            raise NoFaceFound(f"no face found in the {role} image {label}")
        best = max(faces, key=lambda f: f.area)
        if len(faces) > 1:
            x1, y1, x2, y2 = (int(v) for v in best.box)
            self.notices.append(f"{role} {label} has {len(faces)} faces; using the largest at ({x1},{y1})-({x2},{y2})")
        return Source(label, frame, best)

    # --- stages ---------------------------------------------------------------------------------------
    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        return self.detector.detect(frames)

    def select(self, frame: Frame, faces: list[Face]) -> list[Face]:
        sel = self.settings.selector
        if self.references is not None:
            candidates = [f for f in faces if min(f.box[2] - f.box[0], f.box[3] - f.box[1]) >= sel.min_size]
            if candidates:
                embeddings = self._embed(frame, candidates)
                candidates = [f.with_embedding(e) for f, e in zip(candidates, embeddings, strict=True)]
            chosen = selection.order_faces(mapping.assign(candidates, self.references, sel.reference_distance), sel.order)
        else:
            if sel.mode == "reference" and faces:
                embeddings = self._embed(frame, faces)
                faces = [f.with_embedding(e) for f, e in zip(faces, embeddings, strict=True)]
            chosen = selection.select(faces, sel.mode, sel.order, self.reference, sel.reference_distance, sel.min_size)
        if self.landmarker is not None and chosen:
            chosen = self.landmarker.refine(frame, chosen)
        return chosen

    def swap(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[list[Swapped]]:
        """Align and swap every given face; all crops of all frames go through the swapper as one batch
        per source identity (pixel boost: all sub-images together), then the masks and the enhancer, batched."""
        size, template = self.crop_size, self.swapper.template
        items: list[list[Swapped]] = [[] for _ in frames]
        groups: dict[int, list[Swapped]] = {}
        for i, (frame, frame_faces) in enumerate(zip(frames, faces, strict=True)):
            for face in frame_faces:
                m = align.estimate(face.landmarks, template, size)
                crop = align.warp(frame, m, size)
                item = Swapped(m, crop, crop, face)
                items[i].append(item)
                who = mapping.identity_of(face) if self.references is not None else 0
                groups.setdefault(min(who, len(self.identities) - 1), []).append(item)
        for who, group in groups.items():
            swapped = pixel_boost.boosted_swap(self.swapper, np.stack([g.crop for g in group]), self.identities[who],
                                               self.boost)
            for item, result in zip(group, swapped, strict=True):
                item.result = result
        flat = [it for row in items for it in row]
        if flat:
            self.masks(flat)
            if self.enhancer is not None and self.settings.enhancer.blend > 0:
                owners = [i for i, row in enumerate(items) for _ in row]
                self.enhance([frames[i] for i in owners], flat)
        return items

    def masks(self, items: Sequence[Swapped]) -> None:
        """Set each item's paste mask: the minimum of the chosen mask types (None where it is the plain box)."""
        s = self.settings.mask
        if s.types == ("box",):
            return
        size = self.crop_size
        parts: list[np.ndarray] = [np.broadcast_to(
            self.mask if "box" in s.types else masks.box_mask(size, 0.0), (len(items), size, size))]
        crops = np.stack([it.crop for it in items])
        if self.occluder is not None:
            parts.append(self.occluder.masks(crops))
        if self.parser is not None:
            parts.append(self.parser.masks(crops, s.regions))
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

    def enhance(self, frames: Sequence[Frame], items: Sequence[Swapped]) -> None:
        """Re-frame each swapped face to the enhancer's template and size, restore all of them in one batch,
        and make the items paste from there (the swap's own footprint and masks carried along)."""
        enhancer = self.enhancer
        if enhancer is None or not items:
            return
        e_size = enhancer.crop_size
        support = masks.box_mask(self.crop_size, SUPPORT_BLUR)
        composites, frames_e, masks_e, matrices = [], [], [], []
        for frame, item in zip(frames, items, strict=True):
            landmarks = item.face.landmarks if item.face is not None else align.transform_points(
                align.template_points(self.swapper.template, self.crop_size), align.invert(item.matrix))
            m_e = align.estimate(landmarks, enhancer.template, e_size)
            to_e = _compose(m_e, align.invert(item.matrix))  # swap crop -> enhancer crop
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
            composites.append(np.clip(np.rint(mixed), 0, 255).astype(np.uint8))
            frames_e.append(target)
            masks_e.append(np.clip(np.minimum(own, inside), 0.0, 1.0).astype(np.float32))
            matrices.append(m_e)
        restored = enhancer.enhance(np.stack(composites), self.settings.enhancer.blend)
        for item, m_e, target, result, m in zip(items, matrices, frames_e, restored, masks_e, strict=True):
            item.matrix, item.crop, item.result, item.mask = m_e, target, result, m

    def blend(self, frame: Frame, items: Sequence[Swapped], inplace: bool = False) -> Frame:
        """Colour-match each swapped crop to its target crop and paste it back into ``frame``.

        ``inplace`` writes into ``frame`` (the video render owns its decoded frames) instead of a copy.
        """
        c = self.settings.color
        poisson = self.settings.swapper.poisson and not self.swapper.builtin
        for item in items:
            result = item.result
            m = self.mask if item.mask is None else item.mask
            if c.method != "none":
                result = color.transfer(result, item.crop, c.method, c.strength, m)
            frame = paste.paste_back(frame, result, item.matrix, m, poisson=poisson, inplace=inplace)
        return frame

    def apply(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[Frame]:
        """Swap the given faces in their frames."""
        swapped = self.swap(frames, faces)
        return [self.blend(f, items) for f, items in zip(frames, swapped, strict=True)]

    def process(self, frames: Sequence[Frame]) -> list[Frame]:
        detected = self.detect(frames)
        chosen = [self.select(f, d) for f, d in zip(frames, detected, strict=True)]
        return self.apply(frames, chosen)


def swap_image(settings: Settings, sources: Sequence[Path | str], target: Path, output: Path) -> dict[str, Any]:
    """Swap faces in one still image and write ``output`` in kind, with the provenance tag; returns a summary."""
    output_format(output)  # refuse an unwritable format before any work
    started = time.perf_counter()
    picture = read_image(target)
    processor = FaceProcessor(settings, list(sources))
    faces = processor.select(picture.bgr, processor.detect([picture.bgr])[0])
    if not faces:
        raise UserError(f"no face to replace in the target {target.name} (selector.mode={settings.selector.mode})")
    result = processor.apply([picture.bgr], [faces])[0]
    write_image(output, picture, result, provenance_tag(processor.models), settings.output.image_quality)
    return {
        "output": str(output),
        "kind": "image",
        "frames": 1,
        "faces_swapped": len(faces),
        "models": processor.models,
        "notices": processor.notices,
        "seconds": round(time.perf_counter() - started, 3),
    }
