"""probe(): what a video is, or one clear BadMedia line — with ffprobe and with the PyAV fallback."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from pipeline.errors import BadMedia
from pipeline.video import ffmpeg
from pipeline.video.probe import probe
from tests import videos


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("probe")
    plain = videos.make_clip(d / "plain.mp4", seconds=1, size=(320, 240), fps=25)
    return {
        "plain": plain,
        "truncated": videos.make_truncated(plain, d / "truncated.mp4"),
        "audio_only": videos.make_audio_only(d / "audio only.mp4"),
        "image": videos.make_image_as_video(d / "photo.mp4"),
        "unknown_codec": videos.make_unknown_codec(d / "weird.mkv"),
        "hdr": videos.make_clip(d / "hdr.mp4", seconds=0.5, audio=False, hdr=True),
        "rotated": videos.make_clip(d / "rot.mp4", seconds=0.5, audio=False, rotation=90),
    }


@pytest.fixture(params=["ffprobe", "pyav"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pyav":  # no ffmpeg on PATH: imageio-ffmpeg's binary, which has no ffprobe
        monkeypatch.setenv("PATH", "/nonexistent")
        assert ffmpeg.find_tools().ffprobe is None
    return request.param


def test_plain_clip(clips: dict[str, Path], backend: str) -> None:
    info = probe(clips["plain"])
    assert (info.width, info.height) == (320, 240)
    assert info.fps == Fraction(25) and info.frame_count == 25 and info.frame_count_exact
    assert info.duration == pytest.approx(1.0, abs=0.05)
    assert info.codec == "h264" and info.pix_fmt == "yuv420p" and info.bit_depth == 8
    colour = (info.color_space, info.color_transfer, info.color_primaries, info.color_range)
    assert colour == ("bt709", "bt709", "bt709", "tv")
    assert info.has_audio and info.audio_codec == "aac" and not info.is_vfr and not info.is_hdr
    assert info.rotation == 0 and "mp4" in info.container


def test_hdr_and_rotation_flags(clips: dict[str, Path], backend: str) -> None:
    hdr = probe(clips["hdr"])
    assert hdr.is_hdr and hdr.bit_depth == 10 and hdr.color_primaries == "bt2020" and hdr.codec == "hevc"
    rot = probe(clips["rotated"])
    assert rot.rotation == 90 and (rot.width, rot.height) == (240, 320)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("truncated", "truncated or corrupt"), ("audio_only", "no video stream (audio only)"),
     ("image", "is an image (png)"), ("unknown_codec", "codec this ffmpeg cannot decode")],
)
def test_bad_inputs_give_one_clear_line(clips: dict[str, Path], backend: str, kind: str,
                                       expected: str) -> None:
    with pytest.raises(BadMedia) as err:
        probe(clips[kind])
    message = str(err.value)
    assert expected in message and clips[kind].name in message and "\n" not in message


def test_missing_empty_and_folder(tmp_path: Path) -> None:
    with pytest.raises(BadMedia, match="file not found"):
        probe(tmp_path / "nope.mp4")
    (tmp_path / "empty.mp4").write_bytes(b"")
    with pytest.raises(BadMedia, match=r"empty \(0 bytes\)"):
        probe(tmp_path / "empty.mp4")
    with pytest.raises(BadMedia, match="folder"):
        probe(tmp_path)


def test_non_ascii_path_with_spaces(clips: dict[str, Path], tmp_path: Path) -> None:
    odd = tmp_path / "dossier été" / "ma vidéo: 1 ☃.mp4"
    odd.parent.mkdir()
    odd.write_bytes(clips["plain"].read_bytes())
    info = probe(odd)
    assert info.path == odd and info.frame_count == 25
