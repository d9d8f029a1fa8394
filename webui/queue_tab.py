"""Queue tab: every job's state and live progress, polled from the job store; cancel, retry, reorder,
delete, download; re-render a stretch of a finished video job (frames A-B, with other settings).

Renders never run here: "Add to queue" stores a job and a worker (another thread or process) runs it.
A user sees their own jobs; an admin (or everyone, when no login is configured) sees all.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from pipeline import api
from webui import markers_area, timeline, workers
from webui.common import Ctx, browser_message, user_errors
from webui.controls import SettingsForm
from webui.files import Link
from webui.quality_plot import SEEK_JS as PLOT_SEEK_JS
from webui.quality_plot import section as quality_section

ACTIONS = ("cancel", "retry", "up", "down", "delete")


# a click on a row selects its job: the number goes into the hidden #job-id box, which the actions read,
# and an Enter in it submits the selection (one event, also when the same row is clicked again)
SELECT_ROW_JS = """
element.addEventListener('click', (e) => {
  const row = e.target.closest('tr[data-job]');
  if (!row) return;
  const box = document.querySelector('#job-id textarea, #job-id input');
  box.value = row.dataset.job;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  box.dispatchEvent(new KeyboardEvent('keypress', {key: 'Enter', bubbles: true}));
  element.querySelectorAll('tr.fs-selected').forEach((r) => r.classList.remove('fs-selected'));
  row.classList.add('fs-selected');
});
"""


# the before and after videos play as one: playing, pausing, seeking or changing the speed of one does the
# same to the other. Media events do not bubble: they are caught on the way down (capture) on the player's
# container, which stays while its videos are replaced. A seek made here marks the video it moves with the
# time it was sent to, whose own "seeked" is then not sent back (while playing, the two times differ by the
# time the seek took); a seek by hand before that "seeked" came (one "seeked" ends both) is still followed.
SYNC_PLAYERS_JS = """
const other = (video) => {
  const both = [...element.querySelectorAll('.fs-player video')];
  return both.length === 2 && both.includes(video) ? both.find((v) => v !== video) : null;
};
// where each video's time 0 is on the job's clock: the target starts at the trim's in-point, the result at 0
const at = (v) => parseFloat(v.dataset.fsAt || '0') || 0;
const follow = (kind, act) => element.addEventListener(kind, (e) => {
  const o = other(e.target);
  if (o) act(e.target, o);
}, true);
const seek = (v, o, slack) => {
  const t = Math.max(0, v.currentTime - at(v) + at(o));
  if (Math.abs(o.currentTime - t) > slack) {
    o.currentTime = t;
    o.dataset.fsFollowing = String(o.currentTime);
  }
};
element.addEventListener('loadedmetadata', (e) => {  // a trimmed job's target opens at its in-point
  const v = e.target;
  if (at(v) > 0 && v.currentTime === 0) {
    v.currentTime = at(v);
    v.dataset.fsFollowing = String(v.currentTime);
  }
}, true);
follow('play', (v, o) => { if (o.paused) { seek(v, o, 0.04); o.play().catch(() => {}); } });
follow('pause', (v, o) => { if (!o.paused) o.pause(); });
follow('ratechange', (v, o) => { o.playbackRate = v.playbackRate; });
follow('seeked', (v, o) => {
  const sent = v.dataset.fsFollowing;
  delete v.dataset.fsFollowing;
  if (sent !== undefined && Math.abs(v.currentTime - parseFloat(sent)) < 0.02) return;  // this one's echo
  seek(v, o, 0.001);
});
"""


def create(ctx: Ctx) -> dict[str, Any]:
    """The tab's parts; its timer is made outside the tabs (:func:`create_timer`)."""
    c: dict[str, Any] = {}
    gr.Markdown("Click a job to select it; the buttons act on the selected job.", elem_id="queue-help")
    c["workers"] = gr.Markdown("", elem_id="queue-workers")  # who renders these jobs (webui/workers.py)
    c["table"] = gr.HTML(render_jobs([]), elem_id="jobs", js_on_load=SELECT_ROW_JS)
    c["job_id"] = gr.Textbox("", elem_id="job-id", elem_classes=["fs-hidden"], show_label=False,
                             container=False)
    with gr.Row():
        c["selected"] = gr.Markdown("No job selected.", elem_id="job-selected")
        for action in ACTIONS:
            c[action] = gr.Button(action.capitalize(), size="sm", elem_id=f"job-{action}", scale=0,
                                  min_width=80)
    with gr.Row(elem_id="rerender"):  # a stretch of the selected (done) job again: pipeline/jobs/rerender.py
        c["rr_frames"] = gr.Textbox(label="Re-render frames", placeholder="A-B, e.g. 120-180",
                                    elem_id="rerender-frames", scale=1)
        c["rr_set"] = gr.Textbox(label="with settings", placeholder="section.key=value, one per line",
                                 elem_id="rerender-set", lines=1, scale=2)
        c["rr_beside"] = gr.Checkbox(label="beside the output (keep it)", value=False,
                                     elem_id="rerender-beside", scale=0)
        c["rerender"] = gr.Button("Re-render stretch", size="sm", elem_id="job-rerender", scale=0,
                                  min_width=140)
    c["message"] = gr.Markdown("", elem_id="queue-message")
    # before / after, played in the page from private links (webui/files.py), never from Gradio's cache
    # the two in step; under them the job's quality report, a click on it seeks both (webui/quality_plot.py)
    c["player"] = gr.HTML("", elem_id="job-player", js_on_load=SYNC_PLAYERS_JS + PLOT_SEEK_JS)
    c["thumb"] = gr.Image(label="Rendering: latest finished frame", interactive=False, elem_id="job-thumb",
                          visible=False, height=240, buttons=["fullscreen"])  # no share button
    c["file"] = gr.HTML("", elem_id="job-file")  # a private link: webui/files.py serves it to you only
    c["thumb_key"] = gr.State("")  # what this page's thumbnail shows now (api.latest_frame's key)
    c["panel_key"] = gr.State("")  # what the detail panel shows now (panel_key)
    return c


