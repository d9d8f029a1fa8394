"""The one output writer (pipeline/writer.py), kept by every entry point that writes a file.

- The code that makes output files is listed (:data:`MAKERS`): a module that starts writing files without
  being listed here fails :func:`test_every_module_that_makes_an_output_is_listed_with_its_entry_point`.
- Each entry point a user names an output in refuses one that a queued job reads or writes, in the same
  words (``live --output`` used to record over a queued job's target and output).
- SIGTERM during a live recording, a render and a queued job (systemd, ``docker stop``): the recording is
  kept under its name with the frames up to the signal, the render leaves nothing half-made, the job goes
  back to the queue and its next run finishes the whole file.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli.main import main
from pipeline.jobs.service import open_store
from pipeline.live.webrtc import LiveRuns
from pipeline.progress import HOLD_VARIABLE
from pipeline.settings import Settings
from tests import photos
from tests.test_live import index_clip, read_index, unwrap
from tests.timing import scaled, wait_until
from tests.videos import count_frames, make_clip

REPO = Path(__file__).resolve().parents[1]

# the names whose call makes an output file, and each module that calls them: the entry points it serves
# and where they keep the writer's rules (the claim; the temporary name is the Encoder's / write_image's)
WRITES = {"Encoder", "encoder_for", "Recording", "write_image", "render", "swap_image"}
MAKERS = {
    "pipeline/video/encode.py": "the Encoder itself: a temporary name, renamed when whole",
    "pipeline/render.py": "swap (cli/swap.py: writer.claim) and queued video jobs (the queue's clash rule)",
    "pipeline/still.py": "swap of a still (cli/swap.py: writer.claim) and queued image jobs",
    "pipeline/jobs/runner.py": "queued jobs: the queue's clash rule at add, at start and before the rename",
    "pipeline/jobs/segments.py": "a queued job's segments, in its own work folder (farm and re-render too)",
    "pipeline/live/outputs.py": "facestation live --output FILE (open_output: writer.claim)",
    "pipeline/live/webrtc.py": "the Live tab's recording (LiveRuns.start: writer.claim)",
    "pipeline/jobs/markers.py": "a queued job with markers: its stretches into the job's segments "
                                "(runner.py's rules); swap --marker (render_file: segments in a work folder "
                                "beside the output, joined; cli/swap.py: writer.claim first)",
    "pipeline/bench.py": "facestation bench: its own temporary folder, no user output",
    "cli/swap.py": "facestation swap: writer.claim",
}


def _calls(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in WRITES and not (isinstance(func, ast.Attribute) and name == "render"
                                       and not isinstance(func.value, ast.Name)):
                names.add(name)
    return names


def test_every_module_that_makes_an_output_is_listed_with_its_entry_point() -> None:
    """A new way to write an output is added to the table (and its entry point to the test below)."""
    found = {}
    for folder in ("pipeline", "cli", "webui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            calls = _calls(path)
            if calls:
                found[str(path.relative_to(REPO))] = calls
    assert "webui/preview_panel.py" in found  # a name clash: its own render() of a preview, no file
    found.pop("webui/preview_panel.py")
    assert sorted(found) == sorted(MAKERS), found


@pytest.fixture()
def queued(tmp_path: Path) -> dict[str, Path]:
    """A queued job (target and output) in the default queue, and a face and a clip to use elsewhere."""
    ins = tmp_path / "in"
    ins.mkdir()
    files = {"face": photos.grace_hopper_path(), "clip": make_clip(ins / "clip.mp4", seconds=1.0,
                                                                   size=(160, 120), fps=30),
             "target": make_clip(ins / "theirs.mp4", seconds=1.0, size=(160, 120), fps=30),
             "output": tmp_path / "out" / "theirs-out.mp4", "out": tmp_path / "out"}
    files["out"].mkdir()
    store = open_store()
    store.add([files["face"]], files["target"], files["output"], Settings())
    store.close()
    return {k: Path(v) for k, v in files.items()}


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0].removeprefix("facestation: error: ")


def test_every_entry_point_refuses_to_write_a_queued_jobs_files(queued: dict[str, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`live --output` wrote over a queued job's target (a 10 s clip became the recording) and output."""
    face, clip = str(queued["face"]), str(queued["clip"])

    def swap(output: Path) -> str:
        return _refused(["swap", "--source", face, "--target", clip, "--output", str(output)], capsys)

    def queue_add(output: Path) -> str:
        return _refused(["queue", "add", "--source", face, "--target", clip, "--output", str(output)], capsys)

    def live(output: Path) -> str:
        return _refused(["live", "--source", face, "--camera", clip, "--output", str(output), "--seconds",
                         "1"], capsys)

    def live_tab(output: Path) -> str:
        with pytest.raises(Exception) as refused:
            LiveRuns().start("", "s", Settings(), [face], record_to=output)
        return str(refused.value)

    for name, write in {"swap": swap, "queue add": queue_add, "live": live, "Live tab": live_tab}.items():
        for role, path in (("target", queued["target"]), ("output", queued["output"])):
            said = write(path)
            if role == "target":
                assert said == (f"{path} is the target of job 1 (queued): writing it would destroy that "
                                "job's input; choose another output, or cancel job 1 first"), name
            else:
                assert said == (f"job 1 (queued) already writes {path}; choose another output, or cancel "
                                "job 1 first"), name
    assert count_frames(queued["target"]) == 30 and not queued["output"].exists()
    assert [p.name for p in queued["out"].iterdir()] == []


