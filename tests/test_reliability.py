"""Reliability under a harsh user (issue 21): no job destroys another's files, however the paths are spelled;
the queue's own faults (a corrupt file, a stale rule that would let live workers steal) are the user's to fix,
with exit 2 and one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from cli.main import main
from pipeline import presets
from pipeline.jobs import runner, service
from pipeline.jobs.model import Job, OutputTaken
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import Worker
from pipeline.request import SwapRequest
from pipeline.settings import Settings
from tests import photos

FAST = ("--set", "selector.mode=one")


def _hashes(folder: Path) -> dict[str, str]:
    """Every regular file under ``folder`` (links not followed) -> its sha256."""
    found = {}
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(dirpath, name)
            if not path.is_symlink():
                found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("facestation: note:")]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("facestation: error: "), err
    return lines[0]


class Bench:
    """A folder of inputs (``ins/``), old results (``outs/``), their aliases, and a face (``src.jpg``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "ins").mkdir(parents=True)
        (root / "outs").mkdir()
        shutil.copyfile(photos.grace_hopper_path(), root / "src.jpg")
        shutil.copyfile(photos.grace_hopper_path(), root / "src2.jpg")
        astronaut = photos.astronaut_path(root)
        for i in range(1, 7):
            shutil.copyfile(astronaut, root / "ins" / f"t{i}.png")
        astronaut.unlink()
        for old in ("o1.png", "o4.png"):  # results of an earlier day, overwritten by their own jobs
            shutil.copyfile(root / "ins" / "t1.png", root / "outs" / old)
        (root / "lnk_t1.png").symlink_to(root / "ins" / "t1.png")
        (root / "insalias").symlink_to(root / "ins")
        (root / "outsalias").symlink_to(root / "outs")
        (root / "later").mkdir()  # a folder that becomes a link to ins/ once a job writing into it is queued
        os.link(root / "ins" / "t2.png", root / "hard_t2.png")

    def p(self, name: str) -> str:
        return str(self.root / name)

    def later_becomes_ins(self) -> None:
        (self.root / "later").rename(self.root / "later.old")
        (self.root / "later").symlink_to(self.root / "ins")


def _add(bench: Bench, target: str, output: str, source: str = "src.jpg") -> list[str]:
    return ["queue", "add", "--source", bench.p(source), "--target", bench.p(target),
            "--output", bench.p(output), *FAST]


