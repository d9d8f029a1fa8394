"""Decode -> encode round trips on small generated clips, and process hygiene (no orphan ffmpeg)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import psutil
import pytest

from pipeline.errors import Cancelled, UserError
from pipeline.provenance import provenance_tag
from pipeline.video import encode
from pipeline.video.decode import read_frames
from pipeline.video.encode import EncodeError, Encoder, encoder_for
from pipeline.video.probe import VideoInfo, probe
from pipeline.video.trim import Trim
from tests import videos
from tests.timing import wait_until


def ffmpeg_children() -> list[psutil.Process]:
    kids = psutil.Process().children(recursive=True)
    return [p for p in kids if "ffmpeg" in p.name() and p.status() != psutil.STATUS_ZOMBIE]


def transcode(src: Path | VideoInfo, dest: Path, **kw: object) -> tuple[VideoInfo, int]:
    info = src if isinstance(src, VideoInfo) else probe(src)
    start, end = kw.pop("start", None), kw.pop("end", None)
    n = 0
    with Encoder(dest, width=info.width, height=info.height, fps=info.fps, source=info,
                 start=start, end=end, encoder="libx264", preset="fastest", models=["classic"], **kw) as enc:  # type: ignore[arg-type]
        for frame in read_frames(info.path, info=info, trim=Trim(start, end)):  # type: ignore[arg-type]
            enc.write(frame)
            n += 1
    return info, n


def first_frame(path: Path) -> np.ndarray:
    frames = read_frames(path)
    try:
        return next(frames)
    finally:
        frames.close()  # type: ignore[attr-defined]


def diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return videos.make_clip(tmp_path_factory.mktemp("io") / "clip.mp4", seconds=2, size=(320, 240), fps=30)


def test_round_trip_keeps_frames_fps_duration_audio_colour_and_tags(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "o" / "out.mp4"
    src, n = transcode(clip, out)
    got = probe(out)
    assert n == src.frame_count == videos.count_frames(out) == 60
    assert got.fps == src.fps and abs(got.duration - src.duration) <= 1 / float(src.fps)
    assert got.has_audio and got.audio_codec == "aac"
    colour = (got.color_space, got.color_transfer, got.color_primaries, got.color_range)
    assert colour == ("bt709", "bt709", "bt709", "tv")
    tags = videos.stream_info(out)["format"]["tags"]
    assert tags["comment"] == provenance_tag(["classic"]) and "synthetic media" in tags["comment"]
    assert diff(first_frame(clip), first_frame(out)) < 3.0  # same matrix both ways: colours survive
    assert [p.name for p in out.parent.iterdir()] == ["out.mp4"]  # no partial left behind


def test_untagged_sd_keeps_bt601_colours(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "sd.mp4", seconds=0.5, audio=False, color=None)
    out = tmp_path / "out.mp4"
    transcode(src, out)
    assert probe(out).color_space == "smpte170m"
    assert diff(first_frame(src), first_frame(out)) < 3.0


def test_trim_cuts_video_and_audio(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "trim.mp4"
    _, n = transcode(clip, out, start=0.5, end=1.5)
    assert n == 30 and videos.count_frames(out) == 30
    streams = {s["codec_type"]: s for s in videos.stream_info(out)["streams"]}
    assert float(streams["audio"]["duration"]) == pytest.approx(1.0, abs=0.05)
    # the first kept frame is source frame 15
    source = list(read_frames(clip, trim=Trim(end=0.6)))
    assert diff(first_frame(out), source[15]) < diff(first_frame(out), source[0])
    with pytest.raises(UserError, match="past the end"):
        read_frames(clip, trim=Trim(5.0))


def test_odd_size_is_padded_by_replication(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "odd.mp4", seconds=0.5, size=(321, 241), pix_fmt="yuv444p", audio=False)
    info = probe(src)
    assert (info.width, info.height) == (321, 241)
    assert next(iter(read_frames(src))).shape == (241, 321, 3)
    out = tmp_path / "out.mp4"
    transcode(info, out)
    got = probe(out)
    assert (got.width, got.height) == (322, 242) and got.pix_fmt == "yuv420p"
    frame = first_frame(out)
    assert diff(frame[:, -1], frame[:, -2]) < 6 and diff(frame[-1], frame[-2]) < 6  # replicated, not black


def test_rotation_is_applied(tmp_path: Path) -> None:
    plain = videos.make_clip(tmp_path / "plain.mp4", seconds=0.3, size=(320, 240), audio=False)
    rotated = videos.set_rotation(plain, tmp_path / "rotated.mp4", 90)
    upright, raw = first_frame(rotated), first_frame(plain)
    assert upright.shape == (320, 240, 3)
    assert diff(upright, np.rot90(raw, 1)) < 2 < diff(upright, np.rot90(raw, -1))  # 90 = counter-clockwise
    out = tmp_path / "out.mp4"
    transcode(rotated, out)
    got = probe(out)
    assert got.rotation == 0 and (got.width, got.height) == (240, 320)


def test_vfr_becomes_cfr_with_same_duration(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "vfr.mp4", seconds=2, vfr=True, audio=False)
    info = probe(src)
    assert info.is_vfr and videos.count_frames(src) == 45
    out = tmp_path / "out.mp4"
    _, n = transcode(info, out)
    got = probe(out)
    assert not got.is_vfr and got.fps == info.fps
    assert n == round(info.duration * info.fps)
    assert abs(got.duration - info.duration) <= 1 / float(info.fps) + 1e-6


def test_hdr_is_tone_mapped_to_8bit_bt709(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "hdr.mp4", seconds=0.3, audio=False, hdr=True)
    frame = first_frame(src)
    assert frame.dtype == np.uint8 and frame.shape == (240, 320, 3) and 20 < frame.mean() < 235
    out = tmp_path / "out.mp4"
    transcode(src, out)
    got = probe(out)
    assert not got.is_hdr and got.bit_depth == 8 and got.color_space == "bt709"


def test_non_ascii_path_with_spaces(clip: Path, tmp_path: Path) -> None:
    src = tmp_path / "dossier été" / "ma vidéo: ☃ 1.mp4"
    src.parent.mkdir()
    src.write_bytes(clip.read_bytes())
    out = tmp_path / "sortie à rendre" / "résultat final.mp4"
    _, n = transcode(src, out)
    assert n == 60 and probe(out).frame_count == 60


def test_early_close_and_consumer_error_leave_no_ffmpeg(clip: Path) -> None:
    frames = read_frames(clip)
    next(frames)  # type: ignore[call-overload]
    assert ffmpeg_children()
    frames.close()  # type: ignore[attr-defined]
    assert ffmpeg_children() == []

    def consume() -> None:
        for i, _ in enumerate(read_frames(clip)):
            if i == 3:
                raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        consume()
    assert ffmpeg_children() == []


def test_cancel_stops_quickly_removes_partial_and_leaves_no_child(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "long.mp4", seconds=10, size=(320, 240), audio=True)
    info = probe(src)
    out_dir = tmp_path / "out"
    cancel = threading.Event()
    enc = Encoder(out_dir / "out.mp4", width=info.width, height=info.height, fps=info.fps, source=info,
                  encoder="libx264", cancel=cancel)
    frames = read_frames(src, info=info, cancel=cancel)
    for _ in range(5):
        enc.write(next(frames))  # type: ignore[call-overload]
    assert len(ffmpeg_children()) == 2
    cancel.set()
    # killed by the watchers, without any further call
    wait_until(lambda: ffmpeg_children() == [], 10, "the cancel watchers to kill both ffmpeg")
    with pytest.raises(Cancelled):
        for frame in frames:
            enc.write(frame)
    with pytest.raises(Cancelled):
        enc.close()
    assert list(out_dir.iterdir()) == []


def test_abort_and_errors_remove_partial(tmp_path: Path) -> None:
    tmp_path = tmp_path / "o"
    tmp_path.mkdir()
    enc = Encoder(tmp_path / "a.mp4", width=64, height=48, fps=Fraction(25), encoder="libx264")
    enc.write(np.zeros((48, 64, 3), np.uint8))
    assert not (tmp_path / "a.mp4").exists()  # only a hidden partial, if ffmpeg has opened it yet
    assert all(p.name.startswith(".a.") and ".partial" in p.name for p in tmp_path.iterdir())
    enc.abort()
    assert list(tmp_path.iterdir()) == [] and ffmpeg_children() == []

    enc = Encoder(tmp_path / "b.mp4", width=64, height=48, fps=25, encoder="libx264")
    with pytest.raises(ValueError, match="48x64x3"):
        enc.write(np.zeros((48, 65, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(EncodeError, match="no frames"):
        Encoder(tmp_path / "c.mp4", width=64, height=48, fps=25, encoder="libx264").close()
    assert list(tmp_path.iterdir()) == [] and ffmpeg_children() == []


def test_stale_partials_of_this_host_go_once_per_folder_others_stay(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A partial names its host and process: one of a dead process of this host is removed, one of a live
    process or of another host (a farm node writing into a shared folder) never; a folder is cleaned the first
    time this process writes into it, not by every encoder (a job's segments)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    name = encode.partial_name(tmp_path / "o.mp4").name
    assert name.startswith(f".o.{socket.gethostname()}.{os.getpid()}-") and name.endswith(".partial.mp4")
    monkeypatch.setattr(encode.liveness, "this_host", lambda: "node-b.lan")
    stale = tmp_path / f".o.node-b.lan.{dead.pid}-0123abcd.partial.mp4"
    alive = tmp_path / f".o.node-b.lan.{os.getpid()}-89abcdef.partial.mp4"
    remote = tmp_path / f".o.node-a.lan.{dead.pid}-0123abcd.partial.mp4"  # its pid means nothing here
    for path in (stale, alive, remote):
        path.write_bytes(b"half a video")
    assert encode.remove_stale_partials(tmp_path) == [stale]
    assert alive.exists() and remote.exists()
    listed: list[Path] = []
    monkeypatch.setattr(encode, "remove_stale_partials", listed.append)
    for _ in range(3):
        Encoder(tmp_path / "seg.mkv", width=64, height=48, fps=25, encoder="libx264").abort()
    assert listed == [tmp_path]


def test_image_frames_clip_from_face_image(tmp_path: Path) -> None:
    face = np.zeros((100, 80, 3), np.uint8)
    face[30:70, 20:60] = (40, 160, 220)
    src = videos.make_clip(tmp_path / "face.mp4", seconds=1, size=(160, 120), fps=10, face_image=face)
    frames = list(read_frames(src))
    assert len(frames) == videos.count_frames(src) == 10
    assert diff(frames[0], frames[-1]) > 1  # it moves


def test_bundled_imageio_ffmpeg_decodes_and_encodes(clip: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no system ffmpeg/ffprobe: imageio-ffmpeg + PyAV probing
    out = tmp_path / "o" / "out.mp4"
    _, n = transcode(clip, out)
    got = probe(out)
    assert n == 60 and got.frame_count == 60 and got.has_audio


@pytest.mark.slow
def test_round_trip_1080p(tmp_path: Path) -> None:
    src = videos.make_clip(tmp_path / "hd.mp4", seconds=1, size=(1920, 1080), fps=30)
    out = tmp_path / "o" / "out.mp4"
    info, n = transcode(src, out)
    got = probe(out)
    assert n == 30 == videos.count_frames(out) and (got.width, got.height) == (1920, 1080)
    assert abs(got.duration - info.duration) <= 1 / 30 and got.has_audio


@pytest.mark.parametrize(("suffix", "expected"), [(".mp4", "aac"), (".mkv", "pcm_s16le")])
def test_audio_copied_where_container_allows_else_reencoded(tmp_path: Path, suffix: str,
                                                            expected: str) -> None:
    src = videos.make_clip(tmp_path / "pcm.mov", seconds=0.5, audio_codec="pcm_s16le")
    out = tmp_path / "o" / f"out{suffix}"
    transcode(src, out)
    assert probe(out).audio_codec == expected


def test_encoder_for_uses_settings_trim_and_audio_choice(clip: Path, tmp_path: Path) -> None:
    from pipeline.settings import Settings, apply_overrides

    settings = apply_overrides(Settings(), ["video.start=0.5", "video.end=1.0", "video.keep_audio=false",
                                            "output.encoder=libx264", "output.preset=fastest"])
    info = probe(clip)
    with encoder_for(tmp_path / "o" / "s.mp4", info, settings, models=["classic"]) as enc:
        for frame in read_frames(clip, info=info, trim=Trim.of(settings)):
            enc.write(frame)
    got = probe(enc.output)
    assert enc.encoder == "libx264" and not got.has_audio and got.frame_count == 15


def test_a_disk_that_fills_at_the_files_ending_is_no_success(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """ffmpeg exits 0 when the disk fills while it writes the trailer: the encoder reads its errors too."""
    from pipeline.errors import OutputFault

    enc = Encoder(tmp_path / "full.mp4", width=64, height=48, fps=25, encoder="libx264")
    for _ in range(3):
        enc.write(np.zeros((48, 64, 3), np.uint8))
    monkeypatch.setattr(enc._process, "error_lines",
                        lambda: ["[mp4 @ 0x1] av_interleaved_write_frame(): No space left on device"])
    with pytest.raises(OutputFault, match="full.mp4"):
        enc.close()
    assert not (tmp_path / "full.mp4").exists() and not list(tmp_path.glob(".*partial*"))
