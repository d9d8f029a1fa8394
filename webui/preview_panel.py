"""The preview panel: the chosen frame processed with the current settings, with a face-debugger overlay.

The preview is rendered again on any change of the sources, the target, the frame, the overlay or a
setting; only the last pending request runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import user_errors
from webui.controls import SettingsForm


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["image"] = gr.Image(label="Preview", type="numpy", format="jpeg", interactive=False, elem_id="preview",
                          buttons=["fullscreen"])
    with gr.Row():
        c["overlay"] = gr.Checkbox(value=False, label="Face debugger (boxes, scores, landmarks, mask)",
                                   elem_id="overlay")
        c["add_job"] = gr.Button("Add to queue", variant="primary", elem_id="add-job")
    c["status"] = gr.Markdown("", elem_id="preview-status")
    return c


def wire(c: dict[str, Any], faces: dict[str, Any], form: SettingsForm) -> None:
    """Re-render on any change of the Faces tab's inputs (``faces``), the overlay or a setting."""

    def on_preview(sources: list[str] | None, target: str | None, frame: int, overlay: bool,
                   *vals: Any) -> Any:
        return render(form.read(vals), sources, target, frame, overlay)

    triggers = [faces["sources"].change, faces["target"].change, faces["frame"].release, c["overlay"].change]
    triggers += [control.change for control in form.inputs]
    inputs = [faces["sources"], faces["target"], faces["frame"], c["overlay"], *form.inputs]
    gr.on(triggers, user_errors(on_preview), inputs, [c["image"], c["status"]], trigger_mode="always_last",
          concurrency_limit=1, concurrency_id="preview", show_progress="minimal", api_visibility="private")


def render(settings: api.Settings, sources: Sequence[str] | None, target: str | None, frame: int,
           overlay: bool) -> tuple[Any, str]:
    if not target:
        return None, "Add a target image or video to see a preview."
    if not sources:
        return api.read_frame(target, int(frame))[:, :, ::-1], "Add a source photo to see the swap."
    started = time.perf_counter()
    image = api.preview(settings, list(sources), target, int(frame), overlay)
    ms = (time.perf_counter() - started) * 1000
    return image, f"Preview of frame {int(frame)}: {ms:.0f} ms"
