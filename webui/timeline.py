"""The trim timeline: a video target's frame strip (``api.frame_strip``) with an in- and an out-handle.

Dragging a handle (mouse, touch) or moving it with the keys (←/→ one frame, Shift or PageUp/PageDown one
second, Home/End) writes the range into the hidden ``#timeline-range`` box; its submit sets the settings
controls ``video.start`` / ``video.end``, so the preview, presets and queued jobs all use the trim. The
other way round, any change of those controls (typed, a preset loaded) moves the handles, limits the frame
scrubber to the range and, for a value outside the clip, says so in one line. The handles cannot cross:
the out-point stays at least one frame after the in-point.
"""

from __future__ import annotations

import base64
import html
import math
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import beside, browser_message

FRAME_LABEL = "Frame (drag, or arrow keys)"

CSS = """
.fs-strip { user-select: none; -webkit-user-select: none; margin: 2px 0 6px; }
.fs-track { position: relative; display: flex; height: 54px; border-radius: 4px; overflow: visible;
            background: #111; touch-action: none; cursor: pointer; }
.fs-track img { flex: 1 1 0; min-width: 0; height: 100%; object-fit: cover; pointer-events: none; }
.fs-shade { position: absolute; top: 0; bottom: 0; background: rgba(0, 0, 0, 0.62); pointer-events: none; }
.fs-shade-in { left: 0; } .fs-shade-out { right: 0; }
.fs-kept { position: absolute; top: -2px; bottom: -2px; border: 2px solid var(--color-accent, #f97316);
           border-radius: 4px; pointer-events: none; box-sizing: border-box; }
.fs-handle { position: absolute; top: -6px; bottom: -6px; width: 14px; margin-left: -7px; cursor: ew-resize;
             background: var(--color-accent, #f97316); border-radius: 4px; z-index: 2; touch-action: none; }
.fs-handle::after { content: ""; position: absolute; left: 5px; top: 35%; bottom: 35%; width: 4px;
                    border-left: 1px solid #fff; border-right: 1px solid #fff; }
.fs-handle:focus-visible { outline: 3px solid #2563eb; outline-offset: 1px; }
.fs-range-text { font-size: 0.85em; margin-top: 8px; opacity: 0.85; }
"""

