"""The page's events: one always_last listener per event on the server (webui.common.beside).

Gradio's always_last listener, ending with a trigger held meanwhile, sends the event again to every
listener of it; two such listeners on one event set each other off for ever. Seen on the frame slider: at
rest after three arrow keys the page asked for the same fast preview every ~0.35 s, the status line's timer
flickering, the preview's queue never empty (the browser side of it: tests/test_webui_scrub_browser.py).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

gr = pytest.importorskip("gradio")

from webui.app import create_app  # noqa: E402
from webui.common import UiConfig  # noqa: E402


def _listeners(tmp_path: Path) -> tuple[dict[tuple[str, str], list[str]], set[str]]:
    """(each (component, event) -> its always_last listeners that run on the server, by function name;
    the names of every component with an event a server listener hears)"""
    blocks = create_app(UiConfig(data=tmp_path / "data", outputs=tmp_path / "out"))
    config = blocks.get_config_file()
    names = {c["id"]: c.get("props", {}).get("elem_id") or f"{c['type']}#{c['id']}"
             for c in config["components"]}
    last: dict[tuple[str, str], list[str]] = defaultdict(list)
    heard: set[str] = set()
    for dep in config["dependencies"]:
        if not dep["backend_fn"]:
            continue
        for target, event in dep["targets"]:
            name = names.get(target, f"#{target}")
            heard.add(f"{name}.{event}")
            if dep["trigger_mode"] == "always_last":
                last[(name, event)].append(blocks.fns[dep["id"]].name)
    return last, heard


def test_no_event_has_two_always_last_listeners_on_the_server(tmp_path: Path) -> None:
    last, heard = _listeners(tmp_path)
    twice = {f"{name}.{event}": fns for (name, event), fns in last.items() if len(fns) > 1}
    assert not twice, f"events that would set their listeners off for ever: {twice}"
    # the preview is the one that coalesces: the slider's steps and every setting's change
    assert last[("frame", "input")] == last[("frame", "release")] == ["on_preview"]
    assert last[("target", "change")] == last[("set-face_swapper-model", "change")] == ["on_preview"]
    # and the others hear it through their relays (common.beside), each one always_last there: the faces
    # gallery the frame let go on, the page's kept inputs each change, the timeline's trim line
    relayed = {fns[0] for (name, event), fns in last.items() if name.startswith("textbox#")}
    assert {"on_frame", "keep", "on_range", "on_target", "on_change"} <= relayed, relayed
    assert {"frame.release", "target.change", "sources.change"} <= heard
