"""pipeline.media and pipeline.workspace: the one set of suffixes, media checks, output checks, names."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import media, workspace
from pipeline.errors import BadMedia, UserError
from pipeline.image import FORMATS
from pipeline.video import builders
from tests import photos
from tests.videos import make_clip


def test_suffixes_are_derived_from_the_readers_and_writers() -> None:
    assert tuple(FORMATS) == media.IMAGE_OUTPUTS
    assert set(media.IMAGE_OUTPUTS) <= set(media.IMAGE_INPUTS)
    assert media.VIDEO_OUTPUTS == (".mp4", ".mov", ".mkv", ".m4v")  # what holds H.264/HEVC
    written = {".mp4", ".mov", ".mkv", ".m4v", ".webm", ".avi"}
    assert set(media.VIDEO_INPUTS) == written | set(media.READ_ONLY_VIDEOS)
    assert not set(media.IMAGE_INPUTS) & set(media.VIDEO_INPUTS)
    assert all(media.kind_of(f"x{s.upper()}") == "video" for s in media.VIDEO_INPUTS)
    assert all(media.kind_of(f"x{s}") == "image" for s in media.IMAGE_INPUTS)


def test_containers_drive_faststart_and_muxer_names() -> None:
    assert builders.faststart_args(".MP4") == ["-movflags", "+faststart"]
    assert builders.faststart_args(".mkv") == builders.faststart_args(".ts") == []
    assert [builders.muxer(s) for s in (".mkv", ".m4v", ".ts")] == ["matroska", "mp4", "ts"]


def test_check_video_output_names_the_containers() -> None:
    media.check_video_output(Path("out.MKV"))
    media.check_video_output(Path("out.webm"))  # VP9 (video/formats.py)
    for bad in ("out.avi", "out"):
        with pytest.raises(UserError, match=r"use \.mp4, \.mov, \.mkv, \.m4v, \.webm"):
            media.check_video_output(Path(bad))


def test_check_output_refuses_inputs_folders_and_missing_folders(tmp_path: Path) -> None:
    source = photos.astronaut_path(tmp_path)
    with pytest.raises(UserError, match="one of the inputs"):
        media.check_output(source, [source])
    with pytest.raises(UserError, match="is a folder"):
        media.check_output(tmp_path, [source])
    with pytest.raises(UserError, match="does not exist"):
        media.check_output(tmp_path / "nowhere" / "out.png", [source])
    media.check_output(tmp_path / "out.png", [source])


def test_check_media_describes_images_and_videos(tmp_path: Path) -> None:
    info = media.check_media(photos.grace_hopper_path(), ("image",))
    assert info.kind == "image" and info.frames == 1 and info.width > 0
    clip = make_clip(tmp_path / "clip.mp4", seconds=0.5, size=(64, 48), fps=10, audio=False)
    info = media.check_media(clip)
    assert (info.kind, info.width, info.height, info.frames) == ("video", 64, 48, 5)
    assert media.check_media(clip) is info  # an unchanged file is read once
    with pytest.raises(BadMedia, match="expected image"):
        media.check_media(clip, ("image",))
    with pytest.raises(BadMedia, match="no such file"):
        media.check_media(tmp_path / "gone.mp4")


def test_output_path_keeps_writable_image_suffixes(tmp_path: Path) -> None:
    assert workspace.output_path(tmp_path, "a.webp").suffix == ".webp"
    assert workspace.output_path(tmp_path, "a.tiff").suffix == ".png"  # read, not written
    out = workspace.output_path(tmp_path, "0123456789abcdef-holiday clip.MOV", owner="ann")
    assert out.parent == tmp_path / "ann"
    assert out.name.startswith("holiday_clip-swap-") and out.suffix == ".mp4"
