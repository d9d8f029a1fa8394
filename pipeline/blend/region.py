"""Region masks from the BiSeNet face parser: keep only the chosen parts of the face.

The parser takes the aligned swap crop resized to 512, RGB with ImageNet mean/std, and returns 19
class logits per pixel. Classes used here: skin 1, eyebrows 2/3, eyes 4/5, glasses 6, nose 10,
mouth (inside) 11, lips 12/13. The mask is 1 where the winning class is one of the chosen regions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import get_args

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.blend.occlusion import feather, resize_stack
from pipeline.errors import UserError
from pipeline.models.runner import ModelRunner, normalise
from pipeline.types import FaceRegion, ParserName, Provider

REGION_CLASSES: dict[FaceRegion, int] = {
    "skin": 1, "left-eyebrow": 2, "right-eyebrow": 3, "left-eye": 4, "right-eye": 5, "glasses": 6,
    "nose": 10, "mouth": 11, "upper-lip": 12, "lower-lip": 13,
}


def region_classes(regions: Iterable[str]) -> npt.NDArray[np.int64]:
    """The parser classes of ``regions``; an unknown name lists the valid ones."""
    out = []
    for r in regions:
        if r not in REGION_CLASSES:
            raise UserError(f"unknown face region '{r}' (known: {', '.join(get_args(FaceRegion))})")
        out.append(REGION_CLASSES[r])
    return np.asarray(sorted(set(out)), np.int64)


class FaceParser:
    """Region masks for batches of aligned crops."""

    def __init__(self, name: ParserName = "bisenet_resnet34", providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> None:
        self.runner = ModelRunner(name, "parser", providers, threads)
        self.name = name
        self.size = self.runner.entry.input_size

    def classes(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """(N, S, S, 3) BGR crops -> (N, P, P) winning class per pixel at the parser's size P."""
        small = np.asarray(resize_stack(np.asarray(crops), self.size, cv2.INTER_AREA), np.uint8)
        logits = self.runner.run(normalise(small, self.runner.entry))[0]
        return np.asarray(logits.argmax(axis=1), np.uint8)

    def masks(self, crops: npt.NDArray[np.uint8], regions: Iterable[str]) -> npt.NDArray[np.float32]:
        """(N, S, S, 3) BGR uint8 crops -> (N, S, S) float32, 1 on the chosen ``regions``."""
        crops = np.asarray(crops)
        if crops.ndim != 4 or crops.shape[-1] != 3 or crops.shape[1] != crops.shape[2]:
            raise ValueError(f"face parser takes (N,S,S,3) crops, got {crops.shape}")
        side = crops.shape[1]
        wanted = region_classes(regions)
        if len(crops) == 0:
            return np.zeros((0, side, side), np.float32)
        keep = np.isin(self.classes(crops), wanted).astype(np.float32)
        return feather(keep, side)
