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
from webui.common import Ctx, browser_message
from webui.controls import SettingsForm
from webui.live_routes import PREFIX

log = logging.getLogger("webui.live")

HELP = ("Your camera, swapped as it comes, with the **Swap** tab's source photos and settings; a change "
        "there applies to the running stream at once. The browser gives the camera only to a secure page: "
        "localhost, or this app over HTTPS (`--listen`).")

# The frame index a test or bench camera stamps on each frame (tests/test_live.py's ``stamp`` and
# ``read_index``, the one layout both follow): INDEX_BITS squares of INDEX_SQUARE px along the bottom-left
# edge, bit b (least significant first) white for 1, black for 0, at x = 2 + b*S .. 2 + (b+1)*S and
# y = h - S - 2 .. h - 2; read from each square's inside (x 5 + b*S .. (b+1)*S - 1, y h - S .. h - 4):
# mean over the channels above 128 is a 1. The page reads it (``readIndex``) from its own camera and from
# the video that comes back to measure glass-to-glass latency; a square neither clearly black nor white
# (a camera that stamps nothing) gives no index, and no latency is shown.
INDEX_BITS, INDEX_SQUARE = 8, 14

LIVE_JS = """
element.innerHTML = `<div class="fs-live">
  <figure class="fs-pane"><video id="live-local" autoplay muted playsinline></video>
    <figcaption>camera</figcaption></figure>
  <figure class="fs-pane fs-live-out"><video id="live-remote" autoplay muted playsinline></video>
    <div id="live-overlay" class="fs-live-overlay">stopped</div><figcaption>swapped</figcaption></figure>
</div>`;
window.fsLive = (() => {
  const $ = (id) => document.getElementById(id);
  const state = {pc: null, stream: null, timer: null, token: '', frames: 0, since: 0, fps: 0, server: null};
  const say = (text) => { $('live-overlay').textContent = text; };
  const BITS = INDEX_BITS, S = INDEX_SQUARE;  // the index code: see webui/live_tab.py
  const strip = document.createElement('canvas');
  strip.width = BITS * S + 2; strip.height = S;
  const pen = strip.getContext('2d', {willReadFrequently: true});
  // the index in the bottom-left corner of `video`, read at the camera's size (w × h) so that a frame the
  // browser sent scaled down reads the same; -1 where a square is neither clearly black nor white
  function readIndex(video, w, h) {
    if (!video.videoWidth || !w) return -1;
    const sx = video.videoWidth / w, sy = video.videoHeight / h;
    pen.drawImage(video, 0, (h - S) * sy, strip.width * sx, S * sy, 0, 0, strip.width, S);
    const px = pen.getImageData(0, 0, strip.width, S).data;
    let index = 0;
    for (let b = 0; b < BITS; b++) {
      let sum = 0, n = 0;
      for (let y = 0; y < S - 4; y++) {
        for (let x = 5 + b * S; x < (b + 1) * S - 1; x++) {
          const i = (y * strip.width + x) * 4; sum += px[i] + px[i + 1] + px[i + 2]; n += 3;
        }
      }
      const mean = sum / n;
      if (mean > 64 && mean < 192) return -1;
      if (mean > 128) index |= 1 << b;
    }
    return index;
  }
  // glass to glass: when each index first showed in the page's camera, and when it first came back
  // (the last KEPT of them). The camera loops (a file): an index shows again each loop, its newer time
  // replacing the older; the indices the busy page's video skipped lose theirs (no sample for them),
  // and an index back that the camera's video has not shown in this loop yet (it lags) is not measured.
  // Times are the page's rendering steps that first painted a frame (rVFC's `now`: monotonic)
  const KEPT = 300, CODES = 1 << BITS;
  let meter = null;
  const newMeter = () => ({shown: new Map(), local: -1, top: 0, loop: CODES, remote: -1, samples: [],
                           count: 0, back: [], received: 0});
  function onLocal(now, meta) {
    const video = $('live-local');
    if (!state.stream || !video) return;
    const index = readIndex(video, video.videoWidth, video.videoHeight);
    const wrapped = index < meter.local - meter.top / 2;  // back to the start (a step back: a late frame)
    if (index >= 0 && (index > meter.local || wrapped)) {
      if (meter.local >= 0) {
        if (wrapped) meter.loop = meter.top + 1;  // the camera's loop is this long
        for (let k = (meter.local + 1) % CODES; k !== index; k = (k + 1) % CODES) meter.shown.delete(k);
      }
      meter.shown.set(index, now);
      meter.local = index; meter.top = Math.max(meter.top, index);
    }
    video.requestVideoFrameCallback(onLocal);
  }
  function onRemote(now, meta) {
    const video = $('live-remote'), camera = $('live-local');
    if (!state.pc || !video) return;
    state.frames += 1;
    const index = readIndex(video, camera.videoWidth, camera.videoHeight);
    const behind = (meter.local - index + meter.loop) % meter.loop;  // how far the camera is past it
    if (index >= 0 && index !== meter.remote && meter.shown.has(index) && behind < meter.loop / 2) {
      const t = now, latency = t - meter.shown.get(index);
      if (latency >= 0) {
        meter.samples.push({t, latency, index}); meter.count += 1;
        if (meter.samples.length > KEPT) meter.samples.shift();
      }
    }
    if (index >= 0 && index !== meter.remote) {  // a new frame back: counted for the fps
      meter.back.push(now); meter.received += 1;
      if (meter.back.length > KEPT) meter.back.shift();
    }
    if (index >= 0) meter.remote = index;
    video.requestVideoFrameCallback(onRemote);
  }
  // {fps: distinct indices back per second over the last 5 s, received: how many came back, latency
  //  p50/p95 (ms) of the last KEPT measured, samples: how many were measured, indices: the last KEPT
  //  measured in order, and shown_ms: when each of them showed in the camera (page time, ms)}
  function measure() {
    const all = meter ? meter.samples : [];
    const sorted = all.map((s) => s.latency).sort((a, b) => a - b);
    const rank = (p) => sorted.length ? sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] : null;
    const back = meter ? meter.back : [], last = back.length ? back[back.length - 1] : 0;
    const recent = back.filter((t) => t >= last - 5000);
    const span = recent.length > 1 ? recent[recent.length - 1] - recent[0] : 0;
    return {fps: span > 0 ? (recent.length - 1) * 1000 / span : 0, latency_p50_ms: rank(0.5),
            latency_p95_ms: rank(0.95), samples: meter ? meter.count : 0,
            received: meter ? meter.received : 0, indices: all.map((s) => s.index),
            shown_ms: all.map((s) => s.t - s.latency)};
  }
  async function poll(token) {
    const span = (performance.now() - state.since) / 1000;
    state.fps = span > 0 ? state.frames / span : 0;
    state.frames = 0; state.since = performance.now();
    const r = await fetch(`PREFIX/stats/${token}`);
    if (!r.ok) return;
    const s = state.server = await r.json(), m = measure();
    const shown = m.samples >= 10
      ? `${m.fps.toFixed(1)} fps · glass to glass ${Math.round(m.latency_p50_ms)} ms ` +
        `(p95 ${Math.round(m.latency_p95_ms)}) · server ${s.latency_p50_ms} ms`
      : `${state.fps.toFixed(1)} fps in the page · latency ${s.latency_p50_ms} ms (p95 ${s.latency_p95_ms})`;
    say(`${shown} · ${s.frames_dropped} dropped of ${s.frames_captured}`);
  }
  function stop() {
    clearInterval(state.timer);
    if (state.pc) state.pc.close();
    if (state.stream) state.stream.getTracks().forEach((t) => t.stop());
    state.pc = state.stream = state.timer = null; state.token = '';
    if ($('live-overlay')) say('stopped');
  }
  // a page closed or left without Stop ends its run on the server (its recording kept)
  window.addEventListener('pagehide', () => {
    if (state.token) navigator.sendBeacon(`PREFIX/stop/${state.token}`);
  });
  async function start(token) {
    stop();
    if (!token) return;
    if (!window.isSecureContext || !navigator.mediaDevices) {
      say('the browser gives the camera only to a secure page: open this app on localhost or over HTTPS');
      return;
    }
    try {
      const video = {width: 640, height: 480};
      state.stream = await navigator.mediaDevices.getUserMedia({video, audio: false});
    } catch (e) { say(`no camera: ${e.message}`); return; }
    state.token = token; meter = newMeter();
    const camera = $('live-local');
    camera.srcObject = state.stream;
    if (camera.requestVideoFrameCallback) camera.requestVideoFrameCallback(onLocal);
    const pc = state.pc = new RTCPeerConnection();
    state.stream.getVideoTracks().forEach((t) => pc.addTrack(t, state.stream));
    pc.ontrack = (e) => {
      const video = $('live-remote');
      video.srcObject = e.streams[0] || new MediaStream([e.track]);
      if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(onRemote);
    };
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((done) => {
      if (pc.iceGatheringState === 'complete') return done();
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && done());
    });
    say('connecting…');
    const r = await fetch('PREFIX/offer', {method: 'POST', headers: {'content-type': 'application/json'},
      body: JSON.stringify({token, sdp: pc.localDescription.sdp, type: pc.localDescription.type})});
    const answer = await r.json();
    if (!r.ok) { stop(); say(answer.detail); return; }
    await pc.setRemoteDescription(answer);
    state.since = performance.now();
    state.timer = setInterval(() => poll(token), 1000);
  }
  return {start, stop, measure, readIndex, state};
})();
""".replace("PREFIX", PREFIX).replace("INDEX_BITS", str(INDEX_BITS)).replace("INDEX_SQUARE",
                                                                            str(INDEX_SQUARE))

