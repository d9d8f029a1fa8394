"""Re-rendering a stretch of a finished job (pipeline/jobs/rerender.py): only the segments covering it change
(the others' encoded packets are the same bytes), the audio is untouched, a SIGKILL during it leaves the
previous output byte-identical and the job resumable, and bad requests get one line (exit 2)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import psutil
import pytest

from cli.main import main
from pipeline.jobs import rerender, runner, segments
from pipeline.jobs.hold import FolderGate, Gate
from pipeline.jobs.model import Job
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import start_in_thread
from pipeline.settings import Settings, apply_overrides
from pipeline.video import ffmpeg
from tests import photos
from tests.timing import scaled
from tests.videos import count_frames, make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])
# visibly other pixels on the swapped face; every swapped face judged unlike the source (the report shows it)
CHANGE = ["face_swapper.poisson=true", "mask.blur=0.9", "report.identity_min=0.999"]
REPO = Path(__file__).resolve().parent.parent
FPS = 30


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face2.mp4", seconds=2, size=(320, 240), fps=FPS,
                     face_image=photos.astronaut())


def packets(path: Path) -> dict[str, list[tuple[float, str]]]:
    """Each stream's packets (by codec type) as (presentation time, sha1 of the data)."""
    tools = ffmpeg.find_tools()
    assert tools.ffprobe, "needs ffprobe"
    out = subprocess.run([tools.ffprobe, "-v", "error", "-show_packets", "-show_data_hash", "SHA256",
                          "-show_entries", "packet=codec_type,pts_time,data_hash", "-of", "json", str(path)],
                         capture_output=True, check=True)
    found: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for p in json.loads(out.stdout)["packets"]:
        found[p["codec_type"]].append((float(p["pts_time"]), p["data_hash"]))
    return found


def by_segment(path: Path, starts: list[int]) -> list[str]:
    """One digest per segment (its frames' video packets, frames counted from the first one's time)."""
    video = packets(path)["video"]
    first = min(t for t, _ in video)
    groups: dict[int, list[str]] = defaultdict(list)
    for t, digest in sorted(video):
        frame = round((t - first) * FPS)
        groups[max(s for s in starts if s <= frame)].append(digest)
    return [hashlib.sha1("".join(groups[s]).encode()).hexdigest() for s in starts]


def _wait_done(store: JobStore, job_id: int) -> Job:
    deadline = time.monotonic() + scaled(180)
    while (job := store.get(job_id)).state not in ("done", "failed", "cancelled") or rerender.pending(job):
        assert time.monotonic() < deadline, job.log
        time.sleep(0.05)
    assert job.state == "done", (job.error, job.log)
    return job


def _starts(job: Job) -> list[int]:
    return [int(s["start"]) for s in job.resume["segments"]]


def test_a_stretch_changes_only_its_segments_and_keeps_the_audio(tmp_path: Path, clip: Path) -> None:
    """A 60-frame job in 10-frame segments; frames 25-34 again with other settings: segments 20 and 30 are
    new, the other four keep their packets byte for byte, the audio packets too; a second re-render of
    the same stretch written beside it leaves the output and the segments alone."""
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, FAST)
    handle = start_in_thread(store, "w", pace=segments.Pace.frames(10))
    try:
        done = _wait_done(store, job.id)
        starts = _starts(done)
        assert starts == [0, 10, 20, 30, 40, 50]
        assert all((runner.work_dir(job.id) / s["file"]).is_file() for s in done.resume["segments"])
        before, audio = by_segment(out, starts), packets(out)["audio"]
        first = json.loads((tmp_path / "out.quality.json").read_text())
        first_flagged = [f["frame"] for f in first["frames"] if "identity" in f["flags"]]
        assert 30 not in first_flagged and first["frames"][30]["identity"], first["frames"][30]

        assert main(["queue", "rerender", str(job.id), "--frames", "25-34",
                     *(a for c in CHANGE for a in ("--set", c))]) == 0
        after_job = _wait_done(store, job.id)
        after = by_segment(out, starts)
        changed = [s for s, b, a in zip(starts, before, after, strict=True) if a != b]
        assert changed == [20, 30], (changed, after_job.log)
        assert packets(out)["audio"] == audio
        assert count_frames(out) == 60
        assert "re-rendered frames 25-34 (2 segment(s))" in after_job.log
        report = json.loads((tmp_path / "out.quality.json").read_text())  # the new frames' records spliced in
        assert [f["frame"] for f in report["frames"]] == list(range(60)) and report["summary"]["frames"] == 60
        flagged = [f["frame"] for f in report["frames"] if "identity" in f["flags"]]
        assert 30 in flagged and set(flagged) - set(first_flagged) <= set(range(20, 40)), flagged
        assert after_job.settings == FAST  # the job's own settings stay; the stretch's are in its log
        files = sorted(s["file"] for s in after_job.resume["segments"])
        assert [f for f in files if f.startswith("r1/")] == ["r1/seg-00000020.mkv", "r1/seg-00000030.mkv"]
        work = runner.work_dir(job.id)
        on_disk = sorted(str(p.relative_to(work)) for p in work.rglob("*.mkv"))
        assert on_disk == files  # the replaced segments are gone

        kept = out.read_bytes()
        rerender.submit(store, job.id, "0-3", [], beside=True)
        _wait_done(store, job.id)
        beside = tmp_path / "out.rerender-2.mp4"
        assert out.read_bytes() == kept and beside.is_file()
        assert by_segment(beside, starts)[1:] == after[1:]
        assert sorted(s["file"] for s in store.get(job.id).resume["segments"]) == files
    finally:
        handle.stop()
    from pipeline.jobs import service

    service.delete(store, job.id)
    assert not runner.work_dir(job.id).exists()  # deleting the job takes its kept segments


