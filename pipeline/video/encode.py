"""Encode BGR frames to a video file through an ffmpeg pipe, muxing the source's original audio.

- Size: libx264/NVENC with yuv420p need even sizes; an odd width/height is padded by one
  replicated pixel column/row (so the output is at most 1 px larger, never cropped or black-edged).
- Colour: the BGR->YUV matrix and the colour tags follow the source (bt709 for HD, bt601/smpte170m
  for untagged SD); HDR sources were tone-mapped on decode, so their output is tagged bt709.
- Audio: every audio stream of the source, trimmed like the video, stream-copied when the
  output container takes the codec, else re-encoded (AAC; Opus for WebM); a damaged source's
  (``fit_audio``, ``video.allow_damaged``) is re-encoded to fit the video: gaps filled with silence,
  padded or cut at the end. Subtitle streams the container takes are copied (``mux_source=False``:
  the frames only, a job's segment).
- Provenance: ``comment``/``description`` metadata (see :mod:`pipeline.provenance`).
- Atomic: ffmpeg writes to a hidden temp name in the output folder, renamed on success only; an
  error, :meth:`Encoder.abort` or the cancel event removes it. The name carries the host and the process,
  so that one left by a killed process of this host is removed (the first time this process writes into
  that folder) and another host's, in a shared folder, is never touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import uuid
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Protocol

import numpy as np

from pipeline import liveness
from pipeline.alpha import FORMATS_LINE, transparent
from pipeline.errors import Cancelled, FacestationError, UserError, fault_in_text, os_fault
from pipeline.filenames import same_file, temp_name
from pipeline.provenance import provenance_metadata
from pipeline.settings import Settings
from pipeline.types import Encoder as EncoderName
from pipeline.types import EncoderPreset, Frame
from pipeline.video import builders, encoders, ffmpeg, formats, streams
from pipeline.video.probe import VideoInfo
from pipeline.video.process import FFmpegProcess
from pipeline.video.trim import Trim

log = logging.getLogger(__name__)

_SDR_DEFAULTS = {"bt709": ("bt709", "bt709", "bt709"), "smpte170m": ("smpte170m", "smpte170m", "smpte170m")}


class EncodeError(FacestationError):
    """ffmpeg failed while writing the output (disk full, bad parameters...)."""


class FrameSink(Protocol):
    """Where a render's frames go: an :class:`Encoder`, or anything that writes frames like one (the
    segments of a resumable job, see pipeline.jobs.segments)."""

    encoder: str
    encoder_reason: str
    asked: str  # the encoder asked for once the container's rule applied (video/formats.py): ``auto``, a name

    def write(self, frame: Frame) -> None: ...

    def close(self) -> Path: ...

    def abort(self) -> None: ...


def output_colors(source: VideoInfo | None, height: int) -> tuple[str, list[str]]:
    """(swscale matrix, colour tag args) for the output, copied from the source where it is SDR."""
    if source is None or source.is_hdr:
        return "bt709", builders.color_tag_args("bt709", "bt709", "bt709")
    coded_height = source.width if source.rotation in (90, 270) else source.height
    matrix = builders.sws_matrix(source.color_space, coded_height)
    space, primaries, transfer = _SDR_DEFAULTS.get(matrix, _SDR_DEFAULTS["bt709"])
    return matrix, builders.color_tag_args(
        source.color_space or space, source.color_primaries or primaries, source.color_transfer or transfer
    )


_cleaned: set[Path] = set()  # folders whose stale partials this process has removed already
_cleaned_lock = threading.Lock()


def _host_tag() -> str:
    """This host's name as it appears in a partial's name (no path separators)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", liveness.this_host())


def partial_name(output: Path) -> Path:
    """The hidden temp name an encoder writes before renaming: ``.NAME.<host>.<pid>-<hex>.partial.EXT`` (host
    and pid say whose it is, so that one left by a killed process can be told from one being written, on
    this host or, in a shared folder, on another)."""
    tag = f"{_host_tag()}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    return temp_name(output, f"{tag}.partial")  # within the name limit: a long output has a longer partial


def remove_stale_partials(folder: Path) -> list[Path]:
    """Delete the temp files in ``folder`` written by a process of this host that is gone (killed with
    SIGKILL, a power cut); returns them. Those of running processes and of other hosts are left alone."""
    mine = re.compile(rf"^\..+\.{re.escape(_host_tag())}\.(\d+)-[0-9a-f]{{8}}\.partial\.\w+$")
    removed = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            match = mine.match(entry.name)
            if match and liveness.process_gone(liveness.this_host(), int(match.group(1))) and entry.is_file():
                with contextlib.suppress(OSError):
                    entry.unlink()
                    removed.append(entry)
                    log.info("removed %s, left by a process that is gone", entry.name)
    return removed


