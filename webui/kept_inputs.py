"""A reload keeps the Swap tab: its source photos, target, frame, settings and markers are kept in the
browser (a ``gr.BrowserState``: the page's localStorage, encrypted) and come back on the next load (the
frame with its target, into ``faces["resume"]``: faces.wire describes that target at the frame shown
before the reload, not at the in-point; the markers with their target, into the markers' list:
webui/markers_area.py).

What the browser sends back is checked on the server, as any input: a file comes back only if it is
still in Gradio's upload cache and, on a shared UI, was handed to the same user (the gate's ledger,
webui/auth.py), so a value stored by another user's page brings nothing of theirs; settings come back
only if they validate as a whole (``SettingsForm.read``), else the defaults stay.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder

from pipeline import api
from webui import markers_area
from webui.common import Ctx, beside, log
from webui.controls import SettingsForm

STORAGE_KEY = "facestation-swap"
trace = logging.getLogger("webui.kept")  # debug: each page load's restore (the browser tests wait on it)


def create() -> gr.BrowserState:
    return gr.BrowserState({}, storage_key=STORAGE_KEY)


def wire(ctx: Ctx, kept: gr.BrowserState, faces: dict[str, Any], form: SettingsForm,
         blocks: gr.Blocks) -> None:
    """Every change of the sources, the target, the frame or a setting is kept; a page load brings them
    back."""

    def keep(sources: list[str] | None, target: str | None, frame: Any, markers: str,
             *vals: Any) -> dict[str, Any]:
        return {"sources": list(sources or []), "target": target or "", "frame": frame, "markers": markers,
                "settings": dict(zip(form.keys, vals, strict=True))}

    marked = faces["markers"]["start"]
    shown = [faces["sources"], faces["target"], faces["frame"], marked]
    triggers = [faces["sources"].change, faces["target"].change, faces["frame"].change, marked.change,
                *(c.change for c in form.inputs)]
    # queued one at a time, in order, the newest change last: the page stores the latest inputs
    beside(triggers, keep, [*shown, *form.inputs], kept, api_visibility="private", concurrency_limit=1,
           concurrency_id="keep", show_progress="hidden")

    def bring_back(saved: Any, request: gr.Request) -> list[Any]:
        got = restore(ctx, form, saved, request)
        target = got[1] if isinstance(got[1], str) else None  # the markers come back only with their target
        markers = markers_area.kept(saved.get("markers")) if target and isinstance(saved, dict) else None
        trace.debug("brought back what the page kept: %s", sorted(saved) if isinstance(saved, dict) else "-")
        return [*got, *markers_area.listed(markers, target)]

    restored = [faces["sources"], faces["target"], faces["resume"], *form.inputs,
                *markers_area.outputs(faces["markers"])]
    blocks.load(bring_back, kept, restored, api_visibility="private")


def restore(ctx: Ctx, form: SettingsForm, saved: Any, request: gr.Request | None) -> list[Any]:
    """Updates for the sources, the target, the frame and every setting from what the browser kept
    (``gr.skip()`` where nothing valid was kept). The frame comes back only with its target."""
    saved = saved if isinstance(saved, dict) else {}
    sources = [p for p in saved.get("sources") or [] if isinstance(p, str) and _yours(ctx, p, request)]
    target = saved.get("target")
    target = target if isinstance(target, str) and target and _yours(ctx, target, request) else None
    frame = saved.get("frame")
    number = isinstance(frame, int | float) and not isinstance(frame, bool)
    at = int(frame) if target and number and 0 < frame < 10**7 else None
    return [sources or gr.skip(), target or gr.skip(), gr.skip() if at is None else at,
            *_settings(form, saved.get("settings"))]


def _settings(form: SettingsForm, kept: Any) -> list[Any]:
    skip = [gr.skip()] * len(form.keys)
    if not isinstance(kept, dict) or not kept:
        return skip
    values = form.show(api.Settings())
    values = [kept.get(key, value) for key, value in zip(form.keys, values, strict=True)]
    try:
        return form.show(form.read(values))
    except (api.UserError, TypeError, ValueError) as exc:  # kept by another version, or edited by hand
        log.info("kept settings not restored: %s", exc)
        return skip


def _yours(ctx: Ctx, path: str, request: gr.Request | None) -> bool:
    """Is ``path`` an upload still in Gradio's cache, handed to this caller (on a shared UI)?"""
    real = Path(os.path.realpath(path))
    if not real.is_file() or not real.is_relative_to(os.path.realpath(get_upload_folder())):
        return False
    return not ctx.config.users or ctx.guard.ledger.allows(ctx.owner(request), str(real))
