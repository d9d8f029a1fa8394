"""background_remover with ``fill=transparent`` in videos: a render to WebM (VP9 yuva420p) and MOV (ProRes
4444) read back with ffprobe (the pixel format, WebM's alpha flag) and its alpha plane decoded frame by frame
(0 outside the surrogate's mask, 255 inside: a red rectangle that moves 2 px a frame, so a frame out of
place shows); a queued job to .webm in segments, stopped after its first and resumed, keeps alpha in every
frame; the Ray farm too (slow; skipped without Ray). A fill colour is in every frame of an .mp4."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.jobs import segments
from pipeline.jobs.hold import Gate
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run, start_in_thread
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.video import ffmpeg
from tests import photos
from tests.farmkit import local_farm, render_on_farm
from tests.surrogates import install_surrogate
from tests.timing import scaled

W, H, FRAMES = 160, 120, 30
RED, BLUE = (40, 40, 255), (220, 90, 0)  # BGR: the surrogate's foreground, its background
TRANSPARENT = ["processors.order=background_remover", "background_remover.fill=transparent"]


def _x(i: int) -> int:
    return 20 + 2 * i  # the rectangle's left edge in frame i (x .. x+50, y 30..90)


def _frame(i: int) -> np.ndarray:
    frame = np.zeros((H, W, 3), np.uint8)
    frame[:] = BLUE
    frame[30:90, _x(i):_x(i) + 50] = RED
    return frame


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 frames (1 s) of the moving rectangle, nearly lossless, with a sine track."""
    path = tmp_path_factory.mktemp("clips") / "rect.mp4"
    cmd = [ffmpeg.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
           "-pix_fmt", "bgr24", "-s", f"{W}x{H}", "-r", "30", "-i", "pipe:0",
           "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:v", "libx264", "-qp", "0",
           "-pix_fmt", "yuv444p", "-c:a", "aac", "-shortest", str(path)]
    subprocess.run(cmd, input=b"".join(_frame(i).tobytes() for i in range(FRAMES)), check=True)
    return path


def _settings(*overrides: str) -> Settings:
    return apply_overrides(Settings(), [*TRANSPARENT, "execution.batch_size=4", *overrides])


def _probe(path: Path) -> dict:
    out = subprocess.run([ffmpeg.find_tools().ffprobe, "-v", "error", "-show_streams", "-of", "json",
                          str(path)], capture_output=True, check=True).stdout
    return json.loads(out)


def _bgra(path: Path) -> np.ndarray:
    """Every frame as BGRA (VP9's alpha needs libvpx's decoder: ffmpeg's own drops it)."""
    codec = ["-c:v", "libvpx-vp9"] if path.suffix == ".webm" else []
    out = subprocess.run([ffmpeg.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", *codec, "-i", str(path),
                          "-f", "rawvideo", "-pix_fmt", "bgra", "pipe:1"], capture_output=True, check=True)
    return np.frombuffer(out.stdout, np.uint8).reshape(-1, H, W, 4)


def _assert_alpha_in_every_frame(frames: np.ndarray) -> None:
    assert len(frames) == FRAMES
    for i, f in enumerate(frames):
        a, x = f[..., 3], _x(i)
        assert (a[36:84, x + 6:x + 44] >= 250).all(), f"frame {i}: the rectangle is not opaque"
        outside = np.ones((H, W), bool)
        outside[22:98, x - 8:x + 58] = False
        assert (a[outside] == 0).all(), f"frame {i}: alpha {a[outside].max()} outside the mask"


def test_a_render_to_webm_is_vp9_with_alpha_0_outside_the_mask(clip: Path, tmp_path: Path) -> None:
    install_surrogate("modnet", gain=4.0)
    out = tmp_path / "out.webm"
    result = render(_settings(), [photos.grace_hopper_path()], clip, out)
    assert result.encoder == "libvpx-vp9" and result.frames == FRAMES
    streams = _probe(out)["streams"]
    video = next(s for s in streams if s["codec_type"] == "video")
    tags = {k.lower(): v for k, v in video.get("tags", {}).items()}
    assert video["codec_name"] == "vp9" and tags.get("alpha_mode") == "1", video  # VP9 with its alpha
    assert {s["codec_name"] for s in streams if s["codec_type"] == "audio"} == {"opus"}
    _assert_alpha_in_every_frame(_bgra(out))


