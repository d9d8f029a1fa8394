"""A clip's per-frame mel windows, made once per (file, fps, start, length, voice extractor) and kept for the
next run on the same clip (a preview moved frame by frame, a job's segments, a re-render).

Only the sound the clip's frames hear is decoded and analysed (``seconds``): a 2 h voice on a 3 s clip costs
what a 3 s one does."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from pipeline.audio import decode
from pipeline.processors.lip_syncer import mel
from pipeline.processors.lip_syncer.voice import VoiceExtractor

_KEEP = 4
_lock = threading.Lock()
_cache: OrderedDict[tuple[object, ...], mel.Windows] = OrderedDict()


def windows(path: Path, fps: float, start: float = 0.0, extractor: VoiceExtractor | None = None,
            cancel: threading.Event | None = None, frames: int | None = None) -> mel.Windows:
    """The mel windows of ``path``'s audio from ``start`` s at ``fps`` for the clip's first ``frames`` frames
    (None: all of the sound), its voice first extracted by ``extractor`` where given; BadMedia where the
    file has no audio."""
    stat = Path(path).stat()
    seconds = None if frames is None else heard_seconds(frames, fps)
    key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size, float(fps), float(start), seconds,
           extractor.name if extractor is not None else None)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    samples = decode.decode(path, start=start, duration=seconds, cancel=cancel)
    voice = extractor.extract(samples) if extractor is not None and len(samples) else samples
    made = mel.Windows(mel.spectrogram(voice), float(fps), len(samples) / decode.RATE)
    with _lock:
        _cache[key] = made
        while len(_cache) > _KEEP:
            _cache.popitem(last=False)
    return made


MARGIN_S = 0.5  # decoded past the last frame's window: the resampler's edge never reaches a window


def heard_seconds(frames: int, fps: float) -> float:
    """The sound ``frames`` frames at ``fps`` hear: up to the last frame's window's end (each window is
    200 ms from its frame's time), and a margin."""
    return frames / fps + mel.WINDOW / mel.MEL_FPS + MARGIN_S