def create_timer(ctx: Ctx) -> gr.Timer:
    """The tick that reads the queue, made outside every tab: a timer in a tab only ticks once that tab has
    been shown, and the tab would open on the table as it was when a job was added ("queued 0 %" for a job
    running since); ticking on every tab, the table is never older than one tick when the tab opens."""
    return gr.Timer(ctx.config.poll_s)


def wire(ctx: Ctx, c: dict[str, Any], faces: dict[str, Any], add_job: Any, form: SettingsForm,
         voice: Any, status: Any | None = None, folder: Any | None = None,
         render_now: tuple[Any, Any] | None = None) -> None:
    """The add button under the preview (``add_job``) queues the Faces tab's inputs (``faces``) with the
    settings into the chosen output ``folder`` (a textbox; None: the caller's own); the table polls the
    store; the buttons act on the selected row's job. ``render_now`` (its button, the page's tabs) queues
    the same job first in the queue and opens the Queue tab on it."""

    _wire_queueing(ctx, c, faces, add_job, form, voice, status, folder, render_now)

    def refresh(job_id: str, request: gr.Request) -> str:
        return table(ctx, visible_jobs(ctx, request), job_id, request)

    def tick(job_id: str, shown: str, panel: str, request: gr.Request) -> tuple[Any, ...]:
        jobs = visible_jobs(ctx, request)  # the one jobs read per tick: the table and the thumbnail
        thumb, key = thumbnail(jobs, _number(job_id), shown)
        return (table(ctx, jobs, job_id, request), workers.summary(ctx, request), thumb, key,
                *follow(ctx, jobs, job_id, panel, request))

    c["timer"].tick(tick, [c["job_id"], c["thumb_key"], c["panel_key"]],
                    [c["table"], c["workers"], c["thumb"], c["thumb_key"], c["job_id"], c["selected"],
                     c["player"], c["file"], c["panel_key"]],
                    show_progress="hidden", api_visibility="private", queue=False)
    for action in ACTIONS:
        def act(job_id: str, request: gr.Request, action: str = action) -> tuple[str, str]:
            return job_action(ctx, action, _number(job_id), request), refresh(job_id, request)

        c[action].click(user_errors(act), c["job_id"], [c["message"], c["table"]], api_visibility="private")

    def on_rerender(job_id: str, frames: str, overrides: str, beside: bool,
                    request: gr.Request) -> tuple[str, str]:
        return rerender(ctx, _number(job_id), frames, overrides, beside, request), refresh(job_id, request)

    c["rerender"].click(user_errors(on_rerender), [c["job_id"], c["rr_frames"], c["rr_set"], c["rr_beside"]],
                        [c["message"], c["table"]], api_visibility="private")

    def on_select(job_id: str, request: gr.Request) -> list[Any]:
        shown = show_job(ctx, _number(job_id), request)
        job = next((j for j in visible_jobs(ctx, request) if j.id == _number(job_id)), None)
        return [*shown, panel_key(job)]

    # submit only: a click on a row fires it once (and again on the same row); no change listener as well
    c["job_id"].submit(user_errors(on_select), c["job_id"], [c["selected"], c["player"], c["file"],
                                                            c["panel_key"]],
                       api_visibility="private", trigger_mode="always_last")


