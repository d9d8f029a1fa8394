"""The Live tab: the page's camera swapped in real time over WebRTC (webui/live_routes.py signals).

Start checks the Swap tab's source photos and settings and opens a run for this user and login session
(``api.LiveRuns``); the page then sends its camera (getUserMedia) and plays the processed video that comes
back on the same connection, with the page's fps and the server's latency and drops over it. A change of
a setting or a source photo applies to the running stream from its next frame; Mirror flips the camera;
Record writes the stream to a file in the user's results.
"""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import Ctx, beside, browser_message
from webui.controls import SettingsForm
from webui.live_page import CSS, LIVE_JS

__all__ = ["CSS", "create", "wire"]

log = logging.getLogger("webui.live")

HELP = ("Your camera, swapped as it comes, with the **Swap** tab's source photos and settings; a change "
        "there applies to the running stream at once. The browser gives the camera only to a secure page: "
        "localhost, or this app over HTTPS (`--listen`).")

# "Also send to": the CLI's outputs (facestation live --output), offered on the host's own machine only
SEND_TO = {"nowhere else": "", "OBS (MPEG-TS over UDP)": "udp://127.0.0.1:5000",
           "a virtual camera (v4l2loopback)": "v4l2:/dev/video10"}
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    gr.Markdown(HELP, elem_id="live-help")
    missing = api.rtc_missing()
    c["missing"] = gr.Markdown(f"<span class='fs-problem'>{missing}</span>" if missing else "",
                               elem_id="live-missing", visible=bool(missing))
    with gr.Row():
        c["start"] = gr.Button("Start", variant="primary", elem_id="live-start", scale=0, min_width=100,
                               interactive=not missing)
        c["stop"] = gr.Button("Stop", elem_id="live-stop", scale=0, min_width=100)
        c["mirror"] = gr.Checkbox(False, label="Mirror", elem_id="live-mirror", scale=0, min_width=100)
        c["record"] = gr.Checkbox(False, label="Record to my results", elem_id="live-record", scale=0,
                                  min_width=180)
    with gr.Row(visible=False, elem_id="live-send") as c["send_row"]:  # shown to the host's own page
        c["send"] = gr.Dropdown(list(SEND_TO), value="nowhere else", label="Also send to",
                                elem_id="live-send-to", scale=1)
        c["target"] = gr.Textbox("", label="Address", elem_id="live-send-target", scale=1,
                                 placeholder="udp://HOST:PORT (OBS's media source) or v4l2:/dev/videoN")
    c["video"] = gr.HTML("", elem_id="live-video", js_on_load=LIVE_JS)
    c["status"] = gr.Markdown("", elem_id="live-status")
    # the run's token: the page's script sends it with its offer (never shown)
    c["token"] = gr.Textbox("", elem_id="live-token", elem_classes=["fs-hidden"], show_label=False,
                            container=False)
    return c


def on_hosts_machine(ctx: Ctx, request: gr.Request | None) -> bool:
    """Whether this page may send to the host's OBS or virtual camera: a UI for this machine alone, or a
    shared one's page opened on the host itself (from a loopback address)."""
    if not ctx.config.users:
        return True
    client = getattr(request, "client", None)
    return getattr(client, "host", None) in LOOPBACK


