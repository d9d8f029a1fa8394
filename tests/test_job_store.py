from __future__ import annotations

import itertools
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline import paths
from pipeline.errors import UserError
from pipeline.jobs.db import _SCHEMA_V1, SCHEMA_VERSION
from pipeline.jobs.model import IllegalTransition, JobNotFound, OutputTaken
from pipeline.jobs.store import ClaimLost, JobStore, Lease
from pipeline.progress import Progress
from pipeline.settings import Settings, validate
from tests.timing import scaled


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _settings() -> Settings:
    data = Settings().model_dump()
    data["face_swapper"]["pixel_boost"] = 256
    data["execution"]["providers"] = ("cpu",)
    return validate(data)


_OUTPUTS = itertools.count()


def _add(store: JobStore, n: int = 1, owner: str = "ann") -> list[int]:
    return [
        store.add([f"/in/src{i}.jpg"], f"/in/clip{i}.mp4", f"/out/o{next(_OUTPUTS)}.mp4", _settings(),
                  owner).id
        for i in range(n)
    ]


def _claim(store: JobStore, worker: str, **kwargs: Any) -> Lease:
    lease = store.claim_next(worker, **kwargs)
    assert lease is not None, "nothing to claim"
    return lease


def _queued(store: JobStore) -> list[int]:
    return [j.id for j in store.list(states=["queued"])]


def test_default_location_wal_and_schema(isolated_dirs: dict[str, Path]) -> None:
    store = JobStore()
    assert store.path == paths.data_dir() / "queue.sqlite3"
    assert str(store.path).startswith(str(isolated_dirs["data"]))
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(UserError, match="newer facestation"):
        JobStore(store.path)


