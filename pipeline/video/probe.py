"""``probe(path) -> VideoInfo``: what a video is, or one clear line saying why it is not usable.

ffprobe (JSON) when available; otherwise PyAV in-process (imageio-ffmpeg ships no ffprobe).
Width and height are those of the *upright* frames the decoder yields (swapped for 90/270 rotation).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from pipeline import sniff
from pipeline.errors import BadMedia, not_a_file
from pipeline.video import builders, ffmpeg
from pipeline.video.process import run_tool

log = logging.getLogger(__name__)

_IMAGE_CODECS = {"png", "mjpeg", "jpegls", "bmp", "webp", "tiff", "gif", "jpeg2000", "jpegxl", "qoi", "ppm"}
_VFR_TOLERANCE = 0.01


@dataclass(frozen=True)
class Stream:
    """One stream of a file besides its picture and its sound: what it is and its codec."""

    kind: str  # "subtitle", "video" (a second one), "cover art", "data", "attachment"
    codec: str


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    container: str
    width: int
    height: int
    fps: Fraction
    frame_count: int
    frame_count_exact: bool
    duration: float
    codec: str
    pix_fmt: str
    bit_depth: int
    rotation: int  # display-matrix rotation in degrees (0, 90, 180, 270), as ffprobe reports it
    color_space: str | None
    color_transfer: str | None
    color_primaries: str | None
    color_range: str | None
    has_audio: bool
    audio_codec: str | None  # the codec of every audio stream; None when they differ (they are re-encoded)
    is_vfr: bool
    extras: tuple[Stream, ...] = ()  # every stream but the first video and the audio, in file order

    @property
    def is_hdr(self) -> bool:
        return self.color_transfer in builders.HDR_TRANSFERS


def probe(path: str | Path) -> VideoInfo:
    """Describe a video file; raise BadMedia naming the problem if it is not a usable video."""
    path = Path(path)
    if not path.exists():
        raise BadMedia(f"{path}: file not found")
    special = not_a_file(path, "a video file")
    if special is not None:
        raise special
    if path.stat().st_size == 0:
        raise BadMedia(f"{path.name}: the file is empty (0 bytes)")
    tools = ffmpeg.find_tools()
    data = _ffprobe(tools.ffprobe, path) if tools.ffprobe else _pyav_probe(path)
    return _to_info(path, data, tools.ffmpeg)


def packet_times(path: Path) -> list[float]:
    """When each packet of the first video stream is shown (seconds, in file order; no decoding). Empty
    without ffprobe (imageio-ffmpeg ships none)."""
    tools = ffmpeg.find_tools()
    if tools.ffprobe is None:
        return []
    result = run_tool(builders.packet_times_cmd(tools.ffprobe, path), on=path)
    times = []
    for line in result.stdout.decode("ascii", "replace").splitlines():
        with contextlib.suppress(ValueError):  # N/A: a packet without a time
            times.append(float(line.strip().rstrip(",")))
    return times


def _refused(path: Path, stderr: str) -> BadMedia:
    """Why ffmpeg cannot read ``path``: what the file really is when its first bytes say (a ZIP named .mp4),
    else what ffmpeg said."""
    kind = sniff.what_is(path)
    if kind is not None:
        return BadMedia(f"{path.name} is {kind}, not a video")
    return BadMedia(f"{path.name}: {_reason(stderr)}")


def _reason(stderr: str) -> str:
    text = stderr.lower()
    if "moov atom not found" in text:
        return "the file is truncated or corrupt (moov atom not found)"
    if "invalid data found" in text:
        return "not a video file ffmpeg can read (invalid data)"
    if "permission denied" in text:
        return "permission denied"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "unknown error"
    return f"cannot be read ({last.split(': ', 1)[-1]})"


def _ffprobe(ffprobe_exe: str, path: Path) -> dict[str, Any]:
    result = run_tool(builders.probe_cmd(ffprobe_exe, path), on=path)
    if result.returncode != 0:
        raise _refused(path, result.stderr.decode("utf-8", "replace"))
    return json.loads(result.stdout.decode("utf-8", "replace"))


def _pyav_probe(path: Path) -> dict[str, Any]:
    """The same shape as ffprobe's JSON, from PyAV (used when there is no ffprobe)."""
    import av

    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as exc:
        # PyAV does not pass on ffmpeg's log line: an MP4/MOV header with no readable index is truncated
        hint = "moov atom not found" if _is_mp4_family(path) else ""
        raise _refused(path, hint + " " + str(exc)) from None
    with container:
        streams: list[dict[str, Any]] = []
        for stream in container.streams:
            ctx = stream.codec_context
            entry: dict[str, Any] = {"codec_type": stream.type, "codec_name": ctx.name if ctx else None}
            if stream.type == "video" and ctx is not None:
                entry.update(_pyav_video(container, stream))
            streams.append(entry)
        fmt = {"format_name": container.format.name,
               "duration": str(container.duration / 1e6) if container.duration else None}
    return {"streams": streams, "format": fmt}