# the handles: placed from the settings controls (fsTimeline.show, and the strip's data-start/-end when the
# strip is drawn again), moved by pointer or keys, committed through the hidden #timeline-range box
TIMELINE_JS = """
let drag = null, timer = null, sent = [];  // sent: the ranges last committed, whose echoes are ignored
const strip = () => element.querySelector('.fs-strip');
const clock = (t) => {
  const cs = Math.round(t * 100), m = Math.floor(cs / 6000), s = (cs % 6000) / 100;
  return m + ':' + s.toFixed(2).padStart(5, '0');
};
const snap = (t, fps) => Math.round(t * fps) / fps;
function place(start, end) {
  const s = strip();
  if (!s) return;
  const d = +s.dataset.duration, fps = +s.dataset.fps, gap = 1 / fps;
  let a = Number.isFinite(start) ? Math.min(Math.max(start, 0), d - gap) : 0;
  let b = Number.isFinite(end) ? Math.min(Math.max(end, 0), d) : d;
  if (b <= a) { a = 0; b = d; }  // a range that cannot be shown (the note under the strip says why)
  s.dataset.start = a; s.dataset.end = b;
  const pa = a / d * 100, pb = b / d * 100;
  const hin = s.querySelector('.fs-in'), hout = s.querySelector('.fs-out');
  hin.style.left = pa + '%'; hout.style.left = pb + '%';
  s.querySelector('.fs-shade-in').style.width = pa + '%';
  s.querySelector('.fs-shade-out').style.width = (100 - pb) + '%';
  const kept = s.querySelector('.fs-kept');
  kept.style.left = pa + '%'; kept.style.width = (pb - pa) + '%';
  for (const [h, t, lo, hi] of [[hin, a, 0, b - gap], [hout, b, a + gap, d]]) {
    h.setAttribute('aria-valuenow', t.toFixed(3)); h.setAttribute('aria-valuetext', clock(t));
    h.setAttribute('aria-valuemin', lo.toFixed(3)); h.setAttribute('aria-valuemax', hi.toFixed(3));
  }
  s.querySelector('.fs-range-text').textContent =
    'Kept: ' + clock(a) + ' – ' + clock(b) + ' (' + (b - a).toFixed(2) + ' s of ' + d.toFixed(2) + ' s)';
}
function move(handle, t) {
  const s = strip(), d = +s.dataset.duration, fps = +s.dataset.fps, gap = 1 / fps;
  let a = +s.dataset.start, b = +s.dataset.end;
  t = snap(t, fps);
  if (handle.classList.contains('fs-in')) a = Math.min(Math.max(t, 0), b - gap);
  else b = Math.max(Math.min(t, d), a + gap);
  place(a, b);
}
function commit() {
  const s = strip(), box = document.querySelector('#timeline-range textarea, #timeline-range input');
  if (!s || !box) return;
  sent = [...sent.slice(-4), [+s.dataset.start, +s.dataset.end]];
  box.value = (+s.dataset.start).toFixed(4) + ',' + (+s.dataset.end).toFixed(4);
  box.dispatchEvent(new Event('input', {bubbles: true}));
  box.dispatchEvent(new KeyboardEvent('keypress', {key: 'Enter', bubbles: true}));
}
function at(e) {
  const r = element.querySelector('.fs-track').getBoundingClientRect();
  return Math.min(Math.max((e.clientX - r.left) / r.width, 0), 1) * +strip().dataset.duration;
}
element.addEventListener('pointerdown', (e) => {
  const h = e.target.closest('.fs-handle');
  if (!h) return;
  e.preventDefault();
  h.focus();
  h.setPointerCapture(e.pointerId);
  drag = h;
});
element.addEventListener('pointermove', (e) => { if (drag) move(drag, at(e)); });
const release = () => { if (drag) { drag = null; commit(); } };
element.addEventListener('pointerup', release);
element.addEventListener('pointercancel', release);
element.addEventListener('keydown', (e) => {
  const h = e.target.closest('.fs-handle');
  if (!h) return;
  const s = strip(), fps = +s.dataset.fps, d = +s.dataset.duration;
  const now = h.classList.contains('fs-in') ? +s.dataset.start : +s.dataset.end;
  const step = e.shiftKey ? 1 : 1 / fps;
  const to = {ArrowLeft: now - step, ArrowDown: now - step, ArrowRight: now + step, ArrowUp: now + step,
              PageDown: now - 1, PageUp: now + 1, Home: 0, End: d}[e.key];
  if (to === undefined) return;
  e.preventDefault();
  move(h, to);
  clearTimeout(timer);
  timer = setTimeout(commit, 250);  // one commit for a run of key presses
});
const parse = (v) => (v === null || v === undefined || String(v).trim() === '') ? NaN : Number(v);
// a handle under the user's pointer is theirs: nothing from the server moves it until it is let go (the
// release sends the range, and the controls' answer to that is its echo)
const fromData = () => {
  const s = strip();
  if (s && !drag) place(parse(s.dataset.start), parse(s.dataset.end));
};
// the controls changed: move the handles, unless this is the echo of a range the handles sent (a newer
// move of theirs may be on its way)
function show(start, end) {
  const s = strip();
  if (!s || drag) return;
  const a = parse(start), b = parse(end), d = +s.dataset.duration;
  const na = Number.isFinite(a) ? a : 0, nb = Number.isFinite(b) ? b : d;
  if (sent.some(([x, y]) => Math.abs(x - na) < 1e-3 && Math.abs(y - nb) < 1e-3)) return;
  sent = [];
  place(a, b);
}
window.fsTimeline = { show };
fromData();
watch('value', fromData);
"""


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["strip"] = gr.HTML("", elem_id="timeline", js_on_load=TIMELINE_JS, css_template=CSS)
    c["range"] = gr.Textbox("", elem_id="timeline-range", elem_classes=["fs-hidden"], show_label=False,
                            container=False)
    c["note"] = gr.HTML("", elem_id="timeline-note", visible=False)  # shown only to say a trim is wrong
    return c


