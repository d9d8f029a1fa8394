"""Presets tab: save the current settings under a name, load one into every control, delete, import, export."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import presets


def choices() -> list[tuple[str, str]]:
    return [(f"{p.name} (built-in)" if p.builtin else p.name, p.name) for p in presets.list_presets()]


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["list"] = gr.Dropdown(choices=choices(), label="Presets", elem_id="preset-list", allow_custom_value=False)
    with gr.Row():
        c["load"] = gr.Button("Load into every control", elem_id="preset-load")
        c["delete"] = gr.Button("Delete", variant="stop", elem_id="preset-delete")
        c["export"] = gr.Button("Export", elem_id="preset-export")
    with gr.Row():
        c["name"] = gr.Textbox(label="Save current settings as", placeholder="my preset", elem_id="preset-name")
        c["description"] = gr.Textbox(label="Description", elem_id="preset-description")
    c["save"] = gr.Button("Save", variant="primary", elem_id="preset-save")
    with gr.Row():
        c["import_file"] = gr.File(label="Import a preset file (.json)", file_types=[".json"], type="filepath",
                                   elem_id="preset-import")
        c["export_file"] = gr.File(label="Exported preset", interactive=False, elem_id="preset-exported")
    c["message"] = gr.Markdown("", elem_id="preset-message")
    return c


def save(name: str, description: str, settings: Any) -> tuple[dict[str, Any], str]:
    path = presets.save(name, settings, description or "")
    return gr.update(choices=choices(), value=path.stem), f"saved preset **{path.stem}**"


def delete(name: str | None) -> tuple[dict[str, Any], str]:
    if not name:
        return gr.update(), "choose a preset first"
    presets.delete(name)
    return gr.update(choices=choices(), value=None), f"deleted preset **{name}**"


def import_(path: str | None) -> tuple[dict[str, Any], str]:
    if not path:
        return gr.update(), ""
    saved = presets.import_file(Path(path), overwrite=False)
    return gr.update(choices=choices(), value=saved.stem), f"imported preset **{saved.stem}**"


def export(name: str | None) -> tuple[str | None, str]:
    if not name:
        return None, "choose a preset first"
    folder = Path(tempfile.mkdtemp(prefix="facestation-preset-"))
    return str(presets.export(name, folder)), f"exported **{name}**"