def test_twenty_chained_swapped_and_aliased_jobs_never_touch_an_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Jobs whose outputs are other jobs' inputs or outputs, spelled through file and folder symlinks, ``..``
    and a hard link, are refused at add naming the job they would destroy; one whose output folder is
    replaced by a link after it was queued is refused when it starts; the others run, and no input changes."""
    bench = Bench(tmp_path / "bench")
    ids: dict[str, int] = {}
    # (name, target, output, source, None: accepted | the name of the job it would destroy)
    plan: list[tuple[str, str, str, str, str | None]] = [
        ("A", "ins/t1.png", "outs/o1.png", "src.jpg", None),
        ("out-is-A-target", "ins/t2.png", "ins/t1.png", "src.jpg", "A"),
        ("out-links-to-A-target", "ins/t2.png", "lnk_t1.png", "src.jpg", "A"),
        ("out-via-folder-alias", "ins/t2.png", "insalias/t1.png", "src.jpg", "A"),
        ("same-out-as-A", "ins/t2.png", "outs/o1.png", "src.jpg", "A"),
        ("same-out-via-alias", "ins/t2.png", "outsalias/o1.png", "src.jpg", "A"),
        ("target-is-A-out", "outs/o1.png", "outs/x7.png", "src.jpg", "A"),
        ("B", "ins/t2.png", "outs/o2.png", "src.jpg", None),
        ("target-alias-of-A-out", "outsalias/o1.png", "outs/x9.png", "src.jpg", "A"),
        ("out-is-B-target", "ins/t3.png", "ins/t2.png", "src.jpg", "B"),
        ("out-hard-link-of-B-target", "ins/t3.png", "hard_t2.png", "src.jpg", "B"),
        ("source-is-A-out", "ins/t3.png", "outs/x12.png", "outs/o1.png", "A"),
        ("out-is-A-source", "ins/t3.png", "src.jpg", "src2.jpg", "A"),
        ("C", "ins/t3.png", "outs/o3.png", "src.jpg", None),
        ("D", "ins/t4.png", "outs/o4.png", "src.jpg", None),
        ("swapped-with-D", "outs/o4.png", "ins/t4.png", "src.jpg", "D"),
        ("F", "ins/t6.png", "outs/o6.png", "src.jpg", None),
        ("G-reads-F-target-via-alias", "insalias/t6.png", "outs/o7.png", "src.jpg", None),
        ("same-out-as-F-via-dotdot", "ins/t5.png", "insalias/../outs/o6.png", "src.jpg", "F"),
        ("H", "ins/t5.png", "later/t6.png", "src.jpg", None),  # its folder becomes a link below
    ]
    assert len(plan) == 20
    for name, target, output, source, victim in plan:
        code = main(_add(bench, target, output, source))
        out, err = capsys.readouterr()
        if victim is None:
            assert code == 0, (name, err)
            ids[name] = int(out.strip())
            continue
        assert code == 2, (name, err)
        line = _one_error(err)
        assert re.search(rf"\bjob {ids[victim]} \(queued\)", line), (name, line)
    inputs = _hashes(bench.root / "ins") | {"src.jpg": _hashes(bench.root)["src.jpg"]}
    bench.later_becomes_ins()  # H now writes ins/t6.png: F's and G's target
    assert main(["queue", "move", str(ids["H"]), "top"]) == 0
    capsys.readouterr()
    assert main(["queue", "run", "--once"]) == 1  # H failed
    capsys.readouterr()
    jobs = {job.id: job for job in service.open_store().list()}
    h = jobs[ids["H"]]
    assert h.state == "failed" and h.error is not None
    assert re.search(rf"t6\.png is the target of job {ids['F']} \(queued\)", h.error), h.error
    assert {jobs[ids[n]].state for n in "ABCDF"} | {jobs[ids["G-reads-F-target-via-alias"]].state} == {"done"}
    assert _hashes(bench.root / "ins") | {"src.jpg": _hashes(bench.root)["src.jpg"]} == inputs
    assert (bench.root / "outs" / "o2.png").is_file() and not list(bench.root.rglob(".*.part*"))


def test_a_link_made_while_a_job_runs_is_refused_before_the_rename(tmp_path: Path) -> None:
    """The worker asks again just before the output is renamed into place: a folder link moved while the
    job ran makes it fail naming the job it would destroy, with the input untouched and nothing left."""
    bench = Bench(tmp_path / "bench")
    store = service.open_store()
    settings = presets.settings_from(None, ["selector.mode=one"])
    first = service.add(store, SwapRequest.of([bench.p("src.jpg")], bench.p("ins/t5.png"), settings,
                                               bench.p("later/t6.png")))
    second = service.add(store, SwapRequest.of([bench.p("src.jpg")], bench.p("ins/t6.png"), settings,
                                                bench.p("outs/o6.png")))
    before = _hashes(bench.root / "ins")

    def execute(job: Job, ctx: runner.JobContext) -> dict:
        if job.id == first.id:  # the render has started: its folder becomes a link under it
            bench.later_becomes_ins()
        return runner.execute(job, ctx)

    worker = Worker(store, "w", execute=execute)
    worker.run(once=True)
    failed = store.get(first.id)
    assert failed.state == "failed" and failed.error is not None
    assert f"is the target of job {second.id} (queued)" in failed.error, failed.error
    assert store.get(second.id).state == "done"
    assert _hashes(bench.root / "ins") == before
    assert not list(bench.root.rglob(".*.part*"))


def test_swap_refuses_to_write_a_queued_jobs_input(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``facestation swap`` (outside the queue) does not overwrite what a queued job reads, nor its own
    target through a hard link."""
    bench = Bench(tmp_path / "bench")
    assert main(_add(bench, "ins/t1.png", "outs/o1.png")) == 0
    job_id = int(capsys.readouterr().out.strip())
    swap = ["swap", "--source", bench.p("src.jpg"), "--target", bench.p("ins/t3.png"), "--output"]
    assert main([*swap, bench.p("lnk_t1.png")]) == 2
    assert f"is the target of job {job_id} (queued)" in _one_error(capsys.readouterr().err)
    os.link(bench.root / "ins" / "t3.png", bench.root / "hard_t3.png")
    assert main([*swap, bench.p("hard_t3.png")]) == 2
    assert "is one of the inputs" in _one_error(capsys.readouterr().err)


