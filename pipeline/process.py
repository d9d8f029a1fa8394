"""The per-frame face-swap work, batched across frames: detect -> select -> align -> swap -> colour -> paste.

:class:`FaceProcessor` is built once per job from the validated settings and the source images, keeps its
models warm, and processes lists of frames. The video renderer calls its stages separately (``detect``,
``select``, ``apply``) so that tracking can run between detection and swapping.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.blend import color, mask as masks, paste
from pipeline.errors import NoFaceFound, UserError
from pipeline.faces import align, select as selection
from pipeline.faces.registry import make_detector, make_recogniser
from pipeline.image import read_image
from pipeline.settings import Settings
from pipeline.swap.registry import make_swapper, resolve_name
from pipeline.types import Embedding, Face, Frame

log = logging.getLogger(__name__)


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


@dataclass
class FaceProcessor:
    settings: Settings
    sources: Sequence[Path | str | Frame]
    notices: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        s = self.settings
        providers, threads = s.execution.providers, s.execution.threads
        self.detector = make_detector(s.detector, providers, threads)
        self.swapper_name, notice = resolve_name(s.swapper.model)
        if notice:
            self.notices.append(notice)
        self.swapper = make_swapper(s.swapper, providers, threads)
        self._recogniser = None
        self.source_faces = [self._source_face(src, i) for i, src in enumerate(self.sources)]
        if not self.source_faces:
            raise UserError("no source image given")
        self.identity = self.swapper.prepare_source([(src.frame, src.face) for src in self.source_faces])
        self.reference: Embedding | None = None
        if s.selector.mode == "reference":
            if not s.selector.reference:
                raise UserError("selector.mode=reference needs selector.reference=IMAGE (a photo of the person to replace)")
            ref = self._source_face(s.selector.reference, -1, role="reference")
            self.reference = self._embed(ref.frame, [ref.face])[0]
        size = self.swapper.crop_size
        self.mask = masks.box_mask(size, s.mask.blur, s.mask.padding)

    # --- models ---------------------------------------------------------------------------------------
    @property
    def recogniser(self):  # type: ignore[no-untyped-def]
        if self._recogniser is None:
            self._recogniser = make_recogniser("sface", self.settings.execution.providers, self.settings.execution.threads)
        return self._recogniser

    @property
    def models(self) -> list[str]:
        used = [self.settings.detector.model, self.swapper_name]
        if self.settings.selector.mode == "reference":
            used.append("sface")
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
        if sel.mode == "reference" and faces:
            embeddings = self._embed(frame, faces)
            faces = [f.with_embedding(e) for f, e in zip(faces, embeddings, strict=True)]
        return selection.select(faces, sel.mode, sel.order, self.reference, sel.reference_distance, sel.min_size)

    def swap(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[list[Swapped]]:
        """Align and swap every given face; all crops of all frames go through the swapper as one batch."""
        size, template = self.swapper.crop_size, self.swapper.template
        items: list[list[Swapped]] = [[] for _ in frames]
        crops, owners = [], []
        for i, (frame, frame_faces) in enumerate(zip(frames, faces, strict=True)):
            for face in frame_faces:
                m = align.estimate(face.landmarks, template, size)
                crop = align.warp(frame, m, size)
                items[i].append(Swapped(m, crop, crop))
                crops.append(crop)
                owners.append((i, len(items[i]) - 1))
        if crops:
            swapped = self.swapper.swap(np.stack(crops), self.identity)
            for (i, k), result in zip(owners, swapped, strict=True):
                items[i][k].result = result
        return items

    def blend(self, frame: Frame, items: Sequence[Swapped]) -> Frame:
        """Colour-match each swapped crop to its target crop and paste it back into ``frame``."""
        c = self.settings.color
        poisson = self.settings.swapper.poisson and not self.swapper.builtin
        for item in items:
            result = item.result
            if c.method != "none":
                result = color.transfer(result, item.crop, c.method, c.strength, self.mask)
            frame = paste.paste_back(frame, result, item.matrix, self.mask, poisson=poisson)
        return frame

    def apply(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[Frame]:
        """Swap the given faces in their frames."""
        swapped = self.swap(frames, faces)
        return [self.blend(f, items) for f, items in zip(frames, swapped, strict=True)]

    def process(self, frames: Sequence[Frame]) -> list[Frame]:
        detected = self.detect(frames)
        chosen = [self.select(f, d) for f, d in zip(frames, detected, strict=True)]
        return self.apply(frames, chosen)