def test_a_stretch_past_a_marker_keeps_the_markers_settings(tmp_path: Path, clip: Path) -> None:
    """A job with a marker at frame 30 (another colour matching from there) and a job with that colour
    matching throughout; frames 35-44 of each again with an override that leaves the pixels alone: the new
    segments (frames 30-49) of the marked job are those of the other, pixel for pixel: rendered with the
    marker's settings, not the settings before it."""
    from pipeline import markers
    from pipeline.video.decode import read_frames

    store = JobStore()
    marked, throughout = tmp_path / "marked.mp4", tmp_path / "throughout.mp4"
    jobs = [store.add([photos.grace_hopper_path()], clip, marked,
                      markers.with_markers(FAST, ["30=color.method=mkl"])),
            store.add([photos.grace_hopper_path()], clip, throughout,
                      apply_overrides(FAST, ["color.method=mkl"]))]
    handle = start_in_thread(store, "w", pace=segments.Pace.frames(10))
    try:
        for job in jobs:
            _wait_done(store, job.id)
        first = [f.astype(int) for f in read_frames(marked)]
        for job in jobs:
            assert main(["queue", "rerender", str(job.id), "--frames", "35-44",
                         "--set", "report.jitter_max=0.2"]) == 0
            _wait_done(store, job.id)
    finally:
        handle.stop()
    got, other = list(read_frames(marked)), list(read_frames(throughout))
    assert len(got) == len(other) == 60
    assert all(np.array_equal(got[i], first[i]) for i in range(30)), "a frame before the stretch changed"
    for i in range(30, 50):
        assert np.array_equal(got[i], other[i]), f"frame {i} is not rendered with the marker's settings"


def test_a_cancelled_rerender_keeps_the_output_and_its_segments_and_a_retry_finishes_it(
        tmp_path: Path, clip: Path) -> None:
    """Cancelled while held after its first new segment: the output and the job's segments are as they were;
    a retry goes on from the recorded segment."""
    store = JobStore()
    out = tmp_path / "out.mkv"
    job = store.add([photos.grace_hopper_path()], clip, out, FAST)
    handle = start_in_thread(store, "w", pace=segments.Pace.frames(20))
    try:
        done = _wait_done(store, job.id)
    finally:
        handle.stop()
    previous = out.read_bytes()
    assert _starts(done) == [0, 20, 40]
    rerender.submit(store, job.id, "5-45", CHANGE)  # all three segments
    gate = Gate(after=1)  # never opened: held after the first new segment
    handle = start_in_thread(store, "w", pace=segments.Pace.frames(20), hold=gate)
    try:
        assert gate.reached.wait(scaled(120)), store.get(job.id).log
        store.request_cancel(job.id)
        deadline = time.monotonic() + scaled(30)
        while store.get(job.id).state != "cancelled":
            assert time.monotonic() < deadline, store.get(job.id).log
            time.sleep(0.05)
    finally:
        handle.stop()
    assert out.read_bytes() == previous
    work = runner.work_dir(job.id)
    assert all((work / s["file"]).is_file() for s in done.resume["segments"])
    store.retry(job.id)
    handle = start_in_thread(store, "w", pace=segments.Pace.frames(20))
    try:
        final = _wait_done(store, job.id)
    finally:
        handle.stop()
    assert "resuming the re-render of frames 5-45 (1 new segment(s) kept)" in final.log, final.log
    assert out.read_bytes() != previous and count_frames(out) == 60


