"""The queue database: its connections, its schema and migrations, and the row writes of a job's state
changes (each checked against :data:`pipeline.jobs.model.ACTIONS`).

Every call opens (or reuses) this thread's connection and runs in one short transaction; writes start with
``BEGIN IMMEDIATE`` so that a read-then-write (a claim, a reorder) holds the write lock from its first
statement and two processes can never both take the same job. The database runs in WAL mode, so readers (a
UI polling progress) never block the worker.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline import env
from pipeline.errors import OutputFault, UserError, os_fault
from pipeline.jobs.model import Action, Job, JobNotFound, JobState, check
from pipeline.jobs.policy import Decision

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5
DB_NAME = "queue.sqlite3"

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

# audio: a new voice the output carries instead of the target's sound (``--audio``), NULL: the target's
_V4 = """
ALTER TABLE jobs ADD COLUMN audio TEXT;
"""

# number: the job's number among its owner's jobs (a colleague's first job is their #1; ``id`` stays the
# queue's own), from the owner's counter in job_numbers (never reused after a delete);
# render_s: the wall seconds of the run that finished the job (its average fps is then in ``fps``);
# workers: every render worker serving this queue, seen at least every quarter of the store's stale_after
_V5 = """
ALTER TABLE jobs ADD COLUMN number INTEGER;
ALTER TABLE jobs ADD COLUMN render_s REAL;
UPDATE jobs SET number = (SELECT COUNT(*) FROM jobs AS earlier WHERE earlier.owner = jobs.owner
                          AND earlier.id <= jobs.id);
CREATE TABLE IF NOT EXISTS job_numbers (owner TEXT PRIMARY KEY, last INTEGER NOT NULL);
INSERT INTO job_numbers (owner, last) SELECT owner, MAX(number) FROM jobs GROUP BY owner;
CREATE TABLE IF NOT EXISTS workers (
    id         TEXT PRIMARY KEY,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    started_at REAL NOT NULL,
    seen_at    REAL NOT NULL
);
"""

# _MIGRATIONS[n] brings a database at user_version n to n + 1.
_MIGRATIONS: dict[int, str] = {0: _SCHEMA_V1, 1: _V2, 2: _V3, 3: _V4, 4: _V5}

_NO_WORKER = "worker_id = NULL, worker_host = NULL, worker_pid = NULL, heartbeat_at = NULL"


class QueueFault(UserError):
    """The queue's file cannot be used as it is: damaged, not a queue, on a read-only or full disk."""


def queue_fault(exc: sqlite3.Error, path: Path) -> QueueFault | None:
    """The one line for an SQLite error the user can fix, naming the queue's file and the fix; None for
    another (a bug, a busy database)."""
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text or "file is encrypted" in text:
        return QueueFault(f"the queue database {path} is damaged or not a queue ({exc}): move it away "
                          "(a new, empty queue is made) or restore it from a backup")
    folder = path.parent
    fix = None
    if "full" in text:
        fix = os_fault(OSError(errno.ENOSPC, "full"), path)
    elif "readonly" in text or "read-only" in text or "unable to open" in text or "disk i/o" in text:
        fix = _why_not_writable(folder, path)
    if fix is None and "unable to open" in text:
        fix = OutputFault(f"cannot open the queue database {path} ({exc}): too few file descriptors "
                          "(raise `ulimit -n`) or a missing folder")
    if fix is None:
        return None
    return QueueFault(f"{fix}; or set {env.DATA.name} to a folder that can hold the queue")


def _why_not_writable(folder: Path, path: Path) -> OutputFault | None:
    """EROFS/EACCES/ENOSPC for the queue's folder or file, as the user's error (None: none of them)."""
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return os_fault(OSError(errno.EROFS, "read-only"), path)
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            return os_fault(OSError(errno.EACCES, "permission denied"), path)
        if os.statvfs(folder).f_bavail == 0:
            return os_fault(OSError(errno.ENOSPC, "full"), path)
    return None


class _Connection(sqlite3.Connection):
    """A connection whose errors the user can fix come out as :class:`QueueFault` naming the file."""

    queue_path: Path = Path()

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise queue_fault(exc, self.queue_path) or exc from None

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.Error as exc:
            raise queue_fault(exc, self.queue_path) or exc from None