def test_a_render_to_mov_is_prores_4444_with_alpha(clip: Path, tmp_path: Path) -> None:
    install_surrogate("modnet", gain=4.0)
    out = tmp_path / "out.mov"
    result = render(_settings(), [photos.grace_hopper_path()], clip, out)
    assert result.encoder == "prores_ks"
    video = next(s for s in _probe(out)["streams"] if s["codec_type"] == "video")
    assert video["codec_name"] == "prores" and video["pix_fmt"].startswith("yuva444p"), video
    assert video.get("profile") == "4444", video
    frames = _bgra(out)
    _assert_alpha_in_every_frame(frames)
    assert np.abs(frames[0, 40:80, 30:60, :3].astype(int) - RED).max() <= 6  # the pixels are kept


def test_a_batch_named_target_alpha_mov_is_a_prores_4444_mov_with_alpha(
        clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``queue add --name '{target}-alpha.mov'`` keeps the .mov it names (it became rect-alpha_mov.mp4):
    with a transparent background the job renders ProRes 4444 with its alpha."""
    from cli.main import main
    from pipeline.jobs.service import open_store

    install_surrogate("modnet", gain=4.0)
    out = tmp_path / "out"
    out.mkdir()
    sets = [a for s in (*TRANSPARENT, "execution.batch_size=4") for a in ("--set", s)]
    assert main(["queue", "add", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                 "--output", str(out), "--name", "{target}-alpha.mov", *sets]) == 0, capsys.readouterr().err
    (job,) = open_store().list()
    assert Path(job.output).name == "rect-alpha.mov"
    assert run(open_store(), "w1", once=True) == 1
    done = open_store().get(job.id)
    assert done.state == "done", (done.error, done.log)
    video = next(s for s in _probe(Path(done.output))["streams"] if s["codec_type"] == "video")
    assert video["codec_name"] == "prores" and video.get("profile") == "4444", video
    _assert_alpha_in_every_frame(_bgra(Path(done.output)))


def test_a_fill_colour_is_in_every_frame_of_an_mp4(clip: Path, tmp_path: Path) -> None:
    install_surrogate("modnet", gain=4.0)
    out = tmp_path / "out.mp4"
    white = apply_overrides(Settings(), ["processors.order=background_remover",
                                         "background_remover.fill=#ffffff"])
    render(white, [photos.grace_hopper_path()], clip, out)
    frames = _bgra(out)
    assert len(frames) == FRAMES
    for i, f in enumerate(frames):
        x = _x(i)
        outside = np.ones((H, W), bool)
        outside[22:98, x - 8:x + 58] = False
        assert (f[outside][:, :3] >= 250).all(), f"frame {i}: not white outside the mask"


def test_a_queued_job_to_webm_keeps_alpha_in_every_segment_and_after_a_resume(clip: Path,
                                                                              tmp_path: Path) -> None:
    """Segments of 10 frames; held after the first, stopped there, run again: the kept Matroska segment and
    the two rendered after it join into a WebM whose every frame has its alpha."""
    install_surrogate("modnet", gain=4.0)
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "job.webm"
    job = store.add([photos.grace_hopper_path()], clip, out, _settings())
    gate = Gate(after=1)
    handle = start_in_thread(store, "w1", pace=segments.Pace.frames(10), hold=gate)
    assert gate.reached.wait(scaled(120)) and handle.alive, store.get(job.id).log
    assert handle.stop(timeout=scaled(20))
    assert store.get(job.id).kept_frames == 10
    assert run(store, "w1", once=True, pace=segments.Pace.frames(10)) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert "resuming at frame 10" in done.log, done.log
    assert done.resume is not None and [s["start"] for s in done.resume["segments"]] == [0, 10, 20]
    _assert_alpha_in_every_frame(_bgra(out))


def test_a_queued_job_to_mp4_is_refused(clip: Path, tmp_path: Path) -> None:
    from pipeline.errors import UserError
    from pipeline.jobs import service
    from pipeline.request import SwapRequest

    store = JobStore(tmp_path / "q.sqlite3")
    with pytest.raises(UserError, match=r"job\.mp4 cannot; use \.png or \.webp for a still, \.webm"):
        service.add(store, SwapRequest.of([photos.grace_hopper_path()], clip, _settings(),
                                          tmp_path / "job.mp4"))
    assert store.list() == []


@pytest.mark.slow
def test_the_farm_renders_a_transparent_webm(clip: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's local runtime, two slots, segments of 10 frames: each task encodes its segment with the WebM's
    codec and alpha; the join keeps it in every frame."""
    local_farm(monkeypatch, 10 / 30)
    install_surrogate("modnet", gain=4.0)
    store = JobStore()
    out = tmp_path / "farm.webm"
    job = store.add([photos.grace_hopper_path()], clip, out, _settings())
    done = render_on_farm(store, job)
    assert done.resume is not None and [s["start"] for s in done.resume["segments"]] == [0, 10, 20]
    _assert_alpha_in_every_frame(_bgra(out))
