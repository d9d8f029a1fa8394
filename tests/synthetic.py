"""Synthetic inputs shared by the swapper tests: a textured "face" image and random crops (no photo)."""

from __future__ import annotations

import numpy as np

from pipeline.faces import align
from pipeline.types import Face


def textured_face(seed: int) -> tuple[np.ndarray, Face]:
    """A 256 px image with a textured 'face' whose five landmarks sit on a scaled template."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)
    landmarks = (align.TEMPLATES["arcface_112_v2"] * 160 + [48, 40]).astype(np.float32)
    return image, Face(box=np.array([48, 40, 208, 200], np.float32), landmarks=landmarks, score=0.9)


def random_crops(n: int, size: int, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, (n, size, size, 3), dtype=np.uint8)
