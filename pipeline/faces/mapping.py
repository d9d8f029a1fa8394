"""Face mapping: several source identities onto several target people, each person picked by a reference face.

``assign`` pairs detected faces with references one to one, nearest first, within a cosine-distance
threshold: a reference takes at most one face per frame (a person appears once in a frame) and a
face at most one reference. Each chosen face carries its reference's index in ``extra["identity"]``,
which later stages use to pick the source identity to swap in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from pipeline.types import Face

IDENTITY_KEY = "identity"


def distances(faces: Sequence[Face], references: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(faces, references) cosine distances; every face must carry an embedding."""
    refs = np.asarray(references, np.float64).reshape(-1, np.shape(references)[-1])
    if not faces:
        return np.zeros((0, len(refs)))
    if any(f.embedding is None for f in faces):
        raise ValueError("faces need embeddings before mapping")
    emb = np.stack([np.asarray(f.embedding, np.float64).ravel() for f in faces])
    emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    refs = refs / np.maximum(np.linalg.norm(refs, axis=1, keepdims=True), 1e-12)
    return np.asarray(1.0 - emb @ refs.T, np.float64)


def identity_of(face: Face) -> int:
    """The source identity index a face was mapped to (0 without mapping)."""
    value = face.extra.get(IDENTITY_KEY, 0)
    return int(value) if isinstance(value, (int, np.integer)) else 0


def assign(faces: Sequence[Face], references: npt.ArrayLike, max_distance: float) -> list[Face]:
    """The faces matched to a reference (one to one, nearest pairs first), tagged with the reference index."""
    d = distances(faces, references)
    pairs = sorted((float(d[i, j]), i, j) for i in range(d.shape[0]) for j in range(d.shape[1])
                   if d[i, j] <= max_distance)
    used_faces: set[int] = set()
    used_refs: set[int] = set()
    chosen: dict[int, Face] = {}
    for dist, i, j in pairs:
        if i in used_faces or j in used_refs:
            continue
        used_faces.add(i)
        used_refs.add(j)
        chosen[i] = replace(faces[i], extra={**faces[i].extra, IDENTITY_KEY: j, "distance": dist})
    return [chosen[i] for i in sorted(chosen)]
