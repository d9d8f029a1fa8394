"""Faces tab: source photos, target image/video, frame scrubber, detected-faces gallery, face selection."""

from __future__ import annotations

from typing import Any

import gradio as gr

from pipeline import preview as engine
from pipeline.image import IMAGE_SUFFIXES
from pipeline.settings import Settings
from webui import controls

PICK_ONLY = "replace only this person"
PICK_MAP = "map the next source photo to this person"
VIDEO_SUFFIXES = [".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v"]


def create(settings: Settings) -> dict[str, Any]:
    c: dict[str, Any] = {}
    with gr.Row():
        c["sources"] = gr.File(label="Source photos (the face to put in)", file_count="multiple",
                               file_types=sorted(IMAGE_SUFFIXES), type="filepath", elem_id="sources")
        c["target"] = gr.File(label="Target image or video", file_count="single",
                              file_types=sorted(IMAGE_SUFFIXES) + VIDEO_SUFFIXES, type="filepath", elem_id="target")
    c["target_info"] = gr.Markdown("No target yet.", elem_id="target-info")
    c["frame"] = gr.Slider(0, 1, value=0, step=1, label="Frame", elem_id="frame", interactive=False)
    c["faces"] = gr.Gallery(label="Faces on this frame (click one to swap only that person)", columns=6, preview=False, object_fit="contain",
                            height=180, allow_preview=False, elem_id="faces", interactive=False)
    c["pick"] = gr.Radio([PICK_ONLY, PICK_MAP], value=PICK_ONLY, label="Clicking a face will", elem_id="pick")
    with gr.Group():
        c["selector"] = controls.create_section("selector", settings)
        c["clear_reference"] = gr.Button("Forget the chosen people", size="sm", elem_id="clear-reference")
    c["mapping"] = gr.Markdown(
        "**Source → target:** with no mapping, the source photos describe one person, put on the faces chosen "
        "by the selector. To swap several people, upload one source photo per person and click, in the same "
        "order, the face each one replaces with *map the next source photo* selected (fills `mapping`).",
        elem_id="mapping",
    )
    return c


def describe_target(target: str | None) -> tuple[str, dict[str, Any]]:
    """Markdown line and frame-slider update for a newly chosen target."""
    if not target:
        return "No target yet.", gr.update(maximum=1, value=0, interactive=False)
    info = engine.check_media(target)
    last = max(0, info.frames - 1)
    return f"Target: {info.describe()}", gr.update(maximum=max(1, last), value=0, interactive=last > 0)


def gallery(target: str | None, frame: int, settings: Settings) -> list[tuple[Any, str]]:
    if not target:
        return []
    found = engine.faces_in(target, int(frame), settings)
    return [(f.crop, f"face {i + 1} ({f.score:.2f})") for i, f in enumerate(found)]