def test_add_get_list_and_persistence(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    job = store.add(["/a.jpg", Path("/b.jpg")], "/t.mp4", "/o.mp4", _settings(), owner="ann")
    assert job.state == "queued" and job.sources == ("/a.jpg", "/b.jpg") and job.attempts == 0
    assert job.settings == _settings()
    store.add(["/c.jpg"], "/t2.mp4", "/o2.mp4", Settings(), owner="bob")
    reopened = JobStore(tmp_path / "q.db")  # survives a restart
    assert reopened.get(job.id) == job
    assert [j.owner for j in reopened.list()] == ["ann", "bob"]
    assert [j.id for j in reopened.list(owner="bob")] == [job.id + 1]
    assert reopened.list(states=["running"]) == []
    with pytest.raises(UserError, match="unknown job state 'runing'"):
        reopened.list(states=["runing"])  # type: ignore[list-item]
    with pytest.raises(JobNotFound, match="no job 999"):
        reopened.get(999)
    with pytest.raises(UserError, match="at least one source"):
        store.add([], "/t.mp4", "/o.mp4", Settings())


def test_a_job_queued_with_the_old_section_names_still_loads(tmp_path: Path) -> None:
    """The store keeps each job's settings as JSON: a job queued before the face swapper's and enhancer's
    sections took their processors' names (``swapper``, ``enhancer``, version 1) reads as it was asked."""
    store = JobStore(tmp_path / "q.db")
    job = store.add(["/a.jpg"], "/t.mp4", "/o.mp4", _settings())
    old = json.loads(_settings().model_dump_json())
    old["swapper"], old["enhancer"], old["version"] = old.pop("face_swapper"), old.pop("face_enhancer"), 1
    with sqlite3.connect(store.path) as con:
        con.execute("UPDATE jobs SET settings = ? WHERE id = ?", (json.dumps(old), job.id))
    con.close()
    reread = JobStore(tmp_path / "q.db").get(job.id)
    assert '"swapper": {' in reread.settings_json  # what the store holds is the old form
    assert reread.settings == _settings() and reread.settings.face_swapper.pixel_boost == 256


def test_state_machine(tmp_path: Path) -> None:
    clock = FakeClock()
    store = JobStore(tmp_path / "q.db", clock=clock)
    a, b, c = _add(store, 3)
    lease = _claim(store, "w1")
    job = lease.job
    assert job.id == a and job.state == "running" and job.worker_id == "w1" and lease.worker_id == "w1"
    assert job.attempts == 1 and job.started_at == clock.now
    for action in (store.retry, store.delete):
        with pytest.raises(IllegalTransition, match=f"job {a}: it is running"):
            action(a)
    clock.now += 5
    done = lease.finish("done")
    assert done.state == "done" and done.finished_at == clock.now and done.error is None
    for action in (store.retry, store.request_cancel):
        with pytest.raises(IllegalTransition, match="it is done"):
            action(a)
    with pytest.raises(ClaimLost, match=f"job {a} is done"):  # a lease ends its job once
        lease.fail("late")
    second = _claim(store, "w1")
    assert second.id == b
    with pytest.raises(ValueError):
        second.finish("running")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fail"):
        second.finish("failed")
    failed = second.fail("ffmpeg exited with 1")
    assert failed.state == "failed" and failed.error == "ffmpeg exited with 1"
    assert _claim(store, "w1").id == c
    assert store.claim_next("w2") is None


def test_worker_reports(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db", log_limit=100)
    (a,) = _add(store)
    lease = _claim(store, "w1")
    assert lease.progress(Progress(10, 300, 25.0, 11.6, {"stage_s": {"swap": 0.02}})) is False
    assert lease.progress(Progress(20, fps=26.0, eta_s=10.8)) is False
    lease.save_resume({"segments": ["seg000.mkv", "seg001.mkv"]})
    for i in range(20):
        store.append_log(a, f"line {i:02d}")
    job = store.get(a)
    assert job.progress.frames_done == 20 and job.progress.frames_total == 300 and job.progress.fps == 26.0
    assert job.progress.stage_s == {"swap": 0.02} and job.progress.fraction == pytest.approx(20 / 300)
    assert job.resume == {"segments": ["seg000.mkv", "seg001.mkv"]}
    assert len(job.log) <= 100 and job.log.endswith("line 19\n") and "line 00" not in job.log
    impostor = Lease(store.db, lease.job, "w2")  # a lease is bound to its worker: no report skips the check
    for report in (impostor.heartbeat, lambda: impostor.progress(Progress(1)),
                   lambda: impostor.save_resume({}), impostor.finish, lambda: impostor.fail("x"),
                   lambda: impostor.release("x")):
        with pytest.raises(ClaimLost, match="held by w1, not w2"):
            report()
    job = store.get(a)
    assert job.progress.frames_done == 20 and job.state == "running" and job.resume  # changed nothing


def test_cancel(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    a, b = _add(store, 2)
    lease = _claim(store, "w1")
    queued = store.request_cancel(b)
    assert queued.state == "cancelled" and queued.finished_at is not None
    assert store.claim_next("w2") is None  # the cancelled job is never claimed
    running = store.request_cancel(a)
    assert running.state == "running" and running.cancel_requested
    assert lease.heartbeat() is True and lease.cancel_requested()
    assert lease.progress(Progress(5)) is True
    assert lease.finish("cancelled").state == "cancelled"
    with pytest.raises(IllegalTransition, match="cannot cancel"):
        store.request_cancel(a)


def test_retry_goes_to_the_end_and_keeps_resume(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    a, b, c = _add(store, 3)
    lease = _claim(store, "w1")
    lease.save_resume({"segments": ["s0"]})
    lease.fail("out of memory")
    store.request_cancel(b)
    retried = store.retry(a)
    assert retried.state == "queued" and retried.error is None and retried.attempts == 0
    assert retried.resume == {"segments": ["s0"]}
    store.retry(b)
    assert _queued(store) == [c, a, b]
    with pytest.raises(IllegalTransition, match="it is queued"):
        store.retry(c)


def test_reorder(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    ids = _add(store, 5)
    a, b, c, d, e = ids
    store.claim_next("w1")  # a runs: only queued jobs take part in the order
    assert _queued(store) == [b, c, d, e]
    store.move(e, "up")
    assert _queued(store) == [b, c, e, d]
    store.move(b, "down")
    assert _queued(store) == [c, b, e, d]
    store.move(d, "top")
    assert _queued(store) == [d, c, b, e]
    store.move(d, "bottom")
    assert _queued(store) == [c, b, e, d]
    store.move(e, 0)
    assert _queued(store) == [e, c, b, d]
    store.move(e, 99)  # clamped
    assert _queued(store) == [c, b, d, e]
    store.move(c, "up")  # already first: no change
    assert _queued(store) == [c, b, d, e]
    assert [j.id for j in store.list()][0] == a  # the running job keeps its place in the full list
    assert store.claim_next("w2").id == c  # type: ignore[union-attr]
    with pytest.raises(IllegalTransition, match="only queued jobs can move"):
        store.move(a, "top")
    with pytest.raises(UserError, match="move where"):
        store.move(b, "sideways")  # type: ignore[arg-type]


def test_delete(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    a, b, c = _add(store, 3)
    lease = _claim(store, "w1")
    with pytest.raises(IllegalTransition, match="cancel it first"):
        store.delete(a)
    store.delete(b)
    with pytest.raises(JobNotFound):
        store.get(b)
    with pytest.raises(JobNotFound):
        store.delete(b)
    lease.finish("done")
    store.delete(a)
    assert [j.id for j in store.list()] == [c]


def test_stale_heartbeat_is_reclaimed(tmp_path: Path) -> None:
    clock = FakeClock()
    store = JobStore(tmp_path / "q.db", stale_after=60, max_attempts=2, clock=clock)
    a, b = _add(store, 2)
    zombie = _claim(store, "dead", host="elsewhere")  # another host: only its heartbeat tells
    zombie.save_resume({"segments": ["s0", "s1"]})
    clock.now += 50
    zombie.heartbeat()
    clock.now += 59  # 59 s since the last heartbeat: still alive
    other = _claim(store, "w2", host="elsewhere")
    assert other.id == b
    other.heartbeat()
    clock.now += 2  # a: 61 s silent
    assert store.reclaim_stale() == [a]
    job = store.get(a)
    assert job.state == "queued" and job.worker_id is None and job.resume == {"segments": ["s0", "s1"]}
    assert job.worker_pid is None and job.worker_host is None
    assert "worker dead silent for 61 s" in job.log
    assert store.get(b).state == "running"
    with pytest.raises(ClaimLost):  # the zombie wakes up: it must stop, and cannot end the job
        zombie.heartbeat()
    with pytest.raises(ClaimLost):
        zombie.finish("done")
    with pytest.raises(ClaimLost):
        zombie.save_resume({})
    again = _claim(store, "w3").job
    assert again.id == a and again.attempts == 2 and again.worker_id == "w3"


def test_worker_deaths_with_progress_never_fail_a_job(tmp_path: Path) -> None:
    """However many times its worker dies, a job that recorded a new segment before each death goes back to
    the queue."""
    clock = FakeClock()
    store = JobStore(tmp_path / "q.db", stale_after=10, max_attempts=2, clock=clock)
    (a,) = _add(store)
    for death in range(12):
        lease = _claim(store, f"w{death}", host="elsewhere")
        assert lease.id == a and lease.job.attempts == death + 1
        lease.save_resume({"segments": [{"file": f"s{i}", "start": 5 * i, "frames": 5}
                                        for i in range(death + 1)]})
        lease.progress(Progress(40 + 5 * death, 300))  # not all kept
        clock.now += 11
        assert store.reclaim_stale() == [a]
        job = store.get(a)
        assert job.state == "queued" and job.error is None and job.failures == 0 and job.deaths == 0
        assert job.progress.frames_done == 5 * (death + 1)  # what the next run keeps
    assert store.get(a).log.count("re-queued") == 12
    _claim(store, "w-last").save_resume({"segments": []})
    assert store.release_worker("w-last") == [a]  # a restart under the same id: back in the queue too
    assert store.get(a).state == "queued"


def test_a_job_that_kills_its_worker_every_time_fails(tmp_path: Path) -> None:
    """Deaths without a new segment in between count: the ``max_attempts``-th in a row fails the job with
    one line (a recorded segment starts the count again), and the queue moves on to the next job."""
    clock = FakeClock()
    store = JobStore(tmp_path / "q.db", stale_after=10, max_attempts=3, clock=clock)
    a, b = _add(store, 2)

    def die(worker: str, *, segment: bool = False) -> None:
        lease = _claim(store, worker, host="elsewhere")
        assert lease.id == a
        if segment:
            lease.save_resume({"segments": [{"file": "s0", "start": 0, "frames": 5}]})
        clock.now += 11
        assert store.reclaim_stale() == [a]

    die("w0")
    die("w1")
    assert store.get(a).deaths == 2
    die("w2", segment=True)  # progress: this death does not count, the two before are forgiven
    assert (store.get(a).state, store.get(a).deaths) == ("queued", 0)
    die("w3")
    die("w4")
    assert (store.get(a).state, store.get(a).deaths) == ("queued", 2)
    store.claim_next("w5")  # this process: restarted under the same id, the third death in a row
    assert store.release_worker("w5") == [a]
    job = store.get(a)
    assert job.state == "failed" and job.failures == 0
    assert job.error == "the worker died 3 times on this job without progress (out of memory?)"
    assert job.progress.frames_done == 5 and job.finished_at is not None  # what a retry keeps
    assert _claim(store, "w6").id == b  # the queue is not blocked
    retried = store.retry(a)
    assert retried.state == "queued" and retried.deaths == 0


def test_a_worker_stopping_on_purpose_is_no_death(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db", max_attempts=1)
    (a,) = _add(store)
    for _ in range(3):
        job = _claim(store, "w").release("worker w stopped")
        assert job.state == "queued" and job.deaths == 0 and "worker w stopped: job re-queued" in job.log
    store.claim_next("w")
    store.release_worker("w")  # a restart after a crash: with max_attempts=1, the first death fails it
    assert store.get(a).state == "failed"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_dead_local_worker_is_seen_at_once(tmp_path: Path) -> None:
    """A worker of this host whose process has ended is gone without waiting for ``stale_after``: its job is
    put back by the next claim, and can be cancelled or deleted at once."""
    store = JobStore(tmp_path / "q.db", stale_after=3600)
    a, b, c = _add(store, 3)
    dead = _dead_pid()
    assert _claim(store, "killed", pid=dead).id == a
    assert store.holder_gone(store.get(a))
    lease = _claim(store, "next")  # puts a back at its place first, then takes it
    job = lease.job
    assert job.id == a and job.attempts == 2
    assert f"worker killed (pid {dead}) is gone: job re-queued" in job.log
    assert not store.holder_gone(job)  # this process holds it now
    with pytest.raises(IllegalTransition, match="cancel it first"):
        store.delete(a)
    # another host's pid cannot be checked from here: only the heartbeat tells
    assert _claim(store, "remote", pid=dead, host="elsewhere").id == b
    assert not store.holder_gone(store.get(b))
    # cancel and delete of a job whose worker died: at once, no worker needed
    lease.finish("done")
    store.claim_next("killed-too", pid=dead)
    cancelled = store.request_cancel(c)
    assert cancelled.state == "cancelled" and cancelled.worker_id is None and not cancelled.cancel_requested
    assert "is gone" in cancelled.log
    store.retry(c)
    store.claim_next("killed-again", pid=dead)
    assert store.delete(c).id == c
    assert [j.id for j in store.list()] == [a, b]


def test_errors_count_towards_max_attempts(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db", max_attempts=3)
    a, b = _add(store, 2)
    lease = _claim(store, "w")
    lease.save_resume({"segments": [{"file": "s0", "start": 0, "frames": 30}]})
    lease.progress(Progress(120, 300, 20.0, 9.0))
    for n in (1, 2):  # an error that may pass: queued again at its place, with its segments
        again = lease.fail("EncodeError: broken pipe", retry=True)
        assert again.state == "queued" and again.failures == n and again.error is None
        assert again.resume["segments"] and _queued(store) == [a, b]
        assert f"error {n} of at most 3: EncodeError: broken pipe" in again.log
        lease = _claim(store, "w")
        assert lease.id == a
    failed = lease.fail("EncodeError: broken pipe", retry=True)
    assert failed.state == "failed" and failed.failures == 3 and failed.error == "EncodeError: broken pipe"
    # its progress says what a retry keeps, not how far the failed run got
    p = failed.progress
    assert (p.frames_done, p.frames_total, p.fps, p.eta_s) == (30, 300, None, None)
    assert p.stage == {"step": "failed", "segments": 1}
    user = _claim(store, "w").fail("the folder of --output does not exist: /x")  # the user's: at once
    assert user.state == "failed" and user.failures == 1 and user.progress.frames_done == 0
    assert store.retry(a).failures == 0


def test_one_output_per_job(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    first = store.add(["/s.jpg"], "/t1.mp4", "/out/o.mp4", Settings())
    with pytest.raises(OutputTaken, match=f"job {first.id} \\(queued\\) already writes /out/o.mp4"):
        store.add(["/s.jpg"], "/t2.mp4", "/out/o.mp4", Settings())
    lease = _claim(store, "w")
    with pytest.raises(OutputTaken, match="running"):
        store.add(["/s.jpg"], "/t2.mp4", "/out/o.mp4", Settings())
    lease.fail("boom")
    second = store.add(["/s.jpg"], "/t2.mp4", "/out/o.mp4", Settings())  # the first one ended
    with pytest.raises(OutputTaken, match=f"job {second.id}"):
        store.retry(first.id)  # would write it again
    store.request_cancel(second.id)
    assert store.retry(first.id).state == "queued"
    assert len(store.list()) == 2


def test_a_version_1_queue_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA_V1)
    con.execute("INSERT INTO jobs (sources, target, output, settings, state, position, created_at, attempts) "
                "VALUES ('[\"/s.jpg\"]', '/t.mp4', '/o.mp4', ?, 'queued', 1, 0, 2)",
                (Settings().model_dump_json(),))
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    store = JobStore(db)
    (job,) = store.list()
    assert (job.attempts, job.failures, job.worker_pid, job.deaths, job.progressed, job.audio) == \
        (2, 0, None, 0, False, None)
    assert (job.number, job.render_s) == (1, None)  # the owner's first job; numbers go on from there
    assert store.add(["/s.jpg"], "/t2.mp4", "/o2.mp4", Settings()).number == 2
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5


def test_stale_job_with_cancel_requested_ends_cancelled(tmp_path: Path) -> None:
    clock = FakeClock()
    store = JobStore(tmp_path / "q.db", stale_after=10, clock=clock)
    (a,) = _add(store)
    store.claim_next("w1")
    store.request_cancel(a)
    clock.now += 11
    assert store.claim_next("w2") is None
    assert store.get(a).state == "cancelled"


def test_release_worker_on_restart(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    a, b = _add(store, 2)
    store.claim_next("gpu0")
    store.claim_next("gpu1")
    assert store.release_worker("gpu0") == [a]
    assert store.get(a).state == "queued" and store.get(b).state == "running"
    assert store.claim_next("gpu0").id == a  # type: ignore[union-attr]


# ---------------------------------------------------------------- several processes at once


def _adder(db: str, owner: str, n: int, start: Any, midway: Any) -> None:
    store = JobStore(db)
    start.wait()
    for i in range(n):
        if i == n // 2:  # the second half is added only once both claimers hold a job of the first
            midway.wait(scaled(60))
        store.add([f"/src/{owner}.jpg"], f"/t/{owner}{i}.mp4", f"/o/{owner}{i}.mp4", Settings(), owner=owner)
        time.sleep(0.001)  # spread the adds so that claims interleave with them


def _claimer(db: str, worker: str, expected: int, start: Any, midway: Any,
             results: multiprocessing.Queue) -> None:
    store = JobStore(db)
    mine: list[int] = []
    start.wait()
    deadline = time.time() + scaled(60)
    while time.time() < deadline:
        lease = store.claim_next(worker)
        if lease is None:
            if len(store.list(states=["done"])) >= expected:
                break
            time.sleep(0.001)
            continue
        if not mine:  # the first claim of each: taken while the adders are halfway
            midway.wait(scaled(60))
        lease.progress(Progress(1, 1))
        lease.log(f"done by {worker}")
        lease.finish("done")
        mine.append(lease.id)
    results.put((worker, mine))


def test_concurrent_processes_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    JobStore(db)
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = ctx.Queue()
    start, midway = ctx.Barrier(4), ctx.Barrier(4)
    procs = [
        ctx.Process(target=_adder, args=(db, "ann", 100, start, midway)),
        ctx.Process(target=_adder, args=(db, "bob", 100, start, midway)),
        ctx.Process(target=_claimer, args=(db, "w1", 200, start, midway, results)),
        ctx.Process(target=_claimer, args=(db, "w2", 200, start, midway, results)),
    ]
    for p in procs:
        p.start()
    claimed = dict(results.get(timeout=scaled(90)) for _ in range(2))
    for p in procs:
        p.join(timeout=scaled(30))
        assert p.exitcode == 0
    jobs = JobStore(db).list()
    ids = [j.id for j in jobs]
    assert len(jobs) == 200 and len(set(ids)) == 200
    assert sorted(j.owner for j in jobs).count("ann") == 100
    assert len({j.position for j in jobs}) == 200  # queue order is a total order
    assert all(j.state == "done" and j.attempts == 1 for j in jobs)
    both = claimed["w1"] + claimed["w2"]
    assert sorted(both) == sorted(ids)  # each job claimed exactly once, by one worker
    assert all(j.log == f"done by {j.worker_id}\n" for j in jobs)
    # the processes really overlapped (held so on any machine): jobs were claimed by both workers while
    # others were still to be added
    assert min(j.started_at or 0.0 for j in jobs) < max(j.created_at for j in jobs)
    assert claimed["w1"] and claimed["w2"]


def test_threads_share_one_store(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.db")
    taken: list[int] = []

    def work(worker: str) -> None:
        for _ in range(25):
            _add(store)
            lease = store.claim_next(worker)
            if lease is not None:
                lease.finish("done")
                taken.append(lease.id)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.list()) == 100
    assert len(taken) == len(set(taken)) == len(store.list(states=["done"]))
