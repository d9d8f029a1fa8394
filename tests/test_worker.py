"""The render worker: queue order, image jobs, failures, cancel, worker lock, concurrent adders."""

from __future__ import annotations

import errno
import multiprocessing
import os
import time
from pathlib import Path

import psutil
import pytest

from pipeline.errors import UserError
from pipeline.jobs import runner
from pipeline.jobs.hold import Gate
from pipeline.jobs.segments import Pace
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import Worker, WorkerBusy, run, start_in_thread, worker_lock
from pipeline.progress import Progress
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.timing import scaled
from tests.videos import make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])


def _ffmpeg_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "ffmpeg" in p.name()]


def _wait(predicate, timeout: float = 30.0, every: float = 0.02) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + scaled(timeout)
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def test_image_jobs_run_in_queue_order(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    target = photos.astronaut_path(tmp_path)
    jobs = [store.add([photos.grace_hopper_path()], target, tmp_path / f"out{i}.png", FAST) for i in range(3)]
    store.move(jobs[2].id, "top")
    assert run(store, "w", once=True) == 3
    done = [store.get(j.id) for j in jobs]
    assert all(j.state == "done" for j in done), [(j.state, j.error) for j in done]
    assert all(Path(j.output).stat().st_size > 0 for j in done)
    order = sorted(done, key=lambda j: j.started_at or 0)
    assert [j.id for j in order] == [jobs[2].id, jobs[0].id, jobs[1].id]
    # each keeps what its run took and its average rate (one frame: 1 / render time)
    assert all(j.render_s and j.render_s > 0 and j.progress.fps == pytest.approx(1 / j.render_s)
               for j in done)


def test_a_failing_job_fails_with_one_line_and_a_log_tail(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 500)  # passes no probe
    bad = store.add([photos.grace_hopper_path()], broken, tmp_path / "out.mp4", FAST)
    good_clip = make_clip(tmp_path / "ok.mp4", seconds=0.5, audio=False)
    good = store.add([photos.grace_hopper_path()], good_clip, tmp_path / "ok_out.mp4", FAST)
    run(store, "w", once=True)
    failed = store.get(bad.id)
    assert failed.state == "failed" and failed.error and "\n" not in failed.error
    assert "broken.mp4" in failed.error
    assert "failed:" in failed.log
    assert store.get(good.id).state == "done"  # the worker carried on
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.slow
def test_cancel_of_a_running_video_job(tmp_path: Path) -> None:
    """A job held mid-render (after its first 30-frame segment, its decoder still running) ends cancelled
    when asked, without being let go on: the cancel itself stops the render, its ffmpeg processes with it."""
    store = JobStore(tmp_path / "q.sqlite3")
    clip = make_clip(tmp_path / "face.mp4", seconds=6, size=(320, 240), face_image=photos.astronaut())
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, FAST)
    gate = Gate(after=1)  # never opened
    handle = start_in_thread(store, "w", pace=Pace.frames(30), hold=gate)
    try:
        assert gate.reached.wait(scaled(60)), store.get(job.id).log
        assert _ffmpeg_children(), "expected the render's ffmpeg processes"
        store.request_cancel(job.id)
        _wait(lambda: store.get(job.id).finished, timeout=10, every=0.01)
    finally:
        handle.stop()
    final = store.get(job.id)
    assert final.state == "cancelled" and not gate.released.is_set(), final.log
    assert "cancelled by request" in final.log
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert not runner.work_dir(job.id).exists()
    _wait(lambda: not _ffmpeg_children(), timeout=5)


