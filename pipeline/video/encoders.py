"""Which encoder and decoder acceleration to use, decided by asking ffmpeg and by trial.

A listed NVENC encoder is not proof that it works (no GPU, old driver: "Cannot load libcuda.so.1"),
so NVENC is chosen only after a one-frame trial encode succeeds; NVDEC (``-hwaccel cuda``) only after a
one-frame trial decode of the actual input. Results are cached per ffmpeg executable.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

from pipeline import env
from pipeline.types import Encoder
from pipeline.video import builders, ffmpeg
from pipeline.video.process import ToolTimeout, run_tool

log = logging.getLogger(__name__)

_FALLBACK: dict[str, str] = {"h264_nvenc": "libx264", "hevc_nvenc": "libx265", "av1_nvenc": "libx264"}
_TRIAL_TIMEOUT_S = 30
# the largest frame side (px) each encoder opens: libx264 as this project's ffmpeg 7 build refuses 16400
# ("invalid width x height") and takes 16384; libx265 at most that here too; NVENC as NVIDIA's limits say
# (H.264 4096, HEVC and AV1 8192)
MAX_SIDE: dict[str, int] = {"libx264": 16384, "libx265": 16384, "h264_nvenc": 4096, "hevc_nvenc": 8192,
                            "av1_nvenc": 8192}


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    # the first line usually names the cause ("Cannot load libcuda.so.1"); later ones are generic
    # drop ffmpeg's "[h264_nvenc @ 0x55...] " context prefix
    return re.sub(r"^\[[^\]]+ @ 0x[0-9a-f]+\]\s*", "", lines[0]) if lines else "no message"


def _trial_limit() -> float:
    return min(_TRIAL_TIMEOUT_S, env.TOOL_TIMEOUT.get())


@functools.cache
def trial_encode(ffmpeg_exe: str, encoder: str) -> tuple[bool, str]:
    """(works, message): encode one small frame with ``encoder``."""
    try:
        result = run_tool(builders.trial_encode_cmd(ffmpeg_exe, encoder), limit=_trial_limit())
    except (OSError, ToolTimeout) as exc:
        return False, str(exc)
    return result.returncode == 0, "ok" if result.returncode == 0 else _last_line(result.stderr)


@functools.cache
def choose_encoder(requested: Encoder, ffmpeg_exe: str) -> tuple[str, str]:
    """(encoder name, reason). ``auto`` = h264_nvenc when listed and a trial encode works, else libx264;
    an explicit NVENC falls back to libx264/libx265 with the reason stated."""
    listed = ffmpeg.encoders(ffmpeg_exe)
    wanted = "h264_nvenc" if requested == "auto" else requested
    fallback = _FALLBACK.get(wanted, "libx264")
    if wanted.endswith("_nvenc"):
        if wanted not in listed:
            reason = f"{wanted} is not in this ffmpeg's encoder list; using {fallback}"
        else:
            works, message = trial_encode(ffmpeg_exe, wanted)
            if works:
                return wanted, f"{wanted} is listed and a trial encode worked"
            reason = f"{wanted} is listed but failed to open ({message}); using {fallback}"
    elif wanted in listed:
        return wanted, f"{wanted} requested"
    else:
        fallback = "libx264"
        reason = f"{wanted} is not in this ffmpeg's encoder list; using libx264"
    if fallback not in listed and fallback != "libx264":
        reason, fallback = f"{reason}; {fallback} is missing too, using libx264", "libx264"
    if "libx264" not in listed and fallback == "libx264":
        raise ffmpeg.FFmpegMissing(f"{ffmpeg_exe} has no libx264 encoder: "
                                   "install a full ffmpeg (apt-get install ffmpeg)")
    log.info("encoder: %s (%s)", fallback, reason)
    return fallback, reason


_DECODE_TRIALS: dict[tuple[str, str, str], tuple[bool, str]] = {}


def _trial_decode(ffmpeg_exe: str, path: Path, codec: str, pix_fmt: str) -> tuple[bool, str]:
    """Cached per (ffmpeg, codec, pix_fmt): NVDEC support depends on the stream kind, not the file."""
    key = (ffmpeg_exe, codec, pix_fmt)
    if key not in _DECODE_TRIALS:
        try:
            result = run_tool(builders.trial_decode_cmd(ffmpeg_exe, path, "cuda"), on=path,
                              limit=_trial_limit())
            _DECODE_TRIALS[key] = (result.returncode == 0,
                                   "ok" if result.returncode == 0 else _last_line(result.stderr))
        except (OSError, ToolTimeout) as exc:
            _DECODE_TRIALS[key] = (False, str(exc))
    return _DECODE_TRIALS[key]


def choose_hwaccel(requested: str, ffmpeg_exe: str, path: str | Path, codec: str,
                   pix_fmt: str) -> tuple[str | None, str]:
    """(``"cuda"`` or None, reason). NVDEC only when a one-frame trial decode of this kind of stream works."""
    if requested == "none":
        return None, "hardware decoding disabled"
    works, message = _trial_decode(ffmpeg_exe, Path(path), codec, pix_fmt)
    if works:
        return "cuda", f"NVDEC trial decode of {codec}/{pix_fmt} worked"
    return None, f"software decoding: NVDEC trial decode of {codec}/{pix_fmt} failed ({message})"


def clear_caches() -> None:
    for fn in (trial_encode, choose_encoder):
        fn.cache_clear()
    _DECODE_TRIALS.clear()
