"""Gradio's slider and number box, but a value outside the range is taken as the nearest end.

Gradio refuses such a value with a raw "Value 2 is greater than maximum value 1" (an Error badge on the
page) when a number is typed into the box. These take the nearest end instead, as the page itself shows it
once the box is left. Every settings control uses them (controls.make_control), and so does the frame
scrubber (webui/faces.py). Gradio writes a stub of this module beside it on import, clamped.pyi: ignored by
git and ruff.
"""

from __future__ import annotations

from typing import Any

import gradio as gr


def _clamp(value: Any, low: float | None, high: float | None) -> Any:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return value
    if low is not None and value < low:
        value = type(value)(low)
    if high is not None and value > high:
        value = type(value)(high)
    return value


class ClampedSlider(gr.Slider):
    """A slider whose value outside its range (a number typed into its box; a range narrowed under it, as
    when a video target is replaced by an image) is taken as the nearest end, as the page shows it once the
    box is left, never refused with Gradio's raw "Value … is greater than maximum value …"."""

    is_template = True  # drawn by Gradio's own slider

    def preprocess(self, payload: float) -> float:
        return super().preprocess(_clamp(payload, self.minimum, self.maximum))


class ClampedNumber(gr.Number):
    """A number box whose value outside its range is taken as the nearest end (see ClampedSlider)."""

    is_template = True  # drawn by Gradio's own number box

    def preprocess(self, payload: float | None) -> float | int | None:
        return super().preprocess(_clamp(payload, self.minimum, self.maximum))
