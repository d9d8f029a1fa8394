"""Occlusion masks from the XSeg / occluder models: hands, hair, glasses or a microphone in front of the face.

The models take the aligned swap crop resized to 256, NCHW RGB /255 (the catalog entry's normalisation),
and return a [1, 1, 256, 256] map: XSeg a probability in [0, 1] (1 = face visible; values below the
entry's ``mask_floor``, 0.1, count as occluded, as VisoMaster does), the occluder logits (face visible
where > 0: a hard 0/1 mask). The map is resized back to the crop and lightly feathered; pixels the
model marks fully occluded stay exactly 0, so those target pixels survive the paste unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.models.runner import ModelRunner, normalise
from pipeline.types import OccluderName, Provider

FEATHER = 1 / 128  # Gaussian sigma as a fraction of the crop side


def resize_stack(images: npt.NDArray[np.generic], size: int,
                 interpolation: int = cv2.INTER_LINEAR) -> npt.NDArray[np.generic]:
    """Resize each of (N, H, W[, C]) images to ``size`` × ``size`` (a copy when already that size)."""
    if images.shape[1] == size and images.shape[2] == size:
        return np.ascontiguousarray(images)
    return np.stack([cv2.resize(np.ascontiguousarray(im), (size, size), interpolation=interpolation)
                     for im in images])


def feather(masks: npt.NDArray[np.float32], size: int) -> npt.NDArray[np.float32]:
    """(N, h, w) maps in [0, 1] -> (N, size, size) float32, resized and softened.

    Exact 0s well inside a 0 area stay 0.
    """
    out = resize_stack(np.clip(masks, 0.0, 1.0).astype(np.float32), size).astype(np.float32)
    sigma = max(size * FEATHER, 0.5)
    soft = np.stack([cv2.GaussianBlur(m, (0, 0), sigma) for m in out]) if len(out) else out
    return np.clip(np.minimum(soft, np.where(out <= 0.0, 0.0, 1.0)), 0.0, 1.0).astype(np.float32)


class Occluder:
    """Occlusion masks for batches of aligned crops, in one model run where the export allows."""

    def __init__(self, name: OccluderName = "xseg", providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> None:
        self.runner = ModelRunner(name, "occluder", providers, threads)
        self.name = name
        self.size = self.runner.entry.input_size

    def masks(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, S, S, 3) BGR uint8 crops -> (N, S, S) float32 in [0, 1], 1 = face visible."""
        crops = np.asarray(crops)
        if crops.ndim != 4 or crops.shape[-1] != 3 or crops.shape[1] != crops.shape[2]:
            raise ValueError(f"occluder takes (N,S,S,3) crops, got {crops.shape}")
        n, side = len(crops), crops.shape[1]
        if n == 0:
            return np.zeros((0, side, side), np.float32)
        entry = self.runner.entry
        small = np.asarray(resize_stack(crops, self.size, cv2.INTER_AREA), np.uint8)
        raw = self.runner.run(normalise(small, entry))[0].reshape(n, self.size, self.size)
        if entry.mask_output == "logits":
            visible = (raw > 0).astype(np.float32)
        else:
            visible = np.where(raw < entry.mask_floor, 0.0, raw).astype(np.float32)
        return feather(visible, side)