def test_the_clash_rule_by_itself(tmp_path: Path) -> None:
    """Inputs shared by two jobs are fine; an output read or written by another job is not."""
    store = service.open_store(tmp_path / "q.sqlite3")
    first = store.add(["/s.jpg"], "/in/t.mp4", "/out/a.mp4", Settings())
    store.add(["/s.jpg"], "/in/t.mp4", "/out/b.mp4", Settings())  # the same inputs: allowed
    with pytest.raises(OutputTaken, match=f"/in/t.mp4 is the target of job {first.id} \\(queued\\)"):
        store.add(["/s.jpg"], "/in/u.mp4", "/in/t.mp4", Settings())
    with pytest.raises(OutputTaken, match=f"the target /out/a.mp4 is the output of job {first.id}"):
        store.add(["/s.jpg"], "/out/a.mp4", "/out/c.mp4", Settings())
    with pytest.raises(OutputTaken, match=f"/s.jpg is the source of job {first.id}"):
        store.add(["/s2.jpg"], "/in/u.mp4", "/s.jpg", Settings())
    voiced = store.add(["/s.jpg"], "/in/t.mp4", "/out/v.mp4", Settings(), audio="/in/voice.wav")
    with pytest.raises(OutputTaken, match=f"/in/voice.wav is the audio of job {voiced.id}"):
        store.add(["/s.jpg"], "/in/u.mp4", "/in/voice.wav", Settings())  # a new voice is an input too
    with pytest.raises(OutputTaken, match=f"the audio /out/a.mp4 is the output of job {first.id}"):
        store.add(["/s.jpg"], "/in/u.mp4", "/out/d.mp4", Settings(), audio="/out/a.mp4")


def test_run_once_exits_1_when_its_job_was_taken_and_failed_by_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A job taken from this worker (its heartbeat looked stale to another) and failed there is still a
    failure of this ``queue run --once``: it used to say 0 failed and exit 0 (issue 21, point 4)."""
    bench = Bench(tmp_path / "bench")
    assert main(_add(bench, "ins/t1.png", "outs/o1.png")) == 0
    job_id = int(capsys.readouterr().out.strip())

    def taken_away(job: Job, ctx: runner.JobContext) -> dict:
        later = JobStore(service.open_store().path, stale_after=5, max_attempts=1,
                                 clock=lambda: job.started_at + 3600)  # type: ignore[operator]
        assert later.reclaim_stale() == [job_id]  # another worker: this one looked dead, the job failed
        ctx.log("still rendering")
        ctx.save_resume({})  # this worker's next report finds the job gone
        raise AssertionError("save_resume must have raised ClaimLost")

    monkeypatch.setattr(runner, "execute", taken_away)
    assert main(["queue", "run", "--once"]) == 1
    assert f"0 job(s) done, 1 failed (job {job_id}" in capsys.readouterr().out
    assert service.open_store().get(job_id).state == "failed"


def test_a_stale_rule_shorter_than_the_heartbeats_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """``FACESTATION_QUEUE_STALE_AFTER=0.5`` would let two live workers take each other's jobs: every queue
    command refuses it, naming the variable and its minimum."""
    monkeypatch.setenv("FACESTATION_QUEUE_STALE_AFTER", "0.5")
    for argv in (["queue", "list"], ["queue", "run", "--once"]):
        assert main(argv) == 2
        assert _one_error(capsys.readouterr().err) == (
            "facestation: error: FACESTATION_QUEUE_STALE_AFTER must be a number of seconds ≥ 5 (got '0.5')")


# ---------------------------------------------------------------- what is no plain success (point 7)


def test_an_encoder_asked_for_by_name_that_falls_back_says_so(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """No GPU here: an explicit h264_nvenc falls back to libx264, and the note says it on stderr (not only in
    --json's encoder_reason)."""
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "in.mp4", seconds=0.3, size=(160, 120), face_image=photos.grace_hopper())
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                 "--output", str(tmp_path / "out.mp4"), "--set", "output.encoder=h264_nvenc", *FAST])
    err = capsys.readouterr().err
    assert code == 0, err
    assert re.search(r"facestation: note: output\.encoder=h264_nvenc is not used: .*using libx264", err), err


