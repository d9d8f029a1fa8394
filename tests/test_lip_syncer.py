"""lip_syncer (docs/processors.md §2): each frame's mel window, checked against an independent computation
with scipy; the lower face follows the audio and the upper face does not; silence and a short sound; the
voice extractor's STFT round trip; the real files' signatures."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from scipy import signal
from scipy.io import wavfile

from pipeline.errors import ModelMismatch
from pipeline.faces import align
from pipeline.models import catalog, sessions
from pipeline.models.catalog import TensorSpec
from pipeline.processors import Media
from pipeline.processors.crops import FaceItem
from pipeline.processors.lip_syncer import LipSyncerProcessor, clip, geometry, mel
from pipeline.processors.lip_syncer.processor import ESTIMATED
from pipeline.processors.lip_syncer.voice import VoiceExtractor
from pipeline.processors.lip_syncer.wav2lip import Wav2Lip
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Face
from tests.surrogates import audio_shift, default_landmarks68, install_surrogate, make_surrogate
from tests.videos import make_clip

# §2.4 as docs/processors.md lists it (stated here, not computed by the code under test)
EDGES = [2, 3, 5, 6, 7, 8, 10, 11, 12, 14, 15, 17, 18, 20, 22, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 44,
         46, 48, 51, 54, 56, 59, 62, 65, 68, 71, 74, 77, 81, 84, 88, 92, 95, 99, 103, 108, 112, 116, 121, 126,
         130, 135, 141, 146, 151, 157, 163, 169, 175, 181, 188, 194, 201, 208, 216, 223, 231, 239, 247, 256,
         265, 274, 283, 292, 302, 312, 323, 334, 345, 356, 368, 380]


def reference_mel(samples: np.ndarray) -> np.ndarray:
    """§2.4 step by step with scipy directly."""
    x = signal.resample(samples.astype(np.float64), round(len(samples) * 16000 / 48000), axis=0).mean(axis=1)
    x = x / np.abs(x).max()
    y = signal.lfilter([1.0, -0.97], [1.0], x)
    _, _, z = signal.stft(y, fs=16000, window=signal.get_window("hann", 800), nperseg=800, noverlap=600,
                          nfft=800, boundary="zeros", padded=True, scaling="spectrum")
    bank = np.zeros((80, 401))
    for i in range(80):
        bank[i, EDGES[i]:EDGES[i + 1]] = signal.windows.triang(EDGES[i + 1] - EDGES[i])
    return bank @ np.abs(z)


def reference_window(spec: np.ndarray, k: int, fps: float) -> np.ndarray:
    """§2.5: item k ends at the k-th index j·80/fps (floored) that is ≥ 16; none past the end."""
    ends = reference_window_ends(spec, fps)
    return spec[:, ends[k] - 16:ends[k]] if k < len(ends) else np.zeros((80, 16))


def speech_like(seconds: float, seed: int = 0) -> np.ndarray:
    """48 kHz stereo int16: tones whose pitch and loudness change every 0.1 s (so windows differ)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 48000)) / 48000
    pitch = np.repeat(rng.uniform(120, 2000, int(seconds * 10) + 1), 4800)[:len(t)]
    loud = np.repeat(rng.uniform(0.05, 0.9, int(seconds * 10) + 1), 4800)[:len(t)]
    wave = loud * np.sin(2 * np.pi * np.cumsum(pitch) / 48000)
    return (np.stack([wave, 0.7 * wave], axis=1) * 20000).astype(np.int16)


def write_wav(path: Path, samples: np.ndarray) -> Path:
    wavfile.write(path, 48000, samples)
    return path


def smooth_face(seed: int = 1) -> tuple[np.ndarray, Face]:
    """A 320 px mid-grey smooth texture with a face's five points on the ffhq template (no clipping)."""
    rng = np.random.default_rng(seed)
    frame = cv2.GaussianBlur(rng.integers(60, 196, (320, 320, 3)).astype(np.uint8), (0, 0), 3)
    points = (align.TEMPLATES["ffhq_512"] * 240 + [40, 30]).astype(np.float32)
    return frame, Face(box=np.array([40, 30, 280, 270], np.float32), landmarks=points, score=0.9)


def _syncer(tmp_path: Path, wav: Path, fps: float, *overrides: str) -> LipSyncerProcessor:
    settings = apply_overrides(Settings(), ["processors.order=lip_syncer", *overrides])
    model = settings.lip_syncer.model
    install_surrogate(model)
    processor = LipSyncerProcessor(settings, (model,))
    processor.prepare(Media(None, fps, 0.0, wav))
    return processor


