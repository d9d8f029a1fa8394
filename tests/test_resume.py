"""Resumable video jobs: frame-exact ranges, segment bookkeeping, and a worker killed with SIGKILL
five times.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

from pipeline.jobs import runner, segments
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import start_in_thread
from pipeline.settings import Settings, apply_overrides
from pipeline.video.decode import read_frames
from tests import photos
from tests.videos import count_frames, make_clip, stream_info

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face6.mp4", seconds=6, size=(320, 240),
                     face_image=photos.astronaut())


def _duration(path: Path, kind: str) -> float:
    stream = next(s for s in stream_info(path)["streams"] if s["codec_type"] == kind)
    return float(stream["duration"])


def test_frame_range_is_exact_by_index(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "src.mp4", seconds=1.0, fps=25, audio=False)
    full = list(read_frames(clip))
    part = list(read_frames(clip, frames=(7, 19)))
    tail = list(read_frames(clip, frames=(20, None)))
    assert len(full) == 25 and len(part) == 12 and len(tail) == 5
    for i, frame in enumerate(part):
        assert np.array_equal(frame, full[7 + i]), f"frame {7 + i} differs"
    assert np.array_equal(tail[-1], full[-1])
    # with a seconds trim too: indices count from the trim start, and the trim end still holds
    trimmed = list(read_frames(clip, start=0.2, end=0.8))
    ranged = list(read_frames(clip, start=0.2, end=0.8, frames=(3, None)))
    assert len(ranged) == len(trimmed) - 3
    assert np.array_equal(ranged[0], trimmed[3])


def test_usable_segments_drops_anything_that_does_not_match(tmp_path: Path, face_clip: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    segs = [segments.Segment(segments.segment_name(i * 10), i * 10, 10) for i in range(3)]
    for s in segs:
        (work / s.file).write_bytes(b"x")
    record = segments.resume_record(work, 10, face_clip, FAST, segs)
    assert segments.usable_segments(record, work, 10, face_clip, FAST) == segs
    assert segments.usable_segments(record, work, 12, face_clip, FAST) == []  # other segment length
    other = apply_overrides(FAST, ["output.quality=50"])
    assert segments.usable_segments(record, work, 10, face_clip, other) == []  # other settings
    (work / segs[1].file).unlink()
    assert segments.usable_segments(record, work, 10, face_clip, FAST) == segs[:1]  # a gap ends the run


def test_stopped_worker_resumes_from_its_segments(tmp_path: Path, face_clip: Path) -> None:
    """Stop the in-thread worker mid-job (it re-queues the job), start another: the job resumes,
    frames exact.
    """
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "out.mkv"
    job = store.add([photos.grace_hopper_path()], face_clip, out, FAST)
    handle = start_in_thread(store, "w1", segment_seconds=0.5)
    deadline = time.time() + 60
    while len(store.get(job.id).resume.get("segments", [])) < 3:
        assert time.time() < deadline and handle.alive, store.get(job.id).log
        time.sleep(0.05)
    assert handle.stop(timeout=10)
    back = store.get(job.id)
    assert back.state == "queued" and not out.exists()
    kept = len(back.resume["segments"])
    handle = start_in_thread(store, "w1", segment_seconds=0.5)
    while not store.get(job.id).finished:
        assert time.time() < deadline, store.get(job.id).log
        time.sleep(0.1)
    handle.stop()
    done = store.get(job.id)
    assert done.state == "done", done.error
    assert f"resuming at frame {kept * 15}" in done.log
    assert count_frames(out) == count_frames(face_clip) == 180
    assert {s["codec_type"] for s in stream_info(out)["streams"]} == {"video", "audio"}
    assert not runner.work_dir(job.id).exists()


def _worker(env: dict[str, str], worker_id: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli", "queue", "run", "--worker-id", worker_id],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _no_done_job_without_its_file(store: JobStore) -> None:
    for job in store.list(states=["done"]):
        out = Path(job.output)
        assert out.is_file() and out.stat().st_size > 0, f"job {job.id} is done but {out} is missing"
        assert count_frames(out) == job.progress.frames_total, f"job {job.id}: {out} is truncated"


def _check_final(store: JobStore, job: Any, out: Path, face_clip: Path, kills: list[tuple[int, float]],
                 total_s: float) -> None:
    final = store.get(job.id)
    assert final.state == "done", (final.error, final.log)
    # five or six runs (the last kill may land after "done"); resumed runs do not count against max_attempts
    assert final.log.count(" on worker ") in (5, 6) and final.log.count("resuming at frame") >= 4, final.log
    assert final.attempts <= 2, final.log
    assert "worker w-a restarted" in final.log and "worker w-a silent" in final.log, final.log
    _no_done_job_without_its_file(store)
    n_in = count_frames(face_clip)
    assert count_frames(out) == n_in == 180
    assert abs(_duration(out, "video") - _duration(face_clip, "video")) <= 1 / 30 + 1e-3
    assert abs(_duration(out, "audio") - _duration(face_clip, "audio")) <= 0.05
    assert "synthetic" in stream_info(out)["format"]["tags"].get("comment", "")
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers
    assert not runner.work_dir(job.id).exists()
    print(f"kills (segments recorded, s since start): {kills}; total {total_s:.1f} s")


@pytest.mark.slow
def test_sigkill_five_times_then_done_with_exact_frames_and_audio(tmp_path: Path, face_clip: Path) -> None:
    env = {**os.environ, "FACESTATION_SEGMENT_SECONDS": "0.5", "FACESTATION_QUEUE_STALE_AFTER": "1.5",
           "PYTHONPATH": str(REPO)}
    store = JobStore(stale_after=1.5)  # default max_attempts; FACESTATION_DATA is this test's own folder
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], face_clip, out, FAST)
    rng = random.Random(5)
    started = time.perf_counter()
    kills: list[tuple[int, float]] = []
    for attempt in range(5):
        # the same id again (it puts back its own job at start-up) or another id (takes it once stale)
        worker_id = ("w-a", "w-a", "w-b", "w-b", "w-a")[attempt]
        proc = _worker(env, worker_id)
        deadline = time.time() + 40
        before = len(store.get(job.id).resume.get("segments", []))
        # wait until this worker has finished one more segment, then kill it at a random point of the next
        while len((j := store.get(job.id)).resume.get("segments", [])) <= before:
            if time.time() > deadline or proc.poll() is not None or j.finished:
                proc.kill()
                stderr = proc.communicate()[1].decode()[-3000:]
                raise AssertionError(f"{worker_id} made no segment: {j}\n{stderr}")
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.6))  # inside the next segment, at its boundary, or later
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for child in children:  # orphaned ffmpeg (they end on their own when their pipe closes)
            if child.is_running():
                child.kill()
        segments = len(store.get(job.id).resume.get("segments", []))
        kills.append((segments, round(time.perf_counter() - started, 1)))
        _no_done_job_without_its_file(store)
        # killed between the final rename and marking the job done: the file is already whole
        assert not out.exists() or count_frames(out) == 180
    proc = _worker(env, "w-a")
    deadline = time.time() + 60
    while not store.get(job.id).finished and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    total_s = time.perf_counter() - started
    try:
        _check_final(store, job, out, face_clip, kills, total_s)
    except BaseException:
        proc.kill()
        raise
    # the last kill may have landed after the job was done: wait until this worker is up (its lock names it,
    # and its SIGTERM handler is set before it takes the lock) before stopping it
    lock = store.path.parent / "workers" / "w-a.lock"
    wait_until = time.time() + 60
    while (proc.poll() is None and time.time() < wait_until
           and not (lock.exists() and lock.read_text() == str(proc.pid))):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # a graceful stop: the worker is idle, it just exits
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        job_now = store.get(job.id)
        raise AssertionError(f"worker ignored SIGTERM for 60 s; job {job_now.state}\n{job_now.log}\n"
                             f"{err.decode()[-3000:]}") from None
    assert proc.returncode == 0, err.decode()[-2000:]
