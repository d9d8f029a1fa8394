"""ffmpeg command builders: tiny pure functions returning ``list[str]`` (never a shell string).

They take plain values, not probe results or settings objects, so each can be tested as a list
without running ffmpeg. Media paths go through :func:`media_arg` (``file:`` + absolute path), so a
name containing ``:`` or starting with ``-`` is never read as a protocol or an option.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from pipeline.types import EncoderPreset

QUIET = ["-hide_banner", "-nostdin", "-loglevel", "error"]

# ffprobe colour names -> the names swscale's ``in/out_color_matrix`` understands
_SWS_MATRIX = {
    "bt709": "bt709", "smpte170m": "smpte170m", "bt470bg": "bt470", "bt601": "bt601",
    "fcc": "fcc", "smpte240m": "smpte240m", "bt2020nc": "bt2020", "bt2020c": "bt2020",
}
HDR_TRANSFERS = ("smpte2084", "arib-std-b67")  # PQ, HLG


@dataclass(frozen=True)
class Container:
    """What ffmpeg's muxer for one file suffix does with the streams facestation writes."""

    muxer: str  # the ``-f`` name
    holds_h264: bool  # takes the H.264/HEVC video the encoders make
    faststart: bool = False  # MP4 family: the index is moved to the front (plays while downloading)
    copies_audio: frozenset[str] | None = frozenset()  # audio codecs taken as a stream copy; None: any
    copies_subtitles: frozenset[str] = frozenset()  # subtitle codecs taken as a stream copy


_MP4_AUDIO = frozenset({"aac", "mp3", "alac", "ac3", "eac3"})
_MKV_SUBTITLES = frozenset({"subrip", "ass", "ssa", "webvtt", "text", "hdmv_pgs_subtitle", "dvd_subtitle",
                            "dvb_subtitle"})

# Every video container facestation knows, by file suffix: the one list (pipeline.media derives the
# accepted input and output suffixes from it). Audio a container does not take is re-encoded.
CONTAINERS: dict[str, Container] = {
    ".mp4": Container("mp4", holds_h264=True, faststart=True, copies_audio=_MP4_AUDIO | {"opus"},
                      copies_subtitles=frozenset({"mov_text"})),
    ".mov": Container("mov", holds_h264=True, faststart=True,
                      copies_audio=_MP4_AUDIO | {"pcm_s16le", "pcm_s24le"},
                      copies_subtitles=frozenset({"mov_text"})),
    ".mkv": Container("matroska", holds_h264=True, copies_audio=None, copies_subtitles=_MKV_SUBTITLES),
    ".m4v": Container("mp4", holds_h264=True, faststart=True, copies_audio=_MP4_AUDIO,
                      copies_subtitles=frozenset({"mov_text"})),
    ".webm": Container("webm", holds_h264=False, copies_audio=frozenset({"opus", "vorbis"}),
                       copies_subtitles=frozenset({"webvtt"})),
    ".avi": Container("avi", holds_h264=False),
}

_X264_PRESETS: dict[str, str] = {
    "fastest": "ultrafast", "fast": "veryfast", "medium": "medium", "slow": "slow", "slowest": "veryslow",
}
_NVENC_PRESETS: dict[str, str] = {
    "fastest": "p1", "fast": "p3", "medium": "p4", "slow": "p6", "slowest": "p7",
}


def media_arg(path: str | Path) -> str:
    return "file:" + str(Path(path).absolute())


def rate_arg(fps: Fraction | float) -> str:
    value = Fraction(fps).limit_denominator(1001 * 1000)
    return f"{value.numerator}/{value.denominator}"


def sws_matrix(color_space: str | None, height: int) -> str:
    """The YUV<->RGB matrix for a stream: its tag if known, else bt709 for HD and bt601 for SD."""
    if color_space and color_space in _SWS_MATRIX:
        return _SWS_MATRIX[color_space]
    return "bt709" if height >= 720 else "smpte170m"


# --- probing and capability checks -------------------------------------------------------------

def probe_cmd(ffprobe: str, path: str | Path) -> list[str]:
    return [ffprobe, "-v", "error", "-print_format", "json", "-show_format", "-show_streams", media_arg(path)]


def packet_times_cmd(ffprobe: str, path: str | Path) -> list[str]:
    """The presentation time of every packet of the first video stream, one a line (no decoding)."""
    return [ffprobe, "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
            "-of", "csv=p=0", media_arg(path)]


def trial_encode_cmd(ffmpeg: str, encoder: str) -> list[str]:
    """Encode one 256x256 frame to nowhere: succeeds only if the encoder really opens."""
    return [*([ffmpeg] + QUIET), "-f", "lavfi", "-i", "color=c=gray:s=256x256:r=1",
            "-frames:v", "1", "-pix_fmt", "yuv420p", "-c:v", encoder, "-f", "null", "-"]