@pytest.mark.parametrize("fps", [25.0, 30.0])
def test_the_window_fed_for_frame_k_is_the_one_of_the_facts(tmp_path: Path, fps: float,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    samples = speech_like(1.3)
    wav = write_wav(tmp_path / "voice.wav", samples)
    processor = _syncer(tmp_path, wav, fps, "lip_syncer.weight=0.75")
    expected_mel = reference_mel(samples)
    assert processor.windows is not None
    np.testing.assert_allclose(processor.windows.mel, expected_mel, rtol=1e-4, atol=1e-4 * expected_mel.max())
    fed: list[np.ndarray] = []
    real_run = Wav2Lip.run
    monkeypatch.setattr(Wav2Lip, "run", lambda self, source, target: fed.append(source) or real_run(
        self, source, target))
    frame, face = smooth_face()
    last = processor.windows.count - 1
    for k in (0, 1, 7, last, last + 1, last + 40):
        processor.run([frame], [[FaceItem.unframed(face)]], None, None, [k])  # type: ignore[arg-type]
        want = np.clip(1.6 * np.log10(np.maximum(reference_window(expected_mel, k, fps), 1e-5)) + 3.2, -4, 4)
        np.testing.assert_allclose(fed[-1][0, 0], want * 2 * 0.75, atol=2e-3, err_msg=f"frame {k}")
    assert np.all(fed[-1] == -4 * 1.5)  # past the end: the empty window


def test_the_lower_face_follows_the_audio_and_the_upper_face_does_not(tmp_path: Path) -> None:
    samples = speech_like(1.0, seed=3)
    processor = _syncer(tmp_path, write_wav(tmp_path / "v.wav", samples), 25.0)
    frame, face = smooth_face()
    results = {}
    for k in (2, 9):
        item = FaceItem.unframed(face)
        processor.run([frame], [[item]], None, None, [k])  # type: ignore[arg-type]
        results[k] = (item.crop.astype(np.float64), item.result.astype(np.float64))
    assert ESTIMATED in processor.notices  # no 68 points here
    for k, (crop, result) in results.items():
        assert np.array_equal(result[:280], crop[:280]), "the upper face changed"
        shift = audio_shift(mel.audio_tensor(processor.window(k), 2 * 0.5)) * 255  # BGR, as the model's
        moved = (result - crop)[390:440, 236:276].reshape(-1, 3).mean(axis=0)
        np.testing.assert_allclose(moved, shift, atol=2.5, err_msg=f"frame {k}")
    assert np.abs(results[2][1][390:440] - results[9][1][390:440]).mean() > 2  # another sound, another mouth


def test_the_68_points_set_the_box_and_the_lower_face_mask(tmp_path: Path) -> None:
    processor = _syncer(tmp_path, write_wav(tmp_path / "v.wav", speech_like(0.5)), 25.0)
    frame, face = smooth_face()
    crop_points = default_landmarks68(512)  # a face's 68 points as they sit in the 512 crop
    m = align.estimate(face.landmarks, "ffhq_512", 512)
    face = Face(face.box, face.landmarks, face.score, landmarks68=align.transform_points(
        crop_points, align.invert(m)).astype(np.float32))
    item = FaceItem.unframed(face)
    processor.run([frame], [[item]], None, None, [3])  # type: ignore[arg-type]
    assert ESTIMATED not in processor.notices
    hull = geometry.area_mask(crop_points[list(geometry.LOWER_FACE)].astype(np.float64), 512)
    changed = np.abs(item.result.astype(int) - item.crop.astype(int)).max(axis=2) > 0
    assert not changed[hull == 0].any() and changed[hull == 1].mean() > 0.5


def test_silence_gives_no_nan_and_the_quietest_window(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "silent.wav", np.zeros((48000, 2), np.int16))
    processor = _syncer(tmp_path, wav, 25.0)
    assert processor.windows is not None and np.isfinite(processor.windows.mel).all()
    frame, face = smooth_face()
    item = FaceItem.unframed(face)
    processor.run([frame], [[item]], None, None, [4])  # type: ignore[arg-type]
    assert np.all(mel.audio_tensor(processor.window(4)) == -4.0)
    assert item.result.dtype == np.uint8


def test_a_sound_shorter_than_the_video_is_said_with_its_frame_count(tmp_path: Path) -> None:
    video = make_clip(tmp_path / "clip.mp4", seconds=2.0, fps=24)
    wav = write_wav(tmp_path / "short.wav", speech_like(1.0))
    settings = apply_overrides(Settings(), ["processors.order=lip_syncer"])
    install_surrogate("wav2lip_gan_96")
    processor = LipSyncerProcessor(settings, ("wav2lip_gan_96",))
    processor.prepare(Media(video, 24.0, 0.0, wav))
    assert processor.windows is not None
    heard = processor.windows.count  # 1 s at 24 fps, less the last 200 ms
    assert heard == len(reference_window_ends(reference_mel(speech_like(1.0)), 24.0))
    assert "24 of 48 frames had no audio" in " ".join(processor.notices)  # those after the sound's 1 s
    assert not processor.windows.heard(heard) and processor.windows.heard(heard - 1)
    full = write_wav(tmp_path / "full.wav", speech_like(2.0))
    processor.prepare(Media(video, 24.0, 0.0, full))
    assert processor.windows.count < 48 and processor.windows.frames_past_end(48) == 0


def reference_window_ends(spec: np.ndarray, fps: float) -> list[int]:
    frames = spec.shape[1]
    return [e for e in (math.floor(j * 80 / fps) for j in range(4 * frames)) if 16 <= e < frames]


def test_windows_are_made_once_per_clip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wav = write_wav(tmp_path / "v.wav", speech_like(0.5))
    first = clip.windows(wav, 25.0)
    monkeypatch.setattr(clip.decode, "decode", lambda *a, **k: pytest.fail("decoded twice"))
    assert clip.windows(wav, 25.0) is first


def test_voice_extractor_round_trip_gives_the_sound_back(tmp_path: Path) -> None:
    """A surrogate whose "voice" is all its input: the STFT, bins and inverse of §2.3 give the sound back."""
    install_surrogate("uvr_mdxnet")
    t = np.arange(300_000) / 48000
    wave = 0.5 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 3000 * t)
    samples = (np.stack([wave, -wave], axis=1) * 32767).astype(np.int16)
    voice = VoiceExtractor("uvr_mdxnet").extract(samples)
    assert voice.shape == samples.shape and voice.dtype == np.float32
    error = np.abs(voice - samples / 32767.0).max(axis=1)
    edges = np.zeros(len(samples), bool)  # a chunk's cut edges ring (the bins above 19.2 kHz are dropped)
    for start in range(0, len(samples), 180 * 1024):
        for edge in (start, min(start + 240 * 1024, len(samples))):
            edges[max(edge - 64, 0):edge + 64] = True
    assert error[~edges].max() < 2e-3 and error.max() < 0.05


