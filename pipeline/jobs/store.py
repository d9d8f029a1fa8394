"""The persistent render queue: one SQLite file shared by the web UI, the CLI and the workers.

Every call opens its own short-lived connection and runs in one short transaction; writes start
with ``BEGIN IMMEDIATE`` so that a read-then-write (a claim, a reorder) holds the write lock from
its first statement and two processes can never both take the same job. The database runs in WAL
mode, so readers (a UI polling progress) never block the worker.

A worker claims with :meth:`JobStore.claim_next`, then reports through :meth:`heartbeat` /
:meth:`update_progress` (both answer "was cancel requested?"), :meth:`set_resume` (finished
segments), and :meth:`finish` or :meth:`fail`. A ``running`` job whose worker is gone (its heartbeat is
older than ``stale_after`` seconds, or its process on this host has ended: :mod:`pipeline.jobs.holder`)
goes back in the queue at its old place with its resume data. A death after which the job had recorded a new
segment costs it nothing; ``max_attempts`` deaths in a row without one (a job that runs its worker out of
memory or crashes a model every time) fail it, as do ``max_attempts`` errors the job raised. Such a job can
also be cancelled or deleted at once.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pipeline import liveness, paths
from pipeline.errors import FacestationError, UserError
from pipeline.jobs.model import (
    FINAL_STATES,
    STATES,
    Job,
    JobNotFound,
    JobState,
    OutputTaken,
    check,
)
from pipeline.progress import Progress
from pipeline.settings import Settings

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
DB_NAME = "queue.sqlite3"
Move = Literal["up", "down", "top", "bottom"]

_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    owner            TEXT    NOT NULL DEFAULT '',
    sources          TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    output           TEXT    NOT NULL,
    settings         TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    position         INTEGER NOT NULL,
    created_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    frames_done      INTEGER NOT NULL DEFAULT 0,
    frames_total     INTEGER,
    fps              REAL,
    eta_s            REAL,
    stage            TEXT    NOT NULL DEFAULT '{}',
    log              TEXT    NOT NULL DEFAULT '',
    error            TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    worker_id        TEXT,
    heartbeat_at     REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    resume           TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS jobs_state_position ON jobs (state, position);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner);
"""

_V2 = """
ALTER TABLE jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN worker_host TEXT;
ALTER TABLE jobs ADD COLUMN worker_pid INTEGER;
CREATE INDEX IF NOT EXISTS jobs_output ON jobs (output);
"""

# deaths: worker deaths in a row without a new segment; progressed: a segment recorded since the last death
_V3 = """
ALTER TABLE jobs ADD COLUMN deaths INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN progressed INTEGER NOT NULL DEFAULT 0;
"""

# _MIGRATIONS[n] brings a database at user_version n to n + 1.
_MIGRATIONS: dict[int, str] = {0: _SCHEMA_V1, 1: _V2, 2: _V3}


