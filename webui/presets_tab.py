"""Presets tab: save the current settings under a name, load one into every control, delete, import,
export."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import user_errors
from webui.controls import SettingsForm


def choices() -> list[tuple[str, str]]:
    return [(f"{p.name} (built-in)" if p.builtin else p.name, p.name) for p in api.list_presets()]


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["list"] = gr.Dropdown(choices=choices(), label="Presets", elem_id="preset-list",
                            allow_custom_value=False)
    with gr.Row():
        c["load"] = gr.Button("Load into every control", elem_id="preset-load")
        c["delete"] = gr.Button("Delete", variant="stop", elem_id="preset-delete")
        c["export"] = gr.Button("Export", elem_id="preset-export")
    with gr.Row():
        c["name"] = gr.Textbox(label="Save current settings as", placeholder="my preset",
                               elem_id="preset-name")
        c["description"] = gr.Textbox(label="Description", elem_id="preset-description")
    c["save"] = gr.Button("Save", variant="primary", elem_id="preset-save")
    c["confirmed"] = gr.State("")  # the name a second Save replaces
    with gr.Row():
        c["import_file"] = gr.File(label="Import a preset file (.json)", file_types=[".json"],
                                   type="filepath", elem_id="preset-import")
        c["export_file"] = gr.File(label="Exported preset", interactive=False, elem_id="preset-exported")
    c["message"] = gr.Markdown("", elem_id="preset-message")
    return c


def wire(c: dict[str, Any], form: SettingsForm) -> None:
    """Load fills every settings control; save stores what they show; delete, import, export act on files."""

    def on_load(name: str | None) -> list[Any]:
        if not name:
            raise api.UserError("choose a preset to load")
        return [*form.show(api.load_preset(name)), f"loaded preset **{name}**"]

    def on_save(name: str, description: str, confirmed: str, *vals: Any) -> tuple[Any, ...]:
        return save(name, description, form.read(vals), confirmed)

    listed = [c["list"], c["message"]]
    c["load"].click(user_errors(on_load), c["list"], [*form.inputs, c["message"]], api_visibility="private")
    c["list"].change(describe, c["list"], [c["name"], c["description"]], api_visibility="private")
    c["save"].click(user_errors(on_save), [c["name"], c["description"], c["confirmed"], *form.inputs],
                    [*listed, c["confirmed"]], api_visibility="private")
    c["delete"].click(user_errors(delete), c["list"], listed, api_visibility="private")
    c["import_file"].upload(user_errors(import_), c["import_file"], listed, api_visibility="private")
    c["export"].click(user_errors(export), c["list"], [c["export_file"], c["message"]],
                      api_visibility="private")


def describe(name: str | None) -> tuple[Any, Any]:
    """Choosing a preset puts its name and description in the save boxes (so saving again keeps them)."""
    found = [p for p in api.list_presets() if p.name == name]
    if not found:
        return gr.update(), gr.update()
    return ("" if found[0].builtin else found[0].name), found[0].description


def save(name: str, description: str, settings: api.Settings,
         confirmed: str = "") -> tuple[dict[str, Any], str, str]:
    """Save; a name that exists is only replaced by a second Save of the same name (the first one asks)."""
    name = (name or "").strip()
    if not name:
        raise api.UserError("type a name for the preset first")
    exists = any(p.name.lower() == name.lower() and not p.builtin for p in api.list_presets())
    if exists and confirmed.lower() != name.lower():
        return gr.update(), f"a preset named **{name}** exists: press Save again to replace it", name
    path = api.save_preset(name, settings, description or "")
    return gr.update(choices=choices(), value=path.stem), f"saved preset **{path.stem}**", ""


def delete(name: str | None) -> tuple[dict[str, Any], str]:
    if not name:
        return gr.update(), "choose a preset first"
    api.delete_preset(name)
    return gr.update(choices=choices(), value=None), f"deleted preset **{name}**"


def import_(path: str | None) -> tuple[dict[str, Any], str]:
    if not path:
        return gr.update(), ""
    saved = api.import_preset(Path(path), overwrite=False)
    return gr.update(choices=choices(), value=saved.stem), f"imported preset **{saved.stem}**"


def export(name: str | None) -> tuple[str | None, str]:
    if not name:
        return None, "choose a preset first"
    folder = Path(tempfile.mkdtemp(prefix="facestation-preset-"))
    return str(api.export_preset(name, folder)), f"exported **{name}**"
