"""Encoder / NVDEC selection against fake ffmpeg executables (no GPU needed)."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from pipeline.env import BadEnvironment
from pipeline.video import encoders, ffmpeg

_FAKE = """#!{python}
import sys
args = sys.argv[1:]
listed = {listed!r}
if "-encoders" in args:
    print("Encoders:\\n V..... = Video\\n A..... = Audio\\n ------")
    for name in listed:
        print(" V....D " + name + "   fake " + name)
    print(" A..... aac   AAC")
    sys.exit(0)
if "-hwaccels" in args:
    print("Hardware acceleration methods:\\ncuda")
    sys.exit(0)
with open({log!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
if ("h264_nvenc" in args or "hevc_nvenc" in args) and not {nvenc_works!r}:
    sys.stderr.write("[h264_nvenc @ 0x5611] Cannot load libcuda.so.1\\nError initializing output stream\\n")
    sys.exit(1)
if "-hwaccel" in args and not {nvdec_works!r}:
    sys.stderr.write("[AVHWDeviceContext @ 0x55] Cannot load libcuda.so.1\\n")
    sys.exit(1)
sys.exit(0)
"""


def fake_ffmpeg(folder: Path, listed: list[str], nvenc_works: bool = True, nvdec_works: bool = True) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "ffmpeg"
    exe.write_text(_FAKE.format(python=sys.executable, listed=listed, log=str(folder / "calls.log"),
                                nvenc_works=nvenc_works, nvdec_works=nvdec_works))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def trials(exe: str) -> list[str]:
    log = Path(exe).with_name("calls.log")
    return log.read_text().splitlines() if log.exists() else []


def test_auto_picks_working_nvenc(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path, ["libx264", "h264_nvenc"])
    name, reason = encoders.choose_encoder("auto", exe)
    assert name == "h264_nvenc" and "trial" in reason
    assert len(trials(exe)) == 1 and "-frames:v 1" in trials(exe)[0]


def test_listed_but_failing_nvenc_falls_back_with_reason(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path, ["libx264", "h264_nvenc"], nvenc_works=False)
    name, reason = encoders.choose_encoder("auto", exe)
    assert name == "libx264"
    assert "failed to open" in reason and "Cannot load libcuda.so.1" in reason and "0x5611" not in reason


def test_absent_nvenc_gives_libx264_without_trial(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path, ["libx264"])
    name, reason = encoders.choose_encoder("auto", exe)
    assert name == "libx264" and "not in this ffmpeg's encoder list" in reason
    assert trials(exe) == []


def test_explicit_hevc_and_av1_nvenc_fall_back(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path, ["libx264", "libx265", "hevc_nvenc"], nvenc_works=False)
    assert encoders.choose_encoder("hevc_nvenc", exe)[0] == "libx265"
    name, reason = encoders.choose_encoder("av1_nvenc", exe)
    assert name == "libx264" and "av1_nvenc" in reason


def test_result_is_cached_per_ffmpeg_path(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path / "a", ["libx264", "h264_nvenc"])
    other = fake_ffmpeg(tmp_path / "b", ["libx264", "h264_nvenc"], nvenc_works=False)
    for _ in range(3):
        assert encoders.choose_encoder("auto", exe)[0] == "h264_nvenc"
    assert len(trials(exe)) == 1
    assert encoders.choose_encoder("auto", other)[0] == "libx264"


def test_missing_libx264_is_an_error(tmp_path: Path) -> None:
    exe = fake_ffmpeg(tmp_path, ["mpeg4"])
    with pytest.raises(ffmpeg.FFmpegMissing, match="libx264"):
        encoders.choose_encoder("libx264", exe)


def test_nvdec_only_when_trial_decode_works(tmp_path: Path) -> None:
    good = fake_ffmpeg(tmp_path / "g", ["libx264"])
    bad = fake_ffmpeg(tmp_path / "b", ["libx264"], nvdec_works=False)
    clip = tmp_path / "in.mp4"
    assert encoders.choose_hwaccel("auto", good, clip, "h264", "yuv420p")[0] == "cuda"
    accel, reason = encoders.choose_hwaccel("auto", bad, clip, "h264", "yuv420p")
    assert accel is None and "software" in reason and "libcuda" in reason
    assert encoders.choose_hwaccel("none", good, clip, "h264", "yuv420p")[0] is None


def test_env_override_selects_ffmpeg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = fake_ffmpeg(tmp_path, ["libx264"])
    monkeypatch.setenv(ffmpeg.ENV_VAR, exe)
    tools = ffmpeg.find_tools()
    assert tools.ffmpeg == exe and tools.origin == "env" and tools.ffprobe is None
    monkeypatch.setenv(ffmpeg.ENV_VAR, str(tmp_path / "nope"))
    line = f"FACESTATION_FFMPEG must be an executable: a path, or a name on PATH (got '{tmp_path / 'nope'}')"
    with pytest.raises(BadEnvironment, match=re.escape(line)):
        ffmpeg.find_tools()


def test_imageio_ffmpeg_used_when_nothing_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ffmpeg.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    tools = ffmpeg.find_tools()
    assert tools.origin == "imageio-ffmpeg" and tools.ffprobe is None and Path(tools.ffmpeg).is_file()