def trial_decode_cmd(ffmpeg: str, path: str | Path, hwaccel: str) -> list[str]:
    """Decode one frame of ``path`` on ``hwaccel`` with no software fallback (frames stay on device)."""
    return [*([ffmpeg] + QUIET), "-hwaccel", hwaccel, "-hwaccel_output_format", hwaccel, "-noautorotate",
            "-i", media_arg(path), "-map", "0:v:0", "-frames:v", "1", "-f", "null", "-"]


# --- decoding ----------------------------------------------------------------------------------

def tonemap_filter(transfer: str, primaries: str | None, color_space: str | None,
                   color_range: str | None) -> str:
    """HDR (PQ/HLG, bt2020) -> SDR bt709 8-bit with zscale + tonemap (hable), as yuv420p."""
    tin = transfer
    pin = primaries if primaries and primaries != "unknown" else "bt2020"
    min_ = color_space if color_space in ("bt2020nc", "bt2020c") else "bt2020nc"
    rin = "full" if color_range == "pc" else "limited"
    return (f"zscale=tin={tin}:min={min_}:pin={pin}:rin={rin}:t=linear:npl=100,format=gbrpf32le,"
            "zscale=p=bt709,tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=limited,format=yuv420p")


def decode_filters(
    *,
    matrix: str,
    color_range: str | None,
    cfr_fps: Fraction | None = None,
    tonemap: str | None = None,
    frames: tuple[int, int | None] | None = None,
) -> str:
    """Filter chain ending in packed BGR: optional constant-rate resampling, optional tone-map,
    then the YUV->BGR conversion with the stream's own matrix (swscale would otherwise assume bt601).

    ``frames=(a, b)`` keeps only frames a..b-1 (b None: to the end), counted by INDEX after the
    constant-rate step and before any conversion (skipped frames are never converted). Timestamps are
    kept, so an output ``-t`` still ends where it would without the range."""
    parts = []
    if cfr_fps is not None:
        parts.append(f"fps=fps={rate_arg(cfr_fps)}")
    if frames is not None:
        first, stop = frames
        end = f":end_frame={int(stop)}" if stop is not None else ""
        parts.append(f"trim=start_frame={int(first)}{end}")
    if tonemap:
        parts.append(tonemap)
        matrix, color_range = "bt709", "tv"
    in_range = "pc" if color_range == "pc" else "tv"
    parts.append(f"scale=in_color_matrix={matrix}:in_range={in_range}")
    parts.append("format=bgr24")
    return ",".join(parts)


def decode_cmd(
    ffmpeg: str,
    path: str | Path,
    *,
    filters: str,
    start: float | None = None,
    duration: float | None = None,
    hwaccel: str | None = None,
    frames: int | None = None,
) -> list[str]:
    """Decode the first video stream to raw BGR24 on stdout. ``-ss`` before ``-i`` seeks fast and
    accurately; ``-t`` after it limits the output duration, ``frames`` the number of frames. ffmpeg applies
    the rotation tag itself."""
    cmd = [ffmpeg, *QUIET]
    if hwaccel:
        cmd += ["-hwaccel", hwaccel]
    if start:
        cmd += ["-ss", f"{start:.6f}"]
    cmd += ["-i", media_arg(path)]
    if duration is not None:
        cmd += ["-t", f"{duration:.6f}"]
    cmd += ["-map", "0:v:0", "-an", "-sn", "-dn", "-vf", filters, "-fps_mode", "passthrough"]
    if frames is not None:
        cmd += ["-frames:v", str(frames)]
    return [*cmd, "-f", "rawvideo", "-pix_fmt", "bgr24", "pipe:1"]


# --- encoding ----------------------------------------------------------------------------------

def quality_args(encoder: str, quality: int, preset: EncoderPreset) -> list[str]:
    """output.quality 0..100 and output.preset -> rate-control args.

    VP9 and ProRes as :func:`alpha_quality_args`; libx264: CRF 35 (q=0) .. 12 (q=100); libx265: CRF
    40 .. 16; NVENC: VBR with ``-cq`` 40 .. 14,
    presets p1..p7, ``-tune hq``."""
    q = min(max(quality, 0), 100) / 100.0
    alpha = next((c for c in ALPHA_CODECS.values() if c.encoder == encoder), None)
    if alpha is not None:  # VP9 or ProRes asked for an opaque video: the rate control of their alpha outputs
        return alpha_quality_args(alpha, quality, preset)
    if encoder.endswith("_nvenc"):
        cq = round(40 - 26 * q)
        return ["-preset", _NVENC_PRESETS[preset], "-tune", "hq", "-rc", "vbr", "-cq", str(cq), "-b:v", "0"]
    if encoder == "libx265":
        return ["-preset", _X264_PRESETS[preset], "-crf", str(round(40 - 24 * q)), "-tag:v", "hvc1",
                "-x265-params", "log-level=error"]
    return ["-preset", _X264_PRESETS[preset], "-crf", str(round(35 - 23 * q))]