def _wire_queueing(ctx: Ctx, c: dict[str, Any], faces: dict[str, Any], add_job: Any, form: SettingsForm,
                   voice: Any, status: Any | None, folder: Any | None,
                   render_now: tuple[Any, Any] | None) -> None:
    """Add to queue and Render now (see :func:`wire`)."""
    marked = faces["markers"]["start"] if "markers" in faces else gr.State("")  # the timeline's markers

    def on_add(request: gr.Request, sources: list[str] | None, target: str | None, audio: str | None,
               where: str | None, start: str, *vals: Any) -> tuple[str, str, Any]:
        try:
            settings = markers_area.job_settings(start, form.read(vals))
            job = submit(ctx, settings, sources, target, request, audio, where or "")
        except api.UserError as exc:  # shown once, beside the button; no job is created
            return gr.update(), render_jobs(visible_jobs(ctx, request)), refused(str(exc))
        gr.Info(f"queued job #{job.label}")
        return f"queued job #{job.label}: {Path(job.output).name}", table(ctx, visible_jobs(ctx, request), "",
                                                                           request), \
            f"queued job #{job.label}: follow it in the Queue tab"

    # every click queues a job (Gradio's default "once" would drop a click made while the last is pending)
    chosen = folder if folder is not None else gr.State("")
    add_job.click(on_add, [faces["sources"], faces["target"], voice, chosen, marked, *form.inputs],
                  [c["message"], c["table"], status if status is not None else c["message"]],
                  api_visibility="private", trigger_mode="multiple")

    if render_now is not None:
        now, tabs = render_now

        def on_now(request: gr.Request, sources: list[str] | None, target: str | None, audio: str | None,
                   where: str | None, start: str, *vals: Any) -> tuple[Any, ...]:
            try:
                settings = markers_area.job_settings(start, form.read(vals))
                job = submit(ctx, settings, sources, target, request, audio, where or "")
            except api.UserError as exc:  # said beside the button; the page stays where it is
                return gr.update(), gr.update(), refused(str(exc)), gr.update(), gr.update()
            job = api.move_job(ctx.store, job.id, "top")
            said = f"queued job #{job.label} first, before any other: {Path(job.output).name}"
            return (said, table(ctx, visible_jobs(ctx, request), str(job.id), request), said, str(job.id),
                    gr.Tabs(selected="Queue"))

        now.click(on_now, [faces["sources"], faces["target"], voice, chosen, marked, *form.inputs],
                  [c["message"], c["table"], status if status is not None else c["message"], c["job_id"],
                   tabs], api_visibility="private", trigger_mode="multiple")


def panel_key(job: api.Job | None) -> str:
    """What the detail panel shows of ``job``: it is drawn again when this changes (state, output)."""
    return "" if job is None else f"{job.id}:{job.state}:{job.output}"


def follow(ctx: Ctx, jobs: Sequence[api.Job], job_id: str, panel: str,
           request: gr.Request | None) -> tuple[Any, ...]:
    """(job id, selected text, player, file, panel key) on a tick: the detail panel follows its job.

    A job that finished, failed or was requeued since it was drawn is drawn again (never a "running"
    panel beside a "done" row); a job that left the queue (deleted, in this session or another) clears the
    panel with one line instead of leaving buttons that would only answer errors."""
    number = _number(job_id)
    if number is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), panel
    job = next((j for j in jobs if j.id == number), None)
    if job is None:
        return "", "The selected job is no longer in your queue (deleted).", "", "", ""
    key = panel_key(job)
    if key == panel:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), panel
    selected, player_html, file_html = show_job(ctx, job.id, request)
    return gr.skip(), selected, player_html, file_html, key


