"""The facestation workstation: a Gradio Blocks app wiring the tab modules to the engine.

``create_app(config)`` builds the page; ``serve(config)`` launches it with the security settings
(login, upload cap, file serving limited to the outputs folder) and a background render worker.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import paths
from pipeline.errors import UserError
from pipeline.jobs.store import JobStore
from pipeline.settings import Settings
from webui import controls, faces, models_tab, presets_tab, preview_panel, queue_tab, system_tab
from webui.common import Ctx, UiConfig, user_errors

log = logging.getLogger("webui")

TABS = ("Faces", "Detector", "Swapper & Enhancer", "Mask & Colour", "Output", "Queue", "Presets", "Models", "System")
CSS = """
.fs-jobs { width: 100%; border-collapse: collapse; font-size: 0.9em; }
.fs-jobs td, .fs-jobs th { padding: 2px 6px; border-bottom: 1px solid var(--border-color-primary); }
.fs-jobs progress { width: 8em; }
.fs-state.fs-done { color: var(--color-green-600, green); } .fs-state.fs-failed, .fs-error { color: #c0392b; }
.fs-updated { font-size: 0.75em; opacity: 0.6; }
/* face thumbnails stay small: Gradio gives a gallery of one image a single full-width column */
#faces .grid-container { grid-template-columns: repeat(auto-fill, minmax(110px, 140px)) !important; }
"""


def settings_from_values(keys: Sequence[str], values: Sequence[Any]) -> Settings:
    """Settings shown by the controls; a reference path must be one the app saved itself."""
    settings = controls.settings_from(keys, values)
    folder = (paths.data_dir() / "references").resolve()
    for ref in [settings.selector.reference, *settings.selector.mapping]:
        if ref is not None and Path(ref).resolve().parent != folder:
            raise UserError("reference faces must be picked from the faces gallery")
    return settings


@dataclass
class App:
    blocks: gr.Blocks
    ctx: Ctx
    components: dict[str, dict[str, Any]]


def build(config: UiConfig) -> App:
    outputs = config.outputs or paths.outputs_dir()
    store = JobStore((config.data or paths.data_dir()) / "queue.sqlite3")
    ctx = Ctx(config, outputs, store)
    base = Settings()
    parts: dict[str, dict[str, Any]] = {}
    settings_controls: dict[str, Any] = {}

    with gr.Blocks(title="facestation") as blocks:
        gr.Markdown("# facestation", elem_id="title")
        with gr.Row():
            with gr.Column(scale=3), gr.Tabs(elem_id="tabs"):
                for tab in TABS:
                    with gr.Tab(tab, id=tab, elem_id="tab-" + tab.split()[0].lower()):
                        if tab == "Faces":
                            parts["faces"] = faces.create(base)
                            settings_controls |= parts["faces"]["selector"]
                        elif tab == "Queue":
                            parts["queue"] = queue_tab.create(ctx)
                        elif tab == "Presets":
                            parts["presets"] = presets_tab.create()
                        elif tab == "Models":
                            parts["models"] = models_tab.create()
                        elif tab == "System":
                            parts["system"] = system_tab.create()
                        else:
                            for section, where in controls.SECTION_TABS.items():
                                if where == tab:
                                    with gr.Accordion(section.capitalize(), open=True):
                                        settings_controls |= controls.create_section(section, base)
            with gr.Column(scale=2):
                parts["preview"] = preview_panel.create()
        _wire(ctx, parts, settings_controls)
    parts["settings"] = settings_controls
    return App(blocks, ctx, parts)


def create_app(config: UiConfig | None = None) -> gr.Blocks:
    return build(config or UiConfig()).blocks


def _wire(ctx: Ctx, parts: dict[str, dict[str, Any]], settings_controls: dict[str, Any]) -> None:
    keys = list(settings_controls)
    values = list(settings_controls.values())
    f, p, q, pr, m, s = (parts[k] for k in ("faces", "preview", "queue", "presets", "models", "system"))

    def current(vals: Sequence[Any]) -> Settings:
        return settings_from_values(keys, vals)

    # --- target, frame, faces gallery ---------------------------------------------------------------
    def on_target(target: str | None, frame: int, *vals: Any) -> tuple[Any, ...]:
        info, slider = faces.describe_target(target)
        return info, slider, faces.gallery(target, 0, current(vals))

    f["target"].change(user_errors(on_target), [f["target"], f["frame"], *values],
                       [f["target_info"], f["frame"], f["faces"]], api_visibility="private")

    def on_frame(target: str | None, frame: int, *vals: Any) -> Any:
        return faces.gallery(target, frame, current(vals))

    f["frame"].release(user_errors(on_frame), [f["target"], f["frame"], *values], f["faces"],
                       api_visibility="private", trigger_mode="always_last")

    ref_i, mode_i, map_i = (keys.index(k) for k in ("selector.reference", "selector.mode", "selector.mapping"))

    def on_pick(evt: gr.SelectData, pick: str, target: str | None, frame: int, *vals: Any) -> tuple[Any, ...]:
        if not target or evt.index is None:
            raise UserError("choose a target first")
        from pipeline import preview as engine

        settings = current(vals)
        index = evt.index if isinstance(evt.index, int) else int(evt.index[0])
        ref = str(engine.save_reference(target, int(frame), index, settings))
        if pick == faces.PICK_MAP:
            return gr.update(), gr.update(), ", ".join([*settings.selector.mapping, ref])
        return ref, "reference", gr.update()

    f["faces"].select(user_errors(on_pick), [f["pick"], f["target"], f["frame"], *values],
                      [values[ref_i], values[mode_i], values[map_i]], api_visibility="private")
    f["clear_reference"].click(lambda: ("", "many", ""), None, [values[ref_i], values[mode_i], values[map_i]],
                               api_visibility="private")

    # --- preview: re-rendered on any change, only the last pending request runs --------------------
    def on_preview(sources: list[str] | None, target: str | None, frame: int, overlay: bool, *vals: Any) -> Any:
        return preview_panel.render(current(vals), sources, target, frame, overlay)

    triggers = [f["sources"].change, f["target"].change, f["frame"].release, p["overlay"].change]
    triggers += [c.change for c in values]
    gr.on(triggers, user_errors(on_preview), [f["sources"], f["target"], f["frame"], p["overlay"], *values],
          [p["image"], p["status"]], trigger_mode="always_last", concurrency_limit=1, concurrency_id="preview",
          show_progress="minimal", api_visibility="private")

    # --- queue ---------------------------------------------------------------------------------------
    def on_add(request: gr.Request, sources: list[str] | None, target: str | None, *vals: Any) -> tuple[str, str]:
        job = queue_tab.submit(ctx, current(vals), sources, target, request)
        gr.Info(f"queued job {job.id}")
        table = queue_tab.render_jobs(queue_tab.visible_jobs(ctx, request))
        return f"queued job {job.id} → {job.output}", table

    # every click queues a job (Gradio's default "once" would silently drop a click made while the last is pending)
    p["add_job"].click(user_errors(on_add), [f["sources"], f["target"], *values], [q["message"], q["table"]],
                       api_visibility="private", trigger_mode="multiple")
    queue_tab.wire(ctx, q)

    # --- presets -------------------------------------------------------------------------------------
    def on_load(name: str | None) -> list[Any]:
        if not name:
            raise UserError("choose a preset to load")
        from pipeline import presets

        loaded = presets.load(name)
        return [*controls.values_of(keys, loaded), f"loaded preset **{name}**"]

    pr["load"].click(user_errors(on_load), pr["list"], [*values, pr["message"]], api_visibility="private")
    pr["save"].click(user_errors(lambda name, desc, *vals: presets_tab.save(name, desc, current(vals))),
                     [pr["name"], pr["description"], *values], [pr["list"], pr["message"]],
                     api_visibility="private")
    pr["delete"].click(user_errors(presets_tab.delete), pr["list"], [pr["list"], pr["message"]],
                       api_visibility="private")
    pr["import_file"].upload(user_errors(presets_tab.import_), pr["import_file"], [pr["list"], pr["message"]],
                             api_visibility="private")
    pr["export"].click(user_errors(presets_tab.export), pr["list"], [pr["export_file"], pr["message"]],
                       api_visibility="private")

    # --- models and system ---------------------------------------------------------------------------
    m["fetch"].click(user_errors(models_tab.fetch), m["name"], [m["table"], m["name"], m["message"]],
                     api_visibility="private")
    m["file"].upload(user_errors(models_tab.import_), [m["file"], m["import_name"]],
                     [m["table"], m["name"], m["message"]], api_visibility="private")
    s["refresh"].click(system_tab.report, None, s["report"], api_visibility="private")
    s["release"].click(system_tab.release_models, None, s["report"], api_visibility="private")
    s["bench_run"].click(user_errors(lambda *vals: system_tab.start_bench(ctx, current(vals))), values,
                         [s["bench_text"], s["bench_timer"]], api_visibility="private")
    s["bench_timer"].tick(lambda: system_tab.poll_bench(ctx), None, [s["bench_text"], s["bench_chart"], s["bench_timer"]],
                          api_visibility="private", show_progress="hidden")


def start_worker(ctx: Ctx) -> Any | None:
    """Start the background render worker if this build has one; returns its handle (with ``.stop()``)."""
    try:
        worker = importlib.import_module("pipeline.jobs.worker")
    except ImportError:
        log.warning("no render worker in this build: jobs are queued but only run with `facestation queue run`")
        return None
    return worker.start_in_thread(ctx.store)


def launch_kwargs(app: App) -> dict[str, Any]:
    """The security-relevant launch settings, in one place (tests check these)."""
    cfg = app.ctx.config
    return {
        "server_name": cfg.host,
        "server_port": cfg.port,
        "auth": list(cfg.users) or None,
        "auth_message": "facestation: sign in with the user name and password the host gave you" if cfg.users else None,
        "max_file_size": cfg.max_upload,
        "allowed_paths": [],  # outputs are handed out per user as private copies (queue_tab.download)
        "show_error": False,
        "theme": gr.themes.Soft(),
        "css": CSS,
        "footer_links": ["gradio"],
        "quiet": True,
        "inbrowser": cfg.open_browser,
    }


def serve(config: UiConfig, *, block: bool = True) -> tuple[App, Any]:
    """Launch the app (and the render worker). With ``block=False`` returns at once; close with ``stop``."""
    if config.host not in ("127.0.0.1", "localhost", "::1") and not config.users:
        raise UserError("refusing to listen on the network without a password: add --auth USER:PASS or --auth-file FILE")
    app = build(config)
    handle = start_worker(app.ctx) if config.worker else None
    app.blocks.queue(default_concurrency_limit=4, max_size=256)
    try:
        app.blocks.launch(prevent_thread_lock=not block, **launch_kwargs(app))
    except BaseException:
        if handle is not None:
            handle.stop()
        raise
    if block and handle is not None:
        handle.stop()
    return app, handle


def stop(app: App, handle: Any | None) -> None:
    app.blocks.close()
    if handle is not None:
        handle.stop()
