"""Segmented video output, so that a render interrupted at any moment resumes where it stopped.

A video job is encoded as a series of SEGMENTS: every segment is a separate, video-only Matroska file
written by its own encoder (so it starts on a keyframe and decodes on its own), with the same encoder
settings as a one-piece render. A segment ends after a few seconds of WALL time (:class:`Pace`: the
first one of a run sooner), so a crash loses at most that much work however fast or slow the machine
renders; its length in frames is whatever was rendered meanwhile. A segment only appears under its
name once complete (the encoder writes a temp name and renames), and the job records it through
``Lease.save_resume`` right after. A restarted job skips the recorded frames (decoding by frame
INDEX, so the frame count stays exact) and writes the remaining segments. At the end the segments
are joined WITHOUT re-encoding (ffmpeg concat demuxer, ``-c copy``, each file's exact duration given
so that timestamps do not drift however many segments there are), the source's audio is muxed in
(trimmed like the video), with its subtitles where the container takes them and the provenance tag, and
the result is renamed to the output name.

The record of the finished segments, and which a new run keeps: :mod:`pipeline.jobs.resume`.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import Cancelled, FacestationError, fault_in_text
from pipeline.filenames import fitted_stem
from pipeline.provenance import provenance_metadata
from pipeline.settings import Settings
from pipeline.video import builders, ffmpeg, streams
from pipeline.video.encode import Encoder, encoder_for
from pipeline.video.probe import VideoInfo
from pipeline.video.process import FFmpegProcess
from pipeline.video.trim import Trim

log = logging.getLogger(__name__)

SEGMENT_SUFFIX = ".mkv"  # Matroska takes every codec the encoders produce
DEFAULT_CHECKPOINT_SECONDS = 3.0

class ConcatError(FacestationError):
    """ffmpeg could not join the segments (a damaged segment...)."""


@dataclass(frozen=True)
class Pace:
    """When a segment ends: ``every_s`` seconds of wall time after its first frame, the first segment of a
    run after ``first_s`` (a run killed soon after it started still leaves one behind); or, with
    ``every_frames``, after that many frames (a pace that does not depend on the machine's speed: tests)."""

    every_s: float = DEFAULT_CHECKPOINT_SECONDS
    first_s: float = DEFAULT_CHECKPOINT_SECONDS / 3
    every_frames: int | None = None

    @classmethod
    def every(cls, seconds: float) -> Pace:
        seconds = max(0.05, seconds)
        return cls(seconds, seconds / 3)

    @classmethod
    def frames(cls, frames: int) -> Pace:
        return cls(math.inf, math.inf, max(1, frames))

    def ends(self, elapsed_s: float, first: bool, frames: int = 0) -> bool:
        if self.every_frames is not None and frames >= self.every_frames:
            return True
        return elapsed_s >= (self.first_s if first else self.every_s)


@dataclass(frozen=True)
class Segment:
    """One finished segment file of a job; a farm's also says where and how fast it was rendered."""

    file: str  # name inside the work folder
    start: int  # index of its first frame in the render (0 = first frame after video.start)
    frames: int
    node: str | None = None  # farm: the host, Ray node id and worker process that rendered it, and its time
    node_id: str | None = None
    pid: int | None = None
    seconds: float | None = None

    def row(self) -> dict[str, Any]:
        """As the resume record keeps it (no empty farm fields)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def parse(cls, raw: Any) -> Segment | None:
        """A segment from a record's row; None for a damaged one."""
        try:
            seg = cls(str(raw["file"]), int(raw["start"]), int(raw["frames"]))
            extra = {k: raw[k] for k in ("node", "node_id", "pid", "seconds") if raw.get(k) is not None}
        except (KeyError, TypeError, ValueError):
            return None
        return replace(seg, **extra)


def segment_frames_for(fps: Fraction | float, seconds: float) -> int:
    """Frames per segment for a segment length in seconds (at least 1)."""
    return max(1, round(float(fps) * seconds))


def segment_name(start: int) -> str:
    return f"seg-{start:08d}{SEGMENT_SUFFIX}"


def clear_work(work: Path, keep: list[Segment] | None = None) -> None:
    """Delete the work folder, or only what is not one of ``keep`` (leftover temp files, stale segments)."""
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
        return
    names = {s.file for s in keep}
    if work.is_dir():
        for entry in work.iterdir():
            if entry.name not in names and entry.is_file():
                entry.unlink(missing_ok=True)


class SegmentWriter:
    """A frame sink for :class:`pipeline.render.Render` that rotates to a new segment as ``pace`` says (by
    wall time) or after ``segment_frames`` frames, whichever comes first (neither: one segment), each
    encoded like a one-piece render of ``source`` with ``settings`` (:func:`encoder_for`), without audio.

    ``on_segment(segment)`` is called (from the encode thread) as soon as each segment file is complete
    and on disk.
    """

    def __init__(self, work: Path, *, first_frame: int, source: VideoInfo, settings: Settings,
                 size: tuple[int, int], on_segment: Callable[[Segment], None], pace: Pace | None = None,
                 segment_frames: int | None = None, cancel: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic, container: str | None = None) -> None:
        """``container``: the joined output's suffix (a transparent output's segments take its codec)."""
        self.work = work
        self.container = container
        self.next_start = first_frame
        self.pace = pace
        self.segment_frames = segment_frames
        self.source, self.settings, self.size, self.cancel = source, settings, size, cancel
        self.on_segment = on_segment
        self._clock = clock
        self._current: Encoder | None = None
        self._start = first_frame
        self._opened = 0.0
        self._segments = 0  # finished by this writer (this run)
        self.encoder = self.asked = ""
        self.encoder_reason = ""
        work.mkdir(parents=True, exist_ok=True)

    def write(self, frame: np.ndarray) -> None:
        if self._current is None:
            self._start = self.next_start
            self._current = encoder_for(self.work / segment_name(self._start), self.source, self.settings,
                                        size=self.size, audio=False, cancel=self.cancel,
                                        container=self.container)
            self.encoder, self.encoder_reason = self._current.encoder, self._current.encoder_reason
            self.asked = self._current.asked
            self._opened = self._clock()
        self._current.write(frame)
        if self._segment_ends(self._current.frames):
            self._finish_segment()

    def _segment_ends(self, frames: int) -> bool:
        if self.segment_frames is not None and frames >= self.segment_frames:
            return True
        elapsed = self._clock() - self._opened
        return self.pace is not None and self.pace.ends(elapsed, first=self._segments == 0, frames=frames)

    def _finish_segment(self) -> None:
        assert self._current is not None
        encoder, self._current = self._current, None
        path = encoder.close()
        with open(path, "rb") as fh:  # on disk before it is recorded as finished
            os.fsync(fh.fileno())
        segment = Segment(path.name, self._start, encoder.frames)
        self.next_start = self._start + encoder.frames
        self._segments += 1
        self.on_segment(segment)

    def close(self) -> Path:
        if self._current is not None and self._current.frames:
            self._finish_segment()
        return self.work

    def abort(self) -> None:
        if self._current is not None:
            self._current.abort()
            self._current = None


def concat_cmd(exe: str, list_file: Path, output: Path, *, source: builders.SourceMux | None = None,
               metadata: dict[str, str] | None = None, container: str | None = None) -> list[str]:
    """Join the segments listed in ``list_file`` by stream copy, muxing the audio and subtitles of
    ``source``."""
    inputs, maps = builders.source_args(source, 1)
    cmd = [exe, *builders.QUIET, "-y", "-f", "concat", "-safe", "0", "-i", builders.media_arg(list_file),
           *inputs, "-map", "0:v:0", "-c:v", "copy", *maps]
    for key, value in (metadata or {}).items():
        cmd += ["-metadata", f"{key}={value}"]
    suffix = container or Path(output).suffix
    cmd += builders.faststart_args(suffix)
    if container:
        cmd += ["-f", builders.muxer(container)]
    cmd.append(builders.media_arg(output))
    return cmd


def concat_list(segments: list[Segment], work: Path, fps: Fraction | float) -> str:
    """The concat demuxer's list: each file with its exact duration (frames / fps, rounded so that the
    durations add up to the exact end times), so that timestamps do not drift over many segments."""
    lines = []
    for s in segments:
        quoted = str((work / s.file).absolute()).replace("'", "'\\''")
        start = round(float(Fraction(s.start) / Fraction(fps)), 6)
        end = round(float(Fraction(s.start + s.frames) / Fraction(fps)), 6)
        lines.append(f"file '{quoted}'\nduration {end - start:.6f}\n")
    return "".join(lines)


def temp_output(output: Path, job_id: int) -> Path:
    """The temp name this process joins into: per process, so that an ffmpeg orphaned by a killed
    worker (it runs on to the end) never writes into the file of the run that took over."""
    return output.with_name(f".{_temp_stem(output, job_id)}.job{job_id}.{os.getpid()}.partial{output.suffix}")


def _temp_stem(output: Path, job_id: int) -> str:
    """The output's stem as its temp names hold it: cut to keep them within the file system's name limit
    (the same for every process id, so that :func:`remove_temp_outputs` finds them all)."""
    return fitted_stem(output.stem, len(f"..job{job_id}.{'9' * 10}.partial{output.suffix}".encode()),
                       output.parent)


def remove_temp_outputs(output: Path, job_id: int) -> None:
    """Delete every half-joined temp file of the job (this and earlier runs)."""
    stem = glob.escape(_temp_stem(output, job_id))
    for path in output.parent.glob(f".{stem}.job{job_id}.*.partial{glob.escape(output.suffix)}"):
        path.unlink(missing_ok=True)


def join_segments(segments: list[Segment], work: Path, output: Path, *, job_id: int, source: VideoInfo,
                  settings: Settings, models: list[str], cancel: threading.Event | None = None,
                  guard: Callable[[], None] | None = None, voice: Path | None = None) -> Path:
    """Concatenate ``segments`` (stream copy) + the source's audio and subtitles into ``output`` (``voice``:
    the job's new sound instead of the source's audio), atomically; ``guard`` (it raises to refuse) is asked
    just before the rename."""
    if not segments:
        raise ConcatError("no finished segments to join")
    list_file = work / "segments.txt"
    list_file.write_text(concat_list(segments, work, source.fps), encoding="utf-8")
    video = settings.video
    start, end = Trim.of(settings).times(source.frame_count, source.fps)  # the sound of the frames kept
    mux = streams.source_mux(source, output.suffix, start=start, end=end,
                             keep_audio=video.keep_audio, fit_audio=video.allow_damaged, voice=voice)
    partial = temp_output(output, job_id)
    cmd = concat_cmd(ffmpeg.ffmpeg_exe(), list_file, partial, source=mux,
                     metadata=provenance_metadata(models), container=output.suffix)
    process = FFmpegProcess(cmd, cancel=cancel)
    try:
        rc = process.wait()
        if process.cancelled or (cancel is not None and cancel.is_set()):
            raise Cancelled("joining cancelled")
        # ffmpeg exits 0 when the disk fills while it writes the trailer: read what it said, too
        said = process.tail(lines=30)
        refused = fault_in_text(said, output)  # the output's disk refused: the user's to fix, no retry
        if refused is not None:
            raise refused
        if rc != 0 or "Error writing trailer" in said or "Error closing file" in said:
            raise ConcatError(f"joining the segments of {output.name} failed: {process.last_error()}")
        process.close()
        with open(partial, "rb") as fh:  # the bytes are on disk before the name says "complete"
            os.fsync(fh.fileno())
        if guard is not None:
            guard()
    except BaseException:
        process.close()
        with contextlib.suppress(OSError):  # a read-only folder: there is nothing to remove
            partial.unlink(missing_ok=True)
        raise
    os.replace(partial, output)
    with contextlib.suppress(OSError):
        dir_fd = os.open(output.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return output