def _is_mp4_family(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(12)[4:8] == b"ftyp"


def _pyav_video(container: Any, stream: Any) -> dict[str, Any]:
    import av

    ctx = stream.codec_context
    # PyAV exposes the colour properties as ffmpeg's integer codes: map the common ones to names
    entry: dict[str, Any] = {
        "width": ctx.width, "height": ctx.height,
        "pix_fmt": ctx.format.name if ctx.format else None,
        "r_frame_rate": str(stream.base_rate or stream.guessed_rate or 0),
        "avg_frame_rate": str(stream.average_rate or 0),
        "nb_frames": str(stream.frames) if stream.frames else None,
        "duration": str(float(stream.duration * stream.time_base)) if stream.duration else None,
        "color_space": _AVCOL_SPC.get(ctx.colorspace), "color_transfer": _AVCOL_TRC.get(ctx.color_trc),
        "color_primaries": _AVCOL_PRI.get(ctx.color_primaries),
        "color_range": {1: "tv", 2: "pc"}.get(ctx.color_range),
    }
    try:
        frame = next(container.decode(stream))
        if frame.rotation:
            entry["side_data_list"] = [{"side_data_type": "Display Matrix", "rotation": frame.rotation}]
    except (av.error.FFmpegError, StopIteration):
        pass
    return entry


# ffmpeg's AVColorSpace / AVColorTransferCharacteristic / AVColorPrimaries codes (libavutil/pixfmt.h)
_AVCOL_SPC = {0: "gbr", 1: "bt709", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 9: "bt2020nc",
              10: "bt2020c"}
_AVCOL_TRC = {1: "bt709", 4: "gamma22", 5: "gamma28", 6: "smpte170m", 7: "smpte240m", 8: "linear",
              13: "iec61966-2-1", 14: "bt2020-10", 15: "bt2020-12", 16: "smpte2084", 18: "arib-std-b67"}
_AVCOL_PRI = {1: "bt709", 4: "bt470m", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 9: "bt2020",
              11: "smpte431", 12: "smpte432"}


def _rate(text: str | None) -> Fraction:
    try:
        value = Fraction(text or "0")
    except (ValueError, ZeroDivisionError):
        return Fraction(0)
    return value if value > 0 else Fraction(0)


def _float(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _tag(value: Any) -> str | None:
    return None if value in (None, "", "unknown", "unspecified", "reserved") else str(value)


def _rotation(stream: dict[str, Any]) -> int:
    for side in stream.get("side_data_list") or []:
        if "rotation" in side:
            return round(float(side["rotation"])) % 360
    rotate = (stream.get("tags") or {}).get("rotate")
    return (-int(rotate)) % 360 if rotate else 0


def _bit_depth(pix_fmt: str, stream: dict[str, Any]) -> int:
    match = re.search(r"p(\d+)(le|be)$", pix_fmt)
    if match:
        return int(match.group(1))
    raw = stream.get("bits_per_raw_sample")
    return int(raw) if raw and str(raw).isdigit() else 8


def _to_info(path: Path, data: dict[str, Any], ffmpeg_exe: str) -> VideoInfo:
    streams = data.get("streams") or []
    fmt = data.get("format") or {}
    container = str(fmt.get("format_name") or "unknown")
    videos = [s for s in streams if s.get("codec_type") == "video"
              and not (s.get("disposition") or {}).get("attached_pic")]
    audios = [s for s in streams if s.get("codec_type") == "audio"]
    if not videos:
        detail = "audio only" if audios else "no streams ffmpeg recognises"
        raise BadMedia(f"{path.name}: has no video stream ({detail})")
    video = videos[0]
    codec = _tag(video.get("codec_name")) or "unknown"
    if container == "image2" or container.endswith("_pipe"):
        raise BadMedia(f"{path.name}: is an image ({codec}), not a video")
    if codec in ("none", "unknown") or codec not in ffmpeg.decoders(ffmpeg_exe):
        tag = str(video.get("codec_tag_string") or "")
        shown = codec if codec not in ("none", "unknown") else (tag if tag.isalnum() else "unknown codec")
        raise BadMedia(f"{path.name}: uses a video codec this ffmpeg cannot decode ({shown})")
    width, height = int(video.get("width") or 0), int(video.get("height") or 0)
    if width <= 0 or height <= 0:
        raise BadMedia(f"{path.name}: the video stream has no picture size (corrupt file?)")

    r_rate, avg_rate = _rate(video.get("r_frame_rate")), _rate(video.get("avg_frame_rate"))
    is_vfr = bool(r_rate and avg_rate and abs(r_rate - avg_rate) / avg_rate > _VFR_TOLERANCE)
    fps = (avg_rate if is_vfr else r_rate) or avg_rate
    if not fps:
        raise BadMedia(f"{path.name}: the video stream has no frame rate (corrupt file?)")
    duration = _float(video.get("duration")) or _float(fmt.get("duration"))
    nb_frames = int(video["nb_frames"]) if str(video.get("nb_frames") or "").isdigit() else 0
    if duration is None:
        if not nb_frames:
            raise BadMedia(f"{path.name}: the video has no duration (truncated or corrupt?)")
        duration = float(nb_frames / fps)
    exact = nb_frames > 0 and not is_vfr
    frame_count = nb_frames if exact else max(1, round(duration * fps))
    if codec in _IMAGE_CODECS and frame_count <= 1:
        raise BadMedia(f"{path.name}: is an image ({codec}), not a video")

    rotation = _rotation(video)
    if rotation in (90, 270):
        width, height = height, width
    pix_fmt = str(video.get("pix_fmt") or "unknown")
    return VideoInfo(
        path=path, container=container, width=width, height=height, fps=fps,
        frame_count=frame_count, frame_count_exact=exact, duration=duration, codec=codec,
        pix_fmt=pix_fmt, bit_depth=_bit_depth(pix_fmt, video), rotation=rotation,
        color_space=_tag(video.get("color_space")), color_transfer=_tag(video.get("color_transfer")),
        color_primaries=_tag(video.get("color_primaries")), color_range=_tag(video.get("color_range")),
        has_audio=bool(audios), audio_codec=_common_codec(audios), is_vfr=is_vfr,
        extras=tuple(_stream(s) for s in streams if s is not video and s.get("codec_type") != "audio"),
    )


def _stream(stream: dict[str, Any]) -> Stream:
    kind = str(stream.get("codec_type") or "unknown")
    if kind == "video" and (stream.get("disposition") or {}).get("attached_pic"):
        kind = "cover art"
    tags = stream.get("tags") or {}
    tag = str(stream.get("codec_tag_string") or "")
    named = tags.get("filename") or tags.get("mimetype") if kind == "attachment" else None
    codec = _tag(stream.get("codec_name")) or named or (tag if tag.isalnum() else "unknown")
    return Stream(kind, str(codec))


def _common_codec(streams: list[dict[str, Any]]) -> str | None:
    codecs = {_tag(s.get("codec_name")) for s in streams}
    return codecs.pop() if len(codecs) == 1 else None
