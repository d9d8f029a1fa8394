"""A clip's per-frame mel windows, made once per (file, fps, start, voice extractor) and kept for the next
run on the same clip (a preview moved frame by frame, a job's segments, a re-render)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from pipeline.audio import decode, mel
from pipeline.audio.voice import VoiceExtractor

_KEEP = 4
_lock = threading.Lock()
_cache: OrderedDict[tuple[object, ...], mel.Windows] = OrderedDict()


def windows(path: Path, fps: float, start: float = 0.0, extractor: VoiceExtractor | None = None,
            cancel: threading.Event | None = None) -> mel.Windows:
    """The mel windows of ``path``'s audio from ``start`` s at ``fps`` (its voice first extracted by
    ``extractor`` where given); BadMedia where the file has no audio."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size, float(fps), float(start),
           extractor.name if extractor is not None else None)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    samples = decode.decode(path, start=start, cancel=cancel)
    voice = extractor.extract(samples) if extractor is not None and len(samples) else samples
    made = mel.Windows(mel.spectrogram(voice), float(fps), len(samples) / decode.RATE)
    with _lock:
        _cache[key] = made
        while len(_cache) > _KEEP:
            _cache.popitem(last=False)
    return made
