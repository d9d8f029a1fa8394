"""The protocol of the face enhancers: :class:`Enhancer` (every face-restoration model family), and
:func:`mix`, an enhanced face mixed with its input."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from pipeline.types import Template


class Enhancer(Protocol):
    name: str
    crop_size: int  # side of the aligned crops enhance() takes and returns
    template: Template

    def enhance(self, crops: npt.NDArray[np.uint8], blend: int = 100) -> npt.NDArray[np.uint8]:
        """(N, crop_size, crop_size, 3) BGR uint8 aligned faces -> restored faces, same shape.

        ``blend`` 0..100 mixes the input (0) with the model's output (100).
        """
        ...


def mix(original: npt.NDArray[np.uint8], enhanced: npt.NDArray[np.uint8],
        blend: int) -> npt.NDArray[np.uint8]:
    """``blend`` % of ``enhanced`` over ``original``: 0 is ``original``, 100 ``enhanced`` (exact copies)."""
    if not 0 <= blend <= 100:
        raise ValueError(f"enhancer blend must be between 0 and 100, got {blend}")
    if blend == 0:
        return original.copy()
    if blend == 100:
        return enhanced.copy()
    base = original.astype(np.float32)
    out = base + np.float32(blend / 100.0) * (enhanced.astype(np.float32) - base)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
