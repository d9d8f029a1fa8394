"""What a front end does with the render queue: open it, check and add a job, cancel, retry, move, delete.

The command line and the web UI both call these rather than the store's primitives, so the queue is
opened with the same settings (``FACESTATION_QUEUE_STALE_AFTER`` / ``FACESTATION_QUEUE_MAX_ATTEMPTS``),
a job is the swap request's one check (:func:`pipeline.request.check`) wherever it is queued (the queue
only holds jobs that can start, and no two of them write the same output), and a deleted or cancelled
job's finished segments go with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline import env
from pipeline.errors import UserError
from pipeline.jobs import clash
from pipeline.jobs.model import Job
from pipeline.jobs.runner import discard
from pipeline.jobs.store import JobStore, Move
from pipeline.request import SwapRequest, check


def open_store(path: str | Path | None = None) -> JobStore:
    """The queue (the default database unless ``path``), with ``FACESTATION_QUEUE_STALE_AFTER`` and
    ``FACESTATION_QUEUE_MAX_ATTEMPTS``."""
    return JobStore(path, stale_after=env.QUEUE_STALE_AFTER.get(), max_attempts=env.QUEUE_MAX_ATTEMPTS.get())


def add(store: JobStore, request: SwapRequest, owner: str = "",
        keep: Callable[[Path], Path] | None = None, say: Callable[[str], None] | None = None) -> Job:
    """Check ``request`` (:func:`pipeline.request.check`, with absolute paths: the output's folder resolved,
    so that one file has one name and a second job writing it is refused), then queue it. ``keep``: the
    copy of each input the job reads (the web UI's uploads, stashed), made once the request has passed;
    ``say``: told each line of how the output is written differently than asked, before it is queued."""
    request = request.absolute()
    checked = check(request)
    if say is not None:
        for line in checked.output_notices:
            say(line)
    if request.output is None or request.live:
        raise ValueError("a queued job is a render into an output file")
    if keep is not None:
        request = request.kept(keep)
    assert request.target is not None and request.output is not None  # check() refuses a request without
    return store.add(request.sources, request.target, request.output, request.settings, owner=owner,
                     audio=request.voice)


def refuse_queue_clash(sources: Sequence[str | Path], target: str | Path | None, output: str | Path,
                       audio: str | Path | None = None) -> None:
    """For a file written outside the queue (:func:`pipeline.writer.claim`): refuse an output that a queued
    or running job of the default queue reads or writes, or inputs one writes (a queue not made yet has
    none)."""
    from pipeline import paths
    from pipeline.jobs.db import DB_NAME

    if not (paths.data_dir() / DB_NAME).is_file():
        return
    store = open_store()
    try:
        clash.refuse(sources, target, output, store.list(states=("queued", "running")), audio=audio)
    finally:
        store.close()


def cancel(store: JobStore, job_id: int) -> Job:
    """Cancel a queued job, or a running one whose worker is gone, at once; a running one stops within a
    second (its state says which)."""
    was = store.get(job_id).state
    job = store.request_cancel(job_id)
    if was == "running" and job.state == "cancelled":  # its worker is gone: nobody else cleans up
        from pipeline.jobs import rerender, runner

        # a re-render's output and segments are as they were before it (a retry goes on)
        (runner.finished if rerender.pending(job) else discard)(job.id, job.output)
    return job


def retry(store: JobStore, job_id: int) -> Job:
    """Queue a failed or cancelled job again."""
    return store.retry(job_id)


def move(store: JobStore, job_id: int, to: Move | int) -> Job:
    """Reorder a queued job: ``up``/``down`` one place, ``top``/``bottom``, or an index (0 = next to run)."""
    return store.move(job_id, to)


def delete(store: JobStore, job_id: int) -> Job:
    """Forget a job that is not running (or whose worker is gone), with its finished segments (its output
    file is left alone)."""
    job = store.delete(job_id)
    discard(job.id, job.output)
    return job


THUMB_HEIGHT = 240  # the Queue tab shows the running job's frame this high

_latest: dict[int, tuple[str, Any]] = {}  # running job id -> (its key, the thumbnail)


def latest_frame(job: Job, height: int = THUMB_HEIGHT) -> tuple[str, Any] | None:
    """``(key, thumbnail)``: the last frame of a running job's newest recorded (finished) segment, as RGB
    scaled down to ``height`` rows (never up); None before the first one or once the job is not running.
    The key (the segment's path) changes only when the thumbnail does, so a poller can skip
    sending the same picture again. Decoded and scaled once per segment: polling costs nothing until the
    next one is recorded, and the segment being written is never read."""
    import cv2

    from pipeline.jobs.runner import work_dir
    from pipeline.preview import read_frame

    recorded = job.resume.get("segments", []) if job.state == "running" else []
    if not recorded:
        _latest.pop(job.id, None)
        return None
    newest = max(recorded, key=lambda seg: int(seg["start"]))
    segment = work_dir(job.id) / newest["file"]
    key = str(segment)
    cached = _latest.get(job.id)
    if cached and cached[0] == key:
        return cached
    try:
        frame = read_frame(segment, max(0, int(newest["frames"]) - 1))
    except UserError:
        return cached
    rows, cols = frame.shape[:2]
    if rows > height:
        small = cv2.resize(frame, (max(1, round(cols * height / rows)), height), interpolation=cv2.INTER_AREA)
    else:
        small = frame
    _latest[job.id] = (key, small[:, :, ::-1].copy())
    return _latest[job.id]
