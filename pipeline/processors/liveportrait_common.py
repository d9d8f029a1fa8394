"""What the two LivePortrait processors share: building the parts, and the processed view of a face's crop."""

from __future__ import annotations

import numpy as np

from pipeline import families
from pipeline.liveportrait.network import LivePortrait, model_name
from pipeline.processors.crops import Swapped
from pipeline.settings import Settings
from pipeline.types import Frame


def build(settings: Settings, models: tuple[str, ...], parts: tuple[str, ...]) -> LivePortrait:
    """The LivePortrait parts among the plan's ``models``."""
    return LivePortrait({part: families.build(model_name(part), settings, "liveportrait") for part in parts
                         if model_name(part) in models})


def processed_view(item: Swapped) -> Frame:
    """The crop as the frame will look there after the paste: the result over the target, by its paste mask.

    LivePortrait re-renders the whole crop, so it is fed what the earlier processors' paste would leave (as
    FaceFusion feeds it the processed frame), and its output is then pasted with this processor's own box
    mask.
    """
    if item.result is item.crop:
        return item.crop
    base = item.crop.astype(np.float32)
    mixed = base + (item.result.astype(np.float32) - base) * item.paste_mask[..., None]
    return np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