# The real files' signatures as docs/processors.md §2.3 and §2.6 give them (not read from the catalog)
def _t(name: str | None, *shape: int | None) -> TensorSpec:
    return TensorSpec(name, tuple(shape), "float32")


REAL = {
    "wav2lip_gan_96": ([_t("source", 1, 1, 80, 16), _t("target", 1, 6, 96, 96)],
                       [_t("output", 1, 3, 96, 96)]),
    "wav2lip_96": ([_t("source", 1, 1, 80, 16), _t("target", 1, 6, 96, 96)], [_t("output", 1, 3, 96, 96)]),
    "edtalk_256": ([_t("source", 1, 1, 80, 16), _t("target", 1, 3, 256, 256), _t("weight", 1)],
                   [_t("output", 1, 3, 256, 256)]),
    "kim_vocal_2": ([_t("input", 1, 4, 3072, 256)], [_t("output", 1, 4, 3072, 256)]),
}


@pytest.mark.parametrize("name", list(REAL))
def test_the_real_signature_loads_and_a_wrong_one_is_refused(name: str, tmp_path: Path) -> None:
    entry = catalog.get(name)
    sessions.load(make_surrogate(name, tmp_path / "real.onnx", signature=REAL[name]), entry)
    inputs, outputs = REAL[name]
    wrong = ([_t(s.name, *(d if i != 1 else 3 for i, d in enumerate(s.shape))) for s in inputs[:2]], outputs)
    with pytest.raises(ModelMismatch, match=f"does not look like {name}"):
        sessions.load(make_surrogate(name, tmp_path / "wrong.onnx", signature=wrong), entry)


# --- models check: the judges on the surrogates -----------------------------------------------------------