def _worker(env: dict[str, str], *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "cli", "queue", "run", "--worker-id", "w", *extra],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_kill_9_during_a_rerender_keeps_the_output_and_the_job_resumes(tmp_path: Path, clip: Path) -> None:
    """The worker re-rendering two segments is held after the first new one is recorded (before the join)
    and killed with SIGKILL: the output is byte-identical, the job is not done; a new worker finishes the
    re-render from the recorded segment."""
    hold = FolderGate(tmp_path / "hold")
    hold.folder.mkdir()
    (hold.folder / "pace_frames").write_text("10", encoding="utf-8")
    env = {**os.environ, "FACESTATION_QUEUE_STALE_AFTER": "3600", "PYTHONPATH": str(REPO),
           "FACESTATION_TEST_HOLD": str(hold.folder)}
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, FAST)
    proc = _worker(env, "--once")
    _, err = proc.communicate(timeout=scaled(300))
    assert proc.returncode == 0, err.decode()[-3000:]
    starts = _starts(store.get(job.id))
    previous = out.read_bytes()
    before = by_segment(out, starts)

    rerender.submit(store, job.id, "15-25", CHANGE)
    (hold.folder / "reached").unlink(missing_ok=True)
    hold.allow(1)
    proc = _worker(env)
    deadline = time.monotonic() + scaled(180)
    while hold.reached() < 1:
        assert time.monotonic() < deadline and proc.poll() is None, store.get(job.id).log
        time.sleep(0.02)
    proc.send_signal(signal.SIGSTOP)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    psutil.wait_procs(children, timeout=scaled(60))
    held = store.get(job.id)
    assert held.state == "running" and len(held.resume["rerender"]["segments"]) == 1, held.log
    assert out.read_bytes() == previous  # nothing lost: the previous output, byte for byte
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    hold.allow(None)
    proc = _worker(env, "--once")
    _, err = proc.communicate(timeout=scaled(300))
    assert proc.returncode == 0, err.decode()[-3000:]
    final = _wait_done(store, job.id)
    assert "resuming the re-render of frames 15-25 (1 new segment(s) kept)" in final.log, final.log
    after = by_segment(out, starts)
    assert [s for s, b, a in zip(starts, before, after, strict=True) if a != b] == [10, 20]
    assert count_frames(out) == 60


# ---------------------------------------------------------------- bad requests, without rendering


def _done_job(store: JobStore, tmp_path: Path, frames: int = 30) -> Job:
    """A done video job whose record holds three 10-frame segments (empty stand-in files)."""
    target = tmp_path / "t.mp4"
    target.write_bytes(b"x")
    job = store.add([photos.grace_hopper_path()], target, tmp_path / "out.mp4", FAST)
    lease = store.claim_next("w")
    assert lease is not None
    work = runner.work_dir(job.id)
    work.mkdir(parents=True)
    segs = []
    for start in range(0, frames, 10):
        (work / segments.segment_name(start)).write_bytes(b"seg")
        segs.append({"file": segments.segment_name(start), "start": start, "frames": 10})
    lease.save_resume({"v": 2, "segments": segs, "complete": True})
    lease.finish("done")
    return store.get(job.id)


