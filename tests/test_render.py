"""The video render: end to end on generated clips with a real face."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psutil
import pytest

from cli.main import main
from pipeline.chain import Chain
from pipeline.errors import Cancelled
from pipeline.faces.recognise import cosine, embed_faces
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yunet import YuNetDetector
from pipeline.process import FaceProcessor
from pipeline.progress import Progress, RateMeter, RunControl
from pipeline.render import STAGES, Render, render
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Frame
from pipeline.video.decode import read_frames
from tests import photos
from tests.surrogates import install_surrogate
from tests.videos import count_frames, make_clip, stream_info

ONE = apply_overrides(Settings(), ["selector.mode=one"])


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=1.5, size=(480, 360),
                     face_image=photos.astronaut())


def _identity_gain(original: Path, swapped: Path, every: int = 5) -> list[float]:
    det, rec = YuNetDetector(), SFaceRecogniser()
    src = photos.grace_hopper()
    ref = embed_faces(rec, src, [max(det.detect([src])[0], key=lambda f: f.area)])[0]
    gains = []
    for i, (a, b) in enumerate(zip(read_frames(original), read_frames(swapped), strict=True)):
        if i % every:
            continue
        fa, fb = det.detect([a])[0], det.detect([b])[0]
        if not fa:
            continue  # no face visible in the input frame
        assert fb, f"frame {i}: the face vanished"
        ea = embed_faces(rec, a, [max(fa, key=lambda f: f.area)])[0]
        eb = embed_faces(rec, b, [max(fb, key=lambda f: f.area)])[0]
        gains.append(cosine(ref, eb) - cosine(ref, ea))
    return gains


def _ffmpeg_children() -> list[psutil.Process]:
    """ffmpeg processes of this one still there, reaped or not: a render reaps its own before it returns."""
    return [p for p in psutil.Process().children(recursive=True) if "ffmpeg" in p.name()]


def test_render_keeps_frames_audio_and_replaces_the_face(face_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    seen = []
    result = render(ONE, [photos.grace_hopper_path()], face_clip, out,
                    control=RunControl(seen.append, every=0.0))
    assert result.frames == count_frames(face_clip) == count_frames(out) == 45
    info = stream_info(out)
    kinds = {s["codec_type"] for s in info["streams"]}
    assert kinds == {"video", "audio"}
    video = next(s for s in info["streams"] if s["codec_type"] == "video")
    assert video["r_frame_rate"] == "30/1" and video.get("color_primaries") == "bt709"
    assert "synthetic" in info["format"]["tags"].get("comment", "")
    gains = _identity_gain(face_clip, out)
    assert gains and min(gains) >= 0.2, gains
    assert seen[-1].frames_done == 45 and seen[-1].eta_s == 0.0
    # no ETA (nor rate) from the first few frames: the pipeline filling up would make it wild
    early = [p for p in seen[:-1] if p.frames_done < RateMeter().min_frames]
    assert early and all(p.eta_s is None and p.fps is None for p in early)
    assert set(result.stage_s) == {"decode", "detect", "swap", "enhance", "blend", "quality", "encode"}
    assert _ffmpeg_children() == []


def _processed(processor: FaceProcessor, frames: list[Frame]) -> list[Frame]:
    """``frames`` detected in full and processed as one batch (as a render's batch runs)."""
    chain = Chain(processor)
    return [w.out for w in chain.through(chain.finder().push(frames)) if w.out is not None]


def test_batches_across_frames_equal_single_frames(face_clip: Path) -> None:
    frames = list(read_frames(face_clip))[:6]
    processor = FaceProcessor(ONE, [photos.grace_hopper_path()])
    batched = _processed(processor, frames)
    single = [_processed(processor, [f])[0] for f in frames]
    for a, b in zip(batched, single, strict=True):
        assert np.abs(a.astype(int) - b).max() <= 1


def test_tracker_fills_frames_where_detection_missed(face_clip: Path, tmp_path: Path) -> None:
    # every frame detected in full, one a run, no batch probe: call n is the plan's first frame (n = 0), then
    # frame n - 1 of the render (the probe's runs, as many as the machine's speed allowed, used to shift them)
    settings = apply_overrides(ONE, ["execution.batch_size=1", "detector.interval=1"])
    processor = FaceProcessor(settings, [photos.grace_hopper_path()])
    real_detect = processor.detector.detect
    counter = {"n": 0}
    missed = set(range(10, 14)) | {30}

    def flaky(frames):  # type: ignore[no-untyped-def]
        found = real_detect(frames)
        out = []
        for faces in found:
            out.append([] if counter["n"] - 1 in missed else faces)
            counter["n"] += 1
        return out

    processor.detector.detect = flaky  # type: ignore[method-assign]
    out = tmp_path / "tracked.mp4"
    Render(settings, [], face_clip, out, processor=processor).run()
    gains = _identity_gain(face_clip, out, every=1)
    frames_checked = [g for i, g in enumerate(gains) if i in missed]
    assert len(frames_checked) == len(missed) and min(frames_checked) >= 0.2, frames_checked


def test_cancel_stops_at_the_cancel_point_and_leaves_nothing(face_clip: Path, tmp_path: Path) -> None:
    long_clip = make_clip(tmp_path / "long.mp4", seconds=20, size=(480, 360), face_image=photos.astronaut())
    out = tmp_path / "cancelled.mp4"
    cancel_at = 20
    written: list[int] = []  # frames written, reported after each one (every=0)

    def on_progress(p: Progress) -> None:
        written.append(p.frames_done)
        if p.frames_done == cancel_at:
            control.stop()

    control = RunControl(on_progress, every=0.0)
    job = Render(ONE, [photos.grace_hopper_path()], long_clip, out, control=control)
    with pytest.raises(Cancelled):
        job.run()
    # after the cancel only what was already in flight gets written: at most a full queue before each stage
    in_flight = ONE.execution.queue_size * len(STAGES)
    assert cancel_at <= written[-1] <= cancel_at + in_flight < 600, written[-1]
    assert not out.exists() and not list(tmp_path.glob(".*partial*"))
    assert _ffmpeg_children() == []


def test_enhance_is_its_own_stage_with_its_own_time(face_clip: Path, tmp_path: Path) -> None:
    from tests.surrogates import install_surrogate

    install_surrogate("gfpgan_1.4")
    settings = apply_overrides(ONE, ["face_enhancer.model=gfpgan_1.4", "execution.batch_size=2"])
    seen = []
    result = render(settings, [photos.grace_hopper_path()], face_clip, tmp_path / "enhanced.mp4",
                    control=RunControl(seen.append, every=0.0))
    assert result.frames == 45 and "gfpgan_1.4" in result.models
    assert result.stage_s["enhance"] > 0 and seen[-1].stage_s["enhance"] == result.stage_s["enhance"]


def test_a_render_writes_to_an_output_or_a_sink(face_clip: Path, tmp_path: Path) -> None:
    processor = FaceProcessor(ONE, [photos.grace_hopper_path()])
    with pytest.raises(ValueError, match="exactly one"):
        Render(ONE, [], face_clip, processor=processor)
    with pytest.raises(ValueError, match="exactly one"):
        Render(ONE, [], face_clip, tmp_path / "o.mp4", processor=processor,
               sink=lambda w, h: None)  # type: ignore[arg-type, return-value]


def test_trim(face_clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "trim.mp4"
    s = apply_overrides(ONE, ["video.start=0.5", "video.end=1.0"])
    render(s, [photos.grace_hopper_path()], face_clip, out)
    assert abs(count_frames(out) - 15) <= 1


def test_cli_video_with_spaces_and_non_ascii(
        face_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "mes vidéos ünï"
    folder.mkdir()
    target = folder / "clip à moi.mp4"
    target.write_bytes(face_clip.read_bytes())
    out = folder / "sortie é.mp4"
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                 "--output", str(out), "--set", "selector.mode=one", "--json"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 45 and Path(summary["output"]) == out and out.exists()


def test_cli_bad_videos_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.videos import make_audio_only, make_image_as_video, make_truncated, make_unknown_codec

    good = make_clip(tmp_path / "good.mp4", seconds=1, size=(160, 120))
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    cases = {
        "empty": empty,
        "truncated": make_truncated(good, tmp_path / "cut.mp4"),
        "audio": make_audio_only(tmp_path / "sound.mp4"),
        "image": make_image_as_video(tmp_path / "picture.mp4"),
        "codec": make_unknown_codec(tmp_path / "weird.mkv"),
    }
    for kind, path in cases.items():
        code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(path),
                     "--output", str(tmp_path / "o.mp4")])
        err = capsys.readouterr().err.strip()
        assert code == 2, (kind, err)
        assert len(err.splitlines()) == 1 and path.name in err and "Traceback" not in err, (kind, err)
    assert not (tmp_path / "o.mp4").exists()


def test_cli_reports_cancel_with_exit_status(monkeypatch: pytest.MonkeyPatch, face_clip: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import pipeline.render as render_mod

    def cancelled(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise Cancelled("render cancelled")

    monkeypatch.setattr(render_mod, "render", cancelled)
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip),
                 "--output", str(tmp_path / "o.mp4")])
    assert code == 130 and "cancelled" in capsys.readouterr().err


