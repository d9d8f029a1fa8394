"""A video output's format: which codec goes in which container, and what the app changes of what was asked.

The one rule (:func:`choose`), read by the request's check (its notices, said before a run or a queue: the
CLI's ``swap`` and ``queue add``, a batch, the web UI's preview line) and by the encoder
(:func:`pipeline.video.encode.encoder_for`), so that what is said is what is written:

- The file's extension is the container: a name given with its own (``--output clip.mov``, a batch's
  ``{target}-alpha.mov``) keeps it; ``output.container`` names the files the app makes (:func:`suffix_for`),
  and a given name that differs from it is said.
- An asked codec the container cannot hold (ProRes in an .mp4) gives way to the container's own (H.264;
  VP9 in a .webm), said; a transparent output is encoded with its container's alpha codec (ProRes 4444 in a
  .mov, VP9 in a .webm), and an asked codec that cannot keep transparency is said. A transparent output in
  a container that has no alpha is refused (``checks.check_alpha_output``).
- ``output.fps`` and ``output.size`` are ffmpeg filters of the encode (:func:`output_size`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.settings import Settings
from pipeline.types import Encoder
from pipeline.video.builders import ALPHA_CODECS


@dataclass(frozen=True)
class Codec:
    """A codec as a creator names it, the containers that hold it (its own first) and whether it can keep
    transparency (in its own container)."""

    words: str
    containers: tuple[str, ...]
    alpha: bool = False


_H264 = (".mp4", ".mov", ".mkv", ".m4v")
CODECS: dict[str, Codec] = {
    "libx264": Codec("H.264", _H264), "h264_nvenc": Codec("H.264", _H264),
    "libx265": Codec("HEVC", _H264), "hevc_nvenc": Codec("HEVC", _H264),
    "av1_nvenc": Codec("AV1", (".mp4", ".mkv", ".webm")),
    "libvpx-vp9": Codec("VP9", (".webm", ".mkv"), alpha=True),
    "prores_ks": Codec("ProRes 4444", (".mov", ".mkv"), alpha=True),
}


@dataclass(frozen=True)
class Choice:
    """What a video output is written as: the encoder asked of ffmpeg (``auto``: H.264, NVENC where it
    works) and the lines that say what differs from what was asked."""

    encoder: Encoder
    notices: tuple[str, ...] = ()


def own_codec(suffix: str) -> Encoder:
    """The codec a container is written with when none that fits was asked (``auto``: H.264)."""
    return "libvpx-vp9" if suffix.lower() == ".webm" else "auto"


def _words(encoder: str) -> str:
    return CODECS[encoder].words if encoder in CODECS else "H.264"


def suffix_for(settings: Settings, transparent: bool = False) -> str:
    """The extension of a video output the app names: the container asked, else the asked codec's own
    (.mov for ProRes, .webm for VP9), else .webm for a transparent output, else .mp4."""
    out = settings.output
    if out.container != "auto":
        return out.container
    if out.encoder in CODECS and CODECS[out.encoder].containers[0] != ".mp4" and (
            not transparent or CODECS[out.encoder].alpha):
        return CODECS[out.encoder].containers[0]
    return ".webm" if transparent else ".mp4"


def choose(settings: Settings, output: str | Path, transparent: bool = False) -> Choice:
    """The encoder of a video written to ``output`` with ``settings`` and one plain line per change the app
    makes to what was asked (none when it is written as asked)."""
    path = Path(output)
    suffix, name = path.suffix.lower(), path.name
    asked = settings.output.encoder
    notices = []
    container = settings.output.container
    if container != "auto" and suffix != container:
        notices.append(f"{name} is written as {suffix}, the name's own extension (the container "
                       f"{container} is for names the app makes)")
    if transparent and suffix in ALPHA_CODECS:
        encoder: Encoder = "prores_ks" if suffix == ".mov" else "libvpx-vp9"
        if asked not in ("auto", encoder):
            notices.append(f"{_words(asked)} cannot keep transparency: {name} is encoded as "
                           f"{_words(encoder)}")
        return Choice(encoder, tuple(notices))
    if asked == "auto":
        return Choice(own_codec(suffix), tuple(notices))
    codec = CODECS[asked]
    if suffix in codec.containers:
        return Choice(asked, tuple(notices))
    own = own_codec(suffix)
    notices.append(f"{codec.words} does not go in a {suffix} file: {name} is encoded as {_words(own)} "
                   f"(name it {codec.containers[0]} to keep {codec.words})")
    return Choice(own, tuple(notices))


def output_size(size: str, width: int, height: int) -> tuple[int, int]:
    """The output's (width, height) for ``output.size`` (``keep``, ``720p``, ``0.5x``: settings spell it
    so) of a ``width``×``height`` frame: the aspect kept, both sides even (4:2:0)."""
    if size == "keep":
        return width + width % 2, height + height % 2
    new_w: float
    new_h: float
    if size.endswith("p"):
        new_h = int(size[:-1])
        new_w = width * new_h / height
    else:
        factor = float(size[:-1])
        new_w, new_h = width * factor, height * factor
    return max(2, 2 * int(new_w / 2 + 0.5)), max(2, 2 * int(new_h / 2 + 0.5))  # halves rounded up
