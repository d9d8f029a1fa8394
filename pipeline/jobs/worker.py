"""The render worker: takes queued jobs one at a time, in queue order, and runs them.

One worker per device. A worker id names the machine and device (``host/cpu``, ``host/cuda0``) and
stays the same across restarts, so a restarted worker first puts back whatever it held when it died
(``release_worker``) and the job resumes from its last finished segment. A lock file per worker id
keeps a second worker with the same id (the UI's and a terminal's) from releasing a live worker's job.
A claim also records the worker's pid, so a worker of another id on this host puts back a killed
worker's job at once rather than after ``stale_after``. Dying is held against a job only when it happens
``max_attempts`` times in a row without a new segment; an error it raises fails it (a user's error at once,
others after ``max_attempts``).

While a job runs, a monitor thread polls the job row every ``poll_cancel`` s (a cancel stops the render
within a second) and sends a heartbeat every ``heartbeat_every`` s (a quarter of ``stale_after``), so
a worker that is killed, or a machine that reboots, shows as stale and the job is claimed again.

    handle = start_in_thread(store)      # the web UI
    handle.stop()
    run(store, worker_id, once=True)     # `facestation queue run --once`: until the queue is empty
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

from pipeline import env
from pipeline.errors import Cancelled, UserError, memory_fault, os_fault
from pipeline.jobs import rerender, runner
from pipeline.jobs.hold import SegmentHold, hold_from_env
from pipeline.jobs.lease import ClaimLost, Lease
from pipeline.jobs.model import Job
from pipeline.jobs.service import open_store
from pipeline.jobs.store import JobStore
from pipeline.progress import Progress, RunControl

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 12
PROGRESS_EVERY = 0.5  # seconds between two progress writes of a running job
T = TypeVar("T")


def default_worker_id(device: str | None = None) -> str:
    """``host/device``; device from ``FACESTATION_DEVICE`` (default ``default``: the providers of the
    settings)."""
    return f"{socket.gethostname()}/{device or env.DEVICE.get()}"


class WorkerBusy(UserError):
    """Another worker with the same id is already running."""


SPARE_IDS = 9  # a UI started beside others takes host/default-2 ... host/default-9


def free_worker_lock(store: JobStore, worker_id: str | None, stack: contextlib.ExitStack) -> str:
    """Take the lock of ``worker_id`` (held until ``stack`` closes) and return it; with no id given, the
    first free one of ``host/device``, ``host/device-2`` ... (a second UI on the same queue gets its own)."""
    if worker_id is not None:
        stack.enter_context(worker_lock(store, worker_id))
        return worker_id
    base = default_worker_id()
    for n in range(1, SPARE_IDS + 1):
        candidate = base if n == 1 else f"{base}-{n}"
        try:
            stack.enter_context(worker_lock(store, candidate))
        except WorkerBusy:
            continue
        return candidate
    raise WorkerBusy(f"{SPARE_IDS} workers named {base}… already serve this queue; "
                     "give this one its own --worker-id, or start it with --no-worker")


@contextlib.contextmanager
def worker_lock(store: JobStore, worker_id: str) -> Iterator[None]:
    """Hold an exclusive lock for ``worker_id`` (released by the kernel even on SIGKILL)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, one worker per id is up to the user
        yield
        return
    folder = store.path.parent / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", worker_id) + ".lock")
    fh: IO[str] = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            raise WorkerBusy(f"a worker named {worker_id} is already running (pid {holder}); "
                             "stop it first or give this one another --worker-id") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()


def _as_users(exc: BaseException) -> BaseException:
    """A file system that refused a write (read-only, full, no permission) as the user's error naming the
    folder (the file is a hidden temp name), memory that ran out as the user's error saying what to ask for;
    any other exception as it is."""
    if isinstance(exc, OSError) and (fault := os_fault(exc, Path(str(exc.filename)).parent
                                                       if exc.filename else None)):
        return fault
    return memory_fault(exc) or exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    return message if isinstance(exc, UserError) else f"{type(exc).__name__}: {message}".rstrip(": ")


