"""The Swapper protocol shared by every swapper family."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pipeline.types import Face, Frame, Template


class Swapper(Protocol):
    name: str
    crop_size: int  # side of the aligned crops swap() takes and returns
    template: Template
    builtin: bool  # True for the lower-quality classic swapper

    def prepare_source(self, sources: Sequence[tuple[Frame, Face]]) -> object:
        """Build the identity to swap in from one or more (image, face) pairs (averaged)."""
        ...

    def swap(self, crops: npt.NDArray[np.uint8], identity: object) -> npt.NDArray[np.uint8]:
        """(N, crop_size, crop_size, 3) BGR uint8 target crops -> swapped crops, same shape."""
        ...