CSS = """
.fs-live { display: flex; gap: 12px; } .fs-live-out { position: relative; }
.fs-live video { width: 100%; max-height: 480px; background: #000; }
.fs-live-overlay { position: absolute; left: 8px; top: 8px; padding: 2px 6px; font: 0.85em monospace;
                   color: #fff; background: rgba(0, 0, 0, 0.6); border-radius: 4px; }
"""


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
    c["video"] = gr.HTML("", elem_id="live-video", js_on_load=LIVE_JS)
    c["status"] = gr.Markdown("", elem_id="live-status")
    # the run's token: the page's script sends it with its offer (never shown)
    c["token"] = gr.Textbox("", elem_id="live-token", elem_classes=["fs-hidden"], show_label=False,
                            container=False)
    return c


def wire(ctx: Ctx, c: dict[str, Any], faces: dict[str, Any], form: SettingsForm) -> None:
    """Start/Stop, Mirror, and every settings control (``form``) and source photo (``faces``) of the Swap
    tab applied to the running stream."""
    private: dict[str, Any] = {"api_visibility": "private"}

    def on_start(request: gr.Request, old: str, sources: list[str] | None, mirror: bool, record: bool,
                 *vals: Any) -> tuple[str, str]:
        user, session = ctx.owner(request), ctx.session(request)
        _quiet_stop(ctx, old, user, session)
        try:
            out = api.output_path(ctx.outputs, "live.mp4", user) if record else None
            run = ctx.live.start(user, session, form.read(vals), sources or [], out, mirror)
        except api.UserError as exc:
            raise gr.Error(browser_message(str(exc)), print_exception=False) from None
        ctx.audit.record(user, "live start", recording=out.name if out else "")
        return run.token, "live: started; fps, latency and drops show over the swapped picture" + (
            f"; recording to {out.name}" if out else "")

    def on_stop(request: gr.Request, token: str) -> tuple[str, str]:
        if not token:
            return "", ""
        try:
            summary, recording = ctx.live.stop(token, ctx.owner(request), ctx.session(request))
        except api.UserError:
            return "", "stopped"
        said = (f"stopped: {summary['frames_delivered']} frames swapped, {summary['frames_dropped']} "
                f"dropped of {summary['frames_captured']}")
        return "", said + (f"; recording saved to your results as {recording.name}" if recording else "")

    def on_mirror(request: gr.Request, token: str, mirror: bool) -> None:
        if token:
            _quietly(lambda: ctx.live.set_mirror(token, ctx.owner(request), ctx.session(request), mirror))

    def on_change(request: gr.Request, token: str, sources: list[str] | None, *vals: Any) -> str:
        if not token:
            return gr.skip()
        try:
            ctx.live.update(token, ctx.owner(request), ctx.session(request), form.read(vals), sources)
        except api.UserError as exc:
            return f"<span class='fs-problem'>not applied: {browser_message(str(exc))}</span>"
        return "live: the new settings apply to the running stream"

    inputs = [c["token"], faces["sources"], c["mirror"], c["record"], *form.inputs]
    c["start"].click(on_start, inputs, [c["token"], c["status"]], **private).success(
        None, [c["token"]], None, js="(token) => { window.fsLive.start(token); }")
    c["stop"].click(on_stop, [c["token"]], [c["token"], c["status"]],
                    js="(token) => { window.fsLive.stop(); return token; }", **private)
    c["mirror"].change(on_mirror, [c["token"], c["mirror"]], None, **private)
    gr.on([faces["sources"].change, *[control.change for control in form.inputs]], on_change,
          [c["token"], faces["sources"], *form.inputs], c["status"], trigger_mode="always_last", **private)


def _quiet_stop(ctx: Ctx, token: str, user: str, session: str) -> None:
    """This page's previous run ended before a new one starts (gone already: nothing to do)."""
    if token:
        _quietly(lambda: ctx.live.stop(token, user, session))


def _quietly(action: Any) -> None:
    try:
        action()
    except api.UserError as exc:  # the run is gone (stopped, the page's connection lost): nothing to act on
        log.info("live: %s", exc)

