"""The facestation workstation: a Gradio Blocks app assembled from the tab modules.

Each tab module builds its components (``create``) and wires its callbacks into ``pipeline.api``
(``wire``); this module only lays the tabs out and calls them. ``create_app(config)`` builds the page;
``serve(config)`` launches it with the security settings (login, TLS, upload cap, the gate in front of
every route, results by per-user link) and a background render worker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from pipeline import api
from webui import (
    batch_area,
    controls,
    faces,
    files,
    https_port,
    kept_inputs,
    live_routes,
    live_tab,
    models_tab,
    presets_tab,
    preview_panel,
    processors_area,
    queue_tab,
    system_tab,
    tls,
)
from webui.audit import AuditLog
from webui.auth import Gate, Guard
from webui.common import Ctx, UiConfig

log = logging.getLogger("webui")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
AUDIT_FILE = "audit.log"
CACHE_CLEANING = (3600, 86400)

# the advanced settings on the Swap tab, in labelled groups (see controls.SECTION_TABS)
ADVANCED = ("Detector", "Mask & Colour", "Output")
CSS = """
.fs-jobs { width: 100%; border-collapse: collapse; font-size: 0.9em; }
.fs-jobs td, .fs-jobs th { padding: 2px 6px; border-bottom: 1px solid var(--border-color-primary); }
.fs-jobs progress { width: 8em; }
.fs-state.fs-done { color: var(--color-green-600, green); } .fs-state.fs-failed, .fs-error { color: #c0392b; }
.fs-updated { font-size: 0.75em; opacity: 0.6; }
/* face thumbnails stay small: Gradio gives a gallery of one image a single full-width column */
#faces .grid-container { grid-template-columns: repeat(auto-fill, minmax(110px, 140px)) !important; }
.fs-problem { color: #c0392b; font-weight: 600; } .fs-notice { color: #8a6d00; display: block; }
/* the notice mark drawn by CSS: a glyph like ⓘ is an empty box where the fonts lack it (Debian's chromium) */
.fs-info { display: inline-block; width: 1.1em; height: 1.1em; line-height: 1.1em; border-radius: 50%;
           border: 1.5px solid currentColor; text-align: center; font: italic bold 0.75em serif; }
.fs-folder { font-size: 0.8em; opacity: 0.7; }
.fs-jobs tbody tr { cursor: pointer; } .fs-jobs tr.fs-selected { background: var(--color-accent-soft); }
.fs-hidden { display: none !important; }
/* the selected job's before / after, side by side, from private links */
.fs-player { display: flex; gap: 12px; } .fs-pane { flex: 1; margin: 0; min-width: 0; }
.fs-pane video, .fs-pane img { width: 100%; max-height: 360px; object-fit: contain; background: #000; }
.fs-pane figcaption { font-size: 0.85em; opacity: 0.8; }
/* the six tabs always fit: never an overflow menu */
#tabs > .tab-wrapper .tab-container { flex-wrap: wrap; overflow: visible; }
/* thumbnails: source photos with the face boxed, the chosen people, a queue row's frame */
#source-thumbs .grid-container { grid-template-columns: repeat(auto-fill, minmax(140px, 170px)) !important; }
#chosen .grid-container { grid-template-columns: repeat(auto-fill, minmax(240px, 300px)) !important; }
#chosen .thumbnail-item { aspect-ratio: 2 / 1 !important; }
#source-thumbs .caption-label, #chosen .caption-label {
  white-space: normal; max-width: 95%; font-size: 0.8em; }
.fs-row-thumb { height: 40px; max-width: 72px; object-fit: contain; display: block; background: #000; }
/* a box's label chip stops short of its buttons (upload, clear, fullscreen) at the top right */
.block > label[data-testid="block-label"].float { max-width: calc(100% - 96px); }
/* a dropdown's text ends before its chevron (drawn over the input's right end) */
.wrap-inner > .secondary-wrap > input.border-none { padding-right: calc(var(--size-5) * 2 + 4px);
                                                    text-overflow: ellipsis; }
"""


@dataclass
class App:
    blocks: gr.Blocks
    ctx: Ctx
    components: dict[str, dict[str, Any]]


def build(config: UiConfig) -> App:
    queue = config.data / api.QUEUE_FILE if config.data else None  # None: the data folder, as the CLI has it
    audit = AuditLog((config.data or api.data_dir()) / AUDIT_FILE)
    ctx = Ctx(config, config.outputs or api.outputs_dir(), api.open_store(queue), audit=audit,
              guard=Guard(frozenset(u for u, _ in config.users), audit))
    # Gradio's cache (uploads, previews) is emptied every hour of what is a day old, and at shutdown
    with gr.Blocks(title="facestation", delete_cache=CACHE_CLEANING) as blocks:
        with gr.Row(equal_height=True):
            gr.Markdown("# facestation", elem_id="title")
            who = gr.Markdown("", elem_id="whoami")
            gr.Button("Log out", link="/logout", size="sm", scale=0, min_width=90, elem_id="logout",
                      visible=bool(config.users))
        parts, form = _create(ctx)
        _wire(ctx, parts, form, blocks)
        blocks.load(on_page_load, None, [form[k] for k in controls.MODEL_KEYS], api_visibility="private",
                    queue=False)

        def whoami(request: gr.Request) -> str:
            return signed_in(ctx, request)

        blocks.load(whoami, None, who, api_visibility="private", queue=False)
    parts["settings"] = form.controls
    return App(blocks, ctx, parts)


def create_app(config: UiConfig | None = None) -> gr.Blocks:
    return build(config or UiConfig()).blocks


def _create(ctx: Ctx) -> tuple[dict[str, dict[str, Any]], controls.SettingsForm]:
    """Six tabs: Swap (inputs, preview, main and advanced settings), Live (the camera swapped), Queue,
    Presets, Models, System;
    returns each part's components and the form of every settings control."""
    base = api.Settings()
    parts: dict[str, dict[str, Any]] = {}
    settings_controls: dict[str, Any] = {}
    parts["tabs"] = {}
    parts["layout"] = {}
    with gr.Tabs(elem_id="tabs") as parts["layout"]["tabs"]:
        with gr.Tab("Swap", id="Swap", elem_id="tab-swap") as parts["tabs"]["Swap"]:
            settings_controls |= _create_swap(base, parts)
        with gr.Tab("Live", id="Live", elem_id="tab-live") as parts["tabs"]["Live"]:
            parts["live"] = live_tab.create()
        with gr.Tab("Queue", id="Queue", elem_id="tab-queue") as parts["tabs"]["Queue"]:
            parts["queue"] = queue_tab.create(ctx)
        with gr.Tab("Presets", id="Presets", elem_id="tab-presets") as parts["tabs"]["Presets"]:
            parts["presets"] = presets_tab.create()
        with gr.Tab("Models", id="Models", elem_id="tab-models") as parts["tabs"]["Models"]:
            parts["models"] = models_tab.create()
        with gr.Tab("System", id="System", elem_id="tab-system") as parts["tabs"]["System"]:
            parts["system"] = system_tab.create()
    parts["queue"]["timer"] = queue_tab.create_timer(ctx)  # ticks on every tab (queue_tab.create_timer)
    return parts, controls.SettingsForm(settings_controls)


def _create_swap(base: api.Settings, parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Source and target, the main settings, the processors (open: each one's settings beside its tick box)
    and the advanced settings (grouped in closed accordions) on the left, scrolling beside the preview,
    which stays in view on the right (a sticky column, preview_panel.CSS); returns the settings controls."""
    with gr.Row(elem_id="swap-layout"):
        with gr.Column(scale=1, elem_id="swap-settings"):
            parts["faces"] = faces.create(base)
            main = controls.create_main(base)
            parts["batch"] = batch_area.create()  # the output folder and a batch (a closed accordion)
            shown: dict[str, Any] = dict(parts["faces"]["selector"]) | main
            with gr.Accordion("Processors", open=True, elem_id="processors"):
                made, parts["processors"] = processors_area.create(base)
                shown |= made
            with gr.Accordion("Advanced settings", open=False, elem_id="advanced"):
                for group in ADVANCED:
                    with gr.Accordion(group, open=False, elem_id="adv-" + group.split()[0].lower()):
                        shown |= controls.create_tab(group, base)
        with gr.Column(scale=1, elem_id="preview-column"):
            parts["preview"] = preview_panel.create()
    return shown


def _wire(ctx: Ctx, parts: dict[str, dict[str, Any]], form: controls.SettingsForm, blocks: gr.Blocks) -> None:
    f, p = parts["faces"], parts["preview"]
    faces.wire(f, form)
    processors_area.wire(parts["processors"])
    voice = parts["processors"]["voice"]  # the lip syncer's new voice, heard by the preview and the job
    preview_panel.wire(p, f, form, voice)
    live_tab.wire(ctx, parts["live"], f, form, blocks)
    queue_tab.wire(ctx, parts["queue"], f, p["add_job"], form, voice, status=p["status"],
                   folder=parts["batch"]["folder"], render_now=(p["render_now"], parts["layout"]["tabs"]))
    batch_area.wire(ctx, parts["batch"], f, form, voice, parts["queue"], blocks)
    kept_inputs.wire(ctx, kept_inputs.create(), f, form, blocks)  # a reload keeps sources, target, settings
    presets_tab.wire(ctx, parts["presets"], form, shown=[blocks.load, parts["tabs"]["Presets"].select],
                     markers=f["markers"], target=f["target"])
    models_tab.wire(ctx, parts["models"], shown=[blocks.load, parts["tabs"]["Models"].select])
    system_tab.wire(ctx, parts["system"], form, shown=parts["tabs"]["System"].select)
    # a model installed since (the Models tab, the CLI, a file copied in) is no longer marked "not
    # installed" in the dropdowns: on a change of the Models table and whenever the Swap tab is shown
    models = [form[k] for k in controls.MODEL_KEYS]
    refreshed = [parts["models"]["table"].change, parts["tabs"]["Swap"].select]
    gr.on(refreshed, controls.model_choice_updates, None, models, api_visibility="private",
          show_progress="hidden")


def signed_in(ctx: Ctx, request: gr.Request | None) -> str:
    """Who is signed in, shown beside the Log out button ("" without a login)."""
    user = ctx.owner(request)
    if not ctx.config.users or not user:
        return ""
    return f"signed in as **{user}**" + (" (admin: sees every job)" if user in ctx.config.admins else "")


def on_page_load() -> list[Any]:
    """Every page load lists the models there now (one just installed); the presets tab fetches the
    caller's own presets itself (presets_tab.wire)."""
    return controls.model_choice_updates()


class QuickHead:
    """ASGI middleware: ``HEAD /`` is answered at once, without building the page. Gradio's launch asks
    it of its own server (one 3 s try) and refuses to start without an answer ("When localhost is not
    accessible ..."); built in full, this page's answer can take longer than that on a busy machine."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "HEAD" and scope.get("path") == "/":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/html; charset=utf-8")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def launch_kwargs(app: App) -> dict[str, Any]:
    """The security-relevant launch settings, in one place (tests check these)."""
    cfg = app.ctx.config
    return {
        "server_name": cfg.host,
        "server_port": cfg.port,
        "auth": list(cfg.users) or None,
        "auth_message": ("facestation: sign in with the user name and password the host gave you"
                         if cfg.users else None),
        "max_file_size": cfg.max_upload,
        "allowed_paths": [],  # outputs are handed out per user by link (webui/files.py), never by path
        "show_error": False,
        "theme": gr.themes.Soft(),
        "css": CSS + live_tab.CSS + preview_panel.CSS + processors_area.CSS,
        "footer_links": ["gradio"],
        "quiet": True,
        "inbrowser": cfg.open_browser,
        # the gate answers 401 to every route without a login and guards Gradio's file cache per user;
        # the result route hands out results by link, to their owner only
        "app_kwargs": {
            "middleware": [Middleware(QuickHead), Middleware(Gate, guard=app.ctx.guard)],
            "routes": [files.route(app.ctx.links, lambda link: queue_tab.link_valid(app.ctx, link),
                                   lambda link: queue_tab.downloaded(app.ctx, link)),
                       *live_routes.routes(app.ctx.live)],
        },
        "ssl_certfile": str(cfg.ssl_certfile) if cfg.ssl_certfile else None,
        "ssl_keyfile": str(cfg.ssl_keyfile) if cfg.ssl_keyfile else None,
        "ssl_verify": False,  # Gradio's own start-up check of the server (a self-signed certificate)
    }


def _secure(config: UiConfig) -> UiConfig:
    """Refuse an unsafe network set-up; make the self-signed certificate if asked. Logs who may sign in."""
    if config.host not in LOCAL_HOSTS:
        if not config.users:
            raise api.UserError("refusing to listen on the network without a password: "
                                "add --auth USER:PASS or --auth-file FILE")
        if not config.tls and not config.insecure:
            raise api.UserError("refusing to send passwords over plain HTTP on the network: "
                                "give --ssl-certfile/--ssl-keyfile, or let facestation make a certificate, "
                                "or add --insecure")
    if config.users:
        admins = ", ".join(sorted(config.admins)) or "nobody"
        log.warning("accounts: %s; admin (sees every job): %s", ", ".join(u for u, _ in config.users), admins)
    if config.self_signed:
        cert, key = tls.self_signed((config.data or api.data_dir()) / "tls")
        log.warning("HTTPS with a self-signed certificate %s; SHA-256 fingerprint %s", cert,
                    tls.fingerprint(cert))
        config = replace(config, ssl_certfile=cert, ssl_keyfile=key)
    return config


def serve(config: UiConfig, *, block: bool = True) -> tuple[App, Any]:
    """Launch the app (and the render worker). With ``block=False`` returns at once; close with ``stop``."""
    api.check_environment()  # a bad FACESTATION_* value stops the start with the line that names it
    config = _secure(config)
    api.remove_download_copies()  # private copies older versions handed out
    app = build(config)
    handle = api.start_worker(app.ctx.store, config.worker_id) if config.worker else None
    if handle is not None:
        log.warning("render worker %s serves the queue %s", handle.worker.worker_id, app.ctx.store.path)
    app.blocks.queue(default_concurrency_limit=4, max_size=256)
    try:
        app.blocks.launch(prevent_thread_lock=True, **launch_kwargs(app))
        if config.tls:  # plain http to the port gets "open https://…", not a reset connection
            https_port.answer_plain_http(app.blocks.server)
    except BaseException:
        if handle is not None:
            handle.stop()
        raise
    if block:
        app.blocks.block_thread()
        app.ctx.live.stop_all()  # the server is gone: live recordings finished
        if handle is not None:
            handle.stop()
    return app, handle


def stop(app: App, handle: Any | None) -> None:
    app.ctx.live.stop_all()  # live recordings finished while the connections can still close
    app.blocks.close()
    if handle is not None:
        handle.stop()
