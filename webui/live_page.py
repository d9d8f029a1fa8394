"""The Live tab's page script (``window.fsLive``) and style: the camera (picker, size and frame rate), the
WebRTC connection to the app's signalling routes (webui/live_routes.py), and the meters over the swapped
picture.

Meters, each named for what it is: ``fps shown`` counts the frames the page's swapped video presented
(``requestVideoFrameCallback``'s ``presentedFrames``) per second; ``server`` is the server's latency
(camera frame in to processed frame out); ``glass to glass`` (from a frame's first painting in the page's
camera video to its first painting in the swapped one) is shown only where it can be measured: a camera
whose frames carry their index (a test camera's code: see below) and no mirror. A Stop, or the run's end,
clears them all. A run the server ended (the chain failed: its one line in the stats) is shown, the page's
connection closed and Stop pressed for the summary. When the server advises a smaller camera (it cannot
keep up at this one) the page asks the camera for it and says so.
"""

from __future__ import annotations

from webui.live_routes import PREFIX

# The frame index a test or bench camera stamps on each frame (tests/test_live.py's ``stamp`` and
# ``read_index``, the one layout both follow): INDEX_BITS squares of INDEX_SQUARE px along the bottom-left
# edge, bit b (least significant first) white for 1, black for 0, at x = 2 + b*S .. 2 + (b+1)*S and
# y = h - S - 2 .. h - 2; read from each square's inside (x 5 + b*S .. (b+1)*S - 1, y h - S .. h - 4):
# mean over the channels above 128 is a 1. The page reads it (``readIndex``) from its own camera and from
# the video that comes back to measure glass-to-glass latency; a square neither clearly black nor white
# (a camera that stamps nothing) gives no index, and no glass-to-glass latency is shown.
INDEX_BITS, INDEX_SQUARE = 8, 14

SIZES = ("320x240", "640x480", "1280x720")
RATES = (15, 30)
DEFAULT_SIZE, DEFAULT_RATE = "640x480", 30