class Worker:
    def __init__(self, store: JobStore, worker_id: str | None = None, *, poll: float = 1.0,
                 poll_cancel: float = 0.25, heartbeat_every: float | None = None,
                 checkpoint_seconds: float | None = None, pace: runner.segments.Pace | None = None,
                 hold: SegmentHold | None = None,
                 execute: Callable[[Job, runner.JobContext], dict[str, Any]] | None = None) -> None:
        self.store = store
        self.execute = execute or runner.execute  # or a render farm's (pipeline.jobs.farm.Farm.execute)
        self.worker_id = worker_id or default_worker_id()
        self.poll = poll
        self.poll_cancel = poll_cancel
        self.heartbeat_every = heartbeat_every or max(0.2, min(store.stale_after / 4, 15.0))
        armed = hold_from_env()  # a test's grip on every job of a worker in another process; None otherwise
        self.hold = hold or armed
        self.pace = (pace or (armed.pace() if armed else None)
                     or runner.segments.Pace.every(checkpoint_seconds or runner.checkpoint_seconds()))
        self.jobs_done = 0
        self.jobs_failed = 0
        self.claimed: list[int] = []  # every job this worker took, in order
        self.current: int | None = None
        # Render threads report through this one long-lived thread: the store keeps one SQLite
        # connection per thread, and a connection per short-lived render thread would leak descriptors.
        self._io: ThreadPoolExecutor | None = None

    def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._io is None:
            self._io = ThreadPoolExecutor(1, thread_name_prefix="worker-db")
        return self._io.submit(fn, *args, **kwargs).result()

    # ------------------------------------------------------------------ loop

    def run(self, once: bool = False, stop_event: threading.Event | None = None, *,
            locked: contextlib.AbstractContextManager[Any] | None = None) -> int:
        """Run jobs until ``stop_event`` is set (or, with ``once``, until the queue is empty). Returns jobs
        run. ``locked``: the worker id's lock, taken already (:func:`free_worker_lock`)."""
        stop = stop_event or threading.Event()
        with locked or worker_lock(self.store, self.worker_id):
            released = self.store.release_worker(self.worker_id)
            if released:
                log.warning("worker %s restarted: put back job(s) %s", self.worker_id, released)
            log.info("worker %s started (queue %s)", self.worker_id, self.store.path)
            self.store.workers.register(self.worker_id)
            try:
                self._serve(once, stop)
            finally:
                self.store.workers.sign_off(self.worker_id)
            log.info("worker %s stopped after %d job(s)", self.worker_id, self.jobs_done)
        if self._io is not None:
            self._io.submit(self.store.close).result()
            self._io.shutdown()
            self._io = None
        return self.jobs_done

    def _serve(self, once: bool, stop: threading.Event) -> None:
        """Claim and run jobs; an idle worker says it is there every ``heartbeat_every`` s."""
        seen = time.monotonic()
        while not stop.is_set():
            lease = self.store.claim_next(self.worker_id)
            if lease is None:
                if once:
                    break
                if time.monotonic() - seen >= self.heartbeat_every:
                    self.store.workers.seen(self.worker_id)
                    seen = time.monotonic()
                stop.wait(self.poll)
                continue
            self.claimed.append(lease.id)
            self.run_job(lease, stop)
            self.store.workers.seen(self.worker_id)
            seen = time.monotonic()

    def failed_jobs(self) -> list[int]:
        """The jobs this worker took that have failed since, whoever failed them (it, or a worker that took
        one from it): what ``queue run --once`` answers for."""
        failed = {job.id for job in self.store.list(states=("failed",))}
        return [job_id for job_id in dict.fromkeys(self.claimed) if job_id in failed]

    # ------------------------------------------------------------------ one job

    def run_job(self, lease: Lease, stop: threading.Event | None = None) -> Job | None:
        """Run a claimed job to its end state; returns the final row (None if the claim was lost)."""
        stop = stop or threading.Event()
        job = lease.job
        control = RunControl(every=PROGRESS_EVERY)  # stopped on user cancel, worker stop or a lost claim
        control.on_progress = functools.partial(self._store_progress, lease, control)
        monitor_stop = threading.Event()
        monitor = threading.Thread(target=self._monitor, args=(lease, control, stop, monitor_stop),
                                   name=f"job-{job.id}-monitor", daemon=True)
        self.current = job.id
        ctx = runner.JobContext(
            control=control, save_resume=functools.partial(self._db, lease.save_resume),
            log=functools.partial(self._log, job.id), pace=self.pace, hold=self.hold,
            guard=functools.partial(self._db, self.store.check_files, job))
        self._log(job.id, f"attempt {job.attempts} on worker {self.worker_id} (pid {os.getpid()})")
        monitor.start()
        try:
            runner.check_start(job)  # the output may have become unwritable since it was queued
            self.store.check_files(job)  # or another job's file (a symlink made since)
            started = time.monotonic()
            # a stretch of a done job again runs here, whatever the executor (pipeline/jobs/rerender.py)
            summary = (rerender.execute if rerender.pending(job) else self.execute)(job, ctx)
            render_s = time.monotonic() - started
        except Cancelled:
            return self._stopped(lease, control.reason or "cancel")
        except ClaimLost as exc:
            log.warning("job %d: %s; leaving it to its new holder", job.id, exc)
            return None
        except Exception as exc:  # any failure ends this job, never the worker
            if control.reason in ("stop", "lost"):
                return self._stopped(lease, control.reason)
            return self._failed(lease, exc)
        finally:
            monitor_stop.set()
            monitor.join(timeout=5)
            self.current = None
        self.jobs_done += 1
        notes = "; ".join(summary.get("notices", []))
        resumed = f" (resumed at frame {summary['resumed_at']})" if summary.get("resumed_at") else ""
        self._log(job.id, f"done: {summary.get('frames')} frame(s) in {summary.get('seconds')} s{resumed}"
                          + (f"; {notes}" if notes else ""))
        if summary.get("quality"):  # the report itself lies beside the output
            from pipeline.quality.report import summary_line

            self._log(job.id, summary_line(summary["quality"], summary["quality"]["path"]))
        frames = summary.get("frames_rendered_now", summary.get("frames")) or 0
        try:
            final = lease.finish("done", render_s=render_s,
                                 fps=frames / render_s if frames and render_s > 0 else None)
        except ClaimLost as exc:
            log.warning("job %d finished but was reclaimed meanwhile: %s", job.id, exc)
            return None
        runner.finished(job.id, job.output)  # its segments stay for a re-render of a stretch
        return final

    def _store_progress(self, lease: Lease, control: RunControl, progress: Progress) -> None:
        """Write a job's progress to the store (from any thread); its answer may stop the job."""
        try:
            if self._db(lease.progress, progress):
                control.stop("cancel")
        except ClaimLost:
            control.stop("lost")

    def _stopped(self, lease: Lease, reason: str) -> Job | None:
        job = lease.job
        if reason == "lost":
            log.warning("job %d was taken from worker %s; stopped", job.id, self.worker_id)
            return None
        try:
            if reason == "stop":  # the worker is shutting down: the job goes back with its segments
                back = lease.release(f"worker {self.worker_id} stopped")
                log.info("job %d put back (worker stopping); it resumes later", job.id)
                return back
            if rerender.pending(job):  # the output and its segments are as they were: a retry goes on
                runner.finished(job.id, job.output)
            else:
                runner.discard(job.id, job.output)
            self._log(job.id, "cancelled by request")
            return lease.finish("cancelled")
        except ClaimLost:
            return self.store.get(job.id)

    def _failed(self, lease: Lease, exc: BaseException) -> Job | None:
        """The job raised ``exc``: a user's error fails it at once; another is retried (from its finished
        segments) until it has happened ``max_attempts`` times."""
        job = lease.job
        users = isinstance(_as_users(exc), UserError)
        message = _one_line(_as_users(exc))
        if not users:
            tail = "".join(traceback.format_exception(exc)).strip().splitlines()[-LOG_TAIL_LINES:]
            self._log(job.id, "\n".join(tail))
        # a half-joined file goes; finished segments stay for a retry
        with contextlib.suppress(OSError):  # a folder that refuses writes may refuse this too
            runner.segments.remove_temp_outputs(Path(job.output), job.id)
        try:
            final = lease.fail(message, retry=not users)
        except ClaimLost:
            return None
        if final.state == "failed":
            self.jobs_failed += 1
            self._log(job.id, f"failed: {message}")
            log.error("job %d failed: %s", job.id, message)
        else:
            log.warning("job %d: %s; it runs again", job.id, message)
        return final

    def _log(self, job_id: int, text: str) -> None:
        try:
            self.store.append_log(job_id, f"{time.strftime('%H:%M:%S')} {text}")
        except Exception as exc:  # a log line must never break a job
            log.warning("job %d: could not write its log: %s", job_id, exc)

    def _monitor(self, lease: Lease, control: RunControl, stop: threading.Event,
                 done: threading.Event) -> None:
        """Heartbeats, cancel requests and worker stop, while the job runs."""
        next_beat = time.monotonic() + self.heartbeat_every
        while not done.wait(self.poll_cancel):
            try:
                if stop.is_set():
                    control.stop("stop")
                elif time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + self.heartbeat_every
                    self.store.workers.seen(self.worker_id)
                    if lease.heartbeat():
                        control.stop("cancel")
                elif lease.cancel_requested():
                    control.stop("cancel")
            except ClaimLost:
                control.stop("lost")
            except Exception as exc:  # a locked or busy database: try again at the next tick
                log.warning("job %d monitor: %s", lease.id, exc)
        self.store.close()  # this thread's connection


