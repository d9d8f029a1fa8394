"""Models tab: what is installed or missing (size, licence, what each needs), fetch with a progress bar (a
swapper with its recogniser), import a file, adopt a folder of models already on this machine (the host or
an admin only), and a check of every installed model on real photos (``facestation models check``). A failed
fetch is one line in its model's row; the table stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui.common import Ctx, browser_message, user_errors

COLUMNS = ["model", "role", "state", "size (MB)", "licence", "notes"]
UNKNOWN_SIZE = "?"  # said once, under the table (SIZE_NOTE)
SIZE_NOTE = "? = size unknown: no size is published for that file; an installed file shows its own"
Notes = dict[str, str]  # model -> the last fetch failure, kept per browser session (a gr.State)
CHECK_COLUMNS = ["model", "role", "verdict", "figures", "reason"]


def rows(notes: Notes | None = None) -> list[list[Any]]:
    status = api.model_status()
    by_name = {r.name: r for r in status}
    out = []
    for r in status:
        state = "built-in" if r.builtin else ("installed" if r.installed else "missing")
        needs = [f"needs {n} ({_need(by_name[n])})" for n in r.needs]
        unsure = [f"not yet checked against the real file: {r.unverified}"] if r.unverified else []
        file = [n for n in (r.export, r.source) if n]  # another export, an unverified source
        note = "; ".join([*([notes[r.name]] if notes and r.name in notes else []), *needs, *file, *unsure])
        size = round(r.size / 1e6, 1) if r.size else UNKNOWN_SIZE
        out.append([r.name, r.role, state, size, r.licence, note])
    return out


def _need(r: Any) -> str:
    """What a model's row says of a model it needs: installed, or its size and that it comes with it."""
    if r.installed:
        return "installed"
    return (f"{r.size / 1e6:.0f} MB, " if r.size else "") + "fetched with it"


def missing() -> list[str]:
    return [r.name for r in api.model_status() if not r.installed and not r.builtin]


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["table"] = gr.Dataframe(rows(), headers=COLUMNS, interactive=False, wrap=True, elem_id="models-table",
                              column_widths=["15%", "9%", "7%", "8%", "21%", "40%"], max_height=900)
    gr.Markdown(SIZE_NOTE, elem_id="models-size-note")
    c["notes"] = gr.State({})
    with gr.Row():
        c["name"] = gr.Dropdown(choices=missing(), label="Download a missing model", elem_id="model-name")
        c["fetch"] = gr.Button("Fetch", elem_id="model-fetch")
    with gr.Row():
        c["file"] = gr.File(label="Import a model file you already have (.onnx)", file_types=[".onnx"],
                            type="filepath", elem_id="model-import")
        c["import_name"] = gr.Textbox(label="Catalog name (if the file name differs)",
                                      elem_id="model-import-name")
    with gr.Row(visible=False, elem_id="model-adopt-row") as c["adopt_row"]:  # shown to the host or an admin
        c["folder"] = gr.Textbox(label="Adopt the models in a folder on this machine (FaceFusion, "
                                 "VisoMaster, rembg's ~/.u2net, ~/.insightface, ComfyUI, Deep-Live-Cam, "
                                 "roop, Rope, DeepFaceLive): linked, not uploaded",
                                 placeholder="/home/me/facefusion/.assets/models",
                                 elem_id="model-adopt-folder")
        c["adopt"] = gr.Button("Adopt", elem_id="model-adopt")
    c["message"] = gr.Markdown("", elem_id="models-message")
    create_check(c)
    return c


def create_check(c: dict[str, Any]) -> None:
    """The Check button and the table of its verdicts (empty until it is pressed)."""
    c["check"] = gr.Button("Check installed models", elem_id="model-check")
    c["check_table"] = gr.Dataframe([], headers=CHECK_COLUMNS, interactive=False, elem_id="models-check")