def table(ctx: Ctx, jobs: Sequence[api.Job], job_id: str, request: gr.Request | None) -> str:
    show_owner = bool(ctx.config.users) and ctx.is_admin(request)
    return render_jobs(jobs, show_owner=show_owner, selected=_number(job_id), outputs=ctx.outputs,
                       full_paths=not ctx.config.users, thumbs=row_thumbnails(ctx, jobs, request))


def row_thumbnails(ctx: Ctx, jobs: Sequence[api.Job], request: gr.Request | None) -> dict[int, str]:
    """job id -> a link to its row's thumbnail (the output's frame once done, the newest frame while it
    runs), for this user and session only; the same link while the picture is the same (cached files:
    a tick costs a stat per done job, no decode)."""
    user, session = ctx.owner(request), ctx.session(request)
    out: dict[int, str] = {}
    for job in jobs:
        path = api.job_thumbnail(job)
        if path is not None:
            out[job.id] = ctx.links.thumbnail(user, session, job.id, path)
    return out


def folder_of(output: Path, outputs: Path | None, full_paths: bool) -> str:
    """Where a job's output goes, as the caller may see it: the whole folder on this machine's own UI;
    on a shared one the part under the outputs folder (never the server's paths)."""
    folder = output.parent
    if full_paths or outputs is None:
        return str(folder)
    try:
        return f"outputs/{folder.relative_to(outputs).as_posix()}".rstrip("/.")
    except ValueError:
        return folder.name


def _number(job_id: str | float | None) -> int | None:
    text = str(job_id or "").strip()
    return int(float(text)) if text.replace(".", "", 1).isdigit() else None


def thumbnail(jobs: Sequence[api.Job], job_id: int | None, shown: str) -> tuple[Any, str]:
    """(thumbnail update, its key): while the selected job (one of ``jobs``, the caller's) renders, the
    last frame of its newest finished segment, else hidden; ``gr.skip()`` when the page already shows
    that (``shown``, the key it was last sent), so an unchanged frame is neither re-encoded nor re-sent."""
    job = next((j for j in jobs if j.id == job_id), None)
    latest = api.latest_frame(job) if job is not None else None
    key = latest[0] if latest else ""
    if key == shown:
        return gr.skip(), shown
    if latest is None:
        return gr.update(visible=False, value=None), ""
    return gr.update(visible=True, value=latest[1]), key


def show_job(ctx: Ctx, job_id: int | None, request: gr.Request | None) -> list[Any]:
    """The selected job: its state; a done job plays beside its target (before / after), its quality
    report under them, and is offered for download, all by private links; a failed job says why."""
    if job_id is None:
        return ["No job selected.", "", ""]
    job = _own_job(ctx, job_id, request)
    name = html.escape(api.shown_name(job.target))
    if kept := trim_of(job):
        name += f", {kept}"
    if job.state == "failed":
        reason = html.escape(browser_message(job.error or "no reason recorded"))
        return [f'**Job #{job.label}** ({name}): <span class="fs-error">failed: {reason}</span>', "", ""]
    where = html.escape(folder_of(Path(job.output), ctx.outputs, not ctx.config.users))
    if job.state != "done":  # a cancelled job writes nothing more (retry it to render it)
        doing = {"queued": "queued, to write", "running": "running, writing to"}.get(job.state)
        said = f"{doing} `{where}`" if doing else f"{job.state}: nothing more is written (Retry renders it)"
        return [f"**Job #{job.label}** ({name}): {said}", "", ""]
    link = download(ctx, job.id, request)
    user, session = ctx.owner(request), ctx.session(request)
    before = ctx.links.issue(user, session, job.id, Path(job.target), inline=True)
    after = ctx.links.issue(user, session, job.id, Path(job.output), inline=True)
    took = f" in {_eta(job.render_s)}" if job.render_s is not None else ""
    fps = f" ({job.progress.fps:.1f} fps on average)" if job.progress.fps else ""
    return [f"**Job #{job.label}** ({name}): done{took}{fps}, saved in `{where}`",
            player(before, after, trim_start(job)) + quality_section(job.output), download_html(link)]