def test_an_internal_error_is_retried_a_users_error_is_not(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors the job raises count towards max_attempts: an internal one is retried (from its segments), a
    user's fails the job at once; the worker counts the jobs that failed."""
    store = JobStore(tmp_path / "q.sqlite3", max_attempts=3)
    flaky, bad, locked = (store.add([photos.grace_hopper_path()], photos.astronaut_path(tmp_path),
                                    tmp_path / f"{name}.png", FAST) for name in ("a", "b", "c"))
    calls: list[int] = []

    def execute(job, ctx):  # type: ignore[no-untyped-def]
        calls.append(job.id)
        if job.id == bad.id:
            raise UserError("the source face is too small")
        if job.id == locked.id:  # a folder that refuses the file is the user's to fix too
            raise PermissionError(errno.EACCES, "Permission denied", "/x/locked/.c.job3.partial.png")
        raise RuntimeError("CUDA error: unspecified launch failure")

    monkeypatch.setattr(runner, "execute", execute)
    worker = Worker(store, "w")
    assert worker.run(once=True) == 0 and worker.jobs_failed == 3
    assert calls == [flaky.id] * 3 + [bad.id, locked.id]
    c = store.get(locked.id)
    assert c.state == "failed" and c.failures == 1
    assert c.error == ("cannot write /x/locked: permission denied: write to a folder you own or fix its "
                       "permissions")  # the one rule of pipeline.errors.os_fault, naming the folder
    a, b = store.get(flaky.id), store.get(bad.id)
    assert a.state == "failed" and (a.attempts, a.failures) == (3, 3)
    assert a.error == "RuntimeError: CUDA error: unspecified launch failure"
    assert "error 2 of at most 3: RuntimeError" in a.log and "Traceback" in a.log
    assert b.state == "failed" and (b.attempts, b.failures) == (1, 1)
    assert b.error == "the source face is too small"


def test_the_output_is_checked_when_the_job_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Valid when queued, unwritable when its turn comes: the job fails with the reason before rendering."""
    from pipeline.render import Render

    def no_render(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("rendered before the output was checked")

    monkeypatch.setattr(Render, "run", no_render)
    store = JobStore(tmp_path / "q.sqlite3")
    clip = make_clip(tmp_path / "c.mp4", seconds=0.5, audio=False)
    folder = tmp_path / "gone"
    folder.mkdir()
    job = store.add([photos.grace_hopper_path()], clip, folder / "out.mp4", FAST)
    folder.rmdir()
    worker = Worker(store, "w")
    worker.run(once=True)
    final = store.get(job.id)
    assert final.state == "failed" and final.failures == 1 and worker.jobs_failed == 1
    assert final.error and str(folder) in final.error and "\n" not in final.error
    assert final.progress.frames_done == 0 and not runner.work_dir(job.id).exists()


def test_a_second_worker_with_the_same_id_is_refused(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    with worker_lock(store, "host/cpu"), pytest.raises(WorkerBusy, match="already running"):
        Worker(store, "host/cpu").run(once=True)
    assert Worker(store, "host/cpu").run(once=True) == 0  # free again once the first is gone


def test_a_worker_started_without_an_id_takes_the_first_free_one(tmp_path: Path) -> None:
    from pipeline.jobs.worker import default_worker_id

    store = JobStore(tmp_path / "q.sqlite3")
    base = default_worker_id()
    first, second = start_in_thread(store, poll=0.05), start_in_thread(store, poll=0.05)
    try:
        assert (first.worker.worker_id, second.worker.worker_id) == (base, f"{base}-2")
        with pytest.raises(WorkerBusy, match="already running"):  # a taken id, given: refused before a thread
            start_in_thread(store, base)
        _wait(lambda: len(store.workers.live()) == 2)
        live = store.workers.live()
        assert [(w.id, w.pid, w.job) for w in live] == [(base, os.getpid(), None),
                                                       (f"{base}-2", os.getpid(), None)]
    finally:
        assert first.stop() and second.stop()
    assert store.workers.live() == []  # each signed off as it stopped


def test_a_worker_is_shown_with_its_job_until_its_process_is_gone_or_it_falls_silent(tmp_path: Path) -> None:
    now = [1000.0]
    store = JobStore(tmp_path / "q.sqlite3", stale_after=10, clock=lambda: now[0])
    job = store.add(["/s.jpg"], "/t.mp4", "/o.mp4", Settings())
    store.workers.register("farm/cuda0", host="farm", pid=4242)  # another host: only silence tells
    store.workers.register("here/cpu")  # this process
    lease = store.claim_next("farm/cuda0")
    assert lease is not None
    lease.progress(Progress(30, 120))
    doing = {w.id: w.job for w in store.workers.live()}
    assert doing["here/cpu"] is None and doing["farm/cuda0"] is not None
    assert doing["farm/cuda0"].id == job.id and doing["farm/cuda0"].progress.fraction == 0.25
    now[0] += 11  # farm/cuda0 fell silent; here/cpu says it is there
    store.workers.seen("here/cpu")
    assert [w.id for w in store.workers.live()] == ["here/cpu"]
    dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    dead.start()
    dead.join()
    store.workers.register("here/gone", pid=dead.pid)  # its process has ended: left out at once
    assert [w.id for w in store.workers.live()] == ["here/cpu"]


def _adder(db: str, tag: str, n: int) -> None:
    store = JobStore(db)
    for i in range(n):
        store.add([f"/nowhere/{tag}.jpg"], f"/nowhere/{tag}-{i}.mp4", f"/nowhere/{tag}-{i}-out.mp4",
                  Settings())


def test_concurrent_adders_while_a_worker_runs_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite3"
    store = JobStore(db)
    handle = start_in_thread(store, "w")
    handle.worker.poll = 0.01
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_adder, args=(str(db), tag, 25)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    _wait(lambda: all(j.finished for j in store.list()), timeout=60)
    handle.stop()
    jobs = store.list()
    targets = sorted(j.target for j in jobs)
    assert len(jobs) == 50 and len(set(targets)) == 50
    assert targets == sorted([f"/nowhere/{t}-{i}.mp4" for t in "ab" for i in range(25)])
    assert all(j.state == "failed" and j.attempts == 1 for j in jobs)  # each ran exactly once
    assert all(j.log.count("attempt 1 on worker") == 1 for j in jobs)
    # each adder's own jobs kept their order
    for tag in "ab":
        mine = [int(j.target.rsplit("-", 1)[1].split(".")[0]) for j in jobs if f"/{tag}-" in j.target]
        assert mine == sorted(mine)


def test_a_queued_video_without_a_face_says_so(tmp_path: Path) -> None:
    """The notice the CLI gives is the job's too (it was printed by the CLI only)."""
    store = JobStore(tmp_path / "q.sqlite3")
    clip = make_clip(tmp_path / "noface.mp4", seconds=0.5, size=(160, 120))
    job = store.add([photos.grace_hopper_path()], clip, tmp_path / "o.mp4", FAST)
    assert run(store, "w", once=True) == 1
    done = store.get(job.id)
    assert done.state == "done", done.error
    assert "no face to replace was found in any frame of noface.mp4" in done.log, done.log
