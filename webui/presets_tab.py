"""Presets tab: save the current settings under a name, load one into every control, delete, import,
export."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui import markers_area
from webui.common import Ctx, browser_message, log
from webui.controls import SettingsForm


def choices(owner: str | None = None) -> list[tuple[str, str]]:
    """The presets ``owner`` sees, labelled by shelf (None: built-in and studio presets only)."""
    shown = api.list_presets(owner) if owner is not None else [p for p in api.list_presets()
                                                                if p.builtin or p.studio]
    return [(f"{p.name} (built-in)" if p.builtin else f"{p.name} (studio)" if p.studio else p.name, p.name)
            for p in shown]


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
    with gr.Row():
        c["save"] = gr.Button("Save (yours only)", variant="primary", elem_id="preset-save")
        c["publish"] = gr.Button("Publish to the studio", elem_id="preset-publish",
                                 visible=False)  # shown to admins once the page knows who is asking
    c["confirmed"] = gr.State("")  # the name a second Save (or Publish) replaces
    with gr.Row():
        c["import_file"] = gr.File(label="Import a preset file (.json)", file_types=[".json"],
                                   type="filepath", elem_id="preset-import")
        c["export_file"] = gr.File(label="Exported preset", interactive=False, elem_id="preset-exported")
    c["message"] = gr.Markdown("", elem_id="preset-message")
    return c


def answered(fn: Callable[..., Any], outputs: int, at: int) -> Callable[..., Any]:
    """``fn`` whose UserError is said in the message line (output ``at`` of its ``outputs``), the other
    outputs left as they are: a plain line, never Gradio's Error badge on the list (which stayed until a
    reload)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except api.UserError as exc:
            log.info("%s: %s", fn.__name__, exc)
            out: list[Any] = [gr.skip()] * outputs
            out[at] = f"⚠ {browser_message(str(exc))}"
            return tuple(out)

    return wrapper


def wire(ctx: Ctx, c: dict[str, Any], form: SettingsForm, shown: list[Any], markers: dict[str, Any],
         target: Any) -> None:
    """Load fills every settings control and lists the preset's markers on the Swap tab's timeline
    (``markers``: webui/markers_area.py, on ``target``); save stores what the controls show, with the listed
    markers, on the caller's own shelf; publish (admins) on the studio's; delete, import, export act on the
    caller's presets. The list is the caller's own, fetched again on each of the ``shown`` triggers (the
    page's load, the tab's select)."""

    def on_load(name: str | None, path: str | None, request: gr.Request) -> list[Any]:
        if not name:
            raise api.UserError("choose a preset to load")
        settings = api.load_preset(name, ctx.owner(request))
        return [*form.show(settings), *markers_area.listed(settings, path), f"loaded preset **{name}**"]

    def on_save(request: gr.Request, name: str, description: str, confirmed: str, start: str,
                *vals: Any) -> tuple[Any, ...]:
        settings = markers_area.job_settings(start, form.read(vals))
        return save(ctx, request, name, description, settings, confirmed)

    def on_publish(request: gr.Request, name: str, description: str, confirmed: str, start: str,
                   *vals: Any) -> tuple[Any, ...]:
        settings = markers_area.job_settings(start, form.read(vals))
        return save(ctx, request, name, description, settings, confirmed, studio=True)

    def on_describe(name: str | None, request: gr.Request) -> tuple[Any, Any]:
        return describe(name, ctx.owner(request), ctx.is_admin(request))

    def on_delete(name: str | None, request: gr.Request) -> tuple[dict[str, Any], str]:
        return delete(ctx, request, name)

    def on_import(path: str | None, request: gr.Request) -> tuple[dict[str, Any], str]:
        return import_(ctx, request, path)

    def on_export(name: str | None, request: gr.Request) -> tuple[str | None, str]:
        return export(ctx, request, name)

    def refresh(request: gr.Request) -> tuple[dict[str, Any], dict[str, Any]]:
        return gr.update(choices=choices(ctx.owner(request))), gr.update(visible=ctx.is_admin(request))

    listed = [c["list"], c["message"]]
    gr.on(shown, refresh, None, [c["list"], c["publish"]], api_visibility="private", queue=False,
          show_progress="hidden")
    loaded = [*form.inputs, *markers_area.outputs(markers), c["message"]]
    c["load"].click(answered(on_load, len(loaded), -1), [c["list"], target], loaded, api_visibility="private")
    c["list"].change(on_describe, c["list"], [c["name"], c["description"]], api_visibility="private")
    asked = [c["name"], c["description"], c["confirmed"], markers["start"], *form.inputs]
    c["save"].click(answered(on_save, 3, 1), asked, [*listed, c["confirmed"]], api_visibility="private")
    c["publish"].click(answered(on_publish, 3, 1), asked, [*listed, c["confirmed"]], api_visibility="private")
    c["delete"].click(answered(on_delete, 2, 1), c["list"], listed, api_visibility="private")
    c["import_file"].upload(answered(on_import, 2, 1), c["import_file"], listed, api_visibility="private")
    c["export"].click(answered(on_export, 2, 1), c["list"], [c["export_file"], c["message"]],
                      api_visibility="private")


