"""Who renders this queue's jobs: the render workers serving it, where each runs and what it is doing,
shown on the Queue and System tabs (a queue no worker serves says so, instead of jobs sitting at 0 %)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import gradio as gr

from pipeline import api
from webui.common import Ctx


def summary(ctx: Ctx, request: gr.Request | None) -> str:
    """The workers serving the queue, as the caller may see them (another user's job is not named)."""
    return describe(ctx.store.workers.live(), ctx, request)


def describe(workers: Sequence[api.WorkerInfo], ctx: Ctx, request: gr.Request | None) -> str:
    here = "" if ctx.config.worker else " This UI only queues jobs (it was started with --no-worker)."
    if not workers:
        return ('<span class="fs-problem">⚠ No render worker serves this queue: jobs wait, queued, until '
                f"one starts (a UI without --no-worker, or `facestation queue run`).</span>{here}")
    count = "1 render worker serves" if len(workers) == 1 else f"{len(workers)} render workers serve"
    lines = [f"**{count} this queue.**{here}"]
    lines += [f"- `{html.escape(w.id)}` on {html.escape(w.host)} (pid {w.pid}): {doing(w.job, ctx, request)}"
              for w in workers]
    return "\n".join(lines)


def doing(job: api.Job | None, ctx: Ctx, request: gr.Request | None) -> str:
    """What a worker does: idle, or rendering a job (named only to its owner, or an admin)."""
    if job is None:
        return "idle"
    if not ctx.is_admin(request) and job.owner != ctx.owner(request):
        return "rendering another user's job"
    whose = f"{job.owner}'s " if ctx.config.users and job.owner != ctx.owner(request) else "your "
    if not ctx.config.users:
        whose = ""
    fraction = job.progress.fraction
    done = f", {fraction * 100:.0f}%" if fraction is not None else ""
    return f"rendering {whose}job #{job.label}{done}"
