"""The persistent render queue: one SQLite file shared by the web UI, the CLI and the workers.

The file, its connections and the row writes are :class:`pipeline.jobs.db.QueueDB`; this is the queue as its
users see it: add, list, cancel, retry, move, delete, and the worker side's claim. A worker claims with
:meth:`JobStore.claim_next`, which hands it a :class:`~pipeline.jobs.lease.Lease` to report through
(heartbeat, progress, resume, finish or fail, each checked to come from the job's holder).

A ``running`` job whose worker is gone (its heartbeat is older than ``stale_after`` seconds, or its process
on this host has ended: :mod:`pipeline.liveness`) goes back in the queue at its old place with its resume
data, unless :mod:`pipeline.jobs.policy` says it has killed its workers too often. Such a job can also be
cancelled or deleted at once.
"""

from __future__ import annotations

import builtins
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pipeline import liveness, paths
from pipeline.errors import UserError
from pipeline.jobs import clash
from pipeline.jobs.db import DB_NAME, SCHEMA_VERSION, QueueDB
from pipeline.jobs.lease import ClaimLost, Lease
from pipeline.jobs.model import STATES, Job, JobState, check
from pipeline.jobs.policy import Counters, decide
from pipeline.jobs.registry import WorkerRegistry
from pipeline.settings import Settings

log = logging.getLogger(__name__)

Move = Literal["up", "down", "top", "bottom"]

__all__ = ["DB_NAME", "SCHEMA_VERSION", "ClaimLost", "JobStore", "Lease", "Move"]


