"""Pixel boost: swap a crop k× the model's size by splitting it into k² model-size sub-images.

Space-to-depth: sub-image (i, j) is ``crop[i::k, j::k]``, every k-th pixel from offset (i, j), so each
one is the whole face at the model's size, shifted by a fraction of a pixel. All k² sub-images of all
crops go through the swapper in one call (one batch), and are interleaved back into a k·S crop: a 512
crop for a 128 model is 16 sub-swaps and keeps four times the detail of an upscaled 128 swap.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pipeline.processors.face_swapper.swapper import Swapper


def factor(model_size: int, boost: int) -> int:
    """Sub-images per side for a ``boost`` px crop on a ``model_size`` model (1 = no boost)."""
    if boost <= model_size:
        return 1
    if boost % model_size:
        raise ValueError(f"pixel boost {boost} is not a multiple of the model size {model_size}")
    return boost // model_size


def split(crops: npt.NDArray[np.uint8], k: int) -> npt.NDArray[np.uint8]:
    """(N, kS, kS, C) -> (N·k², S, S, C); sub-image n·k² + i·k + j is ``crops[n, i::k, j::k]``."""
    n, h, w, c = crops.shape
    if h != w or h % k:
        raise ValueError(f"pixel boost needs square crops divisible by {k}, got {crops.shape}")
    s = h // k
    grid = crops.reshape(n, s, k, s, k, c).transpose(0, 2, 4, 1, 3, 5)
    return np.ascontiguousarray(grid.reshape(n * k * k, s, s, c))


def merge(subs: npt.NDArray[np.uint8], k: int) -> npt.NDArray[np.uint8]:
    """Inverse of :func:`split`: (N·k², S, S, C) -> (N, kS, kS, C)."""
    m, s, _, c = subs.shape
    if m % (k * k):
        raise ValueError(f"{m} sub-images do not make whole crops of {k}×{k}")
    n = m // (k * k)
    grid = subs.reshape(n, k, k, s, s, c).transpose(0, 3, 1, 4, 2, 5)
    return np.ascontiguousarray(grid.reshape(n, s * k, s * k, c))


def boosted_swap(swapper: Swapper, crops: npt.NDArray[np.uint8], identity: object,
                 k: int) -> npt.NDArray[np.uint8]:
    """Swap (N, k·S, k·S, 3) crops with a model of size S: one swapper call for all N·k² sub-images."""
    if k == 1:
        return swapper.swap(crops, identity)
    return merge(swapper.swap(split(crops, k), identity), k)