def player(before: str, after: str, start: float = 0.0) -> str:
    """Before and after side by side: two videos (played in step, SYNC_PLAYERS_JS; the target from the
    trim's in-point ``start``, in seconds, where the result begins), or two images, each from its own
    private link."""
    video = Path(after).suffix.lower() in api.VIDEO_SUFFIXES

    def pane(which: str, title: str, link: str) -> str:
        src = html.escape(link)
        # the before side is muted: the two play together, and its sound would echo the result's
        muted = f' muted data-fs-at="{start:g}"' if which == "before" else ""
        shown = (f'<video controls{muted} preload="metadata" src="{src}"></video>' if video
                 else f'<img src="{src}" alt="{title}">')
        return f'<figure id="job-{which}" class="fs-pane"><figcaption>{title}</figcaption>{shown}</figure>'

    return (f'<div class="fs-player">{pane("before", "Before (target)", before)}'
            f'{pane("after", "After (result)", after)}</div>')


def download_html(link: str) -> str:
    name = html.escape(link.rsplit("/", 1)[-1])
    return f'<a href="{html.escape(link)}" download>⤓ {name}</a> (a link for you only, this session)'


def visible_jobs(ctx: Ctx, request: gr.Request | None) -> list[api.Job]:
    owner = None if ctx.is_admin(request) else ctx.owner(request)
    return ctx.store.list(owner=owner)


def submit(ctx: Ctx, settings: api.Settings, sources: Sequence[str] | None, target: str | None,
           request: gr.Request | None, audio: str | None = None, folder: str = "") -> api.Job:
    """Check and stash the inputs (``audio``: a new voice), then queue a render with these settings into
    the chosen output ``folder`` (:func:`output_folder`; nothing renders here)."""
    owner = ctx.owner(request)
    where = output_folder(ctx, folder, request).path
    alpha = api.transparent(settings)
    output = api.fresh_output(where, target, alpha, api.video_suffix(settings, alpha)) if target else None
    asked = api.SwapRequest.of(sources, target, settings, output, audio)
    job = api.add_job(ctx.store, asked, owner=owner, keep=_stash)  # the preview's check; the uploads kept
    ctx.audit.record(owner, "add", job=job.id)
    return job


def _stash(upload: Path) -> Path:
    """An upload's copy in the app's own folder, which the job reads (the request was checked already)."""
    return api.stash(upload, None)


def output_folder(ctx: Ctx, asked: str, request: gr.Request | None, make: bool = True) -> api.OutputFolder:
    """The caller's output folder (made if missing, unless not ``make``): on a shared UI only inside their
    own outputs/<user>."""
    return api.output_folder(ctx.outputs, ctx.owner(request), asked or "", shared=bool(ctx.config.users),
                             make=make)


def submit_batch(ctx: Ctx, settings: api.Settings, sources: Sequence[str] | None, targets: Sequence[str],
                 host_folder: str, pattern: str, request: gr.Request | None, audio: str | None = None,
                 folder: str = "") -> list[api.BatchItem]:
    """One job per target (uploaded files, or the images and videos of a folder on this machine: a local
    UI only), the same sources and settings, outputs named by ``pattern`` in the chosen output folder; by
    the CLI's batch (``api.add_batch``): each target's job, or why it was refused."""
    host_folder = (host_folder or "").strip()
    if host_folder and ctx.config.users:
        raise api.UserError("a folder on the server is not yours to batch from on a shared UI: upload the "
                            "targets instead")
    given = [*(targets or []), *([Path(host_folder).expanduser()] if host_folder else [])]
    if not given:
        raise api.UserError("add the batch's targets first (upload them"
                            + (")" if ctx.config.users else ", or give a folder on this computer)"))
    if host_folder and not Path(given[-1]).is_dir():
        raise api.UserError(f"the batch folder {host_folder} is not a folder on this computer")
    if not sources:
        raise api.UserError("add a source photo (the face to put in)")
    api.check_pattern(pattern)  # before a folder is made for nothing
    owner = ctx.owner(request)
    where = output_folder(ctx, folder, request).path

    def add(target: Path, output: Path) -> api.Job:
        asked = api.SwapRequest.of(sources, target, settings, output, audio)
        job = api.add_job(ctx.store, asked, owner=owner, keep=_stash)  # the preview's check, per target
        ctx.audit.record(owner, "add", job=job.id)
        return job

    alpha = api.transparent(settings)
    return api.add_batch(add, list(sources), given, where, pattern, transparent=alpha,
                         video=api.video_suffix(settings, alpha))


