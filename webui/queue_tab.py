"""Queue tab: every job's state and live progress, polled from the job store; cancel, retry, reorder, delete, download.

Renders never run here: "Add to queue" stores a job and a worker (another thread or process) runs it.
A user sees their own jobs; an admin (or everyone, when no login is configured) sees all.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import preview as engine
from pipeline.errors import UserError
from pipeline.jobs.model import Job
from pipeline.jobs.runner import discard
from pipeline.settings import Settings
from webui.common import Ctx, user_errors

ACTIONS = ("cancel", "retry", "up", "down", "delete")


def create(ctx: Ctx) -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["table"] = gr.HTML(render_jobs([]), elem_id="jobs")
    with gr.Row():
        c["job_id"] = gr.Number(label="Job", precision=0, minimum=1, elem_id="job-id", scale=1)
        for action in ACTIONS:
            c[action] = gr.Button(action.capitalize(), size="sm", elem_id=f"job-{action}", scale=0, min_width=80)
        c["download"] = gr.Button("Download", size="sm", variant="primary", elem_id="job-download", scale=0,
                                  min_width=100)
    c["message"] = gr.Markdown("", elem_id="queue-message")
    c["file"] = gr.File(label="Result (your copy)", interactive=False, elem_id="job-file")
    c["timer"] = gr.Timer(ctx.config.poll_s)
    return c


def wire(ctx: Ctx, c: dict[str, Any]) -> None:
    def refresh(request: gr.Request) -> str:
        return render_jobs(visible_jobs(ctx, request), show_owner=bool(ctx.config.users) and ctx.is_admin(request))

    c["timer"].tick(refresh, None, c["table"], show_progress="hidden", api_visibility="private", queue=False)
    for action in ACTIONS:
        def act(job_id: float | None, request: gr.Request, action: str = action) -> tuple[str, str]:
            return job_action(ctx, action, job_id, request), refresh(request)

        c[action].click(user_errors(act), c["job_id"], [c["message"], c["table"]], api_visibility="private")

    def fetch(job_id: float | None, request: gr.Request) -> tuple[str, str]:
        return str(download(ctx, job_id, request)), ""

    c["download"].click(user_errors(fetch), c["job_id"], [c["file"], c["message"]], api_visibility="private")


def visible_jobs(ctx: Ctx, request: gr.Request | None) -> list[Job]:
    owner = None if ctx.is_admin(request) else ctx.owner(request)
    return ctx.store.list(owner=owner)


def submit(ctx: Ctx, settings: Settings, sources: Sequence[str] | None, target: str | None,
           request: gr.Request | None) -> Job:
    """Check and stash the inputs, then queue a render with these settings (nothing renders here)."""
    if not sources:
        raise UserError("add a source photo (the face to put in) before queueing")
    if not target:
        raise UserError("add a target image or video before queueing")
    stashed = [engine.stash(s, ("image",)) for s in sources]
    kept_target = engine.stash(target)
    owner = ctx.owner(request)
    output = engine.output_path(ctx.outputs, kept_target, owner)
    return ctx.store.add(stashed, kept_target, output, settings, owner=owner)


def _own_job(ctx: Ctx, job_id: float | None, request: gr.Request | None) -> Job:
    if job_id is None:
        raise UserError("type the number of a job first")
    job = ctx.store.get(int(job_id))
    if not ctx.is_admin(request) and job.owner != ctx.owner(request):
        raise UserError(f"job {job.id} is not yours")
    return job


def download(ctx: Ctx, job_id: float | None, request: gr.Request | None) -> Path:
    """The finished output of one of the caller's jobs, as a private copy (outputs are never served directly)."""
    job = _own_job(ctx, job_id, request)
    if job.state != "done":
        raise UserError(f"job {job.id} is {job.state}: only a done job has a result to download")
    return engine.download_copy(job.output)


def job_action(ctx: Ctx, action: str, job_id: float | None, request: gr.Request | None) -> str:
    job = _own_job(ctx, job_id, request)
    if action == "cancel":
        ctx.store.request_cancel(job.id)
    elif action == "retry":
        ctx.store.retry(job.id)
    elif action in ("up", "down"):
        ctx.store.move(job.id, action)
    elif action == "delete":
        ctx.store.delete(job.id)
        discard(job.id, job.output)
    return f"job {job.id}: {action} done"


def _memory(stage: dict[str, Any]) -> str:
    """Device memory while a GPU session runs, else the worker's RAM."""
    if stage.get("device_mb"):
        return f"GPU {stage['device_mb']:.0f} MB"
    return f"RAM {stage['rss_mb']:.0f} MB" if stage.get("rss_mb") else ""


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def render_jobs(jobs: Sequence[Job], show_owner: bool = False) -> str:
    """The jobs as an HTML table with a progress bar per job and a download link once done."""
    if not jobs:
        return '<p class="fs-empty">No jobs yet: set up a swap and press "Add to queue".</p>'
    head = "".join(f"<th>{h}</th>" for h in (
        "#", *(["user"] if show_owner else []), "target", "state", "progress", "frames", "fps", "ETA", "memory", "output"))
    rows = []
    for job in jobs:
        p = job.progress
        fraction = 1.0 if job.state == "done" else (p.fraction or 0.0)
        frames = f"{p.frames_done}/{p.frames_total}" if p.frames_total else str(p.frames_done or "")
        out = Path(job.output)
        if job.state == "done" and out.is_file():
            link = f'<span class="fs-download" title="type {job.id} under Job and press Download">' \
                   f"{html.escape(out.name)} ⤓</span>"
        elif job.state == "failed":
            link = f'<span class="fs-error">{html.escape(job.error or "failed")}</span>'
        else:
            link = html.escape(out.name)
        cells = [
            str(job.id),
            *([html.escape(job.owner or "local")] if show_owner else []),
            html.escape(Path(job.target).name.split("-", 1)[-1]),
            f'<span class="fs-state fs-{job.state}">{job.state}</span>',
            f'<progress max="1" value="{fraction:.4f}"></progress> <span class="fs-pct">{fraction * 100:.0f}%</span>',
            frames,
            f"{p.fps:.1f}" if p.fps else "",
            _eta(p.eta_s),
            _memory(p.stage) if job.state == "running" else "",
            link,
        ]
        rows.append(f'<tr data-job="{job.id}" data-state="{job.state}">' + "".join(f"<td>{x}</td>" for x in cells)
                    + "</tr>")
    stamp = time.strftime("%H:%M:%S")
    return (f'<table class="fs-jobs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="fs-updated">updated {stamp}</p>')
