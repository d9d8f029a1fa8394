"""pipeline.jobs.service: the job operations the CLI and the web UI share."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import UserError
from pipeline.jobs import runner, service
from pipeline.jobs.model import Job, OutputTaken
from pipeline.jobs.store import JobStore
from pipeline.request import SwapRequest
from pipeline.settings import Settings
from tests import photos


def test_open_store_honours_the_queue_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACESTATION_QUEUE_STALE_AFTER", "7.5")
    monkeypatch.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", "5")
    store = service.open_store(tmp_path / "q.sqlite3")
    assert (store.stale_after, store.max_attempts) == (7.5, 5)
    monkeypatch.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", "many")
    with pytest.raises(UserError, match="FACESTATION_QUEUE_MAX_ATTEMPTS"):
        service.open_store(tmp_path / "q.sqlite3")


def _add(store: JobStore, target: str | Path, output: str | Path, owner: str = "") -> Job:
    return service.add(store, SwapRequest.of([photos.grace_hopper_path()], target, Settings(), output), owner)


def test_add_says_what_is_wrong_and_queues_nothing(tmp_path: Path) -> None:
    store = service.open_store(tmp_path / "q.sqlite3")
    source, target = photos.grace_hopper_path(), photos.astronaut_path(tmp_path)
    for sources, tgt, out, message in (
        ([tmp_path / "no.jpg"], target, tmp_path / "o.png", "source image not found"),
        ([source], tmp_path / "no.png", tmp_path / "o.png", "target not found"),
        ([source], target, target, "one of the inputs"),
        ([source], target, tmp_path / "o.txt", "cannot write"),
    ):
        with pytest.raises(UserError, match=message):
            service.add(store, SwapRequest.of(sources, tgt, Settings(), out))
    assert store.list() == []


def test_add_checks_then_queues_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = service.open_store(tmp_path / "q.sqlite3")
    photos.astronaut_path(tmp_path).rename(tmp_path / "target.png")
    with pytest.raises(UserError):
        _add(store, "target.png", "out.txt")
    job = _add(store, "target.png", "out.png", owner="ann")
    assert Path(job.target) == tmp_path / "target.png" and Path(job.output) == tmp_path / "out.png"
    assert job.owner == "ann" and [j.id for j in store.list()] == [job.id]


def test_cancel_retry_delete(tmp_path: Path) -> None:
    store = service.open_store(tmp_path / "q.sqlite3")
    target = photos.astronaut_path(tmp_path)
    job = _add(store, target, tmp_path / "out.png")
    assert service.cancel(store, job.id).state == "cancelled"
    assert service.retry(store, job.id).state == "queued"
    work = runner.work_dir(job.id)
    work.mkdir(parents=True)
    (work / "seg-00000000.mkv").write_bytes(b"x")
    with pytest.raises(UserError):
        service.delete(store, 999)
    assert service.delete(store, job.id).id == job.id
    assert store.list() == [] and not work.exists()


def test_one_output_per_job_whatever_its_spelling(tmp_path: Path) -> None:
    store = service.open_store(tmp_path / "q.sqlite3")
    target = photos.astronaut_path(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    job = _add(store, target, tmp_path / "real" / "o.png")
    for spelling in (tmp_path / "link" / "o.png", tmp_path / "real" / ".." / "real" / "o.png"):
        with pytest.raises(OutputTaken, match=f"job {job.id} \\(queued\\) already writes"):
            _add(store, target, spelling)
    service.cancel(store, job.id)
    assert _add(store, target, tmp_path / "link" / "o.png")