def run(store: JobStore | None, worker_id: str | None = None, once: bool = False,
        stop_event: threading.Event | None = None, **kwargs: Any) -> int:
    """Run a worker in this thread (``facestation queue run``). Returns the number of jobs done."""
    return Worker(store or open_store(), worker_id, **kwargs).run(once=once, stop_event=stop_event)


class WorkerHandle:
    """A worker running in a background thread; :meth:`stop` puts its current job back and waits."""

    def __init__(self, worker: Worker, locked: contextlib.AbstractContextManager[Any] | None = None) -> None:
        self.worker = worker
        self.locked = locked  # the worker id's lock, taken before the thread starts
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name=f"worker-{worker.worker_id}", daemon=True)

    def _main(self) -> None:
        try:
            self.worker.run(stop_event=self.stop_event, locked=self.locked)
        except BaseException as exc:
            self.error = exc
            log.error("render worker %s stopped: %s", self.worker.worker_id, _one_line(exc))

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop the worker; a running job is interrupted and re-queued (it resumes later). True if it
        ended."""
        self.stop_event.set()
        self.thread.join(timeout)
        return not self.thread.is_alive()


def start_in_thread(store: JobStore | None = None, worker_id: str | None = None,
                    **kwargs: Any) -> WorkerHandle:
    """Start a worker in a daemon thread (the web UI does this at launch). Without ``worker_id`` it takes
    the first free one of ``host/device``, ``host/device-2`` ...; a given one that is taken raises
    :class:`WorkerBusy` here, before any thread starts."""
    store = store or open_store()
    lock = contextlib.ExitStack()
    chosen = free_worker_lock(store, worker_id, lock)
    handle = WorkerHandle(Worker(store, chosen, **kwargs), lock)
    handle.thread.start()
    return handle