class ClaimLost(FacestationError):
    """A worker reported on a job it no longer holds (reclaimed after a stale heartbeat, or finished)."""


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
        self.log_limit = log_limit
        self._busy_timeout = busy_timeout
        self._clock = clock
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._initialise()

    # ------------------------------------------------------------ connections

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (one per thread and process: sqlite3 connections must not be shared)."""
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is not None and self._local.pid == os.getpid():
            return con
        con = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None)
        con.row_factory = sqlite3.Row
        con.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        con.execute("PRAGMA synchronous = NORMAL")
        self._local.con, self._local.pid = con, os.getpid()
        return con

    def close(self) -> None:
        """Close this thread's connection (others close when their thread's store is garbage-collected)."""
        con = getattr(self._local, "con", None)
        if con is not None and self._local.pid == os.getpid():
            con.close()
        self._local.con = None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._connect()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def _read(self) -> sqlite3.Connection:
        return self._connect()

    def _initialise(self) -> None:
        mode = self._read().execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            log.warning("queue database %s is in %s mode, not WAL", self.path, mode)
        with self._write() as con:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"the queue database {self.path} was made by a newer facestation (schema {version}, "
                    f"this one knows {SCHEMA_VERSION}); update facestation or move the file away"
                )
            while version < SCHEMA_VERSION:
                for statement in _MIGRATIONS[version].split(";"):
                    if statement.strip():
                        con.execute(statement)
                version += 1
                con.execute(f"PRAGMA user_version = {version}")
                log.info("queue database %s migrated to schema %d", self.path, version)

    # ------------------------------------------------------------ reading

    @staticmethod
    def _to_job(row: sqlite3.Row) -> Job:
        return Job.from_row(dict(row))

    @classmethod
    def _fetch(cls, con: sqlite3.Connection, job_id: int) -> Job:
        row = con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(f"no job {job_id} in the queue")
        return cls._to_job(row)

    def get(self, job_id: int) -> Job:
        return self._fetch(self._read(), job_id)

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
        sql = "SELECT * FROM jobs" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY position"
        return [self._to_job(r) for r in self._read().execute(sql, params)]

    # ------------------------------------------------------------ queue edits

    def add(
        self,
        sources: Sequence[str | Path],
        target: str | Path,
        output: str | Path,
        settings: Settings,
        owner: str = "",
    ) -> Job:
        """Queue a render at the end of the queue."""
        if isinstance(sources, str | Path) or not sources:
            raise UserError("a job needs at least one source image (a list of paths)")
        if not isinstance(settings, Settings):
            raise TypeError(f"add() needs a validated Settings object, got {type(settings).__name__}")
        with self._write() as con:
            self._check_output_free(con, str(output))
            row = (owner, json.dumps([str(s) for s in sources]), str(target), str(output))
            cur = con.execute(
                "INSERT INTO jobs (owner, sources, target, output, settings, state, position, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'queued', (SELECT COALESCE(MAX(position), 0) + 1 FROM jobs), ?)",
                (*row, settings.model_dump_json(), self._clock()),
            )
            job = self._fetch(con, int(cur.lastrowid or 0))
        log.info("queued job %d (%s -> %s)", job.id, job.target, job.output)
        return job

    @classmethod
    def _check_output_free(cls, con: sqlite3.Connection, output: str, job_id: int | None = None) -> None:
        """One output per job: refuse ``output`` while another queued or running job writes it."""
        row = con.execute(
            "SELECT id, state FROM jobs WHERE output = ? AND state IN ('queued', 'running') AND id IS NOT ? "
            "ORDER BY id LIMIT 1", (output, job_id),
        ).fetchone()
        if row is not None:
            raise OutputTaken(f"job {row['id']} ({row['state']}) already writes {output}; choose another "
                              f"output, or cancel job {row['id']} first")

    def holder_gone(self, job: Job) -> bool:
        """Whether a running job's worker is gone: silent for ``stale_after`` s, or its process on this
        host has ended."""
        if job.state != "running":
            return False
        stale = job.heartbeat_at is None or job.heartbeat_at < self._clock() - self.stale_after
        return stale or liveness.process_gone(job.worker_host, job.worker_pid)

    def request_cancel(self, job_id: int) -> Job:
        """A queued job, or a running one whose worker is gone, is cancelled at once; a running one is
        flagged and its worker stops at the next report."""
        with self._write() as con:
            job = self._fetch(con, job_id)
            check("cancel", job_id, job.state)
            if job.state == "queued" or self.holder_gone(job):
                con.execute(
                    "UPDATE jobs SET state = 'cancelled', finished_at = ?, fps = NULL, eta_s = NULL, "
                    "worker_id = NULL, heartbeat_at = NULL, worker_host = NULL, worker_pid = NULL "
                    "WHERE id = ?",
                    (self._clock(), job_id),
                )
                if job.state == "running":
                    self._log(con, job_id, f"cancelled; its worker {job.worker_id} is gone")
            else:
                con.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))
            return self._fetch(con, job_id)

    def retry(self, job_id: int) -> Job:
        """Put a failed or cancelled job back at the end of the queue (its resume data is kept)."""
        with self._write() as con:
            job = self._fetch(con, job_id)
            check("retry", job_id, job.state)
            self._check_output_free(con, job.output, job_id)
            con.execute(
                "UPDATE jobs SET state = 'queued', position = (SELECT MAX(position) + 1 FROM jobs), "
                "error = NULL, finished_at = NULL, cancel_requested = 0, attempts = 0, failures = 0, "
                "deaths = 0, progressed = 0, "
                "worker_id = NULL, worker_host = NULL, worker_pid = NULL, "
                "heartbeat_at = NULL, fps = NULL, eta_s = NULL WHERE id = ?",
                (job_id,),
            )
            return self._fetch(con, job_id)

    def move(self, job_id: int, to: Move | int) -> Job:
        """Reorder a queued job: ``up``/``down`` one place, ``top``/``bottom``, or to an index (0 = next to
        run)."""
        with self._write() as con:
            job = self._fetch(con, job_id)
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
            return self._fetch(con, job_id)

    def delete(self, job_id: int) -> Job:
        """Forget a job that is not running, or whose worker is gone (its files are left alone); returns
        it as it was."""
        with self._write() as con:
            job = self._fetch(con, job_id)
            if not self.holder_gone(job):
                check("delete", job_id, job.state)
            con.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
            return job

    # ------------------------------------------------------------ worker side

    def claim_next(self, worker_id: str, *, pid: int | None = None, host: str | None = None) -> Job | None:
        """Take the first queued job (after putting back jobs of dead workers), or None if there is none.
        ``pid`` and ``host``: the worker's process (default: this one), so that its death is seen at once."""
        with self._write() as con:
            now = self._clock()
            self._reclaim(con, now)
            row = con.execute(
                "SELECT id FROM jobs WHERE state = 'queued' ORDER BY position LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            con.execute(
                "UPDATE jobs SET state = 'running', worker_id = ?, worker_host = ?, worker_pid = ?, "
                "heartbeat_at = ?, started_at = ?, attempts = attempts + 1, cancel_requested = 0 "
                "WHERE id = ? AND state = 'queued'",
                (worker_id, host or liveness.this_host(), pid if pid is not None else liveness.this_process(),
                 now, now, row["id"]),
            )
            job = self._fetch(con, row["id"])
        log.info("worker %s claimed job %d (attempt %d)", worker_id, job.id, job.attempts)
        return job

    def reclaim_stale(self) -> builtins.list[int]:
        """Put back running jobs whose worker is gone (silent, or its process ended). Returns their ids."""
        with self._write() as con:
            return self._reclaim(con, self._clock())

    def release_worker(self, worker_id: str, *, died: bool = True) -> builtins.list[int]:
        """A worker (re)starting under ``worker_id``: whatever it held before is orphaned; put it back now.
        ``died=False``: the worker is stopping on purpose (its job is put back without counting a death)."""
        with self._write() as con:
            rows = con.execute(
                "SELECT * FROM jobs WHERE state = 'running' AND worker_id = ?", (worker_id,)
            ).fetchall()
            for row in rows:
                job, now = self._to_job(row), self._clock()
                if died:
                    self._died(con, job, now, f"worker {worker_id} restarted")
                else:
                    self._put_back(con, job, now, f"worker {worker_id} stopped")
            return [r["id"] for r in rows]

    def _reclaim(self, con: sqlite3.Connection, now: float) -> builtins.list[int]:
        gone = []
        for row in con.execute("SELECT * FROM jobs WHERE state = 'running'").fetchall():
            job = self._to_job(row)
            silent = now - (job.heartbeat_at or 0.0)
            if job.heartbeat_at is None or silent > self.stale_after:
                self._died(con, job, now, f"worker {job.worker_id} silent for {silent:.0f} s")
            elif liveness.process_gone(job.worker_host, job.worker_pid):
                self._died(con, job, now, f"worker {job.worker_id} (pid {job.worker_pid}) is gone")
            else:
                continue
            gone.append(job.id)
        return gone

    def _died(self, con: sqlite3.Connection, job: Job, now: float, why: str) -> None:
        """``job``'s worker died. Put it back, unless this is its ``max_attempts``-th death in a row without
        a new segment recorded: a job that kills its worker every time must not block the queue forever."""
        deaths = 0 if job.progressed else job.deaths + 1
        con.execute("UPDATE jobs SET deaths = ?, progressed = 0 WHERE id = ?", (deaths, job.id))
        if deaths < self.max_attempts or job.cancel_requested:
            self._put_back(con, job, now, why)
            return
        error = f"the worker died {deaths} times on this job without progress (out of memory?)"
        self._log(con, job.id, f"{why}: {error}")
        log.error("job %d: %s", job.id, error)
        self._record_failure(con, job, error, failures=job.failures)

    def _put_back(self, con: sqlite3.Connection, job: Job, now: float, why: str) -> None:
        """A dead or stopping worker's job, or one that raised an error it may retry: queued again at its
        place (cancelled if that was asked)."""
        state = "cancelled" if job.cancel_requested else "queued"
        con.execute(  # its progress: what the next run keeps, not what the dead one had rendered
            "UPDATE jobs SET state = ?, worker_id = NULL, worker_host = NULL, worker_pid = NULL, "
            "heartbeat_at = NULL, frames_done = ?, fps = NULL, eta_s = NULL, "
            "finished_at = CASE WHEN ? = 'queued' THEN NULL ELSE ? END WHERE id = ?",
            (state, job.kept_frames, state, now, job.id),
        )
        self._log(con, job.id, f"{why}: job {'re-queued' if state == 'queued' else state}")
        log.warning("job %d: %s -> %s", job.id, why, state)

    def _report(
        self, con: sqlite3.Connection, job_id: int, worker_id: str | None, sql: str, params: tuple
    ) -> bool:
        """Run a worker's UPDATE on a job it must hold; returns its cancel flag."""
        where = " WHERE id = ? AND state = 'running'" + (
            " AND worker_id = ?" if worker_id is not None else ""
        )
        extra = (job_id, worker_id) if worker_id is not None else (job_id,)
        if con.execute(sql + where, (*params, *extra)).rowcount == 0:
            job = self._fetch(con, job_id)
            raise ClaimLost(
                f"job {job_id} is {job.state} and held by {job.worker_id or 'no worker'}, not {worker_id}"
            )
        return bool(con.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()[0])

    def heartbeat(self, job_id: int, worker_id: str) -> bool:
        """Say "still alive". Returns True when cancel was requested; raises ClaimLost if the job was taken
        away."""
        with self._write() as con:
            return self._report(con, job_id, worker_id, "UPDATE jobs SET heartbeat_at = ?", (self._clock(),))

    def update_progress(self, job_id: int, progress: Progress, *, worker_id: str | None = None) -> bool:
        """Record progress (also a heartbeat); an unknown total or an empty ``stage`` keeps the one recorded
        before. Returns True when cancel was requested."""
        p = progress
        with self._write() as con:
            return self._report(
                con,
                job_id,
                worker_id,
                "UPDATE jobs SET frames_done = ?, frames_total = COALESCE(?, frames_total), fps = ?, "
                "eta_s = ?, stage = COALESCE(?, stage), heartbeat_at = ?",
                (p.frames_done, p.frames_total, p.fps, p.eta_s, json.dumps(p.stage) if p.stage else None,
                 self._clock()),
            )

    def set_resume(self, job_id: int, data: dict[str, Any], *, worker_id: str | None = None) -> None:
        """Store what a resumed run needs (e.g. ``{"segments": [...finished segment files...]}``): progress,
        so the worker deaths counted against the job start again from none."""
        with self._write() as con:
            self._report(con, job_id, worker_id, "UPDATE jobs SET resume = ?, deaths = 0, progressed = 1",
                         (json.dumps(data),))

    def append_log(self, job_id: int, text: str) -> None:
        """Append to the job's log; only the last ``log_limit`` characters are kept."""
        with self._write() as con:
            self._fetch(con, job_id)
            self._log(con, job_id, text)

    def _log(self, con: sqlite3.Connection, job_id: int, text: str) -> None:
        line = text if text.endswith("\n") else text + "\n"
        con.execute("UPDATE jobs SET log = substr(log || ?, ?) WHERE id = ?", (line, -self.log_limit, job_id))

    def finish(
        self, job_id: int, state: JobState, error: str | None = None, *, worker_id: str | None = None
    ) -> Job:
        """End a running job as done, failed (with ``error``) or cancelled."""
        if state not in FINAL_STATES:
            raise ValueError(f"finish() takes done, failed or cancelled, not {state!r}")
        with self._write() as con:
            job = self._held(con, job_id, worker_id)
            if state == "failed":
                self._record_failure(con, job, error or "failed without a message")
            else:
                con.execute(
                    "UPDATE jobs SET state = ?, error = NULL, finished_at = ?, heartbeat_at = NULL, "
                    "eta_s = NULL WHERE id = ?",
                    (state, self._clock(), job_id),
                )
            return self._fetch(con, job_id)

    def fail(self, job_id: int, error: str, *, retry: bool = False, worker_id: str | None = None) -> Job:
        """A running job raised ``error``. With ``retry`` (an error that may pass: not the user's input) it
        is queued again at its place, keeping its segments, until it has failed ``max_attempts`` times;
        otherwise, or then, it ends failed. Returns the job as it is now."""
        with self._write() as con:
            job = self._held(con, job_id, worker_id)
            failures = job.failures + 1
            if retry and failures < self.max_attempts and not job.cancel_requested:
                con.execute("UPDATE jobs SET failures = ? WHERE id = ?", (failures, job_id))
                self._put_back(con, job, self._clock(),
                               f"error {failures} of at most {self.max_attempts}: {error}")
            else:
                self._record_failure(con, job, error)
            return self._fetch(con, job_id)

    def _held(self, con: sqlite3.Connection, job_id: int, worker_id: str | None) -> Job:
        """The running job, checked to be held by ``worker_id`` (if given) before it is ended."""
        job = self._fetch(con, job_id)
        if worker_id is not None and (job.state != "running" or job.worker_id != worker_id):
            raise ClaimLost(
                f"job {job_id} is {job.state} and held by {job.worker_id or 'no worker'}, not {worker_id}"
            )
        check("finish", job_id, job.state)
        return job

    def _record_failure(self, con: sqlite3.Connection, job: Job, error: str, *,
                        failures: int | None = None) -> None:
        """End ``job`` failed with ``error`` (one more failure unless ``failures`` says how many); its
        progress says what a retry keeps (the frames of its finished segments), not how far the failed run
        got."""
        stage = json.dumps({"step": "failed", "segments": len(job.resume.get("segments", []))})
        con.execute(
            "UPDATE jobs SET state = 'failed', error = ?, failures = ?, finished_at = ?, "
            "heartbeat_at = NULL, frames_done = ?, fps = NULL, eta_s = NULL, stage = ? WHERE id = ?",
            (error, job.failures + 1 if failures is None else failures, self._clock(), job.kept_frames, stage,
             job.id),
        )
