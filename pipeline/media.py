"""The files facestation reads and writes: their kinds and suffixes, what is in them, and the checks on
inputs and outputs.

The suffixes are derived, never listed again: images are what :mod:`pipeline.image` reads and writes,
videos the containers :data:`pipeline.video.builders.CONTAINERS` knows. An output video must be a
container that holds the H.264/HEVC the encoders make. Inputs are checked by content (Pillow for images,
ffprobe for videos), not by name; every check raises :class:`~pipeline.errors.BadMedia` or
:class:`~pipeline.errors.UserError` with one line a user can act on.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.alpha import ALPHA_VIDEOS
from pipeline.errors import BadMedia, OutputFault, UserError, not_a_file, os_fault
from pipeline.filenames import check_name_length, same_file
from pipeline.image import FORMATS, IMAGE_SUFFIXES, is_image_path, read_image
from pipeline.video.builders import CONTAINERS
from pipeline.video.probe import probe

MediaKind = Literal["image", "video"]

IMAGE_INPUTS: tuple[str, ...] = tuple(sorted(IMAGE_SUFFIXES))
IMAGE_OUTPUTS: tuple[str, ...] = tuple(FORMATS)
# what ffmpeg reads as a video besides the containers facestation writes: a target (``swap`` takes any video
# by its content), a folder batch and the web UI's upload take this one set
READ_ONLY_VIDEOS = (".ts", ".mts", ".m2ts", ".mpg", ".mpeg", ".vob", ".flv", ".f4v", ".wmv", ".asf", ".3gp",
                    ".3g2", ".ogv", ".mxf", ".y4m")
VIDEO_INPUTS: tuple[str, ...] = (*CONTAINERS, *READ_ONLY_VIDEOS)
VIDEO_OUTPUTS: tuple[str, ...] = tuple(s for s, c in CONTAINERS.items() if c.holds_h264)


@dataclass(frozen=True)
class MediaInfo:
    """What the UI needs to know about a target: its kind, size and how many frames to scrub."""

    path: Path
    kind: MediaKind
    width: int
    height: int
    frames: int
    fps: float

    def describe(self) -> str:
        if self.kind == "image":
            return f"image {self.width}×{self.height}"
        return f"video {self.width}×{self.height}, {self.frames} frames at {self.fps:.3g} fps"


def kind_of(path: str | Path) -> MediaKind:
    """``image`` or ``video``, by the file's suffix (anything that is not an image is read as a video); a GIF
    by its content: one frame is an image, an animation a video."""
    if Path(path).suffix.lower() == ".gif":
        return "image" if gif_frames(path) <= 1 else "video"
    return "image" if is_image_path(path) else "video"


def gif_frames(path: str | Path) -> int:
    """How many frames a GIF has (1 where it cannot be read: the reader then says why)."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            return int(getattr(img, "n_frames", 1) or 1)
    except (OSError, ValueError):
        return 1


def file_key(path: Path) -> tuple[str, int, int]:
    """(resolved path, size, mtime): changes whenever the file is replaced or rewritten."""
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def check_media(path: str | Path, allowed: Sequence[MediaKind] = ("image", "video"),
                as_kind: MediaKind | None = None) -> MediaInfo:
    """Describe ``path`` after checking it by content (Pillow for images, ffprobe for videos); ``as_kind``:
    read as that kind whatever :func:`kind_of` says (an animated GIF's first frame, as an image).

    Raises BadMedia when the file is missing, of a kind not ``allowed`` (by its suffix) or unreadable."""
    path = Path(path)
    special = not_a_file(path, "an image or video file")
    if special is not None:
        raise special
    if not path.is_file():
        raise BadMedia(f"no such file: {path.name}")
    kind = as_kind or kind_of(path)
    if kind not in allowed:
        wanted = " or ".join(allowed)
        raise BadMedia(f"{path.name}: expected {wanted}, got a {kind} (by its extension)")
    return _describe(path, kind, file_key(path))


@functools.lru_cache(maxsize=16)
def _describe(path: Path, kind: MediaKind, key: tuple[str, int, int]) -> MediaInfo:
    """Cached by ``key`` (see :func:`file_key`): an unchanged file is read once."""
    if kind == "image":
        h, w = read_image(path).bgr.shape[:2]
        return MediaInfo(path, "image", w, h, 1, 0.0)
    info = probe(path)
    if info.frame_count < 1:
        raise BadMedia(f"{path.name}: the video has no frames")
    return MediaInfo(path, "video", info.width, info.height, info.frame_count, float(info.fps))


def clear_cache() -> None:
    """Forget every file described so far."""
    _describe.cache_clear()


MIN_FREE_BYTES = 1 << 20  # an output is refused where less than this is free, whatever its inputs


def check_output(output: Path, inputs: Sequence[Path], *, need_bytes: int | None = None) -> None:
    """Refuse an output that would overwrite an input, is not a regular file (a folder, a pipe, a device),
    lies in a missing folder, or cannot be written there (read-only, no permission, disk full).

    Free space is checked roughly: ``need_bytes``, or by default a quarter of the largest input (at least
    :data:`MIN_FREE_BYTES`); an output that outgrows the disk later still fails with a clear line.
    """
    output = Path(output)
    check_name_length(output)
    for p in inputs:
        if same_file(output, p):  # by the file named, through symlinks and hard links
            raise UserError(f"--output {output} is one of the inputs ({p}); refusing to overwrite it")
    if output.exists() and output.is_dir():
        raise UserError(f"--output {output} is a folder; give a file name")
    if output.exists() and not output.is_file():
        raise UserError(f"--output {output} is not a regular file (a device or a pipe); give a file name")
    if not output.parent.exists():
        raise UserError(f"the folder of --output does not exist: {output.parent}")
    _check_writable(output)
    free = shutil.disk_usage(output.parent).free
    need = need_bytes if need_bytes is not None else max(MIN_FREE_BYTES, _largest(inputs) // 4)
    if free < need:
        raise OutputFault(f"cannot write {output}: {free / 1e6:.1f} MB free in {output.parent}, about "
                          f"{need / 1e6:.1f} MB needed: free some space or write to another disk")


def _largest(paths: Sequence[Path]) -> int:
    sizes = [0]
    for p in paths:
        with contextlib.suppress(OSError):
            sizes.append(os.stat(p).st_size)
    return max(sizes)


def _check_writable(output: Path) -> None:
    """Create (and remove) a one-byte file next to ``output``: a read-only disk, a folder without write
    permission or a full disk says so now, not after the render."""
    try:
        fd, probe_path = tempfile.mkstemp(prefix=".facestation-", suffix=".check", dir=output.parent)
    except OSError as exc:
        raise os_fault(exc, output) or UserError(f"cannot write {output}: {exc.strerror}") from None
    try:
        os.write(fd, b"\0")
        os.fsync(fd)
    except OSError as exc:
        raise os_fault(exc, output) or UserError(f"cannot write {output}: {exc.strerror}") from None
    finally:
        os.close(fd)
        os.unlink(probe_path)


def check_video_output(output: Path, alpha: bool = False) -> None:
    """Refuse an output name whose container holds none of the video codecs: H.264/HEVC (ProRes in a .mov),
    or VP9 in a .webm (``video/formats.py``; ``alpha``: a transparent video, whose containers are .webm and
    .mov: checked by ``checks.check_alpha_output``)."""
    if output.suffix.lower() in (*VIDEO_OUTPUTS, *ALPHA_VIDEOS):
        return
    raise UserError(f"cannot write video '{output.name}': use {', '.join((*VIDEO_OUTPUTS, '.webm'))}")
