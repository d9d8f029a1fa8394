"""Embedding faces found in a frame: align each to the recogniser's template, embed them in one batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.faces.align import align
from pipeline.faces.base import Recogniser
from pipeline.types import Face, Frame


def aligned_crops(recogniser: Recogniser, frame: Frame, faces: Sequence[Face]) -> npt.NDArray[np.uint8]:
    """(N, size, size, 3) crops of ``faces`` aligned to the recogniser's template."""
    size = recogniser.size
    if not faces:
        return np.zeros((0, size, size, 3), dtype=np.uint8)
    return np.stack([align(frame, face.landmarks, recogniser.template, size)[0] for face in faces])


def embed_faces(recogniser: Recogniser, frame: Frame, faces: Sequence[Face]) -> npt.NDArray[np.float32]:
    """(N, D) L2-normalised embeddings of ``faces`` in ``frame``, in the order given."""
    crops = aligned_crops(recogniser, frame, faces)
    if len(crops) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(recogniser.embed(crops), dtype=np.float32)


def with_embeddings(recogniser: Recogniser, frame: Frame, faces: Sequence[Face]) -> list[Face]:
    """``faces`` with their ``embedding`` set."""
    embeddings = embed_faces(recogniser, frame, faces)
    return [face.with_embedding(e) for face, e in zip(faces, embeddings, strict=True)]


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64] | float:
    """Cosine similarity of two vectors (a float), or row-wise of (N,D) by (D,) / (M,D) -> (N,) / (N,M)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    xn = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    yn = y / np.maximum(np.linalg.norm(y, axis=-1, keepdims=True), 1e-12)
    if x.ndim == 1 and y.ndim == 1:
        return float(xn @ yn)
    return np.asarray(xn @ yn.T, dtype=np.float64)