def test_live_reading_a_queued_jobs_output_as_its_camera_is_refused(
        queued: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The camera, a file standing in for one, is the run's input: a queued job would destroy it."""
    queued["output"].write_bytes(queued["clip"].read_bytes())  # there now; the job will overwrite it
    said = _refused(["live", "--source", str(queued["face"]), "--camera", str(queued["output"]), "--output",
                     str(queued["out"] / "rec.mp4"), "--seconds", "1"], capsys)
    assert said == (f"the target {queued['output']} is the output of job 1 (queued): that job would destroy "
                    "it; choose another target, or cancel job 1 first")


# --- a stop from outside: SIGTERM (systemd, docker stop) ---------------------------------------------------

HELD_AT = 10  # frames: the run is surely in the middle of its clip whatever the machine's speed


def _child(args: list[str], flag: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), HOLD_VARIABLE: f"{HELD_AT}:{flag}"}
    return subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _stopped_when_held(proc: subprocess.Popen[bytes], flag: Path) -> tuple[int, str]:
    wait_until(lambda: flag.exists() or proc.poll() is not None, 180, f"the run to reach frame {HELD_AT}")
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)  # the signal ends the hold too
    _out, err = proc.communicate(timeout=scaled(120))
    return proc.returncode, err.decode()


def _hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
@pytest.mark.parametrize("run", ["live recording", "render", "queued job"])
def test_sigterm_keeps_each_runs_promise(tmp_path: Path, run: str) -> None:
    """Live: the recording under its name, playable, its frames those up to the signal (it used to leave
    only a hidden partial, which the next write into the folder deleted). A render: nothing half-made under
    its name, exit 143. A queued job: back in the queue, and its next run makes the whole file."""
    face, flag, out = str(photos.grace_hopper_path()), tmp_path / "held", tmp_path / "out"
    out.mkdir()
    if run == "live recording":  # a 30 s camera, stopped at frame HELD_AT: never 30 s of waiting
        clip = index_clip(tmp_path / "camera.mp4", seconds=30.0)
        proc = _child(["live", "--source", face, "--camera", str(clip), "--output", str(out / "rec.mp4"),
                       "--seconds", "30"], flag)
        code, err = _stopped_when_held(proc, flag)
        assert code == 0, err
        indices = unwrap([read_index(f) for f in _frames(out / "rec.mp4")])
        assert HELD_AT <= len(indices) < 900 and indices == sorted(indices) and indices[0] <= HELD_AT, indices
        assert _hidden(out) == []
        return
    clip = make_clip(tmp_path / "clip.mp4", seconds=10.0, size=(160, 120), fps=30)
    if run == "render":
        proc = _child(["swap", "--source", face, "--target", str(clip), "--output", str(out / "o.mp4")], flag)
        code, err = _stopped_when_held(proc, flag)
        assert code == 143 and "stopped by SIGTERM" in err, err
        assert list(out.iterdir()) == []
        return
    queue_add = ["queue", "add", "--source", face, "--target", str(clip), "--output", str(out / "q.mp4")]
    assert main(queue_add) == 0
    code, err = _stopped_when_held(_child(["queue", "run", "--once"], flag), flag)
    assert code == 0, err
    job = open_store().get(1)
    assert job.state == "queued" and not (out / "q.mp4").exists(), (job.state, job.log)
    env = {k: v for k, v in os.environ.items() if k != HOLD_VARIABLE}
    done = subprocess.run([sys.executable, "-m", "cli", "queue", "run", "--once"], cwd=REPO,
                          capture_output=True, env={**env, "PYTHONPATH": str(REPO)}, timeout=scaled(300))
    assert done.returncode == 0, done.stderr.decode()
    assert open_store().get(1).state == "done" and count_frames(out / "q.mp4") == 300
    assert _hidden(out) == []


def _frames(path: Path) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames
