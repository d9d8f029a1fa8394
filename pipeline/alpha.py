"""Transparent output: which settings make it, which files carry it, and the frames with it.

``background_remover.fill=transparent`` gives the frames an alpha plane (``chain.Work.alpha``) from the
remover on. Only some outputs carry it: PNG and WebP stills, WebM (VP9, ``yuva420p``) and MOV (ProRes 4444,
``yuva444p10le``) videos (the codecs: ``video.builders.ALPHA_CODECS``); a job's segments are Matroska with
the output's codec, which keeps the alpha through the join. Any other output is refused before a run
(``checks.check_alpha_output``).
"""

from __future__ import annotations

import numpy as np

from pipeline.settings import Settings
from pipeline.types import Alpha, Frame

ALPHA_IMAGES: tuple[str, ...] = (".png", ".webp")
ALPHA_VIDEOS: tuple[str, ...] = (".webm", ".mov")
FORMATS_LINE = ".png or .webp for a still, .webm (VP9) or .mov (ProRes 4444) for a video"


def transparent(settings: Settings) -> bool:
    """Whether the output of a run with ``settings`` carries alpha (the background remover runs, making it
    transparent)."""
    return "background_remover" in settings.processors.order and settings.background_remover.transparent


def with_alpha(frame: Frame, alpha: Alpha | None) -> Frame:
    """``frame`` (BGR) with ``alpha`` as a 4th channel: BGRA uint8 (None: opaque)."""
    a = np.full(frame.shape[:2], 255, np.uint8) if alpha is None else alpha
    return np.ascontiguousarray(np.dstack([frame, a]))
