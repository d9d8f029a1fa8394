"""The engine's facade for the web UI (pipeline/api.py): its names exist and its few functions work."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import api
from pipeline.jobs import runner
from tests.photos import grace_hopper_path


def test_every_listed_name_exists() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing


def test_delete_job_forgets_it_and_removes_its_leftovers(tmp_path: Path) -> None:
    store = api.open_store(tmp_path / "q.sqlite3")
    output = tmp_path / "out" / "clip-swap.mp4"
    output.parent.mkdir()
    job = store.add([str(grace_hopper_path())], str(tmp_path / "clip.mp4"), str(output), api.Settings())
    work = runner.work_dir(job.id)
    work.mkdir(parents=True)
    (work / "seg-000000.mkv").write_bytes(b"x")
    half = output.parent / f".{output.stem}.job{job.id}.1.partial{output.suffix}"
    half.write_bytes(b"x")
    api.delete_job(store, job.id)
    assert store.list() == [] and not work.exists() and not half.exists()
    with pytest.raises(api.UserError):
        api.delete_job(store, job.id)


def test_ui_opens_the_queue_like_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gradio")
    from webui.app import build
    from webui.common import UiConfig

    monkeypatch.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", "7")
    app = build(UiConfig(worker=False, data=tmp_path))
    assert app.ctx.store.max_attempts == 7 and app.ctx.store.path == tmp_path / api.QUEUE_FILE
