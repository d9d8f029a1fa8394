"""Background removers of the catalog (FaceFusion's exports, docs/processors.md §7), on whole frames.

Every model sees the frame resized to its square side S (linear, aspect not kept), as RGB (x/255 − mean)/std
(the catalog entry's), and gives a foreground mask m (uint8, 255 = the person) resized back to the frame:

- most models (``background_remover`` family): output 0 is the probability in [0, 1]: m = clip(p)·255;
- ``u2net_cloth``: class scores; m = 255 where the best class is not 0 (background);
- ``corridor_key``: a 4th input channel, the coarse green key 1 − clip(2·(G − max(R, B)), 0, 1) (RGB in
  [0, 1], not normalised); outputs the alpha (the mask, as above) and a foreground RGB in [0, 1] that
  replaces the frame.

Then, in this order: the despill (the screen colour's spill taken out: each channel limited by the mean of
the other two, weighted by the colour), the fill (I·(1 − k) + fill·k with k = 1 − m/255, truncated), and the
alpha out (min(m, the frame's alpha)), used when the background is ``transparent``.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.models.runner import ModelRunner, normalise
from pipeline.types import Alpha, Frame, Provider

RGB = tuple[int, int, int]


def resized(frames: Sequence[Frame], side: int) -> npt.NDArray[np.uint8]:
    """(N, side, side, 3): each frame resized to the model's square (linear, the aspect not kept)."""
    return np.stack([cv2.resize(f, (side, side), interpolation=cv2.INTER_LINEAR) for f in frames])


def coarse_key(frame: Frame, side: int) -> npt.NDArray[np.float32]:
    """(side, side) corridor_key's coarse key of ``frame``: 1 − clip(2·(G − max(R, B)), 0, 1), RGB in
    [0, 1], made at the frame's size and then resized."""
    c = frame.astype(np.float32) / 255.0
    b, g, r = c[..., 0], c[..., 1], c[..., 2]
    key = 1.0 - np.clip(2.0 * (g - np.maximum(r, b)), 0.0, 1.0)
    return np.asarray(cv2.resize(key, (side, side), interpolation=cv2.INTER_LINEAR), np.float32)


def probability_mask(p: npt.NDArray[np.float32], height: int, width: int) -> Alpha:
    """A [0, 1] foreground map (any leading unit axes) -> uint8 mask (truncated) at ``width``×``height``."""
    m = (np.clip(np.squeeze(p), 0.0, 1.0) * 255.0).astype(np.uint8)
    return np.asarray(cv2.resize(m, (width, height), interpolation=cv2.INTER_LINEAR), np.uint8)


def class_mask(scores: npt.NDArray[np.float32], height: int, width: int) -> Alpha:
    """u2net_cloth's class scores (C, S, S) -> 255 where the best class is not 0 (background)."""
    m = np.where(np.argmax(scores, axis=0) != 0, 255, 0).astype(np.uint8)
    return np.asarray(cv2.resize(m, (width, height), interpolation=cv2.INTER_LINEAR), np.uint8)


def foreground_frame(rgb: npt.NDArray[np.float32], height: int, width: int) -> Frame:
    """corridor_key's foreground (3, S, S) RGB in [0, 1] -> BGR uint8 at the frame's size."""
    fg = np.clip(rgb.transpose(1, 2, 0) * 255.0, 0, 255).astype(np.uint8)[..., ::-1]
    return np.asarray(cv2.resize(np.ascontiguousarray(fg), (width, height), interpolation=cv2.INTER_LINEAR),
                      np.uint8)


def despill(frame: Frame, colour: RGB) -> Frame:
    """``frame`` with the spill of the screen ``colour`` taken out (a new array): each BGR channel c moves
    towards min(I_c, mean of the other two) by the colour's weight on c (colour_c / its largest channel)."""
    r, g, b = colour
    weights = np.asarray((b, g, r), np.float32) / max(max(colour), 1)
    i = frame.astype(np.float32)
    others = 0.5 * (np.roll(i, 1, axis=2) + np.roll(i, -1, axis=2))  # neighbours c−1 and c+1, wrapped
    limit = np.minimum(i, others)
    return np.asarray(i + (limit - i) * weights, np.float32).astype(np.uint8)


def fill(frame: Frame, mask: Alpha, colour: RGB) -> Frame:
    """``frame`` with ``colour`` over its background: I·(1 − k) + fill·k, k = 1 − m/255 (truncated)."""
    k = 1.0 - mask.astype(np.float32)[..., None] / 255.0
    paint = np.asarray(colour[::-1], np.float32)  # BGR
    return (frame.astype(np.float32) * (1.0 - k) + paint * k).astype(np.uint8)


def alpha_out(mask: Alpha, incoming: Alpha | None) -> Alpha:
    """The frame's alpha after the remover: min(m, the alpha it came with)."""
    return mask if incoming is None else np.minimum(mask, incoming)


class BackgroundRemover:
    """One background remover model: frames in, (their foreground masks, the frames to go on with) out (the
    frames are the inputs except for corridor_key, whose foreground replaces them)."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        self.name = name
        self.runner = ModelRunner(name, "background_remover", providers, threads)
        self.entry = self.runner.entry
        self.side = self.entry.input_size

    def blob(self, frames: Sequence[Frame]) -> npt.NDArray[np.float32]:
        return normalise(resized(frames, self.side), self.entry)

    def masks(self, outputs: list[npt.NDArray[np.float32]], frames: Sequence[Frame]) -> list[Alpha]:
        return [probability_mask(p, *f.shape[:2]) for p, f in zip(outputs[0], frames, strict=True)]

    def remove(self, frames: Sequence[Frame]) -> tuple[list[Alpha], list[Frame]]:
        if not frames:
            return [], []
        outputs = self.runner.run(self.blob(frames))
        return self.masks(outputs, frames), list(frames)


class ClothRemover(BackgroundRemover):
    """u2net_cloth: the clothes' classes are the foreground."""

    def masks(self, outputs: list[npt.NDArray[np.float32]], frames: Sequence[Frame]) -> list[Alpha]:
        return [class_mask(s, *f.shape[:2]) for s, f in zip(outputs[0], frames, strict=True)]


class CorridorKey(BackgroundRemover):
    """corridor_key: RGB normalised + the coarse key (not normalised) in; alpha and a foreground out."""

    def blob(self, frames: Sequence[Frame]) -> npt.NDArray[np.float32]:
        keys = np.stack([coarse_key(f, self.side) for f in frames])[:, None]
        return np.concatenate([super().blob(frames), keys], axis=1).astype(np.float32)

    def remove(self, frames: Sequence[Frame]) -> tuple[list[Alpha], list[Frame]]:
        if not frames:
            return [], []
        outputs = self.runner.run(self.blob(frames))
        fgs = [foreground_frame(fg, *f.shape[:2]) for fg, f in zip(outputs[1], frames, strict=True)]
        return self.masks(outputs, frames), fgs