@pytest.mark.parametrize("argv, said", [
    (["--frames", "25-40"], "frames 25-40 are outside the output of job 1 (frames 0-29)"),
    (["--frames", "9-3"], "the first frame comes after the last"),
    (["--frames", "ten"], "frames are A-B"),
    (["--frames", "1-2", "--set", "face_swapper.nope=1"], "unknown settings key"),
    (["--frames", "1-2", "--set", "output.quality=50"], "output.* settings cannot change"),
    (["--stretch", "1"], "no quality report for out.mp4"),
])
def test_bad_requests_exit_2_with_one_line(tmp_path: Path, argv: list[str], said: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    store = JobStore()
    job = _done_job(store, tmp_path)
    assert main(["queue", "rerender", str(job.id), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert store.get(job.id).state == "done" and "rerender" not in store.get(job.id).resume


def test_only_a_done_video_job_with_its_segments_can(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = JobStore()
    done = _done_job(store, tmp_path)
    queued = store.add([photos.grace_hopper_path()], tmp_path / "t.mp4", tmp_path / "q.mp4", FAST)
    assert main(["queue", "rerender", str(queued.id), "--frames", "0-1"]) == 2
    assert "is queued: only a finished (done) job" in capsys.readouterr().err
    runner.discard(done.id, done.output)  # a job finished before segments were kept
    assert main(["queue", "rerender", str(done.id), "--frames", "0-1"]) == 2
    assert "kept no segments to re-render from" in capsys.readouterr().err
    assert main(["queue", "rerender", "99", "--frames", "0-1"]) == 2


def test_the_stretch_covers_exactly_the_segments_holding_its_frames(tmp_path: Path) -> None:
    store = JobStore()
    job = _done_job(store, tmp_path, frames=50)
    request = rerender.plan(job, (10, 29), [])
    assert request["covered"] == [10, 20]
    assert rerender.plan(job, (9, 10), [])["covered"] == [0, 10]
    assert rerender.plan(job, (49, 49), ["mask.blur=0.5"])["covered"] == [40]
    queued = rerender.submit(store, job.id, "0-0", ["mask.blur=0.5"], beside=True)
    assert queued.state == "queued" and rerender.pending(queued)
    assert queued.resume["rerender"]["output"] == str(tmp_path / "out.rerender-1.mp4")


def test_the_queue_tabs_control_queues_the_selected_jobs_stretch(tmp_path: Path) -> None:
    """The Queue tab's "Re-render stretch": the owner's done job, frames A-B and one override a line; another
    user's job is not theirs to re-render."""
    from webui import queue_tab
    from webui.common import Ctx, UiConfig

    store = JobStore()
    ctx = Ctx(UiConfig(), tmp_path / "outputs", store)
    job = _done_job(store, tmp_path)

    class Req:
        username = "eve"

    said = queue_tab.rerender(ctx, job.id, "12-14", "mask.blur=0.5\nface_swapper.poisson=true", True, None)
    assert said == f"job #{job.label}: frames 12-14 queued to re-render into out.rerender-1.mp4"
    request = store.get(job.id).resume["rerender"]
    assert request["covered"] == [10]
    assert request["overrides"] == ["mask.blur=0.5", "face_swapper.poisson=true"]
    shared = Ctx(UiConfig(users=(("ann", "a"), ("eve", "e"))), tmp_path / "outputs", store)
    with pytest.raises(Exception, match="no job"):
        queue_tab.rerender(shared, job.id, "1-2", "", False, Req())  # type: ignore[arg-type]


def test_a_flagged_stretch_of_the_quality_report_names_the_frames(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = JobStore()
    job = _done_job(store, tmp_path)
    report = {"version": 1, "frames": [], "stretches": [{"start": 3, "end": 4, "kinds": ["missed"]},
                                                        {"start": 21, "end": 27, "kinds": ["identity"]}]}
    (tmp_path / "out.quality.json").write_text(json.dumps(report), encoding="utf-8")
    assert main(["queue", "rerender", str(job.id), "--stretch", "3"]) == 2
    assert "has 2 flagged stretch(es); there is no stretch 3" in capsys.readouterr().err
    assert main(["queue", "rerender", str(job.id), "--stretch", "2", "--beside"]) == 0
    said = capsys.readouterr().out
    assert "queued to re-render frames 21-27 (1 segment(s)) beside it, into" in said, said
    assert store.get(job.id).resume["rerender"]["covered"] == [20]


def test_cancelling_a_rerender_whose_worker_is_gone_keeps_the_segments(tmp_path: Path) -> None:
    from pipeline.jobs import service

    store = JobStore()
    job = _done_job(store, tmp_path)
    rerender.submit(store, job.id, "0-5", [])
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          check=True)
    assert store.claim_next("w", pid=int(gone.stdout)) is not None  # its worker has ended since
    assert service.cancel(store, job.id).state == "cancelled"
    assert all((runner.work_dir(job.id) / s["file"]).is_file() for s in job.resume["segments"])
