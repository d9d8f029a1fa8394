"""A worker's hold on one running job: what :meth:`JobStore.claim_next` hands out.

Every report a worker makes goes through its lease, and every one checks in the same statement that the job
is still running and held by this worker: a worker whose job was taken away (put back after a stale
heartbeat, cancelled while its worker seemed gone) gets :class:`ClaimLost` and leaves the job to its new
holder. ::

    lease = store.claim_next("host/cuda0")
    lease.progress(Progress(30, 300))     # True: cancel was requested
    lease.save_resume(record)
    lease.finish("done")                  # or lease.fail(error, retry=True), lease.release("stopping")
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from pipeline.errors import FacestationError
from pipeline.jobs.db import QueueDB
from pipeline.jobs.model import Job, JobState, check
from pipeline.jobs.policy import Counters, Event, decide
from pipeline.progress import Progress


class ClaimLost(FacestationError):
    """A worker reported on a job it no longer holds (reclaimed after a stale heartbeat, or finished)."""


class Lease:
    """``worker_id``'s hold on the running job ``job`` (as it was when claimed) in the queue ``db``;
    ``max_attempts`` and ``clock`` are its store's."""

    def __init__(self, db: QueueDB, job: Job, worker_id: str, *, max_attempts: int = 3,
                 clock: Callable[[], float] = time.time) -> None:
        self.db, self.job, self.worker_id = db, job, worker_id
        self.max_attempts, self._clock = max_attempts, clock

    @property
    def id(self) -> int:
        return self.job.id

    def __repr__(self) -> str:
        return f"Lease(job {self.job.id}, worker {self.worker_id})"

    # ------------------------------------------------------------ reports (each answers "cancel asked?")

    def heartbeat(self) -> bool:
        """Say "still alive". True when cancel was requested."""
        return self._report("UPDATE jobs SET heartbeat_at = ?", (self._clock(),))

    def progress(self, progress: Progress) -> bool:
        """Record progress (also a heartbeat); an unknown total or an empty ``stage`` keeps the one recorded
        before. True when cancel was requested."""
        p = progress
        return self._report(
            "UPDATE jobs SET frames_done = ?, frames_total = COALESCE(?, frames_total), fps = ?, "
            "eta_s = ?, stage = COALESCE(?, stage), heartbeat_at = ?",
            (p.frames_done, p.frames_total, p.fps, p.eta_s, json.dumps(p.stage) if p.stage else None,
             self._clock()),
        )

    def save_resume(self, data: dict[str, Any]) -> None:
        """Store what a resumed run needs (:class:`pipeline.jobs.resume.ResumeRecord`): progress, so the
        worker deaths counted against the job start again from none."""
        self._report("UPDATE jobs SET resume = ?, deaths = 0, progressed = 1", (json.dumps(data),))

    def log(self, text: str) -> None:
        with self.db.write() as con:
            self.db.log(con, self.job.id, text)

    def cancel_requested(self) -> bool:
        """Whether the user asked to cancel (a read: no write lock)."""
        return self.db.fetch(self.db.read(), self.job.id).cancel_requested

    # ------------------------------------------------------------ endings

    def finish(self, state: JobState = "done", *, render_s: float | None = None,
               fps: float | None = None) -> Job:
        """End the job ``done`` or ``cancelled`` (a failure is :meth:`fail`); a done job keeps the wall
        seconds of this run (``render_s``) and its average ``fps``."""
        if state not in ("done", "cancelled"):
            raise ValueError(f"finish() takes done or cancelled, not {state!r} (a failure is fail())")
        with self.db.write() as con:
            self.db.end(con, self._held(con), state, self._clock(), render_s, fps)
            return self.db.fetch(con, self.job.id)

    def fail(self, error: str, *, retry: bool = False) -> Job:
        """The job raised ``error``. With ``retry`` (an error that may pass: not the user's input) it is
        queued again at its place, keeping its segments, until it has failed ``max_attempts`` times
        (:mod:`pipeline.jobs.policy`); otherwise, or then, it ends failed. Returns the job as it is now."""
        return self._end("error" if retry else "user_error", error)

    def release(self, why: str) -> Job:
        """The worker stops on purpose: the job goes back at its place (or ends cancelled if that was
        asked), counting neither a death nor a failure."""
        return self._end("stop", why)

    def _end(self, event: Event, why: str) -> Job:
        with self.db.write() as con:
            job = self._held(con)
            decision = decide(event, Counters.of(job), self.max_attempts, why)
            self.db.apply(con, job, decision, self._clock())
            return self.db.fetch(con, self.job.id)

    # ------------------------------------------------------------ the ownership check

    def _lost(self, job: Job) -> ClaimLost:
        return ClaimLost(f"job {job.id} is {job.state} and held by {job.worker_id or 'no worker'}, "
                         f"not {self.worker_id}")

    def _report(self, sql: str, params: tuple) -> bool:
        """Run an UPDATE on the job if this worker still holds it; returns its cancel flag."""
        with self.db.write() as con:
            where = " WHERE id = ? AND state = 'running' AND worker_id = ?"
            if con.execute(sql + where, (*params, self.job.id, self.worker_id)).rowcount == 0:
                raise self._lost(self.db.fetch(con, self.job.id))
            row = con.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (self.job.id,)).fetchone()
            return bool(row[0])

    def _held(self, con: sqlite3.Connection) -> Job:
        """The job as it is now, checked to be running and held by this worker."""
        job = self.db.fetch(con, self.job.id)
        if job.state != "running" or job.worker_id != self.worker_id:
            raise self._lost(job)
        check("finish", job.id, job.state)
        return job