@pytest.mark.parametrize(("name", "options", "verdict", "reason"), [
    ("wav2lip_gan_96", {"gain": 0.05}, "PASS", "moves with the sound"),
    ("edtalk_256", {"gain": 0.05}, "PASS", "moves with the sound"),
    ("wav2lip_96", {"gain": 0.0}, "FAIL", "does not follow the sound"),
    ("uvr_mdxnet", {}, "PASS", "comes back"),
    ("kim_vocal_2", {"scale": 0.0}, "FAIL", "does not come back"),
    ("kim_vocal_1", {"scale": 3.0}, "FAIL", "loudness"),
])
def test_models_check_judges_lip_syncers_and_voice_extractors(name: str, options: dict[str, float],
                                                               verdict: str, reason: str) -> None:
    pytest.importorskip("matplotlib")  # the check photo (grace_hopper)
    from pipeline import modelcheck

    install_surrogate(name, **options)
    (row,) = modelcheck.check([name])
    assert row.verdict == verdict and reason in row.reason, row


# --- the pure parts: the decode command, which sound the output carries ------------------------------------

def test_decode_cmd_is_48k_stereo_s16le_of_the_first_audio_stream() -> None:
    from pipeline.audio.decode import decode_cmd

    cmd = decode_cmd("ffmpeg", Path("/a/v.mp4"), start=1.5)
    assert cmd[cmd.index("-ss") + 1] == "1.500000" and cmd.index("-ss") < cmd.index("-i")
    assert cmd[cmd.index("-i") + 1] == "file:/a/v.mp4"
    tail = cmd[cmd.index("-i") + 2:]
    assert tail == ["-vn", "-map", "0:a:0", "-ar", "48000", "-ac", "2", "-f", "s16le", "-"]
    assert "-ss" not in decode_cmd("ffmpeg", "/a/v.mp4")


def test_the_output_carries_the_new_voice_as_long_as_the_clip_else_the_source() -> None:
    from fractions import Fraction

    from pipeline.video import builders, streams
    from pipeline.video.probe import VideoInfo

    info = VideoInfo(Path("/t.mp4"), "mov,mp4", 320, 240, Fraction(30), 300, True, 10.0, "h264", "yuv420p", 8,
                     0, None, None, None, None, has_audio=True, audio_codec="aac", is_vfr=False)

    def mux(suffix: str = ".mp4", end: float | None = 5.0, keep: bool = True,
            voice: Path | None = None) -> builders.SourceMux | None:
        return streams.source_mux(info, suffix, start=2.0, end=end, keep_audio=keep, fit_audio=False,
                                  voice=voice)

    own = mux()
    assert own is not None and (own.path, own.start, own.duration, own.audio_args, own.voice) == (
        Path("/t.mp4"), 2.0, 3.0, ("-c:a", "copy"), None)
    new = mux(suffix=".webm", keep=False, voice=Path("/v.wav"))
    assert new is not None and (new.voice, new.duration, new.audio_args) == (Path("/v.wav"), 3.0, None)
    assert new.voice_args[:2] == ("-c:a", "libopus")  # re-encoded for the container
    inputs, maps = builders.source_args(new, 1)
    assert inputs == ["-t", "3.000000", "-i", builders.media_arg("/v.wav")]  # from its start
    assert maps[:2] == ["-map", "1:a:0"]
    whole = mux(end=None, voice=Path("/v.wav"))
    assert whole is not None and whole.duration == 8.0
    assert mux(keep=False) is None


def test_faces_of_several_frames_go_in_one_run_each_with_its_own_window(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    processor = _syncer(tmp_path, write_wav(tmp_path / "v.wav", speech_like(1.0, seed=4)), 25.0)
    frame, face = smooth_face()
    numbers = [1, 6, 12]
    alone = []
    for k in numbers:
        item = FaceItem.unframed(face)
        processor.run([frame], [[item]], None, None, [k])  # type: ignore[arg-type]
        alone.append(item.result)
    runs: list[int] = []
    real_run = Wav2Lip.run
    monkeypatch.setattr(Wav2Lip, "run", lambda self, source, target: runs.append(len(source)) or real_run(
        self, source, target))
    items = [[FaceItem.unframed(face)] for _ in numbers]
    processor.run([frame] * 3, items, None, None, numbers)  # type: ignore[arg-type]
    assert runs == [3] and processor.syncer.batch is None  # type: ignore[attr-defined]  # a dynamic batch
    for row, want in zip(items, alone, strict=True):
        assert np.abs(row[0].result.astype(int) - want.astype(int)).max() <= 1