@dataclass(frozen=True)
class AlphaCodec:
    """The video codec a container's transparent output is encoded with (docs/processors.md §7.2)."""

    encoder: str
    pix_fmt: str
    args: tuple[str, ...] = ()


# by output suffix: WebM takes VP9 with its alpha (libvpx keeps it beside the picture), MOV ProRes 4444
ALPHA_CODECS: dict[str, AlphaCodec] = {
    ".webm": AlphaCodec("libvpx-vp9", "yuva420p", ("-auto-alt-ref", "0", "-row-mt", "1")),
    ".mov": AlphaCodec("prores_ks", "yuva444p10le", ("-profile:v", "4444", "-vendor", "apl0")),
}
# the pixel format an opaque video is encoded in, where it is not yuv420p (ProRes 4444 has no 4:2:0)
OPAQUE_PIX_FMT: dict[str, str] = {"prores_ks": "yuv444p10le"}
_VP9_SPEED = {"fastest": "8", "fast": "5", "medium": "4", "slow": "2", "slowest": "1"}


def alpha_quality_args(codec: AlphaCodec, quality: int, preset: EncoderPreset) -> list[str]:
    """output.quality and output.preset for a transparent output: VP9 constant quality CRF 50 (q=0) .. 15
    (q=100), ``-cpu-used`` by preset; ProRes ``-qscale:v`` 24 .. 2."""
    q = min(max(quality, 0), 100) / 100.0
    if codec.encoder == "libvpx-vp9":
        return ["-crf", str(round(50 - 35 * q)), "-b:v", "0", "-deadline", "good",
                "-cpu-used", _VP9_SPEED[preset], *codec.args]
    return ["-qscale:v", str(round(24 - 22 * q)), *codec.args]


# a damaged source's audio made to fit the video: its gaps filled with silence, the end padded with silence
# and cut where the video ends (``-shortest``: the padded audio never ends first)
FIT_AUDIO = ["-af", "aresample=async=1,apad", "-shortest"]


def audio_codec_args(container: str, audio_codec: str | None, *, fit: bool = False) -> list[str]:
    """Stream-copy the source audio where the output container takes it, else re-encode
    (Opus for WebM, AAC elsewhere). ``fit``: re-encoded and fitted to the video (:data:`FIT_AUDIO`)."""
    suffix = container.lower() if container.startswith(".") else f".{container.lower()}"
    known = CONTAINERS.get(suffix)
    copies = bool(audio_codec and known and (known.copies_audio is None or audio_codec in known.copies_audio))
    if copies and not fit:
        return ["-c:a", "copy"]
    fitted = FIT_AUDIO if fit else []
    if suffix == ".webm":
        return ["-c:a", "libopus", "-b:a", "160k", *fitted]
    return ["-c:a", "aac", "-b:a", "192k", *fitted]


def copies_subtitle(suffix: str, codec: str) -> bool:
    """Does the container of ``suffix`` take a ``codec`` subtitle stream as a copy?"""
    known = CONTAINERS.get(suffix.lower())
    return bool(known and codec in known.copies_subtitles)


@dataclass(frozen=True)
class SourceMux:
    """What of the source file is muxed with the rendered frames: every audio stream (``audio_args``; None:
    no audio) and the subtitle streams ``subtitles`` (their indices among its subtitle streams, copied), all
    trimmed to ``start`` + ``duration``; their language and title tags go with them."""

    path: Path
    start: float | None = None
    duration: float | None = None
    audio_args: tuple[str, ...] | None = ("-c:a", "aac")
    subtitles: tuple[int, ...] = ()
    voice: Path | None = None  # a new sound (``--audio``) from its start, instead of the source's audio
    voice_args: tuple[str, ...] = ("-c:a", "aac")


def _uses_source(source: SourceMux) -> bool:
    return (source.audio_args is not None and source.voice is None) or bool(source.subtitles)


def source_args(source: SourceMux | None, index: int) -> tuple[list[str], list[str]]:
    """(input args, map args) that mux ``source`` as input number ``index`` and, with a new voice, that as
    the next input (nothing for None)."""
    inputs: list[str] = []
    maps: list[str] = []
    if source is None:
        return inputs, maps
    duration = ["-t", f"{source.duration:.6f}"] if source.duration is not None else []
    if _uses_source(source):
        inputs += ["-ss", f"{source.start:.6f}"] if source.start else []
        inputs += [*duration, "-i", media_arg(source.path)]
        if source.audio_args is not None and source.voice is None:
            maps += ["-map", f"{index}:a", *source.audio_args]  # every audio stream, with its tags
        for n in source.subtitles:
            maps += ["-map", f"{index}:s:{n}"]
        if source.subtitles:
            maps += ["-c:s", "copy"]
        index += 1
    if source.voice is not None:  # from its beginning, as long as the clip
        inputs += [*duration, "-i", media_arg(source.voice)]
        maps += ["-map", f"{index}:a:0", *source.voice_args]
    return inputs, maps


