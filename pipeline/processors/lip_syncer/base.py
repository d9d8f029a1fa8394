"""The lip-sync family's Protocol: a batch of face crops and their frames' audio in, each crop's new lower
face (and where it goes) out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pipeline.processors.lip_syncer.geometry import Geometry
from pipeline.types import Frame, Mask, Template

CROP = 512  # every lip-sync model works on the face aligned at ffhq_512 × 512 (FaceFusion's crop)
TEMPLATE: Template = "ffhq_512"


@dataclass(frozen=True)
class Mouth:
    """One face to re-draw: its 512 crop, where the mouth is in it, the (80, 16) mel window of its frame."""

    crop: Frame
    geometry: Geometry
    window: npt.NDArray[np.float32]


class LipSyncModel(Protocol):
    name: str

    def sync(self, mouths: Sequence[Mouth], weight: float) -> list[tuple[Frame, Mask]]:
        """Each crop re-drawn to its window (512 × 512 BGR) and the mask of where it is to replace the crop
        (1: the model's pixels), in one batch."""
        ...
