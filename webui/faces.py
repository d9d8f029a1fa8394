"""Faces tab: source photos, target image/video, frame scrubber, detected-faces gallery, face selection.

Choosing a target describes it and fills the gallery; moving the frame slider (drag or arrow keys)
refills it; clicking a
face saves it as a reference and fills the selector's ``reference`` (or appends to ``mapping``).
Source photos show as thumbnails with the face found boxed; the chosen person and the mapping show as
faces (source photo -> the face it replaces, numbered), never as the server paths the settings hold (those
two text controls stay, hidden, as the settings' state).
"""

from __future__ import annotations

import base64
import contextlib
import html
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui import controls, markers_area, timeline
from webui.clamped import ClampedSlider
from webui.common import beside, browser_message, user_errors

PICK_ONLY = "replace only this person"
PICK_MAP = "map the next source photo to this person"
# the target's line: its first frame beside its name and size
TARGET_CSS = ".fs-target { display: flex; align-items: center; gap: 10px; } " \
    ".fs-target img { height: 72px; border-radius: 4px; }"
HIDDEN_PATHS = ("selector.reference", "selector.mapping")  # server paths: state, never shown


def create(settings: api.Settings) -> dict[str, Any]:
    c: dict[str, Any] = {}
    with gr.Row():
        c["sources"] = gr.File(label="Source face photos", file_count="multiple",
                               file_types=sorted(api.IMAGE_SUFFIXES), type="filepath", elem_id="sources")
        target_types = sorted(api.IMAGE_SUFFIXES) + list(api.VIDEO_SUFFIXES)
        c["target"] = gr.File(label="Target image or video", file_count="single", file_types=target_types,
                              type="filepath", elem_id="target")
    c["source_thumbs"] = gr.Gallery(label="Source photos: the face found (green box)", columns=6,
                                    height=200, object_fit="contain", allow_preview=False, preview=False,
                                    interactive=False, visible=False, elem_id="source-thumbs",
                                    buttons=[])
    c["target_info"] = gr.HTML("No target yet.", elem_id="target-info", css_template=TARGET_CSS)
    trim = timeline.create()  # a video's frame strip: drag the in- and out-points (video.start / .end)
    c["strip"], c["trim_range"], c["trim_note"] = trim["strip"], trim["range"], trim["note"]
    c["described"] = gr.State("")  # the target the line, the scrubber and the gallery describe now
    c["resume"] = gr.State(None)  # a reload's frame (webui/kept_inputs.py), for the target it brings back
    c["resumed"] = gr.Textbox("", elem_id="frame-resumed", elem_classes=["fs-hidden"], show_label=False,
                              container=False)  # set when a target is described at that frame: previewed
    c["frame"] = ClampedSlider(0, 1, value=0, step=1, label=timeline.FRAME_LABEL, elem_id="frame",
                               interactive=False, visible=False)  # a frame typed past an end: that end
    c["markers"] = markers_area.create()  # settings that change from a frame on (a video's)
    c["faces"] = gr.Gallery(label="Faces on this frame (click one to swap only that person)", columns=6,
                            preview=False, object_fit="contain", height=180, allow_preview=False,
                            elem_id="faces", interactive=False)
    c["pick"] = gr.Radio([PICK_ONLY, PICK_MAP], value=PICK_ONLY, label="Clicking a face will", elem_id="pick")
    c["chosen"] = gr.Gallery(label="Chosen people (source photo → the face it replaces)", columns=4,
                             height="auto", object_fit="contain", allow_preview=False, preview=False,
                             interactive=False, visible=False, elem_id="chosen", buttons=[])
    with gr.Accordion("Which faces to replace", open=False, elem_id="which-faces"):
        c["selector"] = controls.create_section("selector", settings)
        for key in HIDDEN_PATHS:  # the settings read them; the page shows the faces (c["chosen"]) instead
            hidden = c["selector"][key]
            hidden.elem_classes = [*(hidden.elem_classes or []), "fs-hidden"]
        c["clear_reference"] = gr.Button("Forget the chosen people", size="sm", elem_id="clear-reference")
        c["mapping"] = gr.Markdown(
            "**Source → target:** with no mapping, the source photos describe one person, put on the faces "
            "chosen by the selector. To swap several people, upload one source photo per person and click, "
            "in the same order, the face each one replaces with *map the next source photo* selected.",
            elem_id="mapping",
        )
    return c


