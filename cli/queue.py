"""``facestation queue``: add, list, cancel, retry, move, delete and run render jobs.

    facestation queue add --source me.jpg --target clip.mp4 --output out.mp4 [--preset P] [--set k=v]
    facestation queue add --source me.jpg --target a.mp4 --target FOLDER --output DIR \
        [--name '{target}-{source}']
    facestation queue list [--json]
    facestation queue cancel ID | retry ID | delete ID | move ID up|down|top|bottom
    facestation queue run [--once] [--worker-id NAME] [--ray local|auto|HOST:PORT [--slots N]]
    facestation queue show ID [--json]
    facestation queue rerender ID --frames A-B|--stretch K [--set k=v ...] [--beside]

Inputs and settings are checked before a job is queued (a bad one exits 2 with one line), so the
queue only holds jobs that can start; a second job writing the same output is refused.
`run --once` exits 1 when a job it took has failed (whoever failed it).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from cli.common import add_marker_option, require_subcommand
from pipeline import presets, writer
from pipeline.alpha import transparent
from pipeline.errors import UserError
from pipeline.jobs import batch, service
from pipeline.jobs.model import Job
from pipeline.jobs.store import JobStore
from pipeline.markers import with_markers
from pipeline.request import SwapRequest
from pipeline.video.formats import suffix_for
from pipeline.workspace import shown_name


def cmd_add(args: argparse.Namespace) -> int:
    settings = presets.settings_from(args.preset, args.set)  # SettingsError (a UserError) names a bad key
    settings = with_markers(settings, args.marker)
    store = service.open_store()

    def add(target: str | Path, output: str | Path) -> Job:
        request = SwapRequest.of(args.source, target, settings, output, args.audio)
        return service.add(store, request, owner=args.owner or "", say=_note)

    one = len(args.target) == 1 and not Path(args.target[0]).is_dir() and args.name is None
    if one:  # as it always was: --output is the file
        print(add(args.target[0], args.output).id)
        return 0
    items = batch.add_batch(add, args.source, args.target, args.output, args.name or batch.DEFAULT_NAME,
                            transparent=transparent(settings),
                            video=suffix_for(settings, transparent(settings)))
    for item in items:  # one line per target: the job id, or why it was refused
        if item.job is not None:
            print(f"{item.job.id}\t{item.target} -> {item.output}")
        else:
            print(f"facestation: error: {item.target}: not queued: {item.error}", file=sys.stderr)
    refused = sum(item.job is None for item in items)
    if refused:
        print(f"facestation: {len(items) - refused} job(s) queued, {refused} refused", file=sys.stderr)
    return 2 if refused else 0


def _note(line: str) -> None:
    print(f"facestation: note: {line}", file=sys.stderr)


def _row(job: Job, store: JobStore) -> dict[str, Any]:
    p = job.progress
    return {
        "id": job.id, "number": job.label, "state": job.state, "owner": job.owner,
        "target": job.target, "output": job.output,
        "frames_done": p.frames_done, "frames_total": p.frames_total, "fraction": p.fraction, "fps": p.fps,
        "eta_s": p.eta_s, "attempts": job.attempts, "failures": job.failures, "worker": job.worker_id,
        "worker_gone": store.holder_gone(job), "error": job.error,
        "created_at": job.created_at, "started_at": job.started_at, "finished_at": job.finished_at,
        "render_s": job.render_s,
        "resumable_frames": job.kept_frames,
    }


def _progress_text(job: Job, gone: bool) -> str:
    """``42.0% 126/300`` while it runs or once done (the frames it keeps when its worker is gone); nothing
    for a failed or cancelled job (its reason is what counts, not how far it got)."""
    p = job.progress
    if job.state in ("failed", "cancelled") or not p.frames_total:
        return ""
    done = job.kept_frames if gone else p.frames_done
    return f"{min(1.0, done / p.frames_total) * 100:5.1f}% {done}/{p.frames_total}"


def cmd_list(args: argparse.Namespace) -> int:
    store = service.open_store()
    jobs = store.list(states=args.state or None)
    if args.json:
        print(json.dumps([_row(j, store) for j in jobs], indent=2))
        return 0
    if not jobs:
        print("the queue is empty")
        return 0
    print(f"{'id':>4}  {'state':9}  {'progress':>14}  target -> output")
    for job in jobs:
        gone = store.holder_gone(job)
        prog = _progress_text(job, gone)
        line = f"{job.id:>4}  {job.state:9}  {prog:>14}  {shown_name(job.target)} -> {job.output}"
        if job.state == "failed":
            line += f"  [failed: {job.error}]"
        elif gone:
            line += f"  [its worker {job.worker_id} is gone: it resumes when a worker starts; cancel or " \
                    "delete it at once]"
        print(line)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    job = service.cancel(service.open_store(), args.id)
    done = "cancelled" if job.state == "cancelled" else "cancel requested (stops within a second)"
    print(f"job {job.id}: {done}")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    job = service.retry(service.open_store(), args.id)
    print(f"job {job.id}: queued again")
    return 0


def cmd_move(args: argparse.Namespace) -> int:
    store = service.open_store()
    before = [j.id for j in store.list(states=["queued"])]
    job = service.move(store, args.id, args.where)
    if [j.id for j in store.list(states=["queued"])] == before:  # nothing moved: say where it is
        where = "first" if before.index(job.id) == 0 else "last"
        print(f"job {job.id}: already {where} in the queue (nothing moved)")
    else:
        print(f"job {job.id}: moved {args.where}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    service.delete(service.open_store(), args.id)  # with its finished segments; the output is left alone
    print(f"job {args.id}: deleted")
    return 0


def cmd_rerender(args: argparse.Namespace) -> int:
    from pipeline.jobs import rerender

    job = rerender.submit(service.open_store(), args.id, args.frames, args.set or [], stretch=args.stretch,
                          beside=args.beside)
    req = job.resume[rerender.KEY]
    a, b = req["frames"]
    where = f"beside it, into {req['output']}" if req["beside"] else f"into {job.output}"
    print(f"job {job.id}: queued to re-render frames {a}-{b} ({len(req['covered'])} segment(s)) {where}; "
          "the output stays as it is until the new one is whole")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline.jobs.worker import Worker, default_worker_id  # loads the render engine

    farm = None
    if args.ray:  # the worker becomes the driver of a Ray render farm (exit 2 without the farm extra)
        from pipeline.jobs.farm import Farm

        farm = Farm.connect(args.ray, slots=args.slots)
        print(f"render farm: {farm.slots} segment(s) at once on {len(farm.nodes())} node(s)")
    elif args.slots:
        raise UserError("--slots goes with --ray")
    stop = threading.Event()
    writer.on_stop_signals(stop.set)  # SIGTERM/SIGHUP (systemd, docker stop, ssh gone): requeue, exit
    kwargs: dict[str, Any] = {"execute": farm.execute} if farm is not None else {}
    worker = Worker(service.open_store(), args.worker_id or (default_worker_id("ray") if farm else None),
                    checkpoint_seconds=args.checkpoint_seconds, **kwargs)
    try:
        done = worker.run(once=args.once, stop_event=stop)
    except KeyboardInterrupt:  # Ctrl-C: the running job was left running; the next start resumes it
        stop.set()
        raise
    finally:
        if farm is not None:
            farm.close()
    failed = worker.failed_jobs()  # also one taken from it and failed by another worker
    said = (f", {len(failed)} failed (job {', '.join(map(str, failed))}: see `facestation queue list`)"
            if failed else "")
    print(f"worker finished: {done} job(s) done{said}")
    return 1 if args.once and failed else 0


def show_row(job: Job, store: JobStore) -> dict[str, Any]:
    """A job with its segments: for each, where it was rendered (node, worker pid) and how long it took."""
    keys = ("file", "start", "frames", "node", "node_id", "pid", "seconds")
    segs = sorted(job.resume.get("segments", []), key=lambda s: int(s.get("start", 0)))
    return {**_row(job, store), "sources": list(job.sources), "log": job.log.splitlines(),
            "segments": [{k: s.get(k) for k in keys} for s in segs]}


def cmd_show(args: argparse.Namespace) -> int:
    store = service.open_store()
    row = show_row(store.get(args.id), store)
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    for key in ("id", "state", "target", "output", "frames_done", "frames_total", "worker", "error"):
        print(f"{key:>13}: {row[key]}")
    if row["segments"]:
        print(f"{'start':>8} {'frames':>6} {'seconds':>8}  node / pid")
        for s in row["segments"]:
            where = f"{s['node']} ({s['node_id']}) / {s['pid']}" if s["pid"] else "-"
            print(f"{s['start']:>8} {s['frames']:>6} {s['seconds'] or '':>8}  {where}")
    return 0


def _job_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a job id is a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a job id is a positive number, got {value}")
    return value


def register(sub: Any) -> None:
    """Add ``queue`` and its sub-commands to the ``facestation`` parser."""
    queue = sub.add_parser("queue", help="queue renders and run them in the background")
    qsub = queue.add_subparsers(dest="queue_cmd", parser_class=type(queue))

    add = qsub.add_parser("add", help="queue a swap (prints the job id); several targets: one job each")
    add.add_argument("--source", action="append", required=True, metavar="IMG")
    add.add_argument("--target", action="append", required=True, metavar="IMG|VIDEO|FOLDER",
                     help="repeat it for a batch: one job per target; a folder: each image and video in it")
    add.add_argument("--output", required=True, metavar="PATH",
                     help="the output file; for a batch (several targets, a folder, or --name) the folder")
    add.add_argument("--name", metavar="PATTERN",
                     help="a batch's output names, from {target}, {source} and {n} (default "
                          f"{batch.DEFAULT_NAME}; the suffix follows "
                          "the target)")
    add.add_argument("--preset", metavar="NAME|FILE")
    add.add_argument("--set", action="append", metavar="section.key=value")
    add_marker_option(add)
    add.add_argument("--owner", help="user name the job belongs to (web UI accounts)")
    add.add_argument("--audio", metavar="FILE", help="a new voice for the output: it replaces the target's "
                     "sound, and the lip syncer's mouth follows it")
    add.set_defaults(handler=cmd_add)

    ls = qsub.add_parser("list", help="jobs in queue order")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--state", action="append", help="only jobs in this state (repeatable)")
    ls.set_defaults(handler=cmd_list)

    for name, handler, text in (("cancel", cmd_cancel, "cancel a queued or running job"),
                                ("retry", cmd_retry, "queue a failed or cancelled job again"),
                                ("delete", cmd_delete, "forget a job that is not running")):
        p = qsub.add_parser(name, help=text)
        p.add_argument("id", type=_job_id)
        p.set_defaults(handler=handler)

    mv = qsub.add_parser("move", help="reorder a queued job")
    mv.add_argument("id", type=_job_id)
    mv.add_argument("where", choices=("up", "down", "top", "bottom"))
    mv.set_defaults(handler=cmd_move)

    run = qsub.add_parser("run", help="run the worker for this device")
    run.add_argument("--once", action="store_true", help="stop when no job can be claimed "
                     "(a dead worker's job counts only once it is stale)")
    run.add_argument("--worker-id", help="worker name (default host/device; must be unique)")
    run.add_argument("--checkpoint-seconds", type=float, metavar="S",
                     help="wall time between two checkpoints of a video job (default 3, or "
                          "$FACESTATION_QUEUE_CHECKPOINT_SECONDS): a crash loses at most this much work")
    run.add_argument("--ray", metavar="local|auto|HOST:PORT",
                     help="render each video's segments in parallel on a Ray cluster: local starts one "
                          "here, auto joins the one `ray start` made, HOST:PORT joins that head "
                          "(needs the farm extra)")
    run.add_argument("--slots", type=int, metavar="N",
                     help="with --ray: segments rendered at once (default: one per GPU, or per 2 CPU cores)")
    run.set_defaults(handler=cmd_run)

    show = qsub.add_parser("show", help="a job, its segments and where each was rendered")
    show.add_argument("id", type=_job_id)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_show)

    rr = qsub.add_parser("rerender", help="re-render a stretch of a finished video job with other settings "
                         "(only the segments covering it; the rest of the output is kept as it is)")
    rr.add_argument("id", type=_job_id)
    which = rr.add_mutually_exclusive_group(required=True)
    which.add_argument("--frames", metavar="A-B", help="the output's frames A to B (from 0, both included)")
    which.add_argument("--stretch", type=int, metavar="K",
                       help="flagged stretch K (from 1) of the output's quality report")
    rr.add_argument("--set", action="append", metavar="section.key=value",
                    help="the stretch's settings (the keys --set takes; not video.* or output.*)")
    rr.add_argument("--beside", action="store_true",
                    help="write NAME.rerender-N.EXT beside the output instead of replacing it")
    rr.set_defaults(handler=cmd_rerender)

    require_subcommand(queue, qsub)