@pytest.mark.slow
def test_acceptance_10s_1080p_clip_with_audio(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "hd.mp4", seconds=10, size=(1920, 1080), face_image=photos.astronaut())
    out = tmp_path / "hd_out.mp4"
    result = render(ONE, [photos.grace_hopper_path()], clip, out)
    src, dst = stream_info(clip), stream_info(out)
    v_in = next(s for s in src["streams"] if s["codec_type"] == "video")
    v_out = next(s for s in dst["streams"] if s["codec_type"] == "video")
    assert count_frames(out) == count_frames(clip) == 300 == result.frames
    assert v_out["r_frame_rate"] == v_in["r_frame_rate"] == "30/1"
    assert abs(float(dst["format"]["duration"]) - float(src["format"]["duration"])) <= 1 / 30 + 0.03
    assert any(s["codec_type"] == "audio" for s in dst["streams"])
    for key in ("color_space", "color_transfer", "color_primaries"):
        assert v_out.get(key) == v_in.get(key) == "bt709", key
    gains = _identity_gain(clip, out, every=30)
    assert len(gains) == 10 and min(gains) >= 0.2, gains


def test_cli_says_when_no_frame_had_a_face(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = make_clip(tmp_path / "noface.mp4", seconds=0.5, size=(160, 120))
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                 "--output", str(tmp_path / "o.mp4")])
    assert code == 0 and "no face to replace was found in any frame" in capsys.readouterr().err
    assert count_frames(tmp_path / "o.mp4") == 15


