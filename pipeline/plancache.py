"""The render plan's measured threads, kept between renders (``plans.json`` in the user's data folder).

Measuring a heavy stage at fewer threads (:func:`pipeline.renderplan.measure`) runs the first frame again on
every thread count and re-makes the stage's sessions twice (on the chain's twins ≈ 10 s of start-up on a 1 s
clip, and a re-made session's first run is a cold one inside the render). What it finds depends on the model
files, the frame size, the cores and whether other processes share them, not on the clip: so it is kept,
as each thread count's seconds relative to all cores' (the first frame's own run then scales it to this
frame's faces), keyed by the sha256 of each of the stage's model files (remembered by path, size and mtime:
:func:`pipeline.models.batching.file_digest`), the frame size, the cores and ``shared``. The next render of
the same models reads it instead of measuring; ``facestation bench --twins`` stores what its model-bound
limit measured (each model alone), so the render it then runs reads that.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.models.batching import file_digest
from pipeline.models.sessions import CatalogSession
from pipeline.paths import data_dir, write_atomic

log = logging.getLogger(__name__)

FILE = "plans.json"


def _path() -> Path:
    return data_dir() / FILE


def key(models: Sequence[CatalogSession], size: tuple[int, int], cores: int, shared: bool) -> str | None:
    """The key of one stage's curve: its loaded models' files (sha256), the frame (width, height), the cores
    and whether other processes shared them; None where a model is not loaded from a file yet."""
    files = [m.file for m in models]
    if not files or any(f is None for f in files):
        return None
    digests = ",".join(file_digest(f) for f in files if f is not None)
    return f"{digests}|{size[0]}x{size[1]}|{cores}|{'shared' if shared else 'own'}"


def _read() -> dict[str, dict[str, float]]:
    try:
        known = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def curve(found: str | None, seconds_at_all: float, cores: int,
          counts: Sequence[int]) -> dict[int, float] | None:
    """The kept curve of ``found`` (a :func:`key`) scaled to ``seconds_at_all`` at ``cores`` threads, if it
    holds every count of ``counts``; else None (measure it)."""
    if found is None:
        return None
    relative = _read().get(found)
    if not isinstance(relative, dict):
        return None
    try:
        scaled = {int(n): round(seconds_at_all * float(r), 4) for n, r in relative.items()}
    except (TypeError, ValueError):
        return None
    if not set(counts) <= set(scaled):
        return None
    scaled[cores] = round(seconds_at_all, 4)
    return scaled


def keep(found: str | None, measured: Mapping[int, float], cores: int) -> None:
    """Keep ``measured`` (threads -> seconds, ``cores`` among them) under ``found``, relative to all
    cores'."""
    at_all = measured.get(cores)
    if found is None or not at_all:
        return
    known = _read()
    known[found] = {str(n): round(t / at_all, 4) for n, t in sorted(measured.items())}
    try:
        write_atomic(_path(), json.dumps(known, indent=1).encode())
    except OSError as exc:  # a read-only data folder: the next render measures again
        log.info("render plan not kept: %s", exc)
