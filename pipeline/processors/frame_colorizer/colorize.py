"""Frame colourisers of the catalog: DDColor and DeOldify (FaceFusion's exports), on whole frames.

Both see the frame in grey at the chosen square size and give colour back; only the colour is kept, the
frame's own lightness stays (so a colouriser never blurs or shifts the picture, it tints it):

- **DDColor** (``ddcolor``, ``ddcolor_artistic``): input the grey frame as RGB in [0, 1] (its Lab lightness
  with a = b = 0, back to RGB), output the Lab a and b channels (Lab units) at that size. They are resized to
  the frame and put under the frame's own Lab L (float Lab: L 0..100).
- **DeOldify** (``deoldify``, ``deoldify_artistic``, ``deoldify_stable``): input the grey frame as RGB in
  0..255 (not scaled), output RGB in about 0..255. Its 8-bit Lab a and b are kept under the frame's own 8-bit
  Lab L. (FaceFusion puts the frame's blue channel where L goes; we use L itself, which differs for a
  coloured input and matches for a grey one.)

The colour frame is mixed with the input by ``frame_colorizer.blend`` (``cv2.addWeighted``: rounded,
saturated). The batch axis is made dynamic where the export allows, so a batch's frames run together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import numpy as np

from pipeline.models import catalog
from pipeline.models.runner import ModelRunner
from pipeline.types import Frame, Provider


def parse_size(size: str) -> int:
    """'256x256' -> 256."""
    return int(size.split("x", 1)[0])


def grey_rgb(frame: Frame) -> np.ndarray:
    """The frame in grey as 3-channel RGB uint8 (Y = .299R + .587G + .114B)."""
    return cv2.cvtColor(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2RGB)


def ddcolor_input(frame: Frame, size: int) -> np.ndarray:
    """(3, size, size) float32: the grey frame's Lab lightness, a = b = 0, as RGB in [0, 1]."""
    g = grey_rgb(frame).astype(np.float32) / 255.0
    lab = cv2.cvtColor(g, cv2.COLOR_RGB2LAB)
    lab[..., 1:] = 0.0
    rgb = cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
    return cv2.resize(rgb, (size, size), interpolation=cv2.INTER_LINEAR).transpose(2, 0, 1)


def ddcolor_merge(frame: Frame, ab: np.ndarray) -> Frame:
    """The frame's own float Lab L under ``ab`` ((2, s, s) Lab units, resized to the frame), as BGR uint8."""
    h, w = frame.shape[:2]
    ab_full = cv2.resize(np.ascontiguousarray(ab.transpose(1, 2, 0), np.float32), (w, h),
                         interpolation=cv2.INTER_LINEAR)
    lab = cv2.cvtColor(frame.astype(np.float32) / 255.0, cv2.COLOR_BGR2LAB)
    lab[..., 1:] = ab_full
    bgr = cv2.cvtColor(lab, cv2.COLOR_LAB2BGR)
    return np.clip(np.rint(bgr * 255.0), 0, 255).astype(np.uint8)


def deoldify_input(frame: Frame, size: int) -> np.ndarray:
    """(3, size, size) float32: the grey frame as RGB in 0..255."""
    g = cv2.resize(grey_rgb(frame), (size, size), interpolation=cv2.INTER_LINEAR)
    return g.astype(np.float32).transpose(2, 0, 1)


def deoldify_merge(frame: Frame, rgb: np.ndarray) -> Frame:
    """The frame's own 8-bit Lab L under the 8-bit Lab a, b of ``rgb`` ((3, s, s) RGB 0..255)."""
    h, w = frame.shape[:2]
    colour = cv2.resize(np.ascontiguousarray(rgb.transpose(1, 2, 0), np.float32), (w, h),
                        interpolation=cv2.INTER_LINEAR)
    colour = np.clip(np.rint(colour), 0, 255).astype(np.uint8)[..., ::-1]
    ab = cv2.cvtColor(np.ascontiguousarray(colour), cv2.COLOR_BGR2LAB)[..., 1:]
    lab = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)
    lab[..., 1:] = ab
    return np.asarray(cv2.cvtColor(lab, cv2.COLOR_LAB2BGR), np.uint8)


class Colorizer:
    """One colouriser model at one input size: frames in, their colour versions out (before the blend).
    A family gives its input (``prepare``) and how its output goes under the frame's lightness (``merge``)."""

    prepare: Callable[[Frame, int], np.ndarray] = staticmethod(ddcolor_input)
    merge: Callable[[Frame, np.ndarray], Frame] = staticmethod(ddcolor_merge)

    def __init__(self, name: str, size: int, providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> None:
        self.name, self.size = name, size
        self.entry = catalog.get(name)
        self.runner = ModelRunner(name, "colorizer", providers, threads)

    def colorize(self, frames: Sequence[Frame]) -> list[Frame]:
        if not frames:
            return []
        blob = np.stack([self.prepare(f, self.size) for f in frames]).astype(np.float32)
        out = self.runner.run(blob)[0]
        return [self.merge(f, o) for f, o in zip(frames, out, strict=True)]


class DDColor(Colorizer):
    """ddcolor, ddcolor_artistic."""


class DeOldify(Colorizer):
    """deoldify, deoldify_artistic, deoldify_stable."""

    prepare = staticmethod(deoldify_input)
    merge = staticmethod(deoldify_merge)


def blend(frame: Frame, colour: Frame, amount: int) -> Frame:
    """``frame`` mixed with its colour version: ``amount`` % of the colour (rounded, saturated)."""
    b = amount / 100.0
    return np.asarray(cv2.addWeighted(frame, 1.0 - b, colour, b, 0.0), np.uint8)
