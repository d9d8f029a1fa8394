"""Markers on the Swap tab's timeline: settings that change from a frame of the video on (README "Markers").

"Add a marker here" (under the frame scrubber) puts a marker at the frame shown, holding what the settings
now change against the settings in effect just before that frame: the start's (those the controls had when
the scrubber was last moved while there was no marker yet) with the earlier markers' changes. The markers are
listed, one line each, and one chosen in the list is removed by its button; a new target clears them (markers
listed while there was no target yet, a preset's, stay for the first one). A preset loaded into every control
lists its markers, and a preset saved holds the listed ones (webui/presets_tab.py); a page reload brings them
back with their target (webui/kept_inputs.py). Add to queue then queues the start's settings with the
markers (the trim, output, machine and report settings as the controls have them now: a marker does not
change those). The engine does the work
(``pipeline/markers.py`` through ``pipeline.api``).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from pipeline import api
from webui.common import beside, browser_message

HELP = ("**Markers:** move to a frame, change the settings that frame on should have, then *Add a marker "
        "here*. Before the first marker the job keeps the settings you had when you moved to it.")


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    with gr.Row(elem_id="markers-row"):
        c["add"] = gr.Button("Add a marker here", size="sm", elem_id="add-marker", visible=False)
        c["list"] = gr.Dropdown([], value=None, type="index", label="Marker to remove", elem_id="markers",
                                interactive=True, visible=False)
        c["remove"] = gr.Button("Remove marker", size="sm", elem_id="remove-marker", visible=False)
    c["help"] = gr.Markdown(HELP, elem_id="markers-help", visible=False)
    c["start"] = gr.State("")  # the start's settings with the markers (JSON; "": no marker)
    c["before"] = gr.State("")  # the controls' settings when the scrubber last moved (JSON)
    c["of"] = gr.State("")  # the target the markers are on ("": none yet)
    return c


def _video(path: str | None) -> bool:
    return bool(path) and str(path).lower().endswith(tuple(api.VIDEO_SUFFIXES))


def outputs(c: dict[str, Any]) -> list[Any]:
    """The components :func:`listed` updates."""
    return [c["start"], c["list"], c["remove"], c["help"]]


def listed(settings: api.Settings | None, target: str | None) -> list[Any]:
    """Updates for :func:`outputs` that list the markers of ``settings`` (a preset loaded, a reload's), or
    none (``None``, or settings without markers)."""
    start = settings.model_dump_json() if settings is not None and settings.markers else ""
    return [start, *_shown(start, _video(target))]


def kept(start: Any) -> api.Settings | None:
    """The settings with markers a page kept (:func:`outputs`' start, as the browser sent it back), if they
    still validate and have markers."""
    if not isinstance(start, str) or not start:
        return None
    try:
        settings = api.Settings.model_validate_json(start)
    except ValueError:  # kept by another version, or edited by hand
        return None
    return settings if settings.markers else None


def _shown(start: str, visible: bool = True) -> list[Any]:
    """The list to remove one from, the remove button and the help line listing them, for the markers of
    ``start``."""
    lines = api.marker_lines(api.Settings.model_validate_json(start)) if start else []
    listed = "".join(f"\n- {line}" for line in lines)
    return [gr.update(choices=[(line, i) for i, line in enumerate(lines)], value=None,
                      visible=visible and bool(lines)),
            gr.update(visible=visible and bool(lines)),
            gr.update(value=HELP + ("\n\n**Markers of this job:**" + listed if lines else ""),
                      visible=visible)]


def wire(c: dict[str, Any], target: Any, frame: Any, form: Any) -> None:
    """The markers follow the target (cleared by a new one) and the scrubber (where "here" is)."""
    shown = outputs(c)

    def on_target(path: str | None, start: str, of: str) -> list[Any]:
        if path and path == of:  # the same file again (a repeated change event): the markers stay
            return [gr.skip()] * 6
        start = start if start and not of and _video(path) else ""  # listed with no target yet: kept for it
        return [start, *_shown(start, _video(path)), gr.update(visible=_video(path)), path or ""]

    beside([target.change], on_target, [target, c["start"], c["of"]], [*shown, c["add"], c["of"]],
           api_visibility="private", show_progress="hidden")

    def on_scrub(start: str, *vals: Any) -> Any:
        if start:  # the start is kept once a marker is there
            return gr.skip()
        try:
            return form.read(vals).model_dump_json()
        except api.UserError:
            return gr.skip()

    beside([frame.input], on_scrub, [c["start"], *form.inputs], c["before"], api_visibility="private",
           show_progress="hidden")

    def on_add(path: str | None, at: float, start: str, before: str, *vals: Any) -> list[Any]:
        try:
            if not path:
                raise api.UserError("add a target video first")
            now = form.read(vals)
            first = start or before or now.model_dump_json()
            fps = api.check_media(path).fps
            marked = api.add_marker_here(api.Settings.model_validate_json(first), now, int(at or 0), fps)
        except api.UserError as exc:
            gr.Warning(browser_message(str(exc)))
            return [gr.skip()] * 4
        start = marked.model_dump_json()
        return [start, *_shown(start)]

    c["add"].click(on_add, [target, frame, c["start"], c["before"], *form.inputs], shown,
                   api_visibility="private")

    def on_remove(start: str, index: int | None) -> list[Any]:
        if not start or index is None:
            return [gr.skip()] * 4
        left = api.without_marker(api.Settings.model_validate_json(start), int(index))
        start = left.model_dump_json() if left.markers else ""
        return [start, *_shown(start)]

    c["remove"].click(on_remove, [c["start"], c["list"]], shown, api_visibility="private")


def job_settings(start: str, now: api.Settings) -> api.Settings:
    """The settings a job is queued with: ``now`` (the controls'), or with markers the start's and its
    markers (:func:`pipeline.markers.for_job`)."""
    if not start:
        return now
    return api.settings_with_markers(api.Settings.model_validate_json(start), now)
