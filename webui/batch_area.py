"""The batch and output-folder area beside "Add to queue": where jobs are saved, and one job per target.

The output folder applies to every job this page queues (the single one too): on this machine's own UI
any folder (made if missing), on a shared UI only one inside the user's own outputs folder
(``api.output_folder``). A batch takes several uploaded targets, or on a local UI a folder on this
computer, with the Swap tab's sources and settings, and queues one job each whose outputs are named by
a pattern, through the CLI's batch (``queue_tab.submit_batch`` → ``api.add_batch``).
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from pipeline import api
from webui import queue_tab
from webui.common import Ctx
from webui.controls import SettingsForm

FIELDS = ", ".join("{" + f + "}" for f in api.BATCH_FIELDS)


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    with gr.Accordion("Output folder and batch", open=False, elem_id="batch"):
        c["folder"] = gr.Textbox("", label="Output folder (empty: your outputs folder)",
                                 info="a name alone is a folder inside your outputs folder (Enter: check it)",
                                 elem_id="output-folder")
        c["folder_note"] = gr.Markdown("", elem_id="output-folder-note")
        c["targets"] = gr.File(label="Batch targets: one job each, with the sources and settings above",
                               file_count="multiple", type="filepath", elem_id="batch-targets", height=140,
                               file_types=sorted(api.IMAGE_SUFFIXES) + list(api.VIDEO_SUFFIXES))
        c["host_folder"] = gr.Textbox("", label="… or a folder of images and videos on this computer",
                                      elem_id="batch-folder")
        with gr.Row():
            c["pattern"] = gr.Textbox(api.BATCH_NAME, label=f"Output names ({FIELDS})", elem_id="batch-name",
                                      scale=3)
            c["add"] = gr.Button("Queue the batch", elem_id="add-batch", scale=1)
        c["result"] = gr.Markdown("", elem_id="batch-result")
    return c


def wire(ctx: Ctx, c: dict[str, Any], faces: dict[str, Any], form: SettingsForm, voice: Any,
         queue: dict[str, Any], blocks: gr.Blocks) -> None:
    """The folder is checked (and made) on Enter or when the box is left; the batch button queues one job
    per target and redraws the queue's table."""
    shared = bool(ctx.config.users)

    def on_load(request: gr.Request) -> tuple[Any, Any]:
        default = queue_tab.output_folder(ctx, "", request, make=False).path  # made when a job needs it
        own = queue_tab.folder_of(default / "x", ctx.outputs, not shared)
        return gr.update(placeholder=own), gr.update(visible=not shared)

    blocks.load(on_load, None, [c["folder"], c["host_folder"]], api_visibility="private", queue=False)

    def on_folder(asked: str, request: gr.Request) -> str:
        try:
            chosen = queue_tab.output_folder(ctx, asked, request, make=bool((asked or "").strip()))
        except api.UserError as exc:
            return queue_tab.refused(str(exc)).replace("not queued: ", "")
        shown = html.escape(queue_tab.folder_of(chosen.path / "x", ctx.outputs, not shared))
        return f"Jobs are saved in `{shown}`" + (" (made just now)" if chosen.created else "")

    for event in (c["folder"].submit, c["folder"].blur):
        event(on_folder, c["folder"], c["folder_note"], api_visibility="private", queue=False)

    def on_batch(request: gr.Request, sources: list[str] | None, targets: list[str] | None, host_folder: str,
                 pattern: str, folder: str, audio: str | None, *vals: Any) -> tuple[str, str]:
        try:
            items = queue_tab.submit_batch(ctx, form.read(vals), sources, targets or [], host_folder, pattern,
                                           request, audio, folder)
        except api.UserError as exc:  # one line; no job is created
            return queue_tab.refused(str(exc)), gr.skip()
        return queue_tab.batch_report(items), queue_tab.table(ctx, queue_tab.visible_jobs(ctx, request), "",
                                                              request)

    c["add"].click(on_batch, [faces["sources"], c["targets"], c["host_folder"], c["pattern"], c["folder"],
                              voice, *form.inputs], [c["result"], queue["table"]], api_visibility="private")