def wire(c: dict[str, Any], target: Any, frame: Any, start: Any, end: Any) -> None:
    """The handles set ``start`` / ``end`` (the video.start / video.end controls); those controls, however
    changed, move the handles, limit the ``frame`` scrubber and say when a value is outside the clip."""

    def on_target(target_path: str | None, start_text: str, end_text: str) -> tuple[str, Any]:
        try:
            shown = strip_html(target_path, _number(start_text), _number(end_text))
        except api.UserError:
            return "", note()  # the target's own line says what is wrong with it
        return shown, range_changed(target_path, start_text, end_text, 0)[1]

    # its own event: the faces gallery and the target's line do not wait for the strip
    beside([target.change], on_target, [target, start, end], [c["strip"], c["note"]],
           api_visibility="private", show_progress="hidden")

    def on_drag(text: str, target_path: str | None) -> tuple[Any, Any]:
        return dragged(text, target_path)

    c["range"].submit(on_drag, [c["range"], target], [start, end], api_visibility="private",
                      trigger_mode="always_last", show_progress="hidden")

    def on_range(target_path: str | None, start_text: str, end_text: str, value: float) -> tuple[Any, Any]:
        return range_changed(target_path, start_text, end_text, value)

    changes = [start.change, end.change]
    beside(changes, on_range, [target, start, end, frame], [frame, c["note"]], api_visibility="private",
           show_progress="hidden")
    gr.on(changes, None, [start, end], None, js="(s, e) => { window.fsTimeline?.show(s, e); }")


# ---------------------------------------------------------------- the strip and the range, in words


def clock(seconds: float) -> str:
    """0:01.20 (minutes, seconds to the hundredth)."""
    cs = round(seconds * 100)
    return f"{cs // 6000}:{cs % 6000 / 100:05.2f}"


def range_text(trim: api.Trim) -> str:
    """A trim in clock times ("0:01.20 – 0:04.00", "0:01.20 – end"); "" without one."""
    if trim.whole:
        return ""
    return f"{clock(trim.start or 0.0)} – {'end' if trim.end is None else clock(trim.end)}"


def seconds(value: float) -> str:
    """A time for a settings box: at most 3 decimals, no trailing zeros."""
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def strip_html(target: str | None, start: float | None, end: float | None) -> str:
    """The frame strip of a video target with its two handles at ``start`` / ``end``; "" for a still image
    or no target."""
    made = api.frame_strip(target) if target else None
    if made is None:
        return ""
    pictures = "".join(f'<img alt="frame {t.frame}" title="{clock(t.time)}" '
                       f'src="data:image/jpeg;base64,{base64.b64encode(t.jpeg).decode()}">'
                       for t in made.thumbs)
    attrs = (f'data-duration="{made.duration:.6f}" data-fps="{made.fps:.6f}" data-frames="{made.frames}" '
             f'data-start="{"" if start is None else start}" data-end="{"" if end is None else end}"')

    def handle(which: str, label: str) -> str:
        return (f'<div class="fs-handle fs-{which}" role="slider" tabindex="0" aria-label="{label}" '
                f'aria-orientation="horizontal" title="{label}: drag, or ←/→ (Shift: 1 s)"></div>')

    return (f'<div class="fs-strip" {attrs}><div class="fs-track">{pictures}'
            '<div class="fs-shade fs-shade-in"></div><div class="fs-shade fs-shade-out"></div>'
            f'<div class="fs-kept"></div>{handle("in", "In point")}{handle("out", "Out point")}</div>'
            '<div class="fs-range-text"></div></div>')