class JobStore:
    """Typed access to the queue database at ``path`` (default ``data_dir()/queue.sqlite3``)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        stale_after: float = 120.0,
        max_attempts: int = 3,
        log_limit: int = 16_000,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path) if path is not None else paths.data_dir() / DB_NAME
        self.stale_after = stale_after
        self.max_attempts = max_attempts
        self._clock = clock
        self.db = QueueDB(self.path, busy_timeout=busy_timeout, log_limit=log_limit)
        self.workers = WorkerRegistry(self.db, stale_after=stale_after, clock=clock)  # who serves the queue

    def now(self) -> float:
        """The store's clock (wall time, or a test's)."""
        return self._clock()

    def close(self) -> None:
        """Close this thread's connection."""
        self.db.close()

    # ------------------------------------------------------------ reading

    def get(self, job_id: int) -> Job:
        return self.db.fetch(self.db.read(), job_id)

    def list(self, owner: str | None = None, states: Sequence[JobState] | None = None) -> builtins.list[Job]:
        """Jobs in queue order, optionally only one owner's and/or only some states."""
        where, params = [], []
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        if states is not None:
            unknown = [s for s in states if s not in STATES]
            if unknown:
                raise UserError(f"unknown job state '{unknown[0]}' (valid: {', '.join(STATES)})")
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params.extend(states)
        sql = (f"WHERE {' AND '.join(where)} " if where else "") + "ORDER BY position"
        return self.db.select(self.db.read(), sql, params)

    def holder_gone(self, job: Job) -> bool:
        """Whether a running job's worker is gone: silent for ``stale_after`` s, or its process on this
        host has ended."""
        if job.state != "running":
            return False
        stale = job.heartbeat_at is None or job.heartbeat_at < self._clock() - self.stale_after
        return stale or liveness.process_gone(job.worker_host, job.worker_pid)

    # ------------------------------------------------------------ queue edits

    def add(
        self,
        sources: Sequence[str | Path],
        target: str | Path,
        output: str | Path,
        settings: Settings,
        owner: str = "",
        audio: str | Path | None = None,
    ) -> Job:
        """Queue a render at the end of the queue (``audio``: a new voice for the output)."""
        if isinstance(sources, str | Path) or not sources:
            raise UserError("a job needs at least one source image (a list of paths)")
        if not isinstance(settings, Settings):
            raise TypeError(f"add() needs a validated Settings object, got {type(settings).__name__}")
        with self.db.write() as con:
            self._check_files_free(con, sources, target, output, audio=audio)
            row = (owner, json.dumps([str(s) for s in sources]), str(target), str(output))
            cur = con.execute(
                "INSERT INTO jobs (owner, sources, target, output, settings, state, position, created_at, "
                "audio, number) VALUES (?, ?, ?, ?, ?, 'queued', "
                "(SELECT COALESCE(MAX(position), 0) + 1 FROM jobs), ?, ?, ?)",
                (*row, settings.model_dump_json(), self._clock(), None if audio is None else str(audio),
                 self.db.next_number(con, owner)),
            )
            job = self.db.fetch(con, int(cur.lastrowid or 0))
        log.info("queued job %d (%s -> %s)", job.id, job.target, job.output)
        return job

    def _check_files_free(self, con: sqlite3.Connection, sources: Sequence[str | Path], target: str | Path,
                          output: str | Path, job_id: int | None = None,
                          audio: str | Path | None = None) -> None:
        """No job destroys another's files (:mod:`pipeline.jobs.clash`): refuse an output that a queued or
        running job reads or writes, and inputs that one writes."""
        active = self.db.select(con, "WHERE state IN ('queued', 'running') ORDER BY id")
        clash.refuse(sources, target, output, active, job_id, audio)

    def check_files(self, job: Job) -> None:
        """:class:`OutputTaken` when ``job``'s files now clash with another queued or running job's (a
        symlink made since it was queued): the worker asks when the job starts and before its output is
        renamed into place."""
        self._check_files_free(self.db.read(), job.sources, job.target, job.output, job.id, job.audio)

    def request_cancel(self, job_id: int) -> Job:
        """A queued job, or a running one whose worker is gone, is cancelled at once; a running one is
        flagged and its worker stops at the next report."""
        with self.db.write() as con:
            job = self.db.fetch(con, job_id)
            gone = self.holder_gone(job)
            check("cancel", job_id, job.state, orphaned=gone)
            if job.state == "queued" or gone:
                self.db.cancel_now(con, job, self._clock(), orphaned=gone)
                if gone:
                    self.db.log(con, job_id, f"cancelled; its worker {job.worker_id} is gone")
            else:
                con.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))
            return self.db.fetch(con, job_id)

    def retry(self, job_id: int) -> Job:
        """Put a failed or cancelled job back at the end of the queue (its resume data is kept)."""
        with self.db.write() as con:
            job = self.db.fetch(con, job_id)
            check("retry", job_id, job.state)
            self._check_files_free(con, job.sources, job.target, job.output, job_id, job.audio)
            self.db.requeue_at_end(con, job)
            return self.db.fetch(con, job_id)

    def rerender(self, job_id: int, request: dict) -> Job:
        """Queue a done job again at the end to re-render a stretch: ``request`` goes in its resume record
        (:mod:`pipeline.jobs.rerender` makes it and runs it)."""
        with self.db.write() as con:
            job = self.db.fetch(con, job_id)
            check("rerender", job_id, job.state)
            for output in dict.fromkeys([job.output, str(request.get("output", job.output))]):  # + beside
                self._check_files_free(con, job.sources, job.target, output, job_id, job.audio)
            con.execute("UPDATE jobs SET resume = ? WHERE id = ?",
                        (json.dumps({**job.resume, "rerender": request}), job_id))
            self.db.requeue_at_end(con, job, "rerender")
            return self.db.fetch(con, job_id)

    def move(self, job_id: int, to: Move | int) -> Job:
        """Reorder a queued job: ``up``/``down`` one place, ``top``/``bottom``, or to an index (0 = next to
        run)."""
        with self.db.write() as con:
            job = self.db.fetch(con, job_id)
            check("move", job_id, job.state)
            rows = con.execute(
                "SELECT id, position FROM jobs WHERE state = 'queued' ORDER BY position"
            ).fetchall()
            order = [r["id"] for r in rows]
            slots = [r["position"] for r in rows]
            here = order.index(job_id)
            targets: dict[str, int] = {"up": here - 1, "down": here + 1, "top": 0, "bottom": len(order) - 1}
            if (
                isinstance(to, bool)
                or not isinstance(to, int | str)
                or (isinstance(to, str) and to not in targets)
            ):
                raise UserError(f"move where? use up, down, top, bottom or a queue index, got {to!r}")
            index = targets[to] if isinstance(to, str) else to
            index = max(0, min(len(order) - 1, index))
            order.insert(index, order.pop(here))
            # reuse the same position values so the order against non-queued jobs is unchanged
            con.executemany("UPDATE jobs SET position = ? WHERE id = ?", list(zip(slots, order, strict=True)))
            return self.db.fetch(con, job_id)

    def delete(self, job_id: int) -> Job:
        """Forget a job that is not running, or whose worker is gone (its files are left alone); returns
        it as it was."""
        with self.db.write() as con:
            job = self.db.fetch(con, job_id)
            check("delete", job_id, job.state, orphaned=self.holder_gone(job))
            con.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
            return job

    def append_log(self, job_id: int, text: str) -> None:
        """Append to the job's log; only the last ``log_limit`` characters are kept."""
        with self.db.write() as con:
            self.db.fetch(con, job_id)
            self.db.log(con, job_id, text)

    # ------------------------------------------------------------ worker side

    def claim_next(self, worker_id: str, *, pid: int | None = None, host: str | None = None) -> Lease | None:
        """Take the first queued job (after putting back jobs of dead workers), or None if there is none.
        ``pid`` and ``host``: the worker's process (default: this one), so that its death is seen at once."""
        with self.db.write() as con:
            now = self._clock()
            self._reclaim(con, now)
            queued = self.db.select(con, "WHERE state = 'queued' ORDER BY position LIMIT 1")
            if not queued:
                return None
            first = queued[0]
            self.db.claim(con, first, worker_id, host or liveness.this_host(),
                          pid if pid is not None else liveness.this_process(), now)
            job = self.db.fetch(con, first.id)
        log.info("worker %s claimed job %d (attempt %d)", worker_id, job.id, job.attempts)
        return Lease(self.db, job, worker_id, max_attempts=self.max_attempts, clock=self._clock)

    def reclaim_stale(self) -> builtins.list[int]:
        """Put back running jobs whose worker is gone (silent, or its process ended). Returns their ids."""
        with self.db.write() as con:
            return self._reclaim(con, self._clock())

    def release_worker(self, worker_id: str) -> builtins.list[int]:
        """A worker (re)starting under ``worker_id``: whatever it held before is orphaned (its worker died);
        put it back now. Returns the ids."""
        with self.db.write() as con:
            held = self.db.select(con, "WHERE state = 'running' AND worker_id = ?", (worker_id,))
            for job in held:
                self._died(con, job, f"worker {worker_id} restarted")
            return [job.id for job in held]

    def _reclaim(self, con: sqlite3.Connection, now: float) -> builtins.list[int]:
        """The running jobs whose worker is gone, put back (or failed)."""
        gone = []
        for job in self.db.select(con, "WHERE state = 'running'"):
            silent = now - (job.heartbeat_at or 0.0)
            if job.heartbeat_at is None or silent > self.stale_after:
                self._died(con, job, f"worker {job.worker_id} silent for {silent:.0f} s")
            elif liveness.process_gone(job.worker_host, job.worker_pid):
                self._died(con, job, f"worker {job.worker_id} (pid {job.worker_pid}) is gone")
            else:
                continue
            gone.append(job.id)
        return gone

    def _died(self, con: sqlite3.Connection, job: Job, why: str) -> None:
        decision = decide("death", Counters.of(job), self.max_attempts, why)
        self.db.apply(con, job, decision, self._clock())