def color_tag_args(color_space: str, primaries: str, transfer: str, color_range: str = "tv") -> list[str]:
    return ["-colorspace", color_space, "-color_primaries", primaries, "-color_trc", transfer,
            "-color_range", color_range]


def encode_cmd(
    ffmpeg: str,
    output: str | Path,
    *,
    width: int,
    height: int,
    fps: Fraction | float,
    video_args: list[str],
    matrix: str = "bt709",
    color_args: list[str] | None = None,
    source: SourceMux | None = None,
    metadata: dict[str, str] | None = None,
    alpha: AlphaCodec | None = None,
    pix_fmt: str = "yuv420p",
    size: tuple[int, int] | None = None,
    out_fps: float | None = None,
) -> list[str]:
    """Raw BGR24 frames on stdin -> ``output``, optionally muxing the audio and subtitles of ``source``
    (``alpha``: BGRA frames, encoded with their alpha in that codec's pixel format; else ``pix_fmt``).
    ``size`` (width, height): scaled to it; ``out_fps``: frames dropped or repeated to that rate (the
    duration kept)."""
    inputs, maps = source_args(source, 1)
    pix_in, pix_out = ("bgr24", pix_fmt) if alpha is None else ("bgra", alpha.pix_fmt)
    cmd = [ffmpeg, *QUIET, "-y", "-f", "rawvideo", "-pix_fmt", pix_in, "-s", f"{width}x{height}",
           "-framerate", rate_arg(fps), "-i", "pipe:0", *inputs, "-map", "0:v:0", *maps]
    rate = f"fps=fps={rate_arg(out_fps)}," if out_fps is not None else ""
    scale = f"w={size[0]}:h={size[1]}:flags=lanczos:" if size is not None and size != (width, height) else ""
    cmd += ["-vf", f"{rate}scale={scale}out_color_matrix={matrix}:out_range=tv,format={pix_out}",
            *video_args]
    cmd += color_args or []
    for key, value in (metadata or {}).items():
        cmd += ["-metadata", f"{key}={value}"]
    cmd += faststart_args(Path(output).suffix)
    cmd.append(media_arg(output))
    return cmd


def faststart_args(suffix: str) -> list[str]:
    """``-movflags +faststart`` for the MP4 family (index at the front), nothing elsewhere."""
    known = CONTAINERS.get(suffix.lower())
    return ["-movflags", "+faststart"] if known and known.faststart else []


def muxer(suffix: str) -> str:
    """ffmpeg's ``-f`` name for a file suffix (``.mkv`` -> ``matroska``)."""
    known = CONTAINERS.get(suffix.lower())
    return known.muxer if known else suffix.lower().lstrip(".")


# --- live mode: a camera in, a stream out --------------------------------------------------------

def camera_cmd(ffmpeg: str, device: str, *, width: int, height: int, fps: float) -> list[str]:
    """A v4l2 camera at ``width``×``height`` and ``fps`` (scaled there if the device gives another size) to
    raw BGR24 on stdout."""
    return [ffmpeg, *QUIET, "-f", "v4l2", "-framerate", f"{fps:g}", "-video_size", f"{width}x{height}",
            "-i", device, "-an", "-vf", f"scale={width}:{height},format=bgr24", "-f", "rawvideo",
            "-pix_fmt", "bgr24", "pipe:1"]


def live_stream_cmd(ffmpeg: str, target: str, *, kind: str, width: int, height: int, fps: float) -> list[str]:
    """Raw BGR24 frames on stdin to a live ``target``: ``kind`` "udp" (low-latency H.264 in MPEG-TS, one
    keyframe a second, what OBS's media source opens; each frame stamped with the time it arrived, so a
    stream with dropped frames plays at real time, not slower) or "v4l2" (a v4l2loopback device, YUV 4:2:0,
    shown as it comes)."""
    raw = ["-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-framerate", f"{fps:g}",
           "-i", "pipe:0"]
    if kind == "udp":
        gop = str(max(1, round(fps)))
        return [ffmpeg, *QUIET, "-use_wallclock_as_timestamps", "1", *raw, "-vf", "format=yuv420p",
                "-fps_mode", "passthrough", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
                "-g", gop, "-f", "mpegts", f"{target}?pkt_size=1316"]
    cmd = [ffmpeg, *QUIET, *raw]
    if kind == "v4l2":
        return [*cmd, "-vf", "format=yuv420p", "-f", "v4l2", target]
    raise ValueError(f"unknown live stream kind {kind!r}")
