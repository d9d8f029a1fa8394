"""What a front end does with the render queue: open it, check and add a job, cancel, retry, move, delete.

The command line and the web UI both call these rather than the store's primitives, so the queue is
opened with the same settings (``FACESTATION_QUEUE_STALE_AFTER`` / ``FACESTATION_QUEUE_MAX_ATTEMPTS``),
a job's inputs are checked the same way wherever it is queued (the queue only holds jobs that can
start, and no two of them write the same output), and a deleted or cancelled job's finished segments
go with it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline import env
from pipeline.alpha import transparent
from pipeline.checks import (
    check_alpha_output,
    check_audio,
    check_lip_sync_sound,
    check_output_size,
    require_models,
)
from pipeline.errors import UserError
from pipeline.image import is_image_path, output_format, read_image
from pipeline.jobs import clash
from pipeline.jobs.model import Job
from pipeline.jobs.runner import discard
from pipeline.jobs.store import JobStore, Move
from pipeline.media import MediaKind, check_output, check_video_output
from pipeline.settings import Settings
from pipeline.video.probe import probe


def open_store(path: str | Path | None = None) -> JobStore:
    """The queue (the default database unless ``path``), with ``FACESTATION_QUEUE_STALE_AFTER`` and
    ``FACESTATION_QUEUE_MAX_ATTEMPTS``."""
    return JobStore(path, stale_after=env.QUEUE_STALE_AFTER.get(), max_attempts=env.QUEUE_MAX_ATTEMPTS.get())


def validate(sources: Sequence[Path], target: Path, output: Path, alpha: bool = False) -> MediaKind:
    """Raise UserError for anything that would make the job fail at once; returns ``image`` or ``video``
    (``alpha``: a transparent output, whose formats ``checks.check_alpha_output`` has checked)."""
    for source in sources:
        if not source.is_file():
            raise UserError(f"source image not found: {source}")
        read_image(source)  # BadMedia with the reason if it is not a readable picture
    if not target.is_file():
        raise UserError(f"target not found: {target}")
    check_output(output, [target, *sources])
    if is_image_path(target):
        read_image(target)
        output_format(output)
        return "image"
    probe(target)  # BadMedia: not a video, truncated, unknown codec...
    check_video_output(output, alpha)
    return "video"


def add(store: JobStore, sources: Sequence[str | Path], target: str | Path, output: str | Path,
        settings: Settings, owner: str = "", audio: str | Path | None = None) -> Job:
    """Check the inputs (:func:`validate`; ``audio``, a new voice for the output: that it has a sound), then
    queue the job with absolute paths (the output's folder resolved, so that one file has one name: a second
    job writing it is refused)."""
    paths = [Path(s).absolute() for s in sources]
    target, output = Path(target).absolute(), Path(output).absolute()
    output = Path(os.path.realpath(output.parent)) / output.name
    voice = None if audio is None else Path(audio).absolute()
    check_alpha_output(settings, output)  # a transparent background into a file that keeps it
    validate(paths, target, output, transparent(settings))
    if voice is not None:
        check_audio(voice)
        check_output(output, [voice])  # the job's new sound is an input too
    check_lip_sync_sound(settings, target, voice)
    require_models(settings)  # every missing model named at once, not the first when the job runs
    check_output_size(settings, target)  # a frame enhancer's output the encoder cannot take
    return store.add(paths, target, output, settings, owner=owner, audio=voice)


def refuse_queue_clash(sources: Sequence[str | Path], target: str | Path, output: str | Path,
                       audio: str | Path | None = None) -> None:
    """For a render outside the queue (``facestation swap``): refuse an output that a queued or running job
    of the default queue reads or writes, or inputs one writes (a queue not made yet has none)."""
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
        discard(job.id, job.output)
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
