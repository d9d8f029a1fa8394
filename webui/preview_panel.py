"""The preview panel: the chosen frame processed with the current settings, with a face-debugger overlay,
and compared with the same frame unprocessed: side by side, a wipe slider, or the original while the mouse
(or a finger) is held on the preview.

The preview is rendered again on any change of the sources, the target, the frame, the overlay, its size or
a setting; only the last pending request runs. While the frame slider is dragged (or stepped with the keys),
each step is a fast preview (FAST_SIDE px at most); the frame it is let go on is rendered at the size chosen
(full, or at most 1280 / 640 px: SIZES). Before it renders, the check "Add to queue" runs too
(``api.check_request``, the one check of a swap request): a problem clears the preview and is shown once,
under it, in plain words; missing models can be fetched from here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui import timeline
from webui.common import browser_message
from webui.controls import MODEL_KEYS, SettingsForm, model_choice_updates

log = logging.getLogger("webui.preview")

# (label, value) of the compare modes; CSS shows the images each needs (CSS below, keyed on the checked value)
COMPARE = [("off", "off"), ("side by side", "side"), ("wipe", "wipe"), ("hold for the original", "hold")]
# the layout (webui/app.py) keeps the panel in view: a sticky column beside the settings, which scroll
CSS = """
/* Gradio's container hides its overflow, which would make it the scroller a sticky column sticks in: clip
   instead (the same clipping, no scroll container) */
.gradio-container { overflow: clip !important; }
/* never taller than the window less Gradio's footer: at the page's end the row's bottom would push it up */
#preview-column { position: sticky; top: 0; align-self: flex-start; max-height: calc(100vh - 60px);
                  flex-wrap: nowrap !important;
                  overflow-y: auto; overflow-x: hidden; }
#preview-column > * { flex-shrink: 0; }
/* the compare modes (and the preview sizes) on one line, after their label */
#compare, #preview-size { display: flex; flex-flow: row wrap; align-items: center; gap: 4px 12px; }
#compare > [data-testid=block-info], #preview-size > [data-testid=block-info] { margin: 0; }
#compare .wrap, #preview-size .wrap { gap: 6px; }
#compare .wrap label, #preview-size .wrap label { padding: 4px 10px; }
#preview-wipe, #preview-original, #preview-hold { display: none !important; }
#preview-column:has(#compare input[value=side]:checked) #preview-original { display: flex !important; }
#preview-column:has(#compare input[value=wipe]:checked) #preview-wipe { display: flex !important; }
#preview-column:has(#compare input[value=wipe]:checked) #preview { display: none !important; }
#preview-column:has(#compare input[value=hold]:checked) #preview-hold { display: block !important; }
#preview-column.fs-holding:has(#compare input[value=hold]:checked) #preview-original {
  display: flex !important; }
