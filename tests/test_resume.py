"""Resumable video jobs: frame-exact ranges, wall-time checkpoints, a join that never drifts, and a worker
killed with SIGKILL twenty times at random moments.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import psutil
import pytest

from pipeline.jobs import runner, segments
from pipeline.jobs.hold import FolderGate, Gate
from pipeline.jobs.resume import ResumeRecord
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import start_in_thread
from pipeline.settings import Settings, apply_overrides
from pipeline.video import ffmpeg
from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from pipeline.video.trim import Trim
from tests import photos
from tests.timing import scaled
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


def _frame_times(path: Path) -> list[float]:
    """Presentation times of the video frames, in order."""
    tools = ffmpeg.find_tools()
    assert tools.ffprobe, "needs ffprobe"
    out = subprocess.run([tools.ffprobe, "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "packet=pts_time", "-of", "csv=p=0", str(path)], capture_output=True, check=True)
    return sorted(float(line) for line in out.stdout.decode().split())


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
    trimmed = list(read_frames(clip, trim=Trim(0.2, 0.8)))
    ranged = list(read_frames(clip, trim=Trim(0.2, 0.8), frames=(3, None)))
    assert len(ranged) == len(trimmed) - 3
    assert np.array_equal(ranged[0], trimmed[3])


def test_a_local_record_keeps_the_gap_free_run_and_nothing_of_another_run(tmp_path: Path,
                                                                          face_clip: Path) -> None:
    """The keep rules of a time-paced run (:mod:`pipeline.jobs.resume`)."""
    work = tmp_path / "work"
    work.mkdir()
    lengths = [7, 31, 12]  # a segment is as long as the render got in its wall time
    starts = [0, 7, 38]
    segs = [segments.Segment(segments.segment_name(a), a, n) for a, n in zip(starts, lengths, strict=True)]
    for s in segs:
        (work / s.file).write_bytes(b"x")
    run = ResumeRecord.for_run(work, face_clip, FAST)
    record = run.with_segments(segs, complete=True).to_json()
    assert record == {"v": 2, "work": str(work), "target": run.target, "settings": run.settings,
                      "segments": [{"file": s.file, "start": s.start, "frames": s.frames} for s in segs],
                      "complete": True}  # the format of the records already in queues
    kept = run.kept(record)
    assert list(kept.segments) == segs and kept.complete and kept.frames == 50
    other = apply_overrides(FAST, ["output.quality=50"])
    assert not ResumeRecord.for_run(work, face_clip, other).kept(record).segments  # other settings
    assert not run.kept({**record, "v": 1}).segments  # an older record
    assert not run.kept({**record, "target": {**run.target, "size": 1}}).segments  # the target changed
    assert not run.kept({**record, "work": str(tmp_path)}).segments
    holed = {**record, "segments": [record["segments"][0], record["segments"][2]]}
    assert list(run.kept(holed).segments) == segs[:1] and not run.kept(holed).complete  # 7..37 missing
    damaged = {**record, "segments": [record["segments"][0], {"file": 3}, record["segments"][2]]}
    assert list(run.kept(damaged).segments) == segs[:1]
    (work / segs[1].file).unlink()
    assert list(run.kept(record).segments) == segs[:1]  # a gap ends the run


def test_pace_checkpoints_by_wall_time_or_by_frames() -> None:
    pace = segments.Pace.every(3.0)
    assert (pace.first_s, pace.every_s) == (1.0, 3.0)
    assert not pace.ends(0.9, first=True) and pace.ends(1.0, first=True)  # the first one of a run sooner
    assert not pace.ends(2.9, first=False) and pace.ends(3.0, first=False)
    counted = segments.Pace.frames(30)  # the same on any machine
    assert not counted.ends(1e9, first=True, frames=29) and counted.ends(0.0, first=False, frames=30)


def test_concat_list_gives_exact_durations(tmp_path: Path) -> None:
    segs = [segments.Segment("a.mkv", 0, 7), segments.Segment("b.mkv", 7, 13),
            segments.Segment("c.mkv", 20, 1)]
    text = segments.concat_list(segs, tmp_path, Fraction(30000, 1001))
    durations = [float(line.split()[1]) for line in text.splitlines() if line.startswith("duration")]
    assert text.splitlines()[0] == f"file '{tmp_path / 'a.mkv'}'"
    assert durations == [0.233567, 0.433766, 0.033367]
    assert sum(durations) == pytest.approx(21 * 1001 / 30000, abs=1e-6)  # the rounding never adds up


def test_uneven_segments_join_frame_exact_without_drift(tmp_path: Path) -> None:
    """Segments ended by a (fake) wall clock have any length; joined by stream copy, every frame keeps its
    exact time (29.97 fps: frame durations are not whole milliseconds) and the audio its length."""
    clip = make_clip(tmp_path / "src.mp4", seconds=4, size=(96, 64), fps="30000/1001")
    info = probe(clip)
    now = [0.0]
    rng = random.Random(3)
    steps = iter(rng.choice([0.05, 0.2, 0.4, 1.1]) for _ in range(1000))
    recorded: list[segments.Segment] = []
    work = tmp_path / "work"
    writer = segments.SegmentWriter(work, first_frame=0, pace=segments.Pace.every(1.5), source=info,
                                    settings=FAST, size=(96, 64), on_segment=recorded.append,
                                    clock=lambda: now[0])
    for frame in read_frames(clip):
        writer.write(frame)
        now[0] += next(steps)
    writer.close()
    lengths = [s.frames for s in recorded]
    assert sum(lengths) == count_frames(clip) == 120 and len(set(lengths)) > 3, lengths
    assert [s.start for s in recorded] == [sum(lengths[:i]) for i in range(len(lengths))]
    out = tmp_path / "joined.mp4"
    segments.join_segments(recorded, work, out, job_id=1, source=info, settings=FAST, models=[])
    assert count_frames(out) == 120
    times = _frame_times(out)
    drift = max(abs(t - times[0] - i * 1001 / 30000) for i, t in enumerate(times))
    assert drift < 0.002, drift
    assert abs(_duration(out, "audio") - _duration(clip, "audio")) <= 0.05


@pytest.mark.parametrize("said", ["av_interleaved_write_frame(): No space left on device",
                                  "Error writing trailer of o.mp4: Read-only file system"])
def test_a_join_the_disk_refuses_fails_with_the_shared_one_line(tmp_path: Path, said: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """ffmpeg's text saying the output's disk refused (whatever its exit code): the user's error of
    :func:`pipeline.errors.fault_in_text`, the same line a one-piece render gives, and no temp file left."""
    from pipeline.errors import OutputFault, fault_in_text

    class Refused:
        cancelled = False

        def __init__(self, cmd: list[str], cancel: object = None) -> None:
            Path(cmd[-1].removeprefix("file:")).write_bytes(b"half")

        def wait(self) -> int:
            return 0

        def tail(self, lines: int = 5) -> str:
            return said

        def last_error(self) -> str:
            return said

        def close(self) -> None:
            pass

    monkeypatch.setattr(segments, "FFmpegProcess", Refused)
    clip = make_clip(tmp_path / "src.mp4", seconds=1, size=(96, 64))
    out = tmp_path / "out" / "o.mp4"
    out.parent.mkdir()
    with pytest.raises(OutputFault) as refused:
        segments.join_segments([segments.Segment("seg-00000000.mkv", 0, 25)], tmp_path, out, job_id=1,
                               source=probe(clip), settings=FAST, models=[])
    assert str(refused.value) == str(fault_in_text(said, out)) and str(out) in str(refused.value)
    assert list(out.parent.iterdir()) == []


def test_a_frame_count_or_nothing_ends_segments_too(tmp_path: Path) -> None:
    """A planned segment (a farm task's range) is cut by frame count; with no rule the sink writes one."""
    clip = make_clip(tmp_path / "src.mp4", seconds=25 / 30, size=(64, 48), audio=False)
    info = probe(clip)
    frames = list(read_frames(clip))
    for cap, lengths in ((10, [10, 10, 5]), (None, [25])):
        recorded: list[segments.Segment] = []
        writer = segments.SegmentWriter(tmp_path / str(len(lengths)), first_frame=100, source=info,
                                        settings=FAST, size=(64, 48), on_segment=recorded.append,
                                        segment_frames=cap)
        for frame in frames:
            writer.write(frame)
        writer.close()
        assert [(s.start, s.frames) for s in recorded] == list(zip([100, 110, 120], lengths, strict=False))


def test_stopped_worker_resumes_from_its_segments(tmp_path: Path, face_clip: Path) -> None:
    """Hold the in-thread worker's job after its third segment (30 frames each: a pace counted in frames, so
    the same on any machine), stop the worker there (it re-queues the job), start another: the job resumes
    from those 90 frames, frames exact.
    """
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "out.mkv"
    job = store.add([photos.grace_hopper_path()], face_clip, out, FAST)
    gate = Gate(after=3)
    handle = start_in_thread(store, "w1", pace=segments.Pace.frames(30), hold=gate)
    assert gate.reached.wait(scaled(90)) and handle.alive, store.get(job.id).log
    assert handle.stop(timeout=scaled(10))
    back = store.get(job.id)
    assert back.state == "queued" and not out.exists()
    assert back.kept_frames == 90 and [s["start"] for s in back.resume["segments"]] == [0, 30, 60]
    handle = start_in_thread(store, "w1", pace=segments.Pace.frames(30))
    deadline = time.monotonic() + scaled(90)
    while not store.get(job.id).finished:
        assert time.monotonic() < deadline, store.get(job.id).log
        time.sleep(0.1)
    handle.stop()
    done = store.get(job.id)
    assert done.state == "done", done.error
    assert "resuming at frame 90 (3 finished segments kept)" in done.log, done.log
    assert "(resumed at frame 90)" in done.log  # the second run rendered only the rest
    assert count_frames(out) == count_frames(face_clip) == 180
    assert {s["codec_type"] for s in stream_info(out)["streams"]} == {"video", "audio"}
    kept = sorted(p.name for p in runner.work_dir(job.id).glob("seg-*"))  # kept for a re-render of a stretch
    assert kept == sorted(s["file"] for s in done.resume["segments"]), kept


# ---------------------------------------------------------------- twenty kill -9


@pytest.fixture(scope="module")
def clip_720p(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face720.mp4", seconds=10, size=(1280, 720),
                     face_image=photos.astronaut())


def _worker(env: dict[str, str], worker_id: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli", "queue", "run", "--worker-id", worker_id, *extra],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_with_children(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """SIGKILL the worker; returns the child processes it had (frozen first, so none starts meanwhile)."""
    proc.send_signal(signal.SIGSTOP)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return children


def _wait_gone(children: list[psutil.Process], timeout: float = 60.0) -> list[str]:
    """Wait for orphaned children (ffmpeg ends once its pipe to the dead worker closes); the ones left."""
    _, alive = psutil.wait_procs(children, timeout=timeout)
    return [f"{p.pid} {p.name()}" for p in alive]


def _check_done(store: JobStore, job_id: int, out: Path, clip: Path) -> None:
    final = store.get(job_id)
    assert final.state == "done", (final.error, final.log)
    assert final.failures == 0 and "failed" not in final.log, final.log
    assert count_frames(out) == count_frames(clip) == 300
    times = _frame_times(out)
    assert max(abs(t - times[0] - i / 30) for i, t in enumerate(times)) < 0.002
    assert abs(_duration(out, "video") - _duration(clip, "video")) <= 1 / 30 + 1e-3
    assert abs(_duration(out, "audio") - _duration(clip, "audio")) <= 0.05
    assert "synthetic" in stream_info(out)["format"]["tags"].get("comment", "")
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers
    kept = sorted(p.name for p in runner.work_dir(job_id).glob("seg-*"))  # kept for a re-render of a stretch
    assert kept == sorted(s["file"] for s in final.resume["segments"]), kept


@pytest.mark.slow
def test_twenty_kills_at_random_moments_then_done_frame_exact_with_audio(tmp_path: Path,
                                                                         clip_720p: Path) -> None:
    """A 10 s 720p job in 10-frame segments; its worker is killed with SIGKILL 20 times. Each run may record
    one segment more than the last kept (a hold, armed by ``FACESTATION_TEST_HOLD``), so the job is never
    done before the test lets it be, on any machine: a kill lands either while the run is held mid-render
    (its ffmpeg processes running) or at a random moment (loading, rendering, encoding, held). Workers take
    turns under the same id (the next one puts back its own job at start) and under another id (it sees the
    dead pid; the heartbeat is never stale here). The job never fails, ends frame-exact with its audio, no
    finished segment is ever lost, and no ffmpeg outlives its worker. (A kill before a run's first segment
    counts as a death without progress: more attempts than kills, so that early kills in a row do not fail
    the job here.)"""
    hold = FolderGate(tmp_path / "hold")
    hold.folder.mkdir()
    (hold.folder / "pace_frames").write_text("10", encoding="utf-8")
    env = {**os.environ, "FACESTATION_QUEUE_STALE_AFTER": "3600", "FACESTATION_QUEUE_MAX_ATTEMPTS": "25",
           "PYTHONPATH": str(REPO), "FACESTATION_TEST_HOLD": str(hold.folder)}
    store = JobStore()  # FACESTATION_DATA is this test's own folder
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip_720p, out, FAST)
    rng = random.Random(20)
    history: list[tuple[str, str, int]] = []
    for kill in range(20):
        recorded = len(store.get(job.id).resume.get("segments", []))
        hold.allow(recorded + 1)
        proc = _worker(env, ("w-a", "w-b")[kill % 3 == 2])
        held = kill % 2 == 0 or rng.random() < 0.3
        if held:  # wait until this run has recorded its segment and waits: mid-render
            deadline = time.monotonic() + scaled(180)
            while len(store.get(job.id).resume.get("segments", [])) <= recorded or hold.reached() <= recorded:
                assert time.monotonic() < deadline and proc.poll() is None, store.get(job.id).log
                time.sleep(0.02)
            moment = "held"
        else:
            delay = rng.uniform(0.2, 4.0)
            time.sleep(delay)
            moment = f"{delay:.1f} s"
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        if held:  # a held run still renders: its decoder is running, blocked on its full pipe
            names = [c.name() for c in psutil.Process(proc.pid).children(recursive=True)]
            assert any("ffmpeg" in n for n in names), names
        children = _kill_with_children(proc)
        now = store.get(job.id)
        history.append((moment, now.state, now.kept_frames))
        assert now.state in ("queued", "running") and now.failures == 0, (now.error, now.log)
        assert not out.exists()  # never done while held
        left = _wait_gone(children, timeout=scaled(60))
        assert left == [], f"children of the killed worker still running: {left}"
    hold.allow(None)  # the last run goes to the end
    proc = _worker(env, "w-a", "--once")
    try:
        _, err = proc.communicate(timeout=scaled(600))
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode()[-3000:]
    _check_done(store, job.id, out, clip_720p)
    kept = [k for _, _, k in history]
    assert kept == sorted(kept) and kept[-1] > 0, history  # a death never loses a finished segment
    assert sum(m == "held" for m, _, _ in history) >= 10, history
    log = store.get(job.id).log
    assert f"resuming at frame {kept[-1]} " in log, log  # the last run went on from the segments it found
    print(f"kills (moment, state, frames kept): {history}; {log.count(' on worker ')} runs, "
          f"{log.count('resuming at frame')} resumed")
