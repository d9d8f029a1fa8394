"""A job rendered on Ray's local runtime, as the processors' farm tests do it (the job's own segments on two
slots, Ray shut down after)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.jobs.model import Job
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run

REPO = Path(__file__).resolve().parent.parent


def local_farm(monkeypatch: pytest.MonkeyPatch, segment_seconds: float) -> None:
    """Ray's workers import facestation from this checkout; a small object store; segments of
    ``segment_seconds``. Skips where Ray is not installed."""
    pytest.importorskip("ray")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("FACESTATION_FARM_OBJECT_STORE_MB", "100")
    monkeypatch.setenv("FACESTATION_FARM_SEGMENT_SECONDS", str(segment_seconds))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")


def render_on_farm(store: JobStore, job: Job, slots: int = 2) -> Job:
    """``job`` rendered by one worker pass that executes on the farm; the job as it ended (asserted done)."""
    import ray

    from pipeline.jobs.farm import Farm

    farm = Farm.connect("local", slots=slots)
    try:
        assert run(store, "test/ray", once=True, execute=farm.execute) == 1
    finally:
        farm.close()
        if ray.is_initialized():
            ray.shutdown()
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    return done
