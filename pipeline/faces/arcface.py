"""ArcFace-family recognisers (w600k r50, SimSwap's, GHOST's) as ONNX models.

Template, crop size and normalisation come from the catalog entry; the crops are (N, 112, 112, 3)
BGR uint8 aligned to that template. ``embed`` returns L2-normalised embeddings, ``raw_embeddings`` the
model's own output (GHOST's swapper takes it so: norm ≈ 20). The batch axis is dynamic in these
exports, so all crops run at once; where a file fixes it, they run one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.faces import align
from pipeline.models import catalog
from pipeline.models.runner import normalise
from pipeline.models.sessions import CatalogSession
from pipeline.types import Face, Frame, Provider, Template

log = logging.getLogger(__name__)


def l2_normalise(x: npt.NDArray[np.floating], axis: int = -1) -> npt.NDArray[np.float32]:
    norm = np.linalg.norm(x, axis=axis, keepdims=True)
    return (x / np.maximum(norm, 1e-12)).astype(np.float32)


class OnnxRecogniser(CatalogSession):
    """faces.base.Recogniser for the ONNX ArcFace models of the catalog (lazy session from CatalogSession)."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        entry = catalog.get(name)
        if entry.role != "recogniser" or entry.builtin or entry.template is None:
            valid = [e.name for e in catalog.by_role("recogniser") if not e.builtin]
            raise UserError(f"'{name}' is not an ONNX recogniser (choose from: {', '.join(valid)})")
        super().__init__(name, providers, threads)
        self.template: Template = entry.template
        self.size = entry.input_size

    @property
    def dim(self) -> int:
        """Embedding length (512 for every ArcFace in the catalog)."""
        last = self.entry.outputs[0].shape[-1]
        return last if isinstance(last, int) else 512

    def embed(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, size, size, 3) BGR uint8 aligned crops -> (N, D) L2-normalised embeddings."""
        return l2_normalise(self.embed_raw(crops))

    def embed_raw(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, size, size, 3) BGR uint8 aligned crops -> (N, D) the model's output as it is."""
        crops = np.asarray(crops)
        if crops.ndim == 3:
            crops = crops[None]
        if crops.shape[1:] != (self.size, self.size, 3) or crops.dtype != np.uint8:
            raise ValueError(f"{self.name} takes (N,{self.size},{self.size},3) uint8 crops, "
                             f"got {crops.shape} {crops.dtype}")
        if len(crops) == 0:
            return np.zeros((0, self.dim), np.float32)
        blob = normalise(crops, self.entry)
        (name,), (output, *_) = self.io
        step = self.batch or len(blob)
        outputs = [self.session.run([output], {name: blob[i:i + step]})[0] for i in range(0, len(blob), step)]
        return np.concatenate(outputs).astype(np.float32)

    def align(self, frame: Frame, face: Face) -> npt.NDArray[np.uint8]:
        """The face's crop aligned to this model's template and size."""
        return align.warp(frame, align.estimate(face.landmarks, self.template, self.size), self.size)

    def embed_faces(self, pairs: Sequence[tuple[Frame, Face]]) -> npt.NDArray[np.float32]:
        """Align and embed each (frame, face) pair: (N, D) L2-normalised."""
        return l2_normalise(self.raw_embeddings(pairs))

    def raw_embeddings(self, pairs: Sequence[tuple[Frame, Face]]) -> npt.NDArray[np.float32]:
        """Align and embed each (frame, face) pair: (N, D) as the model outputs them."""
        if not pairs:
            return np.zeros((0, self.dim), np.float32)
        return self.embed_raw(np.stack([self.align(frame, face) for frame, face in pairs]))