#preview-column.fs-holding:has(#compare input[value=hold]:checked) #preview { display: none !important; }
/* a small frame is shown as large as the panel, not at its own size */
#preview-stack img { object-fit: contain !important; }
#preview-wipe .image-container, #preview-wipe .slider-wrap,
#preview-wipe .slider-wrap > .wrap { width: 100%; }
#preview-wipe .slider-wrap img { width: 100%; height: 100%; object-fit: contain; }
#preview-stack img, #preview-wipe img { user-select: none; -webkit-user-drag: none; }
/* a finger held on the preview shows the original rather than scrolling the page */
#preview-column:has(#compare input[value=hold]:checked) #preview-stack { touch-action: none; }
"""
# while a mouse button (or a finger) is down on the preview in "hold" mode, the column is .fs-holding and
# the CSS above shows the original in the preview's place; listened for on the document, so that the
# images Gradio swaps on each new preview need no listeners of their own
HOLD_JS = """
if (!window.fsHold) {
  window.fsHold = true;
  const column = () => document.getElementById('preview-column');
  const holding = () => document.querySelector('#compare input[value=hold]:checked') !== null;
  document.addEventListener('pointerdown', (e) => {
    const on = e.target.closest ? e.target.closest('#preview-stack') : null;
    if (!holding() || !on || e.target.closest('.icon-button-wrapper')) return;  // not on fullscreen
    e.preventDefault();
    column().classList.add('fs-holding');
  });
  const release = () => { const c = column(); if (c) c.classList.remove('fs-holding'); };
  for (const kind of ['pointerup', 'pointercancel', 'blur']) window.addEventListener(kind, release);
}
"""
# the frame slider's "release" comes when a pointer lets go of it (or its number box is left); a key let up
# on the slider (arrows, Page Up/Down, Home, End), or Enter in its number box, is a release too: the same
# pointerup, sent on it, so that the frame a key settles on is rendered at the chosen size as one a drag
# settles on
KEY_RELEASE_JS = r"""
if (!window.fsKeyRelease) {
  window.fsKeyRelease = true;
  document.addEventListener('keyup', (e) => {
    const box = e.target.closest ? e.target.closest('#frame input') : null;
    if (box && (box.type === 'range' || e.key === 'Enter')) {
      box.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
    }
  });
  // the slider at rest while the preview shows another frame, or this one only fast (a release lost or
  // overtaken in the browser's own event queue): let it go again, so the frame it stands on is shown at the
  // chosen size; once for each slider value and line on screen (a page that cannot show that frame, say a
  // problem line, is not asked again and again)
  // window.fsSliding: a pointer or a key held on the slider; read when a preview is sent (SLIDING_JS):
  // a step then is a fast one. Set in the capture phase, before the slider's own listeners send the step
  // ("input" comes after keydown and pointerdown) or the release (pointerup)
  let busy = false, timer = null, sent = '';
  const onSlider = (e) => e.target.closest && e.target.closest('#frame');
  const sliding = (on) => { busy = on; window.fsSliding = on; };
  document.addEventListener('pointerdown', (e) => { if (onSlider(e)) sliding(true); }, true);
  document.addEventListener('pointerup', () => sliding(false), true);
  document.addEventListener('keydown', (e) => { if (onSlider(e)) sliding(true); }, true);
  document.addEventListener('keyup', () => sliding(false), true);
  const behind = () => {
    const status = document.querySelector('#preview-status');
    const box = document.querySelector('#frame input[type=range]');
    if (!status || !box || !box.offsetParent) return null;  // no video target: no slider to follow
    const text = status.innerText.trim();
    if (/^\d+(\.\d+)?s/.test(text)) return null;  // a preview is on its way (its timer shown)
    const shown = text.match(/^(Fast preview|Preview) of frame (\d+)/);
    if (!shown || (shown[1] === 'Preview' && shown[2] === box.value)) return null;
    return box.value + '|' + text;
  };
  new MutationObserver(() => {
    if (timer || !behind()) return;
    timer = setTimeout(() => {
      timer = null;
      const now = behind(), box = document.querySelector('#frame input[type=range]');
      if (box && !busy && now && now !== sent) {
        sent = now;
        box.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
      }
    }, 600);
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}
"""
# run on the page as a preview is sent: its first input (c["fast"]) is whether a pointer or a key is held on
# the frame slider (KEY_RELEASE_JS), i.e. a step of a drag or of a key, shown fast
SLIDING_JS = "(...args) => [window.fsSliding === true, ...args.slice(1)]"


# a fast preview's longer side (px): each step of the frame slider while it moves; the frame it is let go
# on is rendered again at the size chosen
FAST_SIDE = 480
# the preview size toggle: (label, the longer side in px at most; 0: the frame's own size)
SIZES = [("full", 0), ("1280 px", 1280), ("640 px", 640)]
# the preview's height: the whole panel (image, compare, size, Add to queue, status, a notice) fits the window
HEIGHT = "clamp(240px, calc(100vh - 420px), 720px)"


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    with gr.Row(elem_id="preview-stack"):
        c["original"] = gr.Image(label="Original", type="numpy", format="jpeg", interactive=False,
                                 elem_id="preview-original", buttons=["fullscreen"], height=HEIGHT)
        c["image"] = gr.Image(label="Preview", type="numpy", format="jpeg", interactive=False,
                              elem_id="preview", buttons=["fullscreen"], height=HEIGHT)
    c["wipe"] = gr.ImageSlider(label="Original | preview (drag the line)", type="numpy", format="jpeg",
                               interactive=False, elem_id="preview-wipe", buttons=["fullscreen"],
                               height=HEIGHT, max_height=720)
    c["hold"] = gr.HTML("Press and hold the mouse (or a finger) on the preview to see the original.",
                        elem_id="preview-hold", js_on_load=HOLD_JS + KEY_RELEASE_JS)
    c["compare"] = gr.Radio(COMPARE, value="off", label="Compare", elem_id="compare")
    c["size"] = gr.Radio(SIZES, value=0, label="Preview size (the longer side at most)",
                         elem_id="preview-size")
    with gr.Row():
        c["overlay"] = gr.Checkbox(value=False, label="Face debugger (boxes, scores, landmarks, mask)",
                                   elem_id="overlay")
        c["add_job"] = gr.Button("Add to queue", variant="primary", elem_id="add-job")
        c["render_now"] = gr.Button("Render now", elem_id="render-now")  # queued first, the Queue shown
    c["status"] = gr.Markdown("", elem_id="preview-status")
    c["fast"] = gr.Checkbox(False, elem_id="preview-fast", elem_classes=["fs-hidden"], show_label=False,
                            container=False)  # set by SLIDING_JS as each preview is sent
    c["notice"] = gr.Markdown("", elem_id="preview-notice")
    c["missing"] = gr.State([])
    with gr.Row():
        c["fetch"] = gr.Button("Fetch the missing models", visible=False, elem_id="fetch-missing", size="sm")
        c["import"] = gr.UploadButton("Import a model file (.onnx)", file_types=[".onnx"], visible=False,
                                      elem_id="import-missing", size="sm")
    return c


def wire(c: dict[str, Any], faces: dict[str, Any], form: SettingsForm, voice: Any) -> None:
    """Re-render on any change of the Faces tab's inputs (``faces``), the new voice, the overlay, the size or
    a setting: at the chosen size; each step of the frame slider while a pointer or key is held on it at the
    fast size, the frame it is let go on ("release") at the chosen size. One listener does it all, so that
    the page shows its replies in the order they were made (two listeners' replies can come out of order: a
    full run once showed a drag's fast step over the full-size frame it settled on)."""

    on_screen = OnScreen()

    def on_preview(request: gr.Request, fast: bool, sources: list[str] | None, target: str | None, frame: int,
                   overlay: bool, audio: str | None, mode: str, size: int, *vals: Any) -> tuple[Any, ...]:
        """The original and the wipe pair (compared()), render()'s outputs, and the import button shown
        when models are missing (in the same reply); ``fast`` (a slider's step, SLIDING_JS): at most
        FAST_SIDE px. What is on screen
        already is not redone: the same request again from the same page (a slider sends its last value
        twice; two triggers of one change), and a fast step to the frame shown (a drag's last step, sent
        after its release was rendered: the slider has not moved since; a change of anything else is its
        own request, at the chosen size)."""
        side = shrunk(int(size or 0), FAST_SIDE if fast else 0)
        asked = repr((sources, target, frame, overlay, audio, mode, vals))
        where = repr((target, frame))
        page = getattr(request, "session_hash", None) or ""
        if on_screen.again(page, (asked, side, where), fast):
            log.debug("preview %s: frame %s %s, on screen already", page[:6], frame, "fast" if fast else side)
            return tuple(gr.skip() for _ in outputs)
        log.debug("preview %s: frame %s %s", page[:6], frame, "fast" if fast else side)
        try:
            settings = form.read(vals)
        except api.UserError as exc:
            return (None, None, None, problem(str(exc)), "", gr.update(visible=False), [],
                    gr.update(visible=False))
        frame = timeline.within(settings, target, frame)  # never a frame the trim leaves out
        shown = render(settings, sources, target, frame, overlay, audio, side or None, fast)
        log.debug("preview %s: shown %r", page[:6], shown[1][:60])
        return (*compared(mode, target, frame, shown[0]), *shown, gr.update(visible=bool(shown[4])))

    # the frame slider: "input" on each step of a drag or a key, "release" where it is let go (a key let
    # up: KEY_RELEASE_JS); the listener sends only its newest pending request, after the one running, so a
    # drag's steps while a preview renders come to one, and the frame let go on comes after them
    # faces["resumed"]: a target a reload brought back, described at the frame shown before the reload
    triggers = [faces["sources"].change, faces["target"].change, faces["frame"].input, faces["frame"].release,
                faces["resumed"].change, c["overlay"].change, voice.change, c["compare"].change,
                c["size"].change]
    triggers += [control.change for control in form.inputs]
    inputs = [faces["sources"], faces["target"], faces["frame"], c["overlay"], voice, c["compare"], c["size"],
              *form.inputs]
    outputs = [c["original"], c["wipe"], c["image"], c["status"], c["notice"], c["fetch"], c["missing"],
               c["import"]]
    one_at_a_time: dict[str, Any] = {"concurrency_limit": 1, "concurrency_id": "preview",
                                     "api_visibility": "private"}
    gr.on(triggers, on_preview, [c["fast"], *inputs], outputs, js=SLIDING_JS, trigger_mode="always_last",
          show_progress="minimal", **one_at_a_time)

    def on_import(path: str | None) -> str:
        if not path:
            return ""
        try:
            entry = api.import_model(Path(path))
        except api.UserError as exc:  # the status line says why, with no error badge over it
            return problem(f"not imported: {exc}")
        return f"imported {entry.name}"

    def on_fetched(request: gr.Request, names: list[str], *args: Any) -> tuple[Any, ...]:
        """The preview again once the models are there; after a failed fetch its line stays shown."""
        installed = {m.name for m in api.model_status() if m.installed}
        if not set(names) <= installed:
            return tuple(gr.skip() for _ in outputs)
        return on_preview(request, False, *args)

    imported = c["import"].upload(on_import, c["import"], c["status"], api_visibility="private")
    imported = imported.then(on_fetched, [c["missing"], *inputs], outputs, **one_at_a_time)
    imported.then(model_choice_updates, None, [form[k] for k in MODEL_KEYS], api_visibility="private")
    fetched = c["fetch"].click(fetch_missing, c["missing"], [c["status"], c["fetch"]],
                               api_visibility="private")
    fetched = fetched.then(on_fetched, [c["missing"], *inputs], outputs, **one_at_a_time)
    fetched.then(model_choice_updates, None, [form[k] for k in MODEL_KEYS], api_visibility="private")


class OnScreen:
    """What each page's (Gradio session's) preview on screen was asked: the request, at what size (px, 0:
    full), and which frame of which target it shows; the pages seen lately only."""

    KEPT = 256

    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, int, str]] = {}

    def again(self, page: str, shown: tuple[str, int, str], fast: bool) -> bool:
        """Whether ``shown`` is on ``page`` already (the same request at the same size, or a fast step to the
        frame it shows); if not, it is what the page will show."""
        now = self.pages.get(page)
        if page and (now == shown or fast and now is not None and now[2] == shown[2]):
            return True
        if page:
            self.pages.pop(page, None)
            self.pages[page] = shown
            if len(self.pages) > self.KEPT:
                self.pages.pop(next(iter(self.pages)))
        return False


def shrunk(chosen: int, fast: int) -> int:
    """The longer side a preview is rendered at (px, 0: its own size): the size ``chosen``, no larger than
    ``fast`` where that is set (a scrubbing step)."""
    sides = [s for s in (chosen, fast) if s > 0]
    return min(sides) if sides else 0


def compared(mode: str, target: str | None, frame: int, image: Any) -> tuple[Any, Any]:
    """(original, wipe pair) for the compare ``mode``: the same frame unprocessed (at the preview's size),
    read only when a mode shows it; None where nothing is compared (no preview, or compare off)."""
    if mode == "off" or image is None or not target:
        return None, None
    original = api.smaller(api.read_frame(target, int(frame)), max(image.shape[:2]))[:, :, ::-1]
    return (original, None) if mode in ("side", "hold") else (None, (original, image))


def problem(message: str) -> str:
    return f'<span class="fs-problem">⚠ {browser_message(message)}</span>'


def render(settings: api.Settings, sources: Sequence[str] | None, target: str | None, frame: int,
           overlay: bool, audio: str | None = None, max_side: int | None = None,
           fast: bool = False) -> tuple[Any, str, str, Any, list[str]]:
    """(preview image or None, status, notice, fetch-button update, missing model names); ``audio``: a new
    voice (a lip syncer's mouth follows it); ``max_side``: its longer side at most (None: the frame's own
    size), ``fast`` a scrubbing step's (said so)."""
    hidden = gr.update(visible=False)
    if not target:
        return None, "Add a target image or video to see a preview.", "", hidden, []
    try:
        if not sources:
            api.check_media(target)
            plain = api.smaller(api.read_frame(target, int(frame)), max_side)[:, :, ::-1]
            return plain, "Add a source photo to see the swap.", "", hidden, []
        checked = api.check_request(api.SwapRequest.of(sources, target, settings, voice=audio))
        started = time.perf_counter()
        image = api.preview(settings, list(sources), target, int(frame), overlay, audio or None,
                            max_side=max_side)
    except api.ModelsMissing as exc:
        text = problem(missing_line(exc))
        return None, text, "", gr.update(visible=True), list(exc.names)
    except api.UserError as exc:
        return None, problem(str(exc)), "", hidden, []
    ms = (time.perf_counter() - started) * 1000
    mark = '<span class="fs-info">i</span>'  # drawn by CSS (app.CSS), not a glyph the fonts may lack
    notice = "".join(f'<span class="fs-notice">{mark} {n}</span>' for n in checked.notices)
    said = f"{'Fast preview' if fast else 'Preview'} of frame {int(frame)}" + (
        f" (at most {max_side} px)" if max_side else "")
    return image, f"{said}: {ms:.0f} ms", notice, hidden, []


def missing_line(exc: api.ModelsMissing) -> str:
    """The missing models and what to do, in plain words: "2 models are not installed: a (…), b (…). Fetch
    them with the button below, or import the files you already have." """
    them, files = ("it", "the file") if len(exc.names) == 1 else ("them", "the files")
    return (f"{browser_message(str(exc))}. Fetch {them} with the button below, or import {files} you "
            "already have.")


def fetch_missing(names: list[str], progress: gr.Progress = gr.Progress()) -> tuple[str, Any]:  # noqa: B008
    """Download the models the current settings need, one after the other, with a progress bar; a failed
    download is the status line under the preview (not an error badge over it), Fetch offered again."""
    for i, name in enumerate(names):
        def report(done: int, total: int, name: str = name, i: int = i) -> None:
            progress(done / total if total else None,
                     desc=f"{name} ({i + 1} of {len(names)}): {done / 1e6:.1f} MB")

        try:
            api.fetch_model(name, progress=report)
        except api.UserError as exc:
            return problem(f"{name} was not fetched: {exc}"), gr.update(visible=True)
    return f"installed {', '.join(names)}", gr.update(visible=False)
