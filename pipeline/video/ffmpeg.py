"""Locate the ffmpeg (and ffprobe) executables and ask them what they can do.

Order: ``FACESTATION_FFMPEG`` (path to an ffmpeg executable; an ffprobe next to it is used if
present), then ``ffmpeg``/``ffprobe`` on PATH, then imageio-ffmpeg's bundled ffmpeg (which has no
ffprobe: :mod:`pipeline.video.probe` then probes with PyAV).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pipeline import env
from pipeline.errors import FacestationError
from pipeline.video.process import run_tool

log = logging.getLogger(__name__)

ENV_VAR = env.FFMPEG.name


class FFmpegMissing(FacestationError):
    """No usable ffmpeg executable was found."""


@dataclass(frozen=True)
class Tools:
    ffmpeg: str
    ffprobe: str | None
    origin: str  # "env", "system" or "imageio-ffmpeg"


def _sibling_ffprobe(ffmpeg: str) -> str | None:
    path = Path(ffmpeg)
    name = path.name.replace("ffmpeg", "ffprobe", 1)
    candidate = path.with_name(name)
    if name != path.name and candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return None


def find_tools() -> Tools:
    """The ffmpeg to use right now (reads the environment on each call; cheap)."""
    exe = env.FFMPEG.get()  # BadEnvironment if it names no executable
    if exe:
        return Tools(exe, _sibling_ffprobe(exe), "env")
    exe = shutil.which("ffmpeg")
    if exe:
        return Tools(exe, shutil.which("ffprobe") or _sibling_ffprobe(exe), "system")
    try:
        import imageio_ffmpeg

        return Tools(imageio_ffmpeg.get_ffmpeg_exe(), None, "imageio-ffmpeg")
    except (ImportError, RuntimeError) as exc:
        raise FFmpegMissing(
            "ffmpeg not found: install it (apt-get install ffmpeg) or `pip install imageio-ffmpeg`, "
            f"or set {ENV_VAR}"
        ) from exc


def ffmpeg_exe() -> str:
    return find_tools().ffmpeg


def _listing(ffmpeg: str, what: str) -> str:
    return run_tool([ffmpeg, "-hide_banner", f"-{what}"]).stdout.decode("utf-8", "replace")


_ROW = re.compile(r"^\s*([A-Z.]{6})\s+(\S+)\s", re.MULTILINE)
_FILTER_ROW = re.compile(r"^\s*[A-Z.]{2,3}\s+(\S+)\s+\S+->\S+", re.MULTILINE)  # ffmpeg 7+: 2 flags, 6: 3


@functools.cache
def encoders(ffmpeg: str) -> frozenset[str]:
    """Encoder names this ffmpeg lists (cached per executable)."""
    return frozenset(m.group(2) for m in _ROW.finditer(_listing(ffmpeg, "encoders")) if m.group(2) != "=")


@functools.cache
def decoders(ffmpeg: str) -> frozenset[str]:
    return frozenset(m.group(2) for m in _ROW.finditer(_listing(ffmpeg, "decoders")) if m.group(2) != "=")


@functools.cache
def filters(ffmpeg: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _FILTER_ROW.finditer(_listing(ffmpeg, "filters")))


def clear_caches() -> None:
    for fn in (encoders, decoders, filters):
        fn.cache_clear()