def batch_report(items: Sequence[api.BatchItem]) -> str:
    """One line per target: the job queued with its output's name, or why it was not."""
    lines = []
    for item in items:
        name = html.escape(item.target.name)
        if item.job is not None:
            out = html.escape(item.output.name if item.output else "")
            lines.append(f"- queued job #{item.job.label}: {name} → {out}")
        else:
            why = f"{item.target.name}: {item.error or 'refused'}"
            lines.append(f"- {refused(why)}")
    done = sum(item.job is not None for item in items)
    return f"**Batch:** {done} of {len(items)} queued\n" + "\n".join(lines)


def refused(message: str) -> str:
    return f'<span class="fs-problem">⚠ not queued: {browser_message(message)}</span>'


def no_such_job(job_id: int) -> str:
    """The one answer for a job that does not exist and a job of someone else (ids cannot be probed)."""
    return f"no job {job_id} of yours in the queue"


def _own_job(ctx: Ctx, job_id: float | None, request: gr.Request | None) -> api.Job:
    if job_id is None:
        raise api.UserError("select a job first: click its row")
    try:
        job = ctx.store.get(int(job_id))
    except api.UserError:
        raise api.UserError(no_such_job(int(job_id))) from None
    if not ctx.is_admin(request) and job.owner != ctx.owner(request):
        raise api.UserError(no_such_job(job.id))
    return job


def download(ctx: Ctx, job_id: float | None, request: gr.Request | None) -> str:
    """A link to the finished output of one of the caller's jobs, for this user and session only (the
    download is audited when the link is served: webui/files.py)."""
    job = _own_job(ctx, job_id, request)
    if job.state != "done":
        raise api.UserError(f"job #{job.label} is {job.state}: only a done job has a result to download")
    if not Path(job.output).is_file():
        raise api.UserError(f"the output {Path(job.output).name} is not there any more")
    return ctx.links.issue(ctx.owner(request), ctx.session(request), job.id, Path(job.output))


def downloaded(ctx: Ctx, link: Link) -> None:
    """The audit entry for a result actually served as a download (webui/files.py calls it)."""
    ctx.audit.record(link.user, "download", job=link.job_id)


def link_valid(ctx: Ctx, link: Link) -> bool:
    """Is a link's job still there, done, with the same output (or target, for the before pane)?
    (asked on every response)"""
    try:
        job = ctx.store.get(link.job_id)
    except api.UserError:
        return False
    if api.is_job_thumbnail(link.path, job.id):  # a row's thumbnail: while the job is in the queue
        return True
    return job.state == "done" and link.path in (Path(job.output), Path(job.target))


def job_action(ctx: Ctx, action: str, job_id: float | None, request: gr.Request | None) -> str:
    job = _own_job(ctx, job_id, request)
    if action == "cancel":
        api.cancel_job(ctx.store, job.id)
    elif action == "retry":
        api.retry_job(ctx.store, job.id)
    elif action in ("up", "down"):
        api.move_job(ctx.store, job.id, action)
    elif action == "delete":
        ctx.links.revoke_job(job.id)
        api.delete_job(ctx.store, job.id)
    ctx.audit.record(ctx.owner(request), action, job=job.id, owner=job.owner)
    return f"job #{job.label}: {action} done"


def rerender(ctx: Ctx, job_id: float | None, frames: str, overrides: str, beside: bool,
             request: gr.Request | None) -> str:
    """Queue the selected done job again to re-render ``frames`` (A-B) with ``overrides`` (one
    ``section.key=value`` a line, or comma-free items separated by ';')."""
    job = _own_job(ctx, job_id, request)
    items = [i.strip() for line in (overrides or "").splitlines() for i in line.split(";") if i.strip()]
    queued = api.rerender_job(ctx.store, job.id, frames or "", items, beside=bool(beside))
    ctx.audit.record(ctx.owner(request), "rerender", job=job.id, owner=job.owner)
    a, b = queued.resume["rerender"]["frames"]
    where = Path(queued.resume["rerender"]["output"]).name
    return f"job #{job.label}: frames {a}-{b} queued to re-render into {where}"


def _bar(state: str, fraction: float) -> str:
    """A progress bar; a failed job shows no percentage (its reason is in the last column)."""
    if state == "failed":
        return '<span class="fs-error">failed</span>'
    return (f'<progress max="1" value="{fraction:.4f}"></progress> '
            f'<span class="fs-pct">{fraction * 100:.0f}%</span>')


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


