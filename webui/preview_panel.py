"""The preview panel: the chosen frame processed with the current settings, with a face-debugger overlay."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gradio as gr

from pipeline import preview as engine
from pipeline.settings import Settings


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["image"] = gr.Image(label="Preview", type="numpy", format="jpeg", interactive=False, elem_id="preview",
                          buttons=["fullscreen"])
    with gr.Row():
        c["overlay"] = gr.Checkbox(value=False, label="Face debugger (boxes, scores, landmarks, mask)", elem_id="overlay")
        c["add_job"] = gr.Button("Add to queue", variant="primary", elem_id="add-job")
    c["status"] = gr.Markdown("", elem_id="preview-status")
    return c


def render(settings: Settings, sources: Sequence[str] | None, target: str | None, frame: int,
           overlay: bool) -> tuple[Any, str]:
    if not target:
        return None, "Add a target image or video to see a preview."
    if not sources:
        return engine.read_frame(target, int(frame))[:, :, ::-1], "Add a source photo to see the swap."
    started = time.perf_counter()
    image = engine.preview(settings, list(sources), target, int(frame), overlay)
    ms = (time.perf_counter() - started) * 1000
    return image, f"Preview of frame {int(frame)}: {ms:.0f} ms"
