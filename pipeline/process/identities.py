"""Who goes in and who is replaced: the source faces grouped into identities (one per source with a mapping,
else one for all: the processors that put a face in make theirs from them, ``Processor.take_sources``), and
the reference embeddings that pick the target faces (``selector.reference``, or one reference per source
with ``selector.mapping``: each source image is its own identity, put onto the person whose reference image
has the same position; faces carry the identity index, see faces.mapping)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.errors import NoFaceFound, UserError
from pipeline.faces import mapping
from pipeline.image import read_image
from pipeline.process.models import FaceModels
from pipeline.types import Embedding, Face, Frame


@dataclass
class Source:
    label: str
    frame: Frame
    face: Face


def read_face(models: FaceModels, src: Path | str | Frame, index: int, role: str = "source") -> Source:
    """The largest face of an image (a path or a BGR frame); a notice says so when there were several."""
    if isinstance(src, np.ndarray):
        frame, label = src, f"{role} image {index + 1}"
    else:
        frame, label = read_image(src).bgr, Path(src).name
    faces = models.detector.detect([frame])[0]
    if not faces:
        raise NoFaceFound(f"no face found in the {role} image {label}")
    best = max(faces, key=lambda f: f.area)
    if len(faces) > 1:
        x1, y1, x2, y2 = (int(v) for v in best.box)
        models.notices.append(f"{role} {label} has {len(faces)} faces; "
                              f"using the largest at ({x1},{y1})-({x2},{y2})")
    return Source(label, frame, best)


class Identities:
    """The identities to put in (:attr:`groups`: each one's source faces) and what picks the faces to replace
    (``references`` with a mapping, ``reference`` in reference mode). ``needed``: a processor puts the source
    faces in, so there must be at least one."""

    def __init__(self, models: FaceModels, sources: Sequence[Path | str | Frame], needed: bool) -> None:
        selector = models.settings.selector
        self.source_faces = [read_face(models, src, i) for i, src in enumerate(sources)]
        if not self.source_faces and needed:
            raise UserError("no source image given")
        self.references: np.ndarray | None = None  # (M, D) mapping references, one per source
        self.reference: Embedding | None = None
        pairs = [(src.frame, src.face) for src in self.source_faces]
        self.groups: list[list[tuple[Frame, Face]]] = [pairs] if pairs else []
        if selector.mapping:
            if len(selector.mapping) != len(self.source_faces):
                raise UserError(f"selector.mapping names {len(selector.mapping)} reference image(s) but "
                                f"{len(self.source_faces)} source image(s) were given: "
                                "give one reference per source")
            self.groups = [[pair] for pair in pairs]
            refs = [read_face(models, r, i, role="reference") for i, r in enumerate(selector.mapping)]
            self.references = np.stack([models.embed(r.frame, [r.face])[0] for r in refs])
            return
        if selector.mode == "reference":
            if not selector.reference:
                raise UserError("selector.mode=reference needs selector.reference=IMAGE "
                                "(a photo of the person to replace)")
            ref = read_face(models, selector.reference, -1, role="reference")
            self.reference = models.embed(ref.frame, [ref.face])[0]

    def index_of(self, face: Face) -> int:
        """Which identity goes onto ``face``: its mapping position (without a mapping: the one identity)."""
        who = mapping.identity_of(face) if self.references is not None else 0
        return max(0, min(who, len(self.groups) - 1))
