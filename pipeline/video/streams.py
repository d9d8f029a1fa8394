"""What of the source goes into a rendered video besides its frames, and what is said when it cannot.

The audio streams go in (copied where the container takes their codec, else re-encoded; fitted to the video
for a damaged source), and so do the subtitle streams the output's container takes as a copy. Every other
stream of the target (subtitles it cannot take, a second video stream, cover art, data, attachments) is named
by kind and count in a notice: nothing the user gave is dropped in silence.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pipeline.video import builders
from pipeline.video.probe import VideoInfo

_KINDS = {"subtitle": "subtitle stream", "video": "more video stream", "cover art": "cover picture",
          "data": "data stream", "attachment": "attachment"}


def subtitles_kept(info: VideoInfo, suffix: str) -> tuple[int, ...]:
    """The subtitle streams of ``info`` (indices among them) an output with ``suffix`` copies."""
    subtitles = [s for s in info.extras if s.kind == "subtitle"]
    return tuple(i for i, s in enumerate(subtitles) if builders.copies_subtitle(suffix, s.codec))


def source_mux(info: VideoInfo, suffix: str, *, start: float | None, end: float | None, keep_audio: bool,
               fit_audio: bool, voice: Path | None = None) -> builders.SourceMux | None:
    """What of ``info``'s file an output with ``suffix`` muxes, trimmed to ``start``..``end``; ``voice``: a
    new sound (``--audio``) instead of the source's audio, from its beginning, as long as the clip and
    re-encoded for the container (None: nothing to mux)."""
    audio = keep_audio and info.has_audio and voice is None
    subtitles = subtitles_kept(info, suffix)
    if not audio and not subtitles and voice is None:
        return None
    duration = end - (start or 0.0) if end is not None and end < info.duration else None
    if voice is not None and duration is None:
        duration = max(info.duration - (start or 0.0), 0.0)
    audio_args = builders.audio_codec_args(suffix, info.audio_codec, fit=fit_audio) if audio else None
    voice_args = tuple(builders.audio_codec_args(suffix, None, fit=fit_audio))
    return builders.SourceMux(info.path, start, duration, None if audio_args is None else tuple(audio_args),
                              subtitles, voice=None if voice is None else Path(voice), voice_args=voice_args)


def dropped_notice(info: VideoInfo, output: Path) -> str | None:
    """Names, by kind and count, the streams of the target that ``output`` does not carry (None: none)."""
    kept = set(subtitles_kept(info, output.suffix))
    dropped: Counter[str] = Counter()
    codecs: dict[str, list[str]] = {}
    subtitle = 0
    for stream in info.extras:
        if stream.kind == "subtitle":
            subtitle += 1
            if subtitle - 1 in kept:
                continue
        kind = _KINDS.get(stream.kind, f"{stream.kind} stream")
        dropped[kind] += 1
        codecs.setdefault(kind, []).append(stream.codec)
    if not dropped:
        return None
    parts = [f"{n} {kind}{'s' if n > 1 else ''} ({', '.join(dict.fromkeys(codecs[kind]))})"
             for kind, n in dropped.items()]
    listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    return f"{info.path.name} has {listed}: dropped from {output.name}{_hint(codecs, output)}"


def _hint(codecs: dict[str, list[str]], output: Path) -> str:
    """Where the dropped subtitles would be kept: the video outputs that copy every one of them."""
    subtitles = codecs.get(_KINDS["subtitle"])
    if not subtitles:
        return ""
    keeps = [suffix for suffix, c in builders.CONTAINERS.items()
             if c.holds_h264 and suffix != output.suffix.lower()
             and all(builders.copies_subtitle(suffix, codec) for codec in subtitles)]
    return f" (a {keeps[0]} output keeps the subtitles)" if keeps else ""
