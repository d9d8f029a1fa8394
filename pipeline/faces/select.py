"""Which of the detected faces to work on: the largest, all of them in an order, or those like a reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import get_args

import numpy as np

from pipeline.errors import UserError
from pipeline.types import Embedding, Face, SelectorMode, SelectorOrder


def _side(face: Face) -> float:
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return min(x2 - x1, y2 - y1)


_ORDER_KEYS: dict[SelectorOrder, Callable[[Face], float]] = {
    "large-small": lambda f: -f.area,
    "small-large": lambda f: f.area,
    "left-right": lambda f: f.center[0],
    "right-left": lambda f: -f.center[0],
    "top-bottom": lambda f: f.center[1],
    "best-score": lambda f: -f.score,
}


def order_faces(faces: Sequence[Face], order: SelectorOrder) -> list[Face]:
    """``faces`` sorted by ``order`` (stable: ties keep the detector's order)."""
    try:
        key = _ORDER_KEYS[order]
    except KeyError:
        known = ", ".join(get_args(SelectorOrder))
        raise UserError(f"unknown face order '{order}' (known: {known})") from None
    return sorted(faces, key=key)


def distance(face: Face, reference: Embedding) -> float:
    """Cosine distance (1 - cosine) between a face's embedding and ``reference``."""
    if face.embedding is None:
        raise ValueError("face has no embedding: embed the faces before selecting by reference")
    a = np.asarray(face.embedding, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise UserError(f"the reference face's embedding has {b.size} values but the faces' have {a.size}: "
                        "pick the reference again with the current recogniser")
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return 1.0 - (float(a @ b) / norm if norm > 0 else 0.0)


def select(faces: Sequence[Face], mode: SelectorMode, order: SelectorOrder = "large-small",
           reference: Embedding | None = None, max_distance: float = 0.6, min_size: int = 0) -> list[Face]:
    """The faces to process.

    ``one``: the largest face; ``many``: every face, sorted by ``order``; ``reference``: the faces whose
    embedding lies within ``max_distance`` (cosine distance) of ``reference``, nearest first. Faces
    whose shorter box side is under ``min_size`` pixels are ignored in every mode.
    """
    candidates = [f for f in faces if _side(f) >= min_size] if min_size > 0 else list(faces)
    if mode == "one":
        return order_faces(candidates, "large-small")[:1]
    if mode == "many":
        return order_faces(candidates, order)
    if mode == "reference":
        if reference is None:
            raise UserError("face selector mode 'reference' needs a reference face: "
                            "pick one, or use mode 'one' or 'many'")
        scored = [(distance(f, reference), i, f) for i, f in enumerate(candidates)]
        return [f for d, _, f in sorted(scored, key=lambda t: (t[0], t[1])) if d <= max_distance]
    raise UserError(f"unknown face selector mode '{mode}' (known: {', '.join(get_args(SelectorMode))})")
