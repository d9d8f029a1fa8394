"""Output folders that refuse the job's file: read-only, write-protected, full. The job fails with the reason
(a user's error: not retried), before rendering where the output check sees it coming, at its first write
into the folder otherwise, and leaves nothing there. Mounts need root; the tests skip cleanly without."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.errors import UserError
from pipeline.jobs import service
from pipeline.jobs.model import Job
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import Worker
from pipeline.media import check_output
from pipeline.request import SwapRequest
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.videos import make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=160"])


@contextlib.contextmanager
def _mounted(args: list[str], where: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    result = subprocess.run(["mount", *args, str(where)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount here: {result.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _run_one(store: JobStore, job: Job) -> Job:
    worker = Worker(store, "w")
    worker.run(once=True)
    final = store.get(job.id)
    assert worker.jobs_failed == 1, (final.state, final.log)
    return final


def _checked_before(output: Path, inputs: list[Path]) -> bool:
    """Whether :func:`pipeline.media.check_output` already refuses this output (then nothing may render)."""
    try:
        check_output(output, inputs)
    except UserError:
        return True
    return False


def _assert_failed_cleanly(final: Job, folder: Path, reasons: tuple[str, ...], clip: Path) -> None:
    assert final.state == "failed" and final.failures == 1, (final.error, final.log)  # not retried
    assert final.error and str(folder) in final.error, final.error
    assert any(r in final.error.lower() for r in reasons), final.error
    assert "\n" not in final.error and "%" not in final.error
    assert not Path(final.output).exists()
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
    if _checked_before(Path(final.output), [clip]):
        assert final.kept_frames == 0 and "resuming" not in final.log  # failed before rendering


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "in" / "clip.mp4", seconds=1.0, size=(640, 480))


def test_a_folder_turned_read_only_fails_the_job_with_the_reason(tmp_path: Path, clip: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    store = service.open_store()
    job = service.add(store, SwapRequest.of([photos.grace_hopper_path()], clip, FAST, folder / "out.mp4"))
    with _mounted(["--bind", "-o", "ro", str(folder)], folder):
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=False).returncode:
            pytest.skip("cannot make the bind mount read-only")
        final = _run_one(store, job)
        _assert_failed_cleanly(final, folder, ("read-only",), clip)


def test_a_full_disk_fails_the_job_with_the_reason(tmp_path: Path, clip: Path) -> None:
    folder = tmp_path / "full"
    folder.mkdir()
    with _mounted(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], folder):
        store = service.open_store()
        job = service.add(store, SwapRequest.of([photos.grace_hopper_path()], clip, FAST, folder / "out.mp4"))
        filler = folder / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as fh:
            fh.write(b"\0" * (1024 * 1024 - 4096))  # leaves a page: less than the video needs
        final = _run_one(store, job)
        filler.unlink()
        _assert_failed_cleanly(final, folder, ("no space left", "free some space"), clip)


def test_a_write_protected_folder_fails_the_job_with_the_reason(tmp_path: Path, clip: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into write-protected folders")
    folder = tmp_path / "locked"
    folder.mkdir()
    store = service.open_store()
    job = service.add(store, SwapRequest.of([photos.grace_hopper_path()], clip, FAST, folder / "out.mp4"))
    folder.chmod(0o555)
    try:
        final = _run_one(store, job)
    finally:
        folder.chmod(0o755)
    _assert_failed_cleanly(final, folder, ("permission denied", "not allowed", "permission"), clip)