def render_jobs(jobs: Sequence[api.Job], show_owner: bool = False, selected: int | None = None,
                outputs: Path | None = None, full_paths: bool = True,
                thumbs: Mapping[int, str] | None = None) -> str:
    """The jobs as an HTML table with a progress bar per job, each one's output folder, and once done its
    render time and average fps (``outputs`` and ``full_paths``: how folders are shown, :func:`folder_of`).
    Jobs are numbered per owner (``Job.label``); the row carries the queue's id for the actions.
    ``thumbs``: job id -> the link to its frame (:func:`row_thumbnails`), shown in the "frame" column."""
    if not jobs:
        return '<p class="fs-empty">No jobs yet: set up a swap and press "Add to queue".</p>'
    columns = ("#", "frame", *(["user"] if show_owner else []), "target", "state", "progress", "frames",
               "fps", "ETA / took", "memory", "output")
    head = "".join(f"<th>{h}</th>" for h in columns)
    rows = []
    for job in jobs:
        cells = _cells(job, show_owner, folder_of(Path(job.output), outputs, full_paths))
        cells.insert(1, _thumb_cell((thumbs or {}).get(job.id)))
        row = "".join(f"<td>{x}</td>" for x in cells)
        mark = ' class="fs-selected"' if job.id == selected else ""
        rows.append(f'<tr data-job="{job.id}" data-state="{job.state}"{mark}>{row}</tr>')
    stamp = time.strftime("%H:%M:%S")
    return (f'<table class="fs-jobs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="fs-updated">updated {stamp}</p>')


def _thumb_cell(link: str | None) -> str:
    if not link:
        return ""
    return f'<img class="fs-row-thumb" src="{html.escape(link)}" alt="frame" loading="lazy">'


def _cells(job: api.Job, show_owner: bool, folder: str) -> list[str]:
    p = job.progress
    fraction = 1.0 if job.state == "done" else (p.fraction or 0.0)
    frames = f"{p.frames_done}/{p.frames_total}" if p.frames_total else str(p.frames_done or "")
    if job.state == "running" and p.stage.get("running"):  # a render farm job: segments at once
        frames += f' <span class="fs-farm">· {p.stage["running"]} at once</span>'
    out = Path(job.output)
    if job.state == "done" and out.is_file():
        link = f'<span class="fs-download" title="click the row to play and download it">' \
               f"{html.escape(out.name)} ▶</span>"
    elif job.state == "failed":
        link = f'<span class="fs-error">{html.escape(job.error or "failed")}</span>'
    else:
        link = html.escape(out.name)
    link += f'<br><span class="fs-folder">in {html.escape(folder)}</span>'
    if job.state == "done":  # what the run took, and its average rate
        fps = f"{p.fps:.1f} avg" if p.fps else ""
        eta = f"took {_eta(job.render_s)}" if job.render_s is not None else ""
    else:
        fps, eta = (f"{p.fps:.1f}" if p.fps else ""), _eta(p.eta_s)
    return [
        str(job.label),
        *([html.escape(job.owner or "local")] if show_owner else []),
        html.escape(api.shown_name(job.target)) + _trim_cell(job),
        f'<span class="fs-state fs-{job.state}">{job.state}</span>',
        _bar(job.state, fraction),
        frames,
        fps,
        eta,
        _memory(p.stage) if job.state == "running" else "",
        link,
    ]


def trim_of(job: api.Job) -> str:
    """The part of the target the job renders, in words ("trimmed 0:01.20 – 0:04.00"); "" for all of it,
    and for an image (a trim left from an earlier video does nothing to it)."""
    if Path(job.target).suffix.lower() not in api.VIDEO_SUFFIXES:
        return ""
    kept = timeline.range_text(api.Trim.of(job.settings))
    return f"trimmed {kept}" if kept else ""


def trim_start(job: api.Job) -> float:
    """Where the job's output begins in its target (s): the trim's in-point, 0 without one."""
    return api.Trim.of(job.settings).start or 0.0


def _trim_cell(job: api.Job) -> str:
    kept = trim_of(job)
    return f'<br><span class="fs-trim">{html.escape(kept)}</span>' if kept else ""
