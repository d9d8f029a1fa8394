"""Models tab: what is installed or missing (size, licence), fetch with a progress bar, import a file, and
a check of every installed model on real photos (``facestation models check``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import user_errors

COLUMNS = ["model", "role", "state", "size (MB)", "licence"]
CHECK_COLUMNS = ["model", "role", "verdict", "figures", "reason"]


def rows() -> list[list[Any]]:
    out = []
    for r in api.model_status():
        state = "built-in" if r.builtin else ("installed" if r.installed else "missing")
        out.append([r.name, r.role, state, round(r.size / 1e6, 1) if r.size else "unknown", r.licence])
    return out


def missing() -> list[str]:
    return [r.name for r in api.model_status() if not r.installed and not r.builtin]


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["table"] = gr.Dataframe(rows(), headers=COLUMNS, interactive=False, elem_id="models-table")
    with gr.Row():
        c["name"] = gr.Dropdown(choices=missing(), label="Download a missing model", elem_id="model-name")
        c["fetch"] = gr.Button("Fetch", elem_id="model-fetch")
    with gr.Row():
        c["file"] = gr.File(label="Import a model file you already have (.onnx)", file_types=[".onnx"],
                            type="filepath", elem_id="model-import")
        c["import_name"] = gr.Textbox(label="Catalog name (if the file name differs)",
                                      elem_id="model-import-name")
    c["message"] = gr.Markdown("", elem_id="models-message")
    create_check(c)
    return c


def create_check(c: dict[str, Any]) -> None:
    """The Check button and the table of its verdicts (empty until it is pressed)."""
    c["check"] = gr.Button("Check installed models", elem_id="model-check")
    c["check_table"] = gr.Dataframe([], headers=CHECK_COLUMNS, interactive=False, elem_id="models-check")


def wire(c: dict[str, Any]) -> None:
    """Fetch downloads the chosen missing model; an uploaded file is imported; both refresh the table."""
    shown = [c["table"], c["name"], c["message"]]
    c["fetch"].click(user_errors(fetch), c["name"], shown, api_visibility="private")
    c["file"].upload(user_errors(import_), [c["file"], c["import_name"]], shown, api_visibility="private")
    c["check"].click(user_errors(check), None, [c["check_table"], c["message"]], api_visibility="private")


def fetch(
    name: str | None, progress: gr.Progress = gr.Progress()  # noqa: B008 - Gradio injects progress this way
) -> tuple[list[list[Any]], dict[str, Any], str]:
    """Download one model (a file transfer, not a render) with a progress bar."""
    if not name:
        return rows(), gr.update(), "choose a model first"

    def report(done: int, total: int) -> None:
        progress(done / total if total else None, desc=f"{name}: {done / 1e6:.1f} MB")

    path = api.fetch_model(name, progress=report)
    return rows(), gr.update(choices=missing(), value=None), f"installed **{name}** ({path.name})"


def import_(path: str | None, name: str) -> tuple[list[list[Any]], dict[str, Any], str]:
    if not path:
        return rows(), gr.update(), ""
    entry = api.import_model(Path(path), name.strip() or None)
    return rows(), gr.update(choices=missing(), value=None), f"imported **{entry.name}**"


def check_rows(results: list[api.ModelCheck]) -> list[list[Any]]:
    return [[r.model, r.role, r.verdict, " ".join(f"{k}={v:g}" for k, v in r.figures.items()), r.reason]
            for r in results]


def check() -> tuple[list[list[Any]], str]:
    """Run every installed model on the check photos (seconds: a click, not a job) and show the verdicts."""
    results = api.check_models()
    failed = [r.model for r in results if r.verdict == "FAIL"]
    ran = sum(r.verdict != "SKIP" for r in results)
    summary = f"**{len(failed)} failed**: {', '.join(failed)}" if failed else f"all {ran} checked models pass"
    return check_rows(results), summary