def clean_folder_once(folder: Path) -> None:
    """:func:`remove_stale_partials` the first time this process writes into ``folder`` (not per file: a
    job's segments would list its folder every few seconds)."""
    with _cleaned_lock:
        if folder in _cleaned:
            return
        _cleaned.add(folder)
    remove_stale_partials(folder)


def padded_size_notice(width: int, height: int, name: str) -> str | None:
    """What the user should know when the output cannot keep an odd size (None when it can)."""
    if width % 2 == 0 and height % 2 == 0:
        return None
    return (f"{name} is {width}×{height}: H.264/HEVC in 4:2:0 need even sizes, so the output is "
            f"{width + width % 2}×{height + height % 2} (the last column/row repeated, nothing cropped)")


class Encoder:
    """Feed BGR uint8 frames with :meth:`write`; :meth:`close` finishes the file, :meth:`abort` drops it.

    Use as a context manager: an exception inside the block aborts.
    """

    def __init__(
        self,
        output: str | Path,
        *,
        width: int,
        height: int,
        fps: Fraction | float,
        source: VideoInfo | None = None,
        start: float | None = None,
        end: float | None = None,
        keep_audio: bool = True,
        fit_audio: bool = False,
        mux_source: bool = True,
        voice: Path | None = None,
        encoder: EncoderName = "auto",
        quality: int = 80,
        preset: EncoderPreset = "medium",
        models: list[str] | tuple[str, ...] = (),
        cancel: threading.Event | None = None,
        alpha: builders.AlphaCodec | None = None,
        out_size: tuple[int, int] | None = None,
        out_fps: float | None = None,
    ) -> None:
        """``alpha``: BGRA frames, encoded with their transparency by that codec (else BGR); ``out_size``
        (width, height), ``out_fps``: the file's, where not the frames' (scaled, frames dropped or
        repeated by ffmpeg)."""
        self.output = Path(output).absolute()
        self.width, self.height = width, height
        self.frames = 0
        self._cancel = cancel
        self._source = source.path if source is not None else None
        self._done = False
        exe = ffmpeg.ffmpeg_exe()
        self.channels = 3 if alpha is None else 4
        if alpha is None:
            self.asked: str = formats.own_codec(self.output.suffix) if encoder == "auto" else encoder
            self.encoder, self.encoder_reason = encoders.choose_encoder(self.asked, exe)
            video_args = ["-c:v", self.encoder, *builders.quality_args(self.encoder, quality, preset)]
        else:
            self.asked = alpha.encoder
            self.encoder, self.encoder_reason = _alpha_encoder(alpha, exe, self.output.name)
            video_args = ["-c:v", self.encoder, *builders.alpha_quality_args(alpha, quality, preset)]
        out_w, out_h = width + width % 2, height + height % 2
        padded = (out_w, out_h) != (width, height)
        self._pad = np.empty((out_h, out_w, self.channels), np.uint8) if padded else None
        matrix, color_args = output_colors(source, out_h)
        mux = None
        if source is not None and mux_source:
            mux = streams.source_mux(source, self.output.suffix, start=start, end=end, keep_audio=keep_audio,
                                     fit_audio=fit_audio, voice=voice)
        self.output.parent.mkdir(parents=True, exist_ok=True)
        clean_folder_once(self.output.parent)
        self.partial = partial_name(self.output)
        cmd = builders.encode_cmd(
            exe, self.partial, width=out_w, height=out_h, fps=fps,
            video_args=video_args, matrix=matrix, color_args=color_args,
            source=mux, metadata=provenance_metadata(models), alpha=alpha,
            pix_fmt=builders.OPAQUE_PIX_FMT.get(self.encoder, "yuv420p"), size=out_size, out_fps=out_fps,
        )
        log.info("encoding %s with %s (%s)", self.output.name, self.encoder, self.encoder_reason)
        self._process = FFmpegProcess(cmd, stdin=True, cancel=cancel)

    def _check_cancel(self) -> None:
        if self._process.cancelled or (self._cancel is not None and self._cancel.is_set()):
            self.abort()
            raise Cancelled("encoding cancelled")

    def write(self, frame: np.ndarray) -> None:
        """Append one BGR (BGRA with ``alpha``) uint8 frame of the size given at construction."""
        if self._done:
            raise EncodeError("write() after close() or abort()")
        if frame.shape != (self.height, self.width, self.channels) or frame.dtype != np.uint8:
            self.abort()
            raise ValueError(f"expected a {self.height}x{self.width}x{self.channels} uint8 frame, "
                             f"got {frame.shape} {frame.dtype}")
        self._check_cancel()
        if self._pad is not None:
            h, w = self.height, self.width
            self._pad[:h, :w] = frame
            self._pad[h:, :w] = frame[-1:]
            self._pad[:, w:] = self._pad[:, w - 1 : w]
            frame = self._pad
        try:
            self._process.stdin.write(memoryview(np.ascontiguousarray(frame).data).cast("B"))
        except (BrokenPipeError, OSError) as exc:
            self._check_cancel()
            self._process.wait()
            message = self._process.last_error()
            self.abort()
            raise self._fault(message) or EncodeError(
                f"encoding {self.output.name} failed at frame {self.frames}: {message}") from exc
        self.frames += 1

    def close(self) -> Path:
        """Finish the file and move it to its final name; returns that path."""
        if self._done:
            return self.output
        self._check_cancel()
        if self.frames == 0:
            self.abort()
            raise EncodeError(f"no frames were written to {self.output.name}")
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        rc = self._process.wait()
        self._check_cancel()
        if rc != 0:
            message = self._process.last_error()
            self.abort()
            raise self._fault(message) or EncodeError(f"encoding {self.output.name} failed: {message}")
        # ffmpeg exits 0 when the disk fills while it writes the file's ending: a short file is no success
        late = self._fault(" ".join(self._process.error_lines()))
        if late is not None:
            self.abort()
            raise late
        self._process.close()
        if self._source is not None and same_file(self.output, self._source):  # a link made while it ran
            self.abort()
            raise UserError(f"--output {self.output} is now the input {self._source}; refusing to overwrite "
                            "it")
        try:
            os.replace(self.partial, self.output)
        except OSError as exc:
            self.abort()
            raise os_fault(exc, self.output) or exc from None
        self._done = True
        return self.output

    def _fault(self, message: str) -> FacestationError | None:
        """A disk-full / read-only / permission failure of ffmpeg as the user's error, naming the output."""
        return fault_in_text(message, self.output)

    def abort(self) -> None:
        """Stop ffmpeg and remove the partial file. Safe to call more than once."""
        self._done = True
        self._process.close()
        self.partial.unlink(missing_ok=True)

    def __enter__(self) -> Encoder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:  # last resort: never leave an ffmpeg behind
        process = getattr(self, "_process", None)
        if process is not None and not self._done:
            self.abort()


