"""Protocols of the face-analysis model families (the registry of families is :mod:`pipeline.families`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from pipeline.types import Face, Frame, Template

# (frame, boxes in frame px) -> for each box, the faces found around it
Regions = Callable[[Frame, Sequence[npt.NDArray[np.float32]]], list[list[Face]]]


class Detector(Protocol):
    """Finds faces in frames. Batching across frames is the implementation's business."""

    name: str

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        """One list of faces per frame (frame pixel coordinates), best score first."""
        ...


@runtime_checkable
class RegionDetector(Protocol):
    """A detector that can also look only around given boxes (optional; :func:`region_detection`).

    ``detect_regions(frame, boxes)`` returns, for each box, the faces that ``detect([frame])`` would find
    around it (at the same scale and on the same pixel grid, so nearly the same numbers), at a fraction of
    the cost: keyframe detection re-detects followed faces with it between keyframes. ``regions`` says
    whether this instance can (a graph with a fixed input size cannot); detectors without the method are
    followed by optical flow instead.
    """

    @property
    def regions(self) -> bool: ...

    def detect_regions(self, frame: Frame, boxes: Sequence[npt.NDArray[np.float32]]) -> list[list[Face]]: ...


def region_detection(detector: object) -> Regions | None:
    """``detector``'s ``detect_regions`` where it has a usable one, else None."""
    if isinstance(detector, RegionDetector) and detector.regions:
        return detector.detect_regions
    return None


class Recogniser(Protocol):
    """Maps aligned face crops to identity embeddings."""

    name: str
    template: Template
    size: int  # crop side the crops must be aligned to

    def embed(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, size, size, 3) BGR uint8 crops aligned to ``template`` -> (N, D) L2-normalised embeddings."""
        ...
