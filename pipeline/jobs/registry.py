"""The render workers serving one queue: who they are, where they run, and what each is doing.

A worker registers when it starts (``workers`` table: its id, host and pid), says it is still there at
least every quarter of the store's ``stale_after`` (idle or rendering) and signs off when it stops. One that
was killed is left out as soon as its process on this host is gone, or once it has been silent for
``stale_after`` (on another host). What a worker does is the running job it holds, if any. ::

    store.workers.register("host/default")
    store.workers.seen("host/default")
    [WorkerInfo(id="host/default", host="host", pid=4242, job=<the job it renders, or None>)]
    store.workers.sign_off("host/default")
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pipeline import liveness
from pipeline.jobs.db import QueueDB
from pipeline.jobs.model import Job


@dataclass(frozen=True)
class WorkerInfo:
    """One live worker of the queue: its id, where it runs, since when, and the job it renders now."""

    id: str
    host: str
    pid: int
    started_at: float
    seen_at: float
    job: Job | None  # None: idle


class WorkerRegistry:
    """The ``workers`` table of the queue ``db`` (``stale_after`` and ``clock``: its store's)."""

    def __init__(self, db: QueueDB, *, stale_after: float, clock: Callable[[], float] = time.time) -> None:
        self.db, self.stale_after, self._clock = db, stale_after, clock

    def register(self, worker_id: str, *, host: str | None = None, pid: int | None = None) -> None:
        """``worker_id`` starts serving the queue (from this process, unless ``host``/``pid`` say)."""
        now = self._clock()
        with self.db.write() as con:
            con.execute("INSERT OR REPLACE INTO workers (id, host, pid, started_at, seen_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (worker_id, host or liveness.this_host(),
                         liveness.this_process() if pid is None else pid, now, now))

    def seen(self, worker_id: str) -> None:
        """``worker_id`` is still there."""
        with self.db.write() as con:
            con.execute("UPDATE workers SET seen_at = ? WHERE id = ?", (self._clock(), worker_id))

    def sign_off(self, worker_id: str) -> None:
        """``worker_id`` stopped serving the queue."""
        with self.db.write() as con:
            con.execute("DELETE FROM workers WHERE id = ?", (worker_id,))

    def live(self) -> list[WorkerInfo]:
        """The workers serving the queue now, by id, each with the running job it holds (None: idle)."""
        con = self.db.read()
        rows = con.execute("SELECT * FROM workers ORDER BY id").fetchall()
        running = {job.worker_id: job for job in self.db.select(con, "WHERE state = 'running'")}
        oldest = self._clock() - self.stale_after
        return [WorkerInfo(r["id"], r["host"], r["pid"], r["started_at"], r["seen_at"], running.get(r["id"]))
                for r in rows
                if r["seen_at"] >= oldest and not liveness.process_gone(r["host"], r["pid"])]
