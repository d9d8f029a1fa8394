"""lip_syncer end to end: a render with ``--audio`` carries that voice (ffprobe: its stream and duration, its
pitch) and every frame; a queued job and the Ray farm too; the preview hears its own frame; no sound at all
is refused at the pre-check with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli.main import main
from pipeline import preview
from pipeline.processors import Media
from pipeline.processors.lip_syncer import LipSyncerProcessor
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.farmkit import local_farm, render_on_farm
from tests.sounds import pitch, voice
from tests.surrogates import install_surrogate
from tests.videos import count_frames, make_clip, stream_info

ORDER = "processors.order=face_swapper,lip_syncer"
FAST = ["--set", "selector.mode=one", "--set", "detector.size=320", "--set", ORDER]


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1 s at 30 fps with the target's own 440 Hz sound."""
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=1.0, size=(320, 240),
                     face_image=photos.astronaut())


def _audio_stream(out: Path) -> dict[str, Any]:
    streams = {s["codec_type"]: s for s in stream_info(out)["streams"]}
    assert set(streams) == {"video", "audio"}
    return streams["audio"]


def test_swap_with_audio_carries_the_new_voice_and_every_frame(
        face_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("wav2lip_gan_96")
    out = tmp_path / "out.mp4"
    assert pitch(face_clip) == pytest.approx(440, abs=5)
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip),
                 "--output", str(out), "--audio", str(voice(tmp_path / "voice.wav")), *FAST, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["frames"] == count_frames(out) == 30
    assert "wav2lip_gan_96" in summary["models"]
    assert abs(float(_audio_stream(out)["duration"]) - 1.0) <= 0.05  # the voice, as long as the clip
    assert pitch(out) == pytest.approx(1000, abs=5)  # the new voice, not the target's 440 Hz


def test_a_queued_job_with_audio_renders_it_and_carries_the_voice(
        face_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("wav2lip_gan_96")
    out = tmp_path / "queued.mp4"
    sound = voice(tmp_path / "voice.wav", seconds=0.6, hz=700)  # shorter than the clip
    assert main(["queue", "add", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip),
                 "--output", str(out), "--audio", str(sound), *FAST]) == 0
    job_id = int(capsys.readouterr().out.strip())
    assert main(["queue", "run", "--once"]) == 0
    capsys.readouterr()
    assert main(["queue", "show", str(job_id), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["state"] == "done", shown
    assert "12 of 30 frames had no audio" in " ".join(shown["log"]), shown["log"]  # 0.6 s of sound, 1 s
    assert count_frames(out) == 30
    assert abs(float(_audio_stream(out)["duration"]) - 0.6) <= 0.05
    assert pitch(out) == pytest.approx(700, abs=5)


def test_no_sound_to_follow_is_refused_with_one_line(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("wav2lip_gan_96")
    silent_clip = make_clip(tmp_path / "mute.mp4", seconds=0.5, size=(160, 120), audio=False)
    source = str(photos.grace_hopper_path())
    cases = {
        "no sound": (["--target", str(silent_clip)], "--audio FILE"),
        "audio missing": (["--target", str(silent_clip), "--audio", str(tmp_path / "none.wav")], "none.wav"),
        "audio silent video": (["--target", str(silent_clip), "--audio", str(silent_clip)], "mute.mp4"),
    }
    for kind, (args, named) in cases.items():
        for command in (["swap"], ["queue", "add"]):
            code = main([*command, "--source", source, "--output", str(tmp_path / "o.mp4"), *args, *FAST])
            err = capsys.readouterr().err.strip()
            assert code == 2, (kind, command, err)
            assert len(err.splitlines()) == 1 and named in err and "Traceback" not in err, (kind, err)
    assert not (tmp_path / "o.mp4").exists()


def test_the_preview_hears_its_own_frame_of_the_new_voice(
        face_clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("wav2lip_gan_96")
    heard: list[tuple[Media, list[int]]] = []
    prepare, run = LipSyncerProcessor.prepare, LipSyncerProcessor.run

    def spy_prepare(self: LipSyncerProcessor, media: Media) -> None:
        heard.append((media, []))
        prepare(self, media)

    def spy_run(self: LipSyncerProcessor, frames: Any, items: Any, who: Any, masks: Any, at: Any,
                originals: Any = None) -> None:
        heard[-1][1].extend(at)
        run(self, frames, items, who, masks, at, originals)

    monkeypatch.setattr(LipSyncerProcessor, "prepare", spy_prepare)
    monkeypatch.setattr(LipSyncerProcessor, "run", spy_run)
    settings = apply_overrides(Settings(), ["selector.mode=one", ORDER])
    sound = voice(tmp_path / "voice.wav")
    a = preview.preview(settings, [photos.grace_hopper_path()], face_clip, 7, audio=sound)
    b = preview.preview(settings, [photos.grace_hopper_path()], face_clip, 7)
    (media_a, at_a), (media_b, at_b) = heard
    assert media_a == Media(face_clip, 30.0, 0.0, sound) and at_a == [7]
    assert media_b.audio is None and at_b == [7]
    assert not np.array_equal(a, b)  # another sound, another mouth


def test_farm_segments_carry_the_voice(face_clip: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.jobs.store import JobStore

    local_farm(monkeypatch, 0.5)
    install_surrogate("wav2lip_gan_96")
    settings = apply_overrides(Settings(), ["selector.mode=one", "detector.size=320", ORDER])
    store = JobStore()
    out = tmp_path / "farm.mp4"
    job = store.add([photos.grace_hopper_path()], face_clip, out, settings,
                    audio=voice(tmp_path / "voice.wav", hz=600))
    render_on_farm(store, job)
    assert count_frames(out) == 30
    assert abs(float(_audio_stream(out)["duration"]) - 1.0) <= 0.05
    assert pitch(out) == pytest.approx(600, abs=5)


def test_the_ui_voice_reaches_the_preview_and_the_queued_job(face_clip: Path, tmp_path: Path) -> None:
    """The Processors area's voice drop zone: the preview's mouth follows it (a different voice gives a
    different mouth), a queued job keeps a copy of it, and a file with no sound is refused in one line."""
    from pipeline.settings import Settings, apply_overrides
    from webui import preview_panel, queue_tab
    from webui.common import Ctx, UiConfig

    install_surrogate("wav2lip_gan_96")
    settings = apply_overrides(Settings(), ["selector.mode=one", ORDER])
    photo = str(photos.grace_hopper_path())
    low, high = voice(tmp_path / "low.wav", hz=300.0), voice(tmp_path / "high.wav", hz=2000.0)
    image_low, status, *_ = preview_panel.render(settings, [photo], str(face_clip), 10, False, str(low))
    assert image_low is not None, status
    image_high, *_ = preview_panel.render(settings, [photo], str(face_clip), 10, False, str(high))
    assert np.abs(image_low.astype(int) - image_high.astype(int)).max() > 0  # the mouth follows the voice
    mute = tmp_path / "mute.txt"
    mute.write_text("no sound here")
    image, status, *_ = preview_panel.render(settings, [photo], str(face_clip), 10, False, str(mute))
    assert image is None and "mute.txt has no audio stream" in status
    from pipeline.jobs.store import JobStore

    ctx = Ctx(UiConfig(), tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))
    job = queue_tab.submit(ctx, settings, [photo], str(face_clip), None, str(high))
    assert job.audio is not None and Path(job.audio).is_file() and Path(job.audio) != high  # its own copy
    assert Path(job.audio).read_bytes() == high.read_bytes()