def test_bench_on_a_clip_with_no_face_says_it_measured_no_swap(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "empty.mp4", seconds=0.3, size=(160, 120), audio=False)  # no face in it
    code = main(["bench", "--target", str(clip), "--no-temp-frames", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "facestation: note: no face to replace was found in any frame of empty.mp4" in captured.err
    assert "the figures measure no swap" in captured.err
    assert json.loads(captured.out)["faces_swapped"] == 0


# ---------------------------------------------------------------- what the output cannot carry (point 3)


def _still(tmp_path: Path, target: Path, out: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                 "--output", str(tmp_path / out), *FAST])
    err = capsys.readouterr().err
    assert code == 0, err
    return err


def test_an_animated_target_says_only_its_first_frame_is_swapped(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    face = Image.open(photos.grace_hopper_path()).convert("RGB")
    target = tmp_path / "moving.webp"
    face.save(target, save_all=True, append_images=[face.rotate(3), face.rotate(-3)], duration=100, loop=0)
    err = _still(tmp_path, target, "out.webp", capsys)
    assert "facestation: note: moving.webp has 3 frames (animated): only its first frame is swapped" in err
    plain = tmp_path / "plain.webp"
    face.save(plain)
    assert "animated" not in _still(tmp_path, plain, "out2.webp", capsys)


def test_transparency_written_to_a_jpeg_is_said_to_be_dropped(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    rgba = Image.open(photos.grace_hopper_path()).convert("RGBA")
    target = tmp_path / "clear.png"
    rgba.save(target)
    err = _still(tmp_path, target, "out.jpg", capsys)
    assert "facestation: note: clear.png has transparency, which out.jpg (JPEG) cannot keep" in err
    assert "transparency" not in _still(tmp_path, target, "out.png", capsys)  # PNG keeps it


# ---------------------------------------------------------------- the bundled ffmpeg (point 5)


@pytest.mark.parametrize("flags", ["TS", "TSC"], ids=["ffmpeg-7-two-flags", "ffmpeg-6-three-flags"])
def test_the_filter_list_is_read_whatever_the_flag_column(tmp_path: Path, flags: str) -> None:
    """imageio-ffmpeg's binary (ffmpeg 7) prints two flag letters per filter, Debian's ffmpeg three: both
    lists are read (an empty one meant no tone mapping and "unknown" colour tags, silently)."""
    import stat
    import sys

    from pipeline.video import ffmpeg

    listing = "\n".join(["Filters:", "  T.. = Timeline support", " ------", f" {flags} zscale  V->V  Resize.",
                         f" {flags[:-1]}. tonemap  V->V  Tone map.",
                         f" {'.' * len(flags)} abench  A->A  Bench."])
    exe = tmp_path / "ffmpeg"
    exe.write_text(f"#!{sys.executable}\nprint({listing!r})\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    ffmpeg.clear_caches()
    try:
        assert {"zscale", "tonemap", "abench"} <= ffmpeg.filters(str(exe))
    finally:
        ffmpeg.clear_caches()
