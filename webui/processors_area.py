"""The Processors area of the Swap tab: which processors run, in what order, and each one's settings.

One row per processor (the registry's, labelled with its title: "Face swapper", "Face enhancer"…): a tick
box that puts it in ``processors.order`` (at the end) or leaves it out, ↑ / ↓ buttons that move it (while
it is ticked), and
under the row its own settings section, shown only while it is ticked (a control that would be ignored is
never on screen). The rows are drawn in the order's order, the processors left out after them (a CSS
``order`` per row, written into a style element on each change). ``processors.order`` itself is a hidden
list the settings form reads and writes (presets and kept inputs set it; the rows follow). A processor that
follows a sound (the lip syncer) holds a drop zone for a new voice (the CLI's ``--audio``): the preview's
mouth follows it, a queued job renders with it and carries it. A change re-renders the preview like any
setting; a model that is not installed shows in the Swap tab's missing-models line with Fetch / Import
beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from pipeline import api
from webui import controls
from webui.common import beside

AUDIO_TYPES = [".wav", ".mp3", ".m4a", ".aac", ".flac", ".ogg", ".opus", ".mp4", ".mov", ".mkv", ".webm"]
CSS = """
#processor-list { gap: 6px; }
#processor-list .fs-proc-row { align-items: center; flex-wrap: nowrap; }
#processor-list .fs-proc-row button { max-width: 44px; font-size: 1.1em; }
"""


def move(order: Sequence[str] | None, name: str | None, step: int) -> list[str]:
    """``order`` with ``name`` moved ``step`` places (−1: up, +1: down), kept within the list."""
    out = list(order or [])
    if not name or name not in out:
        return out
    i = out.index(name)
    j = max(0, min(len(out) - 1, i + step))
    out.insert(j, out.pop(i))
    return out


def tick(order: Sequence[str] | None, name: str, on: bool) -> list[str]:
    """``order`` with ``name`` added at the end (``on``) or left out; the last one cannot be left out (the
    settings need one processor): the order stays as it was."""
    out = [n for n in (order or []) if n != name]
    if on:
        return [*out, name]
    return out if out else list(order or [])


def row_id(name: str) -> str:
    return "proc-" + name.replace("_", "-")


def style(order: Sequence[str] | None) -> str:
    """A style element drawing the rows in ``order``, the processors left out after them (registry order)."""
    names = [p.name for p in api.processors()]
    chosen = [n for n in (order or []) if n in names]
    rest = [n for n in names if n not in chosen]
    rules = " ".join(f"#{row_id(n)} {{ order: {i}; }}" for i, n in enumerate([*chosen, *rest]))
    return f"<style>{rules}</style>"


def create(base: api.Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the settings controls it shows, its own widgets)."""
    shown = controls.create_section("processors", base)
    order = shown["processors.order"]
    order.elem_classes = ["fs-hidden"]  # the rows set it (controls.make_control's multiselect)
    chosen = list(base.processors.order)
    parts: dict[str, Any] = {"order": order, "rows": {}, "voice": None}
    gr.Markdown("Tick what is done, and move it with ↑ ↓: the processors run from the top down; each one's "
                "settings are under it while it is ticked.", elem_id="processors-help")
    parts["style"] = gr.HTML(style(chosen), elem_id="processor-style", padding=False)
    with gr.Column(elem_id="processor-list"):
        for p in api.processors():
            shown |= _row(p, p.name in chosen, base, parts)
    return shown, parts


def _row(p: api.ProcessorInfo, on: bool, base: api.Settings, parts: dict[str, Any]) -> dict[str, Any]:
    """One processor's row (its tick box, ↑ ↓) and its settings under it; returns its settings controls."""
    with gr.Column(elem_id=row_id(p.name), elem_classes=["fs-proc"]):
        with gr.Row(elem_classes=["fs-proc-row"]):
            tick_box = gr.Checkbox(on, label=p.title, elem_id=row_id(p.name) + "-on", container=False,
                                   scale=4)
            up, down = (gr.Button(arrow, elem_id=row_id(p.name) + way, size="sm", scale=0, min_width=40,
                                  visible=on) for arrow, way in (("↑", "-up"), ("↓", "-down")))
        with gr.Group(visible=on, elem_id=row_id(p.name) + "-settings") as box:
            if p.needs_sound and parts["voice"] is None:
                parts["voice"] = gr.File(
                    label="New voice (optional): the mouth follows it and the output carries it; without "
                    "one, the target's own sound", file_count="single", file_types=AUDIO_TYPES,
                    type="filepath", elem_id="voice", height=110)
            made = controls.create_section(p.section, base)
    parts["rows"][p.name] = {"on": tick_box, "up": up, "down": down, "box": box}
    return made


def wire(parts: dict[str, Any]) -> None:
    """A tick or a move writes ``processors.order``; any change of the order (a tick, a move, a preset, a
    kept input) redraws the rows: ticks, settings shown, the order on screen."""
    order, rows = parts["order"], parts["rows"]
    names = list(rows)

    def follow(current: list[str] | None) -> list[Any]:
        current = list(current or [])
        out: list[Any] = [style(current)]
        for name in names:
            on = name in current  # a processor left out has no place to move from, and no settings in use
            out += [gr.update(value=on), gr.update(visible=on), gr.update(visible=on), gr.update(visible=on)]
        return out

    outputs = [parts["style"]]
    for name in names:
        outputs += [rows[name][part] for part in ("on", "box", "up", "down")]
    beside([order.change], follow, order, outputs, show_progress="hidden", api_visibility="private",
           queue=False)
    for name, row in rows.items():
        # the tick box says what the order holds (the last processor stays ticked: it cannot be left out)
        row["on"].input(lambda o, v, n=name: (new := tick(o, n, v), n in new), [order, row["on"]],
                        [order, row["on"]], show_progress="hidden", api_visibility="private", queue=False)
        row["up"].click(lambda o, n=name: move(o, n, -1), order, order, show_progress="hidden",
                        api_visibility="private", queue=False)
        row["down"].click(lambda o, n=name: move(o, n, 1), order, order, show_progress="hidden",
                          api_visibility="private", queue=False)