@pytest.mark.parametrize("enhancer", ["none", "gfpgan_1.4"])
def test_the_first_frame_goes_through_each_face_processor_once(face_clip: Path, tmp_path: Path, enhancer: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's run of the first frame is the render's: no frame goes through the swapper, nor the enhancer
    after it, twice (on heavy models on a CPU that was seconds of the render: the GFPGAN twin's run alone was
    2 % of a 1 s clip), and the output is what a fresh swap gives."""
    if enhancer != "none":
        install_surrogate(enhancer, sharpen=1.0)
    # no probe runs, and threads fixed: no measuring runs of a heavy stage to count
    settings = apply_overrides(ONE, ["execution.batch_size=1", "execution.threads=1",
                                     f"face_enhancer.model={enhancer}"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    runs: dict[str, int] = {}
    step = proc.run_step

    def counting(index: int, frames: list[np.ndarray], items: list[list[object]], at: list[int],
                 originals: list[object] | None = None) -> None:
        name = proc.processors[index].name
        runs[name] = runs.get(name, 0) + len(frames)
        step(index, frames, items, at, originals)  # type: ignore[arg-type]

    monkeypatch.setattr(proc, "run_step", counting)
    result = Render(settings, [photos.grace_hopper_path()], face_clip, tmp_path / "a.mp4",
                    processor=proc).run()
    assert result.frames == 45
    # 1 in the plan + 44 in the stages, for each face processor
    assert runs == dict.fromkeys([p.name for p in proc.processors], 45) and len(runs) == (
        1 if enhancer == "none" else 2), runs
    reference = render(settings, [photos.grace_hopper_path()], face_clip, tmp_path / "b.mp4")
    assert reference.frames == 45
    first_a = next(iter(read_frames(tmp_path / "a.mp4")))
    first_b = next(iter(read_frames(tmp_path / "b.mp4")))
    assert np.array_equal(first_a, first_b)
