"""A target's small pictures for the UI: a video's frame strip (K thumbnails across the clip, on which the
in- and out-points of a trim are dragged) and the first frame of any target.

Each thumbnail is one frame decoded at its own time by a short ffmpeg run (``-ss`` before ``-i``: a fast,
accurate seek, as :mod:`pipeline.video.decode` does), scaled inside ffmpeg and encoded to a small JPEG
here; so a strip costs K short decodes whatever the clip's length. Strips and pictures are cached per file
(path, size, mtime): an unchanged target is decoded once.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from pipeline import media
from pipeline.errors import BadMedia
from pipeline.image import read_image
from pipeline.types import Frame
from pipeline.video import builders, ffmpeg
from pipeline.video.decode import decode_filters
from pipeline.video.probe import VideoInfo, probe
from pipeline.video.process import run_tool

STRIP_COUNT = 10  # thumbnails in a strip
STRIP_HEIGHT = 54  # px: a 16:9 clip gives 96×54 thumbnails
PICTURE_HEIGHT = 96  # px: the target's first frame beside its name
JPEG_QUALITY = 80
DECODERS = 3  # ffmpeg runs at once while a strip is made


@dataclass(frozen=True)
class Thumb:
    """One thumbnail of a strip: frame ``frame`` (0-based) shown at ``time`` s, as a JPEG."""

    frame: int
    time: float
    jpeg: bytes


@dataclass(frozen=True)
class FrameStrip:
    """A video's thumbnails at evenly spaced frames (the first is frame 0), with what a timeline needs to
    turn a position into a time: the duration, the rate and the frame count."""

    duration: float
    fps: float
    frames: int
    width: int  # of each thumbnail
    height: int
    thumbs: tuple[Thumb, ...]


def strip_frames(frames: int, count: int) -> list[int]:
    """``count`` frame indices evenly spaced from frame 0 (fewer when the clip has fewer frames)."""
    count = max(1, min(count, frames))
    return [i * frames // count for i in range(count)]


def thumb_size(width: int, height: int, thumb_height: int) -> tuple[int, int]:
    """A thumbnail's (width, height): ``thumb_height`` tall (at most the frame's), the frame's shape kept,
    both even."""
    h = max(2, min(thumb_height, height) // 2 * 2)
    w = max(2, round(width * h / height / 2) * 2)
    return w, h


def thumb_cmd(ffmpeg_exe: str, path: str | Path, *, time: float, filters: str, size: tuple[int, int]
              ) -> list[str]:
    """One frame at ``time`` s, through the decode ``filters`` (upright, SDR, BGR), scaled to ``size``,
    as raw BGR24 on stdout (the render's decode command, one frame of it)."""
    w, h = size
    return builders.decode_cmd(ffmpeg_exe, path, filters=f"{filters},scale={w}:{h}:flags=area",
                               start=time or None, frames=1)


def frame_strip(path: str | Path, count: int = STRIP_COUNT, height: int = STRIP_HEIGHT) -> FrameStrip | None:
    """``count`` thumbnails ``height`` px tall across the video ``path``; None for a still image (it has no
    timeline). BadMedia (one line) for a file that is not a readable image or video."""
    info = media.check_media(path)
    if info.kind == "image":
        return None
    return _strip(info.path, media.file_key(info.path), count, height)


def first_frame(path: str | Path, height: int = PICTURE_HEIGHT) -> bytes:
    """The target's first frame (a still image: the image) as a JPEG ``height`` px tall at most."""
    info = media.check_media(path)
    return _first(info.path, info.kind, media.file_key(info.path), height)


@functools.lru_cache(maxsize=8)
def _strip(path: Path, key: tuple[str, int, int], count: int, height: int) -> FrameStrip:
    """Cached by ``key`` (:func:`pipeline.media.file_key`): an unchanged file is decoded once."""
    video = probe(path)
    fps = float(video.fps)
    size = thumb_size(video.width, video.height, height)
    filters = decode_filters(video, ffmpeg.ffmpeg_exe())
    indices = strip_frames(video.frame_count, count)
    with ThreadPoolExecutor(DECODERS) as pool:  # short runs, mostly ffmpeg starting: a few at once
        decoded = list(pool.map(lambda i: _decode_one(video, i / fps, filters, size), indices))
    thumbs: list[Thumb] = []
    for index, frame in zip(indices, decoded, strict=True):
        if frame is None:  # a frame past what really decodes (a count estimated from the duration)
            break
        thumbs.append(Thumb(index, index / fps, _jpeg(frame)))
    if not thumbs:
        raise BadMedia(f"{path.name}: no frame could be decoded for the timeline")
    return FrameStrip(video.duration, fps, video.frame_count, size[0], size[1], tuple(thumbs))


@functools.lru_cache(maxsize=8)
def _first(path: Path, kind: str, key: tuple[str, int, int], height: int) -> bytes:
    if kind == "image":
        image = read_image(path).bgr
        w, h = thumb_size(image.shape[1], image.shape[0], height)
        small = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
        return _jpeg(np.asarray(small, np.uint8))
    video = probe(path)
    size = thumb_size(video.width, video.height, height)
    frame = _decode_one(video, 0.0, decode_filters(video, ffmpeg.ffmpeg_exe()), size)
    if frame is None:
        raise BadMedia(f"{path.name}: its first frame could not be decoded")
    return _jpeg(frame)


def _decode_one(video: VideoInfo, time: float, filters: str, size: tuple[int, int]) -> Frame | None:
    """The frame at ``time`` s at ``size``, or None when ffmpeg gives none there; BadMedia when it fails."""
    cmd = thumb_cmd(ffmpeg.ffmpeg_exe(), video.path, time=time, filters=filters, size=size)
    done = run_tool(cmd, on=video.path.name)
    w, h = size
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise BadMedia(f"{video.path.name}: the frame at {time:.2f} s could not be decoded ({tail[0]})")
    if len(done.stdout) < w * h * 3:
        return None
    return np.frombuffer(done.stdout[: w * h * 3], np.uint8).reshape(h, w, 3)


def _jpeg(frame: Frame) -> bytes:
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise BadMedia("a thumbnail could not be encoded")
    return data.tobytes()


def clear_cache() -> None:
    """Forget every strip and picture made so far."""
    _strip.cache_clear()
    _first.cache_clear()