def wire(c: dict[str, Any], form: controls.SettingsForm) -> None:
    """Target and frame fill the gallery; a click on a face picks that person (or maps the next source)."""

    def on_target(target: str | None, described: str, resume: int | None, *vals: Any) -> tuple[Any, ...]:
        if target and target == described:  # the same file again (a repeated change event): the scrubber
            return gr.skip(), gr.skip(), gr.skip(), described, gr.skip(), gr.skip()  # stays where it was
        # a new target starts at the trim's in-point; the one a reload brings back, at its frame
        at = int(resume or 0) if target and not described else 0
        try:
            settings = form.read(vals)
            info, slider = describe_target(target, settings, at)
        except api.UserError as exc:  # shown in place of the description: no error badge left behind
            shown = f'<span class="fs-problem">⚠ {browser_message(str(exc))}</span>'
            return shown, gr.update(visible=False), [], "", None, gr.skip()
        shown_at = int(slider.get("value") or 0)
        resumed = f"{target}#{shown_at}" if at else gr.skip()  # the preview follows (preview_panel)
        return info, slider, gallery(target, shown_at, settings), target or "", None, resumed

    beside([c["target"].change], on_target, [c["target"], c["described"], c["resume"], *form.inputs],
           [c["target_info"], c["frame"], c["faces"], c["described"], c["resume"], c["resumed"]],
           api_visibility="private")
    timeline.wire({"strip": c["strip"], "range": c["trim_range"], "note": c["trim_note"]}, c["target"],
                  c["frame"], form["video.start"], form["video.end"])
    markers_area.wire(c["markers"], c["target"], c["frame"], form)

    def on_frame(target: str | None, frame: int, *vals: Any) -> Any:
        return gallery(target, frame, form.read(vals))

    # the frame let go on (a drag's end, a key let up: preview_panel.KEY_RELEASE_JS): the gallery shows the
    # frame the preview settles on (a click saves a face from it), not each step of a drag
    beside([c["frame"].release], user_errors(on_frame), [c["target"], c["frame"], *form.inputs], c["faces"],
           api_visibility="private")

    chosen = [form["selector.reference"], form["selector.mode"], form["selector.mapping"]]

    def on_pick(evt: gr.SelectData, pick: str, target: str | None, frame: int, *vals: Any) -> tuple[Any, ...]:
        if not target or evt.index is None:
            raise api.UserError("choose a target first")
        settings = form.read(vals)
        index = evt.index if isinstance(evt.index, int) else int(evt.index[0])
        ref = str(api.save_reference(target, int(frame), index, settings))
        if pick == PICK_MAP:
            return gr.update(), gr.update(), ", ".join([*settings.selector.mapping, ref])
        return ref, "reference", gr.update()

    c["faces"].select(user_errors(on_pick), [c["pick"], c["target"], c["frame"], *form.inputs], chosen,
                      api_visibility="private")
    c["clear_reference"].click(lambda: ("", "many", ""), None, chosen, api_visibility="private")
    wire_thumbnails(c, form)


def wire_thumbnails(c: dict[str, Any], form: controls.SettingsForm) -> None:
    """Source photos -> their thumbnails with the face boxed; the chosen people -> their faces."""

    def on_sources(sources: list[str] | None, *vals: Any) -> Any:
        return source_gallery(sources, form.read(vals))

    beside([c["sources"].change], user_errors(on_sources), [c["sources"], *form.inputs], c["source_thumbs"],
           api_visibility="private", show_progress="hidden")
    people = [c["sources"], form["selector.mode"], form["selector.reference"], form["selector.mapping"]]
    beside([changed.change for changed in people], chosen_gallery, people, c["chosen"],
           api_visibility="private", show_progress="hidden")


def describe_target(target: str | None, settings: api.Settings | None = None,
                    frame: int = 0) -> tuple[str, dict[str, Any]]:
    """The target's line (its first frame, name and size) and the frame-slider update for a newly chosen
    target, at ``frame`` (limited to the trim of ``settings``)."""
    if not target:
        return "No target yet.", gr.update(maximum=1, value=0, interactive=False, visible=False)
    info = api.check_media(target)
    trim = api.Trim.of(settings or api.Settings())
    slider = timeline.frame_slider(info, trim, frame)  # a still image has no frame slider
    picture = base64.b64encode(api.first_frame(target)).decode()
    name = html.escape(Path(target).name)
    return (f'<div class="fs-target"><img alt="the first frame" src="data:image/jpeg;base64,{picture}">'
            f"<span>Target: <b>{name}</b>, {info.describe()}</span></div>", slider)


def gallery(target: str | None, frame: int, settings: api.Settings) -> list[tuple[Any, str]]:
    if not target:
        return []
    try:
        found = api.faces_in(target, int(frame), settings)
    except api.ModelMissing:
        return []  # the preview says which models are missing, once
    return [(f.crop, f"face {i + 1} ({f.score:.2f})") for i, f in enumerate(found)]


def source_gallery(sources: list[str] | None, settings: api.Settings) -> Any:
    """The source photos as thumbnails with the face found boxed, each captioned (a photo with no face
    says so); hidden when there are none."""
    if not sources:
        return gr.update(value=[], visible=False)
    try:
        thumbs = api.source_thumbnails(sources, settings)
    except api.ModelMissing:
        return gr.update(value=[], visible=False)  # the preview says which models are missing, once
    return gr.update(value=[(t.image, t.caption) for t in thumbs], visible=True)


def chosen_gallery(sources: list[str] | None, mode: str, reference: str | None, mapping: str | None) -> Any:
    """The chosen person as a face, and each mapped pair as source photo -> face, numbered in order;
    hidden when nobody is chosen. A face file that is gone is left out."""
    items: list[tuple[Any, str]] = []
    if reference and mode == "reference":
        with contextlib.suppress(api.UserError):  # a face file gone since it was picked is left out
            items.append((api.face_image(reference), "chosen person: only this face is replaced"))
    sources = list(sources or [])
    for i, face in enumerate(controls.text_list(mapping)):
        source = sources[i] if i < len(sources) else None
        try:
            if source is None:
                items.append((api.face_image(face), f"{i + 1}: (add source photo {i + 1}) → this face"))
            else:
                items.append((api.pair_image(source, face), f"{i + 1}: {Path(source).name} → this face"))
        except api.UserError:
            continue
    return gr.update(value=items, visible=bool(items))