def dragged(text: str, target: str | None) -> tuple[Any, Any]:
    """The hidden box's "start,end" (seconds) as the two settings boxes' text: "" at the clip's ends."""
    made = api.frame_strip(target) if target else None
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        return gr.skip(), gr.skip()
    if made is None or not 0 <= a < b:
        return gr.skip(), gr.skip()
    half = 0.5 / made.fps
    return ("" if a < half else seconds(a)), ("" if b > made.duration - half else seconds(b))


def _number(text: Any) -> float | None:
    try:
        value = None if text is None or str(text).strip() == "" else float(text)
    except ValueError:
        return None
    return value if value is None or math.isfinite(value) else None  # the settings refuse it in words


def trim_of(start_text: Any, end_text: Any) -> api.Trim:
    """The trim the two settings boxes hold now (typed, maybe not yet valid settings)."""
    return api.Trim(_number(start_text), _number(end_text))


def frame_slider(info: Any, trim: api.Trim, value: float, keep: bool = False) -> dict[str, Any]:
    """The frame scrubber of a target (``api.check_media``'s info): hidden for a still image; limited to
    the trim's frames (the value moved inside them) and its label saying them. ``keep``: a value already
    inside is not sent (the page keeps the frame it shows now: a reply that comes late must not take the
    scrubber back to where it was when the change was sent)."""
    last = max(0, info.frames - 1)
    if last == 0:
        return gr.update(minimum=0, maximum=1, value=0, interactive=False, visible=False, label=FRAME_LABEL)
    kept = trim.frames(info.frames, info.fps) if not trim.whole else range(0)
    first, stop = (kept.start, kept.stop - 1) if kept else (0, last)
    label = f"{FRAME_LABEL}, within {trim.describe(info.frames, info.fps)}" if kept else FRAME_LABEL
    within = min(max(int(value or 0), first), stop)
    low, high = (first, stop) if stop > first else (first, first + 1) if first < last else (first - 1, first)
    moved = {} if keep and within == int(value or 0) else {"value": within}
    return gr.update(minimum=low, maximum=high, interactive=stop > first, visible=True, label=label,
                     **moved)  # a one-frame trim: a slider of two that cannot be moved (Gradio needs two)


def note(problem: str = "") -> dict[str, Any]:
    """The line under the strip: shown only with a problem."""
    shown = f'<span class="fs-problem">⚠ {html.escape(browser_message(problem))}</span>' if problem else ""
    return gr.update(value=shown, visible=bool(problem))


def range_changed(target: str | None, start_text: str, end_text: str, value: float) -> tuple[Any, Any]:
    """(frame-scrubber update, note update) after the trim changed."""
    if not target:
        return gr.skip(), note()
    try:
        info = api.check_media(target)
    except api.UserError:
        return gr.skip(), note()  # the target's own line says what is wrong with it
    trim = trim_of(start_text, end_text)
    if info.kind == "image":
        return gr.skip(), note()
    problem = trim.problem(info.frames, info.fps, "the clip") or trim.beyond(info.frames, info.fps)
    return frame_slider(info, trim, value, keep=True), note(problem)


def within(settings: api.Settings, target: str | None, frame: int) -> int:
    """``frame`` moved inside the trim of ``settings`` (the preview shows only frames the render keeps)."""
    if not target:
        return frame
    try:
        info = api.check_media(target)
    except api.UserError:
        return frame
    if info.kind == "image":
        return 0  # its only frame (the scrubber's last value may still be a video's)
    trim = api.Trim.of(settings)
    kept = trim.frames(info.frames, info.fps)
    return frame if trim.whole or not kept else min(max(int(frame), kept.start), kept.stop - 1)
