"""The render job record and its state machine.

::

    queued ──claim──► running ──finish──► done | failed | cancelled
      │  ▲              │  (its worker died, or the job raised an error it may retry: back to queued,
      │  └──────────────┘   keeping its place and its finished segments)
      └──cancel──► cancelled          failed | cancelled ──retry──► queued (at the end)
                                      done ──rerender──► queued (at the end: a stretch again)

Errors the job itself raised count against it (``failures``, up to the store's ``max_attempts``), and so do
worker deaths in a row without a new segment recorded (``deaths``, up to the same number): the rules are
:mod:`pipeline.jobs.policy`. A running job
whose worker is gone (see :mod:`pipeline.liveness`) can be cancelled or deleted at once.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pipeline.errors import UserError
from pipeline.progress import Progress
from pipeline.settings import Settings, validate

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
STATES: tuple[JobState, ...] = get_args(JobState)
FINAL_STATES: frozenset[JobState] = frozenset({"done", "failed", "cancelled"})

Action = Literal["claim", "cancel", "finish", "requeue", "retry", "move", "delete", "rerender"]

# Which states each action may start from, and the states it may lead to (empty: no state change, or the row
# goes). Every state change of the store goes through :func:`check`.
ACTIONS: dict[Action, tuple[frozenset[JobState], frozenset[JobState]]] = {
    "claim": (frozenset({"queued"}), frozenset({"running"})),
    "cancel": (frozenset({"queued", "running"}), frozenset({"cancelled"})),
    "finish": (frozenset({"running"}), frozenset({"done", "failed", "cancelled"})),
    "requeue": (frozenset({"running"}), frozenset({"queued"})),  # a dead, stopping or retried run's job
    "retry": (frozenset({"failed", "cancelled"}), frozenset({"queued"})),
    "move": (frozenset({"queued"}), frozenset()),
    "delete": (frozenset({"queued", "done", "failed", "cancelled"}), frozenset()),
    "rerender": (frozenset({"done"}), frozenset({"queued"})),  # a stretch of it again (jobs/rerender.py)
}
# What a running job whose worker is gone (see :mod:`pipeline.liveness`) allows as well.
ORPHAN_ACTIONS: frozenset[Action] = frozenset({"cancel", "delete"})

_HINTS: dict[Action, str] = {
    "cancel": "it has already ended",
    "finish": "only a running job can be finished",
    "retry": "only failed or cancelled jobs can be retried",
    "move": "only queued jobs can move",
    "delete": "cancel it first; a job whose worker is gone can be deleted at once",
    "rerender": "only a finished (done) job can re-render a stretch",
}


class JobNotFound(UserError):
    """No job with that id (deleted, or never existed)."""


class OutputTaken(UserError):
    """Another queued or running job already writes that output file."""


class IllegalTransition(UserError):
    """The job is in a state where that action makes no sense (cancel a finished job, delete a running
    one)."""


def check(action: Action, job_id: int, current: JobState, to: JobState | None = None, *,
          orphaned: bool = False) -> None:
    """Raise IllegalTransition unless ``action`` may be applied to a job in state ``current`` (leading to
    ``to``, when it changes the state). ``orphaned``: the job runs but its worker is gone."""
    allowed, leads_to = ACTIONS[action]
    if current not in allowed and not (orphaned and current == "running" and action in ORPHAN_ACTIONS):
        hint = _HINTS.get(action)
        raise IllegalTransition(
            f"cannot {action} job {job_id}: it is {current}" + (f" ({hint})" if hint else "")
        )
    if to is not None and to not in leads_to:
        raise ValueError(f"{action} leads to {', '.join(sorted(leads_to)) or 'no state change'}, not {to}")


@dataclass(frozen=True)
class Job:
    """One row of the queue, as read at one moment. Re-read it with ``JobStore.get`` for fresh values."""

    id: int
    owner: str
    sources: tuple[str, ...]
    target: str
    output: str
    settings_json: str
    state: JobState
    position: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    progress: Progress  # pipeline.progress.Progress, kept in the columns frames_done .. eta_s and stage
    log: str
    error: str | None
    attempts: int  # runs started (claims), whatever their end
    worker_id: str | None
    heartbeat_at: float | None
    cancel_requested: bool
    resume: dict[str, Any]
    failures: int  # runs that ended with an error the job raised (worker deaths do not count)
    worker_host: str | None  # where the worker holding it runs, and its process id
    worker_pid: int | None
    deaths: int  # worker deaths in a row without a new segment recorded (reset by a recorded segment)
    progressed: bool  # a segment was recorded since the last death
    audio: str | None = None  # a new voice the output carries (``--audio``; a lip syncer follows it)
    number: int | None = None  # its number among its owner's jobs (shown to users; ``id`` is the queue's)
    render_s: float | None = None  # a done job: the wall seconds of the run that finished it

    @property
    def label(self) -> int:
        """The number a user knows the job by: their own count (the queue id for a job made before)."""
        return self.number if self.number is not None else self.id

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Job:
        """Build from a database row (column names = field names; JSON columns decoded)."""
        data = dict(row)
        stage = json.loads(data.pop("stage"))
        data["progress"] = Progress(
            data.pop("frames_done"), data.pop("frames_total"), data.pop("fps"), data.pop("eta_s"), stage
        )
        data["settings_json"] = data.pop("settings")
        data["sources"] = tuple(json.loads(data["sources"]))
        data["resume"] = json.loads(data["resume"])
        data["cancel_requested"] = bool(data["cancel_requested"])
        data["progressed"] = bool(data["progressed"])
        return cls(**data)

    @property
    def settings(self) -> Settings:
        """The validated settings the job was queued with (validated once per text: the Queue tab reads
        every row's on each poll)."""
        return _settings(self.settings_json)

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def kept_frames(self) -> int:
        """Frames in the finished segments a resumed run keeps (0 for an image job or a fresh one)."""
        return sum(int(s.get("frames", 0)) for s in self.resume.get("segments", []) if isinstance(s, dict))


@functools.lru_cache(maxsize=256)
def _settings(text: str) -> Settings:
    return validate(json.loads(text))  # frozen: one object may serve every job queued with the same text