def wire(ctx: Ctx, c: dict[str, Any], shown: list[Any]) -> None:
    """Fetch downloads the chosen missing model with what it needs; an uploaded file is imported; a folder
    is adopted (the host or an admin only, asked again on every click); each refreshes the table. On each
    of the ``shown`` triggers (the page's load, the tab shown) the table and the missing list are read
    again from disk, and the folder field is shown to whoever may use it."""

    def on_adopt(folder: str, request: gr.Request) -> tuple[list[list[Any]], dict[str, Any], str]:
        try:
            return adopt(folder, ctx, request)
        except api.UserError as exc:  # a line under the table; the table stays
            return rows(), gr.update(), f"not adopted: {browser_message(str(exc))}"

    def show(request: gr.Request, notes: Notes | None) -> tuple[Any, ...]:
        """What is installed now, read again (a model fetched by the CLI in another process or copied in
        shows as installed), and the folder field for whoever may use it."""
        return rows(notes), gr.update(choices=missing()), gr.update(visible=ctx.is_admin(request))

    listed = [c["table"], c["name"], c["message"]]
    gr.on(shown, show, c["notes"], [c["table"], c["name"], c["adopt_row"]], api_visibility="private",
          queue=False, show_progress="hidden")
    c["fetch"].click(fetch, [c["name"], c["notes"]], [*listed, c["notes"]], api_visibility="private")
    c["file"].upload(import_, [c["file"], c["import_name"]], listed, api_visibility="private")
    c["adopt"].click(on_adopt, c["folder"], listed, api_visibility="private")
    c["check"].click(user_errors(check), None, [c["check_table"], c["message"]], api_visibility="private")


def fetch(
    name: str | None, notes: Notes | None = None,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio injects progress this way
) -> tuple[list[list[Any]], dict[str, Any], str, Notes]:
    """Download one model and the models it needs (file transfers, not a render) with a progress bar; a
    failure becomes one line in that model's row."""
    notes = dict(notes or {})
    if not name:
        return rows(notes), gr.update(), "choose a model first", notes
    notes.pop(name, None)
    fetched = []
    for each in api.model_fetch_order(name):
        def report(done: int, total: int, each: str = each) -> None:
            progress(done / total if total else None, desc=f"{each}: {done / 1e6:.1f} MB")

        try:
            api.fetch_model(each, progress=report)
        except api.UserError as exc:
            why = exc.reason if isinstance(exc, api.FetchFailed) else browser_message(str(exc))
            which = f" (fetching {each}, which it needs)" if each != name else ""
            notes[name] = f"fetch failed: {why}{which}"
            return rows(notes), gr.update(), f"**{name}** was not fetched: the reason is in its row", notes
        fetched.append(each)
    with_ = f" with {', '.join(fetched[:-1])}" if len(fetched) > 1 else ""
    return rows(notes), gr.update(choices=missing(), value=None), f"installed **{name}**{with_}", notes


def import_(path: str | None, name: str) -> tuple[list[list[Any]], dict[str, Any], str]:
    if not path:
        return rows(), gr.update(), ""
    try:
        entry = api.import_model(Path(path), name.strip() or None)
    except api.UserError as exc:
        return rows(), gr.update(), f"not imported: {browser_message(str(exc))}"
    return rows(), gr.update(choices=missing(), value=None), f"imported **{entry.name}**"


def check_rows(results: list[api.ModelCheck]) -> list[list[Any]]:
    """One row per model, the verdicts of those that ran first and the skipped ones (not installed, no
    judge) after them, each group in the check's order."""
    ordered = sorted(results, key=lambda r: r.verdict == "SKIP")
    return [[r.model, r.role, r.verdict, " ".join(f"{k}={v:g}" for k, v in r.figures.items()), r.reason]
            for r in ordered]


def check() -> tuple[list[list[Any]], str]:
    """Run every installed model on the check photos (seconds: a click, not a job) and show the verdicts."""
    results = api.check_models()
    failed = [r.model for r in results if r.verdict == "FAIL"]
    ran = sum(r.verdict != "SKIP" for r in results)
    summary = f"**{len(failed)} failed**: {', '.join(failed)}" if failed else f"all {ran} checked models pass"
    skipped = len(results) - ran
    summary += f" ({skipped} skipped, listed after them)" if skipped else ""
    return check_rows(results), summary


def adopt(folder: str, ctx: Ctx, request: gr.Request | None) -> tuple[list[list[Any]], dict[str, Any], str]:
    """Adopt a folder already on this machine (the host, or an admin when logins are on); one line per file
    adopted or skipped."""
    if not ctx.is_admin(request):
        raise api.UserError("only the host or an admin can adopt a folder of models")
    if not folder.strip():
        return rows(), gr.update(), "type the path of a folder on this machine first"
    report = api.adopt_models(Path(folder.strip()))
    lines = [f"- adopted {a.file} as **{a.model}** (by {a.by}; {a.how})" + (f"; {a.note}" if a.note else "")
             for a in report.adopted]
    lines += [f"- skipped {k.file}: {browser_message(k.reason)}" for k in report.skipped]
    head = f"{len(report.adopted)} adopted, {len(report.skipped)} skipped"
    return rows(), gr.update(choices=missing(), value=None), "\n".join([head, *lines])