def _alpha_encoder(codec: builders.AlphaCodec, exe: str, name: str) -> tuple[str, str]:
    """(encoder, reason) for a transparent output; a UserError where this ffmpeg lacks the encoder."""
    if codec.encoder not in ffmpeg.encoders(exe):
        raise UserError(f"{name}: a transparent video needs ffmpeg's {codec.encoder} encoder, which {exe} "
                        "lacks: install a full ffmpeg (apt-get install ffmpeg)")
    return codec.encoder, f"transparent output: {codec.encoder} ({codec.pix_fmt})"


def alpha_codec(settings: Settings, suffix: str) -> builders.AlphaCodec | None:
    """The codec of a transparent output with ``suffix`` (None: the output is opaque); a UserError for a
    transparent output into a container that has none (refused before the run: checks.check_alpha_output)."""
    if not transparent(settings):
        return None
    codec = builders.ALPHA_CODECS.get(suffix.lower())
    if codec is None:
        raise UserError(f"a {suffix} video cannot keep transparency: use {FORMATS_LINE}")
    return codec


def encoder_for(
    output: str | Path,
    info: VideoInfo,
    settings: Settings,
    *,
    size: tuple[int, int] | None = None,
    audio: bool = True,
    voice: Path | None = None,
    models: list[str] | tuple[str, ...] = (),
    cancel: threading.Event | None = None,
    container: str | None = None,
) -> Encoder:
    """An Encoder for a render of ``info`` with the output/trim/audio choices of ``settings``: the one place
    where settings become encoder arguments.

    ``size``: the (width, height) of the frames, if not the source's; ``audio=False``: video only (a segment
    of a resumable job, whose audio and subtitles are muxed in when the segments are joined); ``voice``: a
    new sound the output carries instead of the source's (``--audio``); ``container``: the suffix whose codec
    a transparent output takes, if not the output's (a job's segments take the joined file's).
    """
    width, height = size or (info.width, info.height)
    start, end = Trim.of(settings).times(info.frame_count, info.fps)  # the sound of the frames kept
    suffix = container or Path(output).suffix
    chosen = formats.choose(settings, Path(output).with_suffix(suffix), transparent(settings))
    return Encoder(
        output, width=width, height=height, fps=info.fps, source=info,
        start=start, end=end, keep_audio=settings.video.keep_audio,
        fit_audio=settings.video.allow_damaged, mux_source=audio, voice=voice,
        encoder=chosen.encoder, quality=settings.output.quality, preset=settings.output.preset,
        models=models, cancel=cancel, alpha=alpha_codec(settings, suffix),
        out_size=formats.output_size(settings.output.size, width, height), out_fps=settings.output.fps,
    )
