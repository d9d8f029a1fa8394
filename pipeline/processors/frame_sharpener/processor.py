"""``frame_sharpener``: each whole frame sharpened by an unsharp mask (``frame_sharpener`` settings).

A frame processor with no model: after the processors before it (their faces pasted back), the frame's fine
detail (the frame less its Gaussian blur of ``radius`` px) is added again, ``amount`` % of it, so a swapped
or upscaled frame that came out soft looks crisp again. An amount of 0 leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import cv2
import numpy as np

from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FrameProcessorBase
from pipeline.settings import Settings
from pipeline.types import Frame


def sharpen(frame: Frame, amount: int, radius: float) -> Frame:
    """``frame`` + ``amount`` % × (``frame`` − its Gaussian blur of σ ``radius``), rounded and clipped to
    0–255 (a new array)."""
    blurred = cv2.GaussianBlur(frame, (0, 0), radius)
    weight = amount / 100.0
    return np.asarray(cv2.addWeighted(frame, 1.0 + weight, blurred, -weight, 0.0), np.uint8)


class FrameSharpenerProcessor(FrameProcessorBase):
    name: ClassVar[str] = "frame_sharpener"
    section: ClassVar[str] = "frame_sharpener"
    title: ClassVar[str] = "Frame sharpener"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "light"
    stage: ClassVar[str] = "sharpen"

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return ()

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return settings.frame_sharpener.amount > 0

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings.frame_sharpener

    def sessions(self) -> list[CatalogSession]:
        return []

    def run_frames(self, frames: Sequence[Frame], at: Sequence[int]) -> list[Frame]:
        return [sharpen(f, self.settings.amount, self.settings.radius) for f in frames]
