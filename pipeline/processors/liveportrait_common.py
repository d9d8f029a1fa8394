"""What the two LivePortrait processors share: building the parts."""

from __future__ import annotations

from pipeline import families
from pipeline.liveportrait.network import LivePortrait, model_name
from pipeline.settings import Settings


def build(settings: Settings, models: tuple[str, ...], parts: tuple[str, ...]) -> LivePortrait:
    """The LivePortrait parts among the plan's ``models``."""
    return LivePortrait({part: families.build(model_name(part), settings, "liveportrait") for part in parts
                         if model_name(part) in models})
