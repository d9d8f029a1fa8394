"""The Processors area of the Swap tab: which processors run and in what order, and each one's controls.

``processors.order`` is a multiselect (tick = add at the end, ✕ = leave out) with a processor chooser and
↑ / ↓ buttons that move it; under them, one closed accordion per processor's settings section (those that
SECTION_TABS puts in the "Processors" group). A processor that follows a sound (the lip syncer) holds a
drop zone for a new voice (the CLI's ``--audio``): the preview's mouth follows it, a queued job renders with
it and carries it. A change
re-renders the preview like any setting; a model that is not installed shows in the Swap tab's
missing-models line with Fetch / Import beside it."""

from __future__ import annotations

from typing import Any

import gradio as gr

from pipeline import api
from webui import controls

GROUP = controls.PROCESSORS_TAB
AUDIO_TYPES = [".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".mp4", ".mov", ".mkv", ".webm"]


def move(order: list[str] | None, name: str | None, step: int) -> list[str]:
    """``order`` with ``name`` moved ``step`` places (−1: up, +1: down), kept within the list."""
    out = list(order or [])
    if not name or name not in out:
        return out
    i = out.index(name)
    j = max(0, min(len(out) - 1, i + step))
    out.insert(j, out.pop(i))
    return out


def create(base: api.Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the settings controls it shows, its own widgets)."""
    shown = controls.create_section("processors", base)
    order = list(base.processors.order)
    with gr.Row(elem_id="processor-move-row"):
        pick = gr.Dropdown(choices=order, value=order[0] if order else None, label="Move", scale=3,
                           elem_id="processor-move", container=False)
        up = gr.Button("↑ Move up", elem_id="processor-up", size="sm", scale=1, min_width=40)
        down = gr.Button("↓ Move down", elem_id="processor-down", size="sm", scale=1, min_width=40)
    voice = None
    for p in api.processors():
        if controls.SECTION_TABS[p.section] != GROUP:
            continue
        with gr.Accordion(p.title, open=False, elem_id="proc-" + p.section.replace("_", "-")):
            if p.needs_sound and voice is None:
                voice = gr.File(label="New voice (optional): the mouth follows it and the output carries "
                                "it; without one, the target's own sound", file_count="single",
                                file_types=AUDIO_TYPES, type="filepath", elem_id="voice", height=110)
            shown |= controls.create_section(p.section, base)
    return shown, {"order": shown["processors.order"], "pick": pick, "up": up, "down": down, "voice": voice}


def wire(parts: dict[str, Any]) -> None:
    order, pick = parts["order"], parts["pick"]

    def choices(current: list[str] | None, chosen: str | None) -> dict[str, Any]:
        current = list(current or [])
        return gr.update(choices=current, value=chosen if chosen in current else (current or [None])[0])

    order.change(choices, [order, pick], [pick], show_progress="hidden")
    parts["up"].click(lambda o, n: move(o, n, -1), [order, pick], [order], show_progress="hidden")
    parts["down"].click(lambda o, n: move(o, n, 1), [order, pick], [order], show_progress="hidden")
