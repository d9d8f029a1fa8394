"""What becomes of a running job when its run ends other than well: requeued, failed or cancelled.

Pure: it reads a job's counters and what happened, and says the state the job goes to, its new counters and
the words for its log. :class:`~pipeline.jobs.store.JobStore` and :class:`~pipeline.jobs.lease.Lease` apply
the decision; nothing here touches the database.

The rules:

- a **death** (the worker's process ended, went silent, or restarted under the same id) costs the job
  nothing if it recorded a segment since the last death; ``max_attempts`` deaths in a row without one (a job
  that runs its worker out of memory every time) fail it, so that it never blocks the queue for ever;
- a **stop** (the worker shuts down on purpose) puts the job back, counting nothing;
- an **error** the job raised that may pass (not the user's input) puts it back until it has happened
  ``max_attempts`` times; a **user error** fails it at once;
- a **cancel** the user asked for wins over a requeue: the job ends cancelled instead of going back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.jobs.model import Job, JobState

Event = Literal["death", "stop", "error", "user_error"]


@dataclass(frozen=True)
class Counters:
    """The fields of a job the policy reads (a :class:`~pipeline.jobs.model.Job` has them all)."""

    failures: int  # errors the job raised so far
    deaths: int  # worker deaths in a row without a new segment
    progressed: bool  # a segment was recorded since the last death
    cancel_requested: bool

    @classmethod
    def of(cls, job: Job) -> Counters:
        return cls(job.failures, job.deaths, job.progressed, job.cancel_requested)


@dataclass(frozen=True)
class Decision:
    """Where the job goes and what is written: its state, its counters, the log line and (failed) the
    error."""

    state: JobState  # queued | failed | cancelled
    failures: int
    deaths: int
    progressed: bool
    log: str | None  # for the job's log (None: the worker writes its own line)
    error: str | None = None

    @property
    def requeued(self) -> bool:
        return self.state == "queued"


def decide(event: Event, job: Counters, max_attempts: int, why: str) -> Decision:
    """What happens to a running ``job`` after ``event``; ``why`` names it (``worker w1 silent for 130 s``,
    or the error's one line)."""
    if event == "death":
        return _death(job, max_attempts, why)
    if event == "stop":
        return _back(job, job.failures, job.deaths, job.progressed, why)
    failures = job.failures + 1
    if event == "error" and failures < max_attempts and not job.cancel_requested:
        return _back(job, failures, job.deaths, job.progressed,
                     f"error {failures} of at most {max_attempts}: {why}")
    return Decision("failed", failures, job.deaths, job.progressed, None, why)


def _death(job: Counters, max_attempts: int, why: str) -> Decision:
    deaths = 0 if job.progressed else job.deaths + 1
    if deaths < max_attempts or job.cancel_requested:
        return _back(job, job.failures, deaths, False, why)
    error = f"the worker died {deaths} times on this job without progress (out of memory?)"
    return Decision("failed", job.failures, deaths, False, f"{why}: {error}", error)


def _back(job: Counters, failures: int, deaths: int, progressed: bool, why: str) -> Decision:
    """Queued again at its place, or cancelled if that was asked meanwhile."""
    state: JobState = "cancelled" if job.cancel_requested else "queued"
    return Decision(state, failures, deaths, progressed,
                    f"{why}: job {'re-queued' if state == 'queued' else state}")
