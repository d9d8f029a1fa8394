"""No job may destroy another's files: a job's output is never the input (a source, the target or its new
voice) or the
output of a queued or running job, and its inputs are never what such a job writes.

Paths are compared as the file they name, not as text (:func:`pipeline.filenames.keys`: symlinks, ``..``
and hard links seen through).
The store checks when a job is added or retried; the worker checks again when a job starts and just before
its output is renamed into place (a symlink may have been made since).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.filenames import keys
from pipeline.jobs.model import Job, OutputTaken


def _roles(job: Job) -> list[tuple[str, str]]:
    """(what it is to the job, the path) for each of a job's inputs."""
    roles = [("target", job.target), *(("source", s) for s in job.sources)]
    return roles + ([("audio", job.audio)] if job.audio else [])


def refuse(sources: Sequence[str | Path], target: str | Path | None, output: str | Path,
           others: Iterable[Job], job_id: int | None = None, audio: str | Path | None = None) -> None:
    """Raise :class:`OutputTaken` naming the job that the job ``job_id`` (None: one being added) with these
    files would destroy, or that would destroy its inputs; ``others``: the queued and running jobs."""
    mine = keys(output)
    inputs = [("target", str(target))] if target is not None else []  # a live run's camera: its target
    inputs += [("source", str(s)) for s in sources]
    inputs += [("audio", str(audio))] if audio else []
    my_inputs = [(role, path, keys(path)) for role, path in inputs]
    for other in others:
        if other.id == job_id:
            continue
        name = f"job {other.id} ({other.state})"
        if mine & keys(other.output):
            raise OutputTaken(f"{name} already writes {output}; choose another output, or cancel job "
                              f"{other.id} first")
        for role, path in _roles(other):
            if mine & keys(path):
                raise OutputTaken(f"{output} is the {role} of {name}: writing it would destroy that job's "
                                  f"input; choose another output, or cancel job {other.id} first")
        for role, path, its in my_inputs:
            if its & keys(other.output):
                raise OutputTaken(f"the {role} {path} is the output of {name}: that job would destroy it; "
                                  f"choose another {role}, or cancel job {other.id} first")