LIVE_JS = """
const sizes = SIZES.map((s) => `<option value="${s}"${s === 'DEFAULT_SIZE' ? ' selected' : ''}>${
  s.replace('x', '×')}</option>`).join('');
const rates = RATES.map((r) => `<option value="${r}"${r === DEFAULT_RATE ? ' selected' : ''}>${r} fps${
  ''}</option>`).join('');
element.innerHTML = `<div class="fs-live-camera">
  <label>Camera <select id="live-camera"><option value="">the browser's default</option></select></label>
  <label>Size <select id="live-size">${sizes}</select></label>
  <label>Frame rate <select id="live-fps">${rates}</select></label></div>
<div class="fs-live" id="live-panels">
  <figure class="fs-pane"><video id="live-local" autoplay muted playsinline></video>
    <figcaption>camera</figcaption></figure>
  <figure class="fs-pane fs-live-out"><video id="live-remote" autoplay muted playsinline></video>
    <div id="live-overlay" class="fs-live-overlay">stopped</div><figcaption>swapped</figcaption></figure>
</div>`;
window.fsLive = (() => {
  const $ = (id) => document.getElementById(id);
  const state = {pc: null, sender: null, stream: null, timer: null, token: '', run: 0, server: null,
                 mirror: false, advised: '', since: 0};
  const say = (text) => { $('live-overlay').textContent = text; };
  const BITS = INDEX_BITS, S = INDEX_SQUARE;  // the index code: see webui/live_page.py
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
                           count: 0, back: [], received: 0, presented: [], unread: 0});
  const UNREAD = 60;  // a camera whose first this many frames carry no index code is not a test camera
  function onLocal(now, meta, run) {
    const video = $('live-local');
    if (run !== state.run || !video) return;
    if (meter.unread >= UNREAD) return;  // no code to read: glass to glass cannot be measured
    const index = readIndex(video, video.videoWidth, video.videoHeight);
    meter.unread = index >= 0 ? -Infinity : meter.unread + 1;
    const wrapped = index < meter.local - meter.top / 2;  // back to the start (a step back: a late frame)
    if (index >= 0 && (index > meter.local || wrapped)) {
      if (meter.local >= 0) {
        if (wrapped) meter.loop = meter.top + 1;  // the camera's loop is this long
        for (let k = (meter.local + 1) % CODES; k !== index; k = (k + 1) % CODES) meter.shown.delete(k);
      }
      meter.shown.set(index, now);
      meter.local = index; meter.top = Math.max(meter.top, index);
    }
    video.requestVideoFrameCallback((t, m) => onLocal(t, m, run));
  }
  function onRemote(now, meta, run) {
    const video = $('live-remote'), camera = $('live-local');
    if (run !== state.run || !video) return;
    meter.presented.push([now, meta.presentedFrames]);  // what the page showed: for the fps shown
    if (meter.presented.length > KEPT) meter.presented.shift();
    const coded = !state.mirror && meter.unread < UNREAD;
    const index = coded ? readIndex(video, camera.videoWidth, camera.videoHeight) : -1;
    const behind = (meter.local - index + meter.loop) % meter.loop;  // how far the camera is past it
    if (index >= 0 && index !== meter.remote && meter.shown.has(index) && behind < meter.loop / 2) {
      const t = now, latency = t - meter.shown.get(index);
      if (latency >= 0) {
        meter.samples.push({t, latency, index}); meter.count += 1;
        if (meter.samples.length > KEPT) meter.samples.shift();
      }
    }
    if (index >= 0 && index !== meter.remote) {  // a new frame back: counted
      meter.back.push(now); meter.received += 1;
      if (meter.back.length > KEPT) meter.back.shift();
    }
    if (index >= 0) meter.remote = index;
    video.requestVideoFrameCallback((t, m) => onRemote(t, m, run));
  }
  // {fps: frames the swapped video presented per second over the last 5 s (0 before two of them),
  //  indexed_fps: distinct indices back per second over the last 5 s, received: how many came back,
  //  latency p50/p95 (ms) glass to glass of the last KEPT measured (null: not measured), samples: how
  //  many were measured, indices: the last KEPT measured in order, shown_ms: when each of them showed
  //  in the camera (page time, ms), latencies_ms: theirs, presented: [page time, frames presented] of
  //  the swapped video's latest frame}
  function measure() {
    const all = meter ? meter.samples : [];
    const sorted = all.map((s) => s.latency).sort((a, b) => a - b);
    const rank = (p) => sorted.length ? sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] : null;
    const rate = (points) => {  // [time ms, count] pairs -> count per second over the last 5 s
      const last = points.length ? points[points.length - 1][0] : 0;
      const recent = points.filter((p) => p[0] >= last - 5000);
      const span = recent.length > 1 ? recent[recent.length - 1][0] - recent[0][0] : 0;
      return span > 0 ? (recent[recent.length - 1][1] - recent[0][1]) * 1000 / span : 0;
    };
    const back = meter ? meter.back.map((t, i) => [t, i]) : [];
    return {fps: meter ? rate(meter.presented) : 0, indexed_fps: rate(back), latency_p50_ms: rank(0.5),
            latency_p95_ms: rank(0.95), samples: meter ? meter.count : 0,
            received: meter ? meter.received : 0, indices: all.map((s) => s.index),
            shown_ms: all.map((s) => s.t - s.latency), latencies_ms: all.map((s) => s.latency),
            presented: meter && meter.presented.length ? meter.presented[meter.presented.length - 1] : null};
  }
  const ms = (x) => `${Math.round(x)} ms`;
  function describe(s, m) {
    if (!s.frames_captured && performance.now() - state.since > 5000) {
      return 'no frames from this camera: pick another one (a depth camera, for one, sends none)';
    }
    const parts = [`${m.fps.toFixed(1)} fps shown`];
    if (m.samples >= 10) parts.push(`glass to glass ${ms(m.latency_p50_ms)} (p95 ${ms(m.latency_p95_ms)})`);
    parts.push(`server ${ms(s.latency_p50_ms)}`, `${s.frames_dropped} dropped of ${s.frames_captured}`);
    const sent = s.sending || {};
    if (sent.codec && sent.size) {
      parts.push(`${sent.codec} ${sent.size.join('×')}${sent.kbps ? ` at ${sent.kbps} kbit/s` : ''}`);
    }
    if (s.advice && s.advice.note) parts.push(s.advice.note);
    return parts.join(' · ');
  }
  async function poll(token, run) {
    let r = null;
    try { r = await fetch(`PREFIX/stats/${token}?fps=${$('live-fps').value}`); } catch (e) { return; }
    if (run !== state.run) return;  // stopped meanwhile: nothing stale shown
    if (!r.ok) { end('the server has no such live run any more: press Start again'); return; }
    const s = await r.json();
    if (run !== state.run) return;
    state.server = s;
    if (s.ended) { end(s.error ? `stopped: ${s.error}` : 'stopped: the connection ended'); return; }
    await follow(s.advice || {});
    if (run === state.run) say(describe(s, measure()));
  }
  // the server's advice: a lower camera rate (then size) that this machine keeps up with, or again the
  // chosen ones
  async function follow(advice) {
    const key = `${advice.fps || ''}/${advice.size || ''}`;
    if (!state.stream || key === state.advised) return;
    state.advised = key;
    const [w, h] = (advice.size || $('live-size').value).split('x').map(Number);
    try {
      await state.stream.getVideoTracks()[0].applyConstraints(constraints(w, h, advice.fps));
    } catch (e) { }
  }
  function constraints(w, h, fps) {
    const [cw, ch] = $('live-size').value.split('x').map(Number), chosen = Number($('live-fps').value);
    return {width: {ideal: w || cw}, height: {ideal: h || ch},
            frameRate: {ideal: Math.min(fps || chosen, chosen), max: Math.min(fps || chosen, chosen)}};
  }
  function camera() {
    const id = $('live-camera').value;
    return {...constraints(), ...(id ? {deviceId: {exact: id}} : {})};
  }
  // the cameras the browser offers (their names once it has given one: before, "camera 1", ...)
  async function listCameras() {
    if (!navigator.mediaDevices || !navigator.mediaDevices.enumerateDevices) return [];
    const found = (await navigator.mediaDevices.enumerateDevices()).filter((d) => d.kind === 'videoinput');
    const select = $('live-camera'), chosen = select.value;
    select.innerHTML = '<option value="">the browser\\'s default</option>' + found.map((d, i) =>
      `<option value="${d.deviceId}">${(d.label || `camera ${i + 1}`).replace(/</g, '&lt;')}</option>`
    ).join('');
    if (found.some((d) => d.deviceId === chosen)) select.value = chosen;
    return found.map((d) => d.label);
  }
  // the camera's frames keep the size asked of it: on a busy machine the browser's encoder would scale them
  // down by itself (3/4 steps), beside the server's own advice (pipeline/live/adapt.py), which is the one
  // that changes the camera's size; the browser drops frames instead
  function sent(track) {
    if ('contentHint' in track) track.contentHint = 'detail';
    return track;
  }
  // a camera, size or rate chosen while live applies to the running stream
  async function rechoose() {
    if (!state.stream || !state.sender) return;
    const track = state.stream.getVideoTracks()[0];
    state.advised = '';
    try {
      if ($('live-camera').value && track.getSettings().deviceId !== $('live-camera').value) {
        const stream = await navigator.mediaDevices.getUserMedia({video: camera(), audio: false});
        await state.sender.replaceTrack(sent(stream.getVideoTracks()[0]));
        track.stop(); state.stream = stream; $('live-local').srcObject = stream;
      } else {
        await track.applyConstraints(constraints());
      }
    } catch (e) { say(`the camera refused that: ${e.message}`); }
  }
  function mirror(on) {
    state.mirror = !!on;
    $('live-panels').classList.toggle('fs-mirrored', state.mirror);
  }
  function teardown() {
    state.run += 1;  // callbacks and polls of the run before see they are stale
    clearInterval(state.timer);
    if (state.pc) state.pc.close();
    if (state.stream) state.stream.getTracks().forEach((t) => t.stop());
    state.pc = state.sender = state.stream = state.timer = state.server = meter = null;
    state.token = ''; state.advised = '';
    ['live-local', 'live-remote'].forEach((id) => { if ($(id)) $(id).srcObject = null; });
  }
  function stop() {
    const live = state.token;
    teardown();
    if (live && $('live-overlay')) say('stopped');  // a run the server ended keeps saying why
  }
  // the run ended on the server (its error, or the connection): said, then Stop for its summary
  function end(text) {
    teardown();
    say(text);
    const button = document.querySelector('#live-stop');
    if (button) button.click();
  }
  // a page closed or left without Stop ends its run on the server (its recording kept)
  window.addEventListener('pagehide', () => {
    if (state.token) navigator.sendBeacon(`PREFIX/stop/${state.token}`);
  });
  if (navigator.mediaDevices) {
    navigator.mediaDevices.addEventListener('devicechange', listCameras);
    listCameras();
  }
  ['live-camera', 'live-size', 'live-fps'].forEach((id) => $(id).addEventListener('change', rechoose));
  async function start(token) {
    stop();
    if (!token) return;
    if (!window.isSecureContext || !navigator.mediaDevices) {
      say('the browser gives the camera only to a secure page: open this app on localhost or over HTTPS');
      return;
    }
    const run = state.run;
    try {
      state.stream = await navigator.mediaDevices.getUserMedia({video: camera(), audio: false});
    } catch (e) { say(`no camera: ${e.message}`); return; }
    if (run !== state.run) { state.stream.getTracks().forEach((t) => t.stop()); return; }
    listCameras();
    state.token = token; meter = newMeter();
    const local = $('live-local');
    local.srcObject = state.stream;
    if (local.requestVideoFrameCallback) local.requestVideoFrameCallback((t, m) => onLocal(t, m, run));
    const pc = state.pc = new RTCPeerConnection();
    state.sender = pc.addTrack(sent(state.stream.getVideoTracks()[0]), state.stream);
    pc.ontrack = (e) => {
      const video = $('live-remote');
      video.srcObject = e.streams[0] || new MediaStream([e.track]);
      if (video.requestVideoFrameCallback) video.requestVideoFrameCallback((t, m) => onRemote(t, m, run));
    };
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((done) => {
      if (pc.iceGatheringState === 'complete') return done();
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && done());
    });
    if (run !== state.run) return;
    say('connecting…');
    const r = await fetch('PREFIX/offer', {method: 'POST', headers: {'content-type': 'application/json'},
      body: JSON.stringify({token, sdp: pc.localDescription.sdp, type: pc.localDescription.type})});
    const answer = await r.json();
    if (run !== state.run) return;
    if (!r.ok) { stop(); say(answer.detail); return; }
    await pc.setRemoteDescription(answer);
    state.since = performance.now();
    state.timer = setInterval(() => poll(token, run), 1000);
  }
  return {start, stop, mirror, measure, readIndex, listCameras, state};
})();
""".replace("PREFIX", PREFIX).replace("INDEX_BITS", str(INDEX_BITS)).replace(
    "INDEX_SQUARE", str(INDEX_SQUARE)).replace("DEFAULT_SIZE", DEFAULT_SIZE).replace(
    "DEFAULT_RATE", str(DEFAULT_RATE)).replace("SIZES", repr(list(SIZES))).replace("RATES", repr(list(RATES)))

CSS = """
.fs-live { display: flex; gap: 12px; } .fs-live-out { position: relative; }
.fs-live video { width: 100%; max-height: 480px; background: #000; }
.fs-live.fs-mirrored #live-local { transform: scaleX(-1); }
.fs-live-camera { display: flex; gap: 16px; margin-bottom: 8px; font-size: 0.9em; }
.fs-live-camera select { margin-left: 4px; }
.fs-live-overlay { position: absolute; left: 8px; top: 8px; padding: 2px 6px; font: 0.85em monospace;
                   color: #fff; background: rgba(0, 0, 0, 0.6); border-radius: 4px; max-width: 90%; }
"""