def wire(ctx: Ctx, c: dict[str, Any], faces: dict[str, Any], form: SettingsForm, blocks: gr.Blocks) -> None:
    """Start/Stop, Mirror, "Also send to", and every settings control (``form``) and source photo
    (``faces``) of the Swap tab applied to the running stream."""
    private: dict[str, Any] = {"api_visibility": "private"}

    def on_start(request: gr.Request, old: str, sources: list[str] | None, mirror: bool, record: bool,
                 send: str, target: str, *vals: Any) -> tuple[str, str]:
        user, session = ctx.owner(request), ctx.session(request)
        _quiet_stop(ctx, old, user, session)
        stream_to = (target or "").strip() if SEND_TO.get(send) else ""
        try:
            if stream_to and not on_hosts_machine(ctx, request):
                raise api.UserError("sending to OBS or a virtual camera is for the host's own machine: open "
                                    "the app there, or record to your results")
            out = api.output_path(ctx.outputs, "live.mp4", user) if record else None
            run = ctx.live.start(user, session, form.read(vals), sources or [], out, mirror, stream_to)
        except api.UserError as exc:
            raise gr.Error(browser_message(str(exc)), print_exception=False) from None
        ctx.audit.record(user, "live start", recording=out.name if out else "", stream=stream_to)
        said = [f"recording to {out.name}"] if out else []
        said += [f"sending to {stream_to}"] if stream_to else []
        return run.token, "live: started" + (f"; {'; '.join(said)}" if said else "")

    def on_stop(request: gr.Request, token: str) -> tuple[str, str]:
        if not token:
            return "", ""
        try:
            summary, recording = ctx.live.stop(token, ctx.owner(request), ctx.session(request))
        except api.UserError:
            return "", "stopped"
        error = summary.get("error")
        said = [f"stopped: {browser_message(error)}" if error else "stopped",
                f"{summary['frames_delivered']} frames swapped, {summary['frames_dropped']} dropped of "
                f"{summary['frames_captured']}"]
        if recording:
            said.append(f"recording saved to your results as {recording.name}")
        return "", "; ".join(said)

    def on_mirror(request: gr.Request, token: str, mirror: bool) -> None:
        if token:
            _quietly(lambda: ctx.live.set_mirror(token, ctx.owner(request), ctx.session(request), mirror))

    def on_change(request: gr.Request, token: str, sources: list[str] | None, *vals: Any) -> str:
        if not token:
            return gr.skip()
        try:
            if not ctx.live.update(token, ctx.owner(request), ctx.session(request), form.read(vals), sources):
                return gr.skip()  # the same settings: the running stream goes on as it is
        except api.UserError as exc:
            if "no live run of yours" in str(exc):  # stopped meanwhile: the next Start takes them
                return gr.skip()
            return f"<span class='fs-problem'>the running stream keeps its settings: " \
                   f"{browser_message(str(exc))}</span>"
        return "live: the new settings apply to the running stream"

    def on_send(send: str) -> Any:
        return gr.update(value=SEND_TO.get(send, ""), interactive=bool(SEND_TO.get(send)))

    def on_load(request: gr.Request) -> Any:
        return gr.update(visible=on_hosts_machine(ctx, request))

    blocks.load(on_load, None, c["send_row"], queue=False, **private)
    c["send"].change(on_send, c["send"], c["target"], queue=False, **private)
    inputs = [c["token"], faces["sources"], c["mirror"], c["record"], c["send"], c["target"], *form.inputs]
    c["start"].click(on_start, inputs, [c["token"], c["status"]], **private).success(
        None, [c["token"]], None, js="(token) => { window.fsLive.start(token); }")
    c["stop"].click(on_stop, [c["token"]], [c["token"], c["status"]],
                    js="(token) => { window.fsLive.stop(); return token; }", **private)
    c["mirror"].change(on_mirror, [c["token"], c["mirror"]], None, **private,
                       js="(token, mirror) => { window.fsLive.mirror(mirror); return [token, mirror]; }")
    beside([faces["sources"].change, *[control.change for control in form.inputs]], on_change,
           [c["token"], faces["sources"], *form.inputs], c["status"], **private)


def _quiet_stop(ctx: Ctx, token: str, user: str, session: str) -> None:
    """This page's previous run ended before a new one starts (gone already: nothing to do)."""
    if token:
        _quietly(lambda: ctx.live.stop(token, user, session))


def _quietly(action: Any) -> None:
    try:
        action()
    except api.UserError as exc:  # the run is gone (stopped, the page's connection lost): nothing to act on
        log.info("live: %s", exc)