class QueueDB:
    """The SQLite file at ``path``: one connection per thread and process, migrated when opened."""

    def __init__(self, path: Path, *, busy_timeout: float = 30.0, log_limit: int = 16_000) -> None:
        self.path = path
        self.log_limit = log_limit
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._initialise()

    # ------------------------------------------------------------ connections

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (one per thread and process: sqlite3 connections must not be shared)."""
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is not None and self._local.pid == os.getpid():
            return con
        try:
            con = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None,
                                  factory=_Connection)
        except sqlite3.Error as exc:
            raise queue_fault(exc, self.path) or exc from None
        con.queue_path = self.path
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
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``), rolled back on any exception."""
        con = self._connect()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def read(self) -> sqlite3.Connection:
        return self._connect()

    def _initialise(self) -> None:
        mode = self.read().execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            log.warning("queue database %s is in %s mode, not WAL", self.path, mode)
        with self.write() as con:
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

    # ------------------------------------------------------------ rows

    @staticmethod
    def fetch(con: sqlite3.Connection, job_id: int) -> Job:
        row = con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(f"no job {job_id} in the queue")
        return Job.from_row(dict(row))

    @staticmethod
    def select(con: sqlite3.Connection, sql: str, params: tuple | list = ()) -> list[Job]:
        """The jobs of ``SELECT * FROM jobs ...`` (``sql`` is what follows ``jobs``)."""
        return [Job.from_row(dict(r)) for r in con.execute("SELECT * FROM jobs " + sql, params).fetchall()]

    def log(self, con: sqlite3.Connection, job_id: int, text: str) -> None:
        """Append a line to the job's log; only the last ``log_limit`` characters are kept."""
        line = text if text.endswith("\n") else text + "\n"
        con.execute("UPDATE jobs SET log = substr(log || ?, ?) WHERE id = ?", (line, -self.log_limit, job_id))

    # ------------------------------------------------------------ state changes

    @staticmethod
    def claim(con: sqlite3.Connection, job: Job, worker_id: str, host: str, pid: int, now: float) -> None:
        check("claim", job.id, job.state, "running")
        con.execute(
            "UPDATE jobs SET state = 'running', worker_id = ?, worker_host = ?, worker_pid = ?, "
            "heartbeat_at = ?, started_at = ?, attempts = attempts + 1, cancel_requested = 0 "
            "WHERE id = ? AND state = 'queued'",
            (worker_id, host, pid, now, now, job.id),
        )

    @staticmethod
    def cancel_now(con: sqlite3.Connection, job: Job, now: float, *, orphaned: bool = False) -> None:
        """A queued job (or a running one whose worker is gone) ends cancelled at once."""
        check("cancel", job.id, job.state, "cancelled", orphaned=orphaned)
        con.execute(f"UPDATE jobs SET state = 'cancelled', finished_at = ?, fps = NULL, eta_s = NULL, "
                    f"{_NO_WORKER} WHERE id = ?", (now, job.id))

    @staticmethod
    def requeue_at_end(con: sqlite3.Connection, job: Job, action: Action = "retry") -> None:
        """A failed or cancelled job (``rerender``: a done one) queued again at the end, its counters reset
        (its resume data kept)."""
        check(action, job.id, job.state, "queued")
        con.execute(
            "UPDATE jobs SET state = 'queued', position = (SELECT MAX(position) + 1 FROM jobs), "
            "error = NULL, finished_at = NULL, cancel_requested = 0, attempts = 0, failures = 0, "
            f"deaths = 0, progressed = 0, {_NO_WORKER}, fps = NULL, eta_s = NULL WHERE id = ?",
            (job.id,),
        )

    @staticmethod
    def end(con: sqlite3.Connection, job: Job, state: JobState, now: float,
            render_s: float | None = None, fps: float | None = None) -> None:
        """A running job ends done or cancelled (by its worker); a done one keeps its run's wall seconds
        and average fps."""
        check("finish", job.id, job.state, state)
        con.execute("UPDATE jobs SET state = ?, error = NULL, finished_at = ?, heartbeat_at = NULL, "
                    "eta_s = NULL, render_s = ?, fps = ? WHERE id = ?", (state, now, render_s, fps, job.id))

    @staticmethod
    def next_number(con: sqlite3.Connection, owner: str) -> int:
        """The owner's next job number (1 for their first job)."""
        row = con.execute("INSERT INTO job_numbers (owner, last) VALUES (?, 1) ON CONFLICT (owner) "
                          "DO UPDATE SET last = last + 1 RETURNING last", (owner,)).fetchone()
        return int(row[0])

    def apply(self, con: sqlite3.Connection, job: Job, decision: Decision, now: float) -> None:
        """Write what :func:`pipeline.jobs.policy.decide` said about a running ``job``. Its progress is what a
        next run keeps (the frames of its finished segments), not how far the ended run got."""
        con.execute("UPDATE jobs SET failures = ?, deaths = ?, progressed = ? WHERE id = ?",
                    (decision.failures, decision.deaths, int(decision.progressed), job.id))
        if decision.state == "failed":
            check("finish", job.id, job.state, "failed")
            stage = json.dumps({"step": "failed", "segments": len(job.resume.get("segments", []))})
            con.execute(
                "UPDATE jobs SET state = 'failed', error = ?, finished_at = ?, heartbeat_at = NULL, "
                "frames_done = ?, fps = NULL, eta_s = NULL, stage = ? WHERE id = ?",
                (decision.error, now, job.kept_frames, stage, job.id),
            )
        else:  # back at its place in the queue, or cancelled as was asked
            check("requeue" if decision.requeued else "cancel", job.id, job.state, decision.state)
            con.execute(
                f"UPDATE jobs SET state = ?, {_NO_WORKER}, frames_done = ?, fps = NULL, eta_s = NULL, "
                "finished_at = ? WHERE id = ?",
                (decision.state, job.kept_frames, None if decision.requeued else now, job.id),
            )
        if decision.log:
            self.log(con, job.id, decision.log)
        (log.error if decision.state == "failed" else log.warning)(
            "job %d: %s -> %s", job.id, decision.log or decision.error, decision.state)
