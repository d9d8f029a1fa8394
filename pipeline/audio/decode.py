"""A file's first audio stream as 48 kHz int16 stereo, decoded by ffmpeg (docs/processors.md §2.2).

The command is a pure builder (:func:`decode_cmd`, tested as a list); :func:`decode` runs it as one child
process whose output is read to its end (a cancel event stops it); :func:`has_audio` asks whether a file
has an audio stream at all (a short decode of its first one), for the checks at a job's add time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pipeline.errors import BadMedia, Cancelled
from pipeline.video import ffmpeg
from pipeline.video.builders import media_arg
from pipeline.video.process import FFmpegProcess, run_tool

RATE = 48_000  # FaceFusion decodes every voice at 48 kHz stereo
CHANNELS = 2
Samples = npt.NDArray[np.int16]  # (N, 2) interleaved stereo


def decode_cmd(exe: str, path: Path | str, *, start: float = 0.0, duration: float | None = None,
               rate: int = RATE) -> list[str]:
    """ffmpeg: the first audio stream of ``path`` (from ``start`` s, ``duration`` s long where given) as raw
    s16le stereo at ``rate`` on stdout."""
    cmd = [exe, "-nostdin", "-hide_banner", "-loglevel", "error"]
    if start:
        cmd += ["-ss", f"{start:.6f}"]
    if duration is not None:
        cmd += ["-t", f"{duration:.6f}"]
    return [*cmd, "-i", media_arg(path), "-vn", "-map", "0:a:0", "-ar", str(rate), "-ac", str(CHANNELS),
            "-f", "s16le", "-"]


def decode(path: Path | str, *, start: float = 0.0, duration: float | None = None,
           cancel: threading.Event | None = None) -> Samples:
    """The audio of ``path`` from ``start`` s (``duration`` s of it where given: what a clip hears, however
    long the file) as (N, 2) int16 at 48 kHz; BadMedia where it has none."""
    path = Path(path)
    cmd = decode_cmd(ffmpeg.ffmpeg_exe(), path, start=start, duration=duration)
    process = FFmpegProcess(cmd, stdout=True, cancel=cancel)
    try:
        raw = process.stdout.read()
        code = process.wait()
    finally:
        process.close()
    if process.cancelled:
        raise Cancelled("audio decoding cancelled")
    if code != 0:
        raise BadMedia(f"{path.name}: its audio could not be read ({process.last_error()})")
    data = np.frombuffer(raw or b"", dtype="<i2")
    usable = len(data) - len(data) % CHANNELS
    return data[:usable].reshape(-1, CHANNELS).astype(np.int16)


def has_audio(path: Path | str) -> bool:
    """Whether ``path`` has an audio stream ffmpeg can decode (its first 0.1 s are decoded to find out)."""
    cmd = decode_cmd(ffmpeg.ffmpeg_exe(), path, duration=0.1)
    return run_tool(cmd, on=path).returncode == 0


def lost_sound(path: Path | str) -> tuple[float, float] | None:
    """(seconds readable, seconds the file says it has) of ``path``'s first audio stream where the readable
    part is shorter by more than half a second and 2 % (a file cut short: an MP3 keeps its length in its
    header and decodes, silently, only what is left); None where it is whole or cannot say. Its packets are
    copied, not decoded: a 2 h voice takes under a second."""
    tools = ffmpeg.find_tools()
    if tools.ffprobe is None:
        return None
    said = run_tool([tools.ffprobe, "-v", "error", "-select_streams", "a:0", "-show_entries",
                     "stream=duration", "-of", "csv=p=0", media_arg(path)], on=path)  # the sound's own
    copied = run_tool([ffmpeg.ffmpeg_exe(), "-nostdin", "-v", "error", "-i", media_arg(path), "-map", "0:a:0",
                       "-c", "copy", "-f", "null", "-", "-progress", "pipe:1"], on=path)
    try:
        declared = float(said.stdout.decode().strip().splitlines()[0])
        times = [line for line in copied.stdout.decode().splitlines() if line.startswith("out_time_us=")]
        readable = int(times[-1].partition("=")[2]) / 1e6
    except (ValueError, IndexError):
        return None
    if declared - readable > max(0.5, 0.02 * declared):
        return readable, declared
    return None