def describe(name: str | None, owner: str | None = None, admin: bool = False) -> tuple[Any, Any]:
    """Choosing a preset puts its name and description in the save boxes (so saving again keeps them);
    a name the caller cannot save under (built-in; studio, unless an admin) is left out."""
    found = [p for p in api.list_presets(owner) if p.name == name]
    if not found:
        return gr.update(), gr.update()
    keep = not found[0].builtin and (admin or not found[0].studio)
    return (found[0].name if keep else ""), found[0].description


def save(ctx: Ctx, request: gr.Request | None, name: str, description: str, settings: api.Settings,
         confirmed: str = "", studio: bool = False) -> tuple[dict[str, Any], str, str]:
    """Save on the caller's shelf, or publish on the studio's (admins only); a name already on that shelf
    is only replaced by a second Save of the same name (the first one asks)."""
    owner = ctx.owner(request)
    if studio and not ctx.is_admin(request):
        raise api.UserError("only an admin can publish studio presets")
    name = (name or "").strip()
    if not name:
        raise api.UserError("type a name for the preset first")
    try:  # the engine decides what "exists" means (on that shelf, in any case); a second press replaces it
        path = api.save_preset(name, settings, description or "", owner=owner, studio=studio,
                               overwrite=confirmed.lower() == name.lower())
    except api.PresetExists as exc:
        again = "Publish" if studio else "Save"
        return gr.update(), f"a preset named **{exc.name}** exists: press {again} again to replace it", name
    ctx.audit.record(owner, "publish preset" if studio else "save preset", preset=path.stem)
    where = "published studio preset" if studio else "saved preset"
    return gr.update(choices=choices(owner), value=path.stem), f"{where} **{path.stem}**", ""


def delete(ctx: Ctx, request: gr.Request | None, name: str | None) -> tuple[dict[str, Any], str]:
    """Delete one of the caller's presets; an admin may also delete a studio preset."""
    if not name:
        return gr.update(), "choose a preset first"
    owner = ctx.owner(request)
    studio = any(p.studio and p.name == name for p in api.list_presets(owner))
    if studio and not ctx.is_admin(request):
        raise api.UserError(f"'{name}' is a studio preset: only an admin can delete it")
    api.delete_preset(name, owner=owner, studio=studio)
    ctx.audit.record(owner, "delete preset", preset=name, studio=studio)
    return gr.update(choices=choices(owner), value=None), f"deleted preset **{name}**"


def import_(ctx: Ctx, request: gr.Request | None, path: str | None) -> tuple[dict[str, Any], str]:
    if not path:
        return gr.update(), ""
    owner = ctx.owner(request)
    saved = api.import_preset(Path(path), overwrite=False, owner=owner)
    return gr.update(choices=choices(owner), value=saved.stem), f"imported preset **{saved.stem}**"


def export(ctx: Ctx, request: gr.Request | None, name: str | None) -> tuple[str | None, str]:
    if not name:
        return None, "choose a preset first"
    folder = Path(tempfile.mkdtemp(prefix="facestation-preset-"))
    return str(api.export_preset(name, folder, ctx.owner(request))), f"exported **{name}**"
