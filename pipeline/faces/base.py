"""Protocols of the face-analysis model families (their registries are in :mod:`pipeline.faces.registry`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pipeline.types import Face, Frame, Template


class Detector(Protocol):
    """Finds faces in frames. Batching across frames is the implementation's business."""

    name: str

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        """One list of faces per frame (frame pixel coordinates), best score first."""
        ...


class Recogniser(Protocol):
    """Maps aligned face crops to identity embeddings."""

    name: str
    template: Template
    size: int  # crop side the crops must be aligned to

    def embed(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, size, size, 3) BGR uint8 crops aligned to ``template`` -> (N, D) L2-normalised embeddings."""
        ...
