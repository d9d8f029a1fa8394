"""Decode a video to BGR uint8 frames (numpy HxWx3), in order, through an ffmpeg pipe.

Why a pipe and not PyAV: measured on the same 1080p clip (scripts/bench_video_io.py, BENCHMARKS.md)
the two are within ~10 % of each other, and the pipe gets ffmpeg's filters for free (autorotation,
accurate seeking, the fps filter for VFR, zscale tone-mapping) while a hung or crashed decoder
cannot take the Python process with it.

What the frames look like:
- upright: ffmpeg applies the rotation tag (``VideoInfo.width/height`` are the upright size);
- constant rate: a VFR source is resampled to its average rate with the ``fps`` filter, so the
  frame count is duration x fps and the output keeps the source's duration;
- SDR 8-bit: HDR (PQ/HLG, bt2020, 10-bit) is tone-mapped to bt709 with zscale + tonemap (hable)
  when this ffmpeg has zscale (Debian's does); otherwise it is only converted with the bt2020
  matrix (colours look flat; a warning is logged);
- YUV->BGR uses the stream's own matrix and range (bt709 for untagged HD, bt601 for untagged SD).
Nothing is written to disk.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.errors import BadMedia, Cancelled
from pipeline.video import builders, encoders, ffmpeg
from pipeline.video.probe import VideoInfo, probe
from pipeline.video.process import FFmpegProcess
from pipeline.video.trim import WHOLE, Trim

log = logging.getLogger(__name__)


@dataclass
class DecodeReport:
    """What a decode really gave, filled in as it runs (see :mod:`pipeline.video.integrity`)."""

    frames: int = 0
    error_lines: int = 0  # stderr lines ffmpeg wrote (``-loglevel error``: corrupt data, a partial file...)
    errors: list[str] = field(default_factory=list)  # the last of them


def decode_filters(info: VideoInfo, ffmpeg_exe: str, frames: tuple[int, int | None] | None = None,
                   hold_gaps: bool = False) -> str:
    """The filter chain for ``info``: VFR -> CFR, [frame range,] HDR -> SDR, YUV -> BGR (right matrix).
    ``hold_gaps``: resampled to the constant rate even when the container says CFR, so that the frames a
    damaged file lost are filled by holding the last good one (the video keeps its length and its sound)."""
    tonemap = None
    if info.is_hdr:
        if {"zscale", "tonemap"} <= ffmpeg.filters(ffmpeg_exe):
            tonemap = builders.tonemap_filter(info.color_transfer or "smpte2084", info.color_primaries,
                                              info.color_space, info.color_range)
        else:
            log.warning("%s is HDR but this ffmpeg has no zscale: converting without tone-mapping",
                        info.path.name)
    # the matrix is chosen from the coded size: rotation does not change what the encoder tagged
    coded_height = info.width if info.rotation in (90, 270) else info.height
    return builders.decode_filters(
        matrix=builders.sws_matrix(info.color_space, coded_height),
        color_range=info.color_range,
        cfr_fps=info.fps if info.is_vfr or hold_gaps else None,
        tonemap=tonemap,
        frames=frames,
    )


def read_frames(
    path: str | Path,
    *,
    info: VideoInfo | None = None,
    trim: Trim = WHOLE,
    cancel: threading.Event | None = None,
    hwaccel: str = "auto",
    frames: tuple[int, int | None] | None = None,
    report: DecodeReport | None = None,
    hold_gaps: bool = False,
) -> Iterator[np.ndarray]:
    """Yield BGR uint8 frames of ``path``: the frames ``trim`` keeps (:mod:`pipeline.video.trim`; a trim that
    keeps none is refused in its one line before ffmpeg starts).

    The generator owns its ffmpeg process: closing it early, an error or ``cancel`` being set kills
    and reaps the process. Cancellation raises :class:`~pipeline.errors.Cancelled` within ~0.1 s.
    ``hwaccel``: ``"auto"`` (NVDEC if a trial decode works) or ``"none"``.
    ``frames=(a, b)``: only frames a..b-1 of the trimmed stream, by index (b None: to the end); the
    frames before ``a`` are decoded and dropped inside ffmpeg, so frame ``a`` is exactly the frame a
    full read yields at index ``a`` (what a resumed render needs).
    Each yielded array is new (safe to keep or hand to another thread).
    ``report``: filled in with the frames yielded and the errors ffmpeg wrote while decoding.
    ``hold_gaps``: a gap in the timestamps (frames a damaged file lost) is filled with the last frame before
    it, so that frame i is always shown at i / fps (see :func:`pipeline.video.integrity.held_frames`).
    """
    info = info or probe(path)
    exe = ffmpeg.ffmpeg_exe()
    trim.keep(info.frame_count, info.fps, info.path.name)
    seek, duration = trim.seek(info.frame_count, info.fps)
    accel, reason = encoders.choose_hwaccel(hwaccel, exe, info.path, info.codec, info.pix_fmt)
    log.debug("decoding %s: %s", info.path.name, reason)
    filters = decode_filters(info, exe, frames, hold_gaps)
    cmd = builders.decode_cmd(exe, info.path, filters=filters, start=seek, duration=duration,
                              hwaccel=accel)
    return _frames(cmd, info, cancel, report or DecodeReport())


def _frames(cmd: list[str], info: VideoInfo, cancel: threading.Event | None,
            report: DecodeReport) -> Iterator[np.ndarray]:
    shape = (info.height, info.width, 3)
    size = info.height * info.width * 3
    process = FFmpegProcess(cmd, stdout=True, cancel=cancel)
    count = 0
    try:
        while True:
            frame = np.empty(shape, np.uint8)
            view = memoryview(frame.data).cast("B")
            got = 0
            while got < size:
                n = process.stdout.readinto(view[got:])  # type: ignore[attr-defined]
                if not n:
                    break
                got += n
            if got < size:
                break
            count += 1
            report.frames = count
            yield frame
            if cancel is not None and cancel.is_set():
                raise Cancelled("decoding cancelled")
        rc = process.wait()
        report.errors, report.error_lines = process.error_lines(), process.lines
        if process.cancelled or (cancel is not None and cancel.is_set()):
            raise Cancelled("decoding cancelled")
        if rc != 0:
            raise BadMedia(f"{info.path.name}: decoding failed after {count} frames ({process.last_error()})")
        if count == 0:
            raise BadMedia(f"{info.path.name}: no frames could be decoded ({process.last_error()})")
    finally:
        process.close()
