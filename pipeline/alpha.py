"""Transparent output: which settings make it, which files carry it, and the frames with it.

A processor that makes alpha (its settings section's ``makes_alpha``: the background remover's, with a
transparent fill) gives the frames an alpha plane (``chain.Work.alpha``) from it on. Only some outputs carry
it: PNG and WebP stills, WebM (VP9, ``yuva420p``) and MOV (ProRes 4444, ``yuva444p10le``) videos (the codecs:
``video.builders.ALPHA_CODECS``); a job's segments are Matroska with the output's codec, which keeps the
alpha through the join. Any other output is refused before a run (``checks.check_alpha_output``).
"""

from __future__ import annotations

import numpy as np

from pipeline.settings import Settings
from pipeline.types import Alpha, Frame

ALPHA_IMAGES: tuple[str, ...] = (".png", ".webp")
ALPHA_VIDEOS: tuple[str, ...] = (".webm", ".mov")
FORMATS_LINE = ".png or .webp for a still, .webm (VP9) or .mov (ProRes 4444) for a video"


def maker(settings: Settings) -> str | None:
    """The processor of the order that makes the frames of a run with ``settings`` transparent (the
    background remover with a transparent fill), or None."""
    return next((name for name in settings.processors.order if getattr(settings, name).makes_alpha), None)


def transparent(settings: Settings) -> bool:
    """Whether the output of a run with ``settings`` carries alpha (a processor of the order makes it)."""
    return maker(settings) is not None


def with_alpha(frame: Frame, alpha: Alpha | None) -> Frame:
    """``frame`` (BGR) with ``alpha`` as a 4th channel: BGRA uint8 (None: opaque)."""
    a = np.full(frame.shape[:2], 255, np.uint8) if alpha is None else alpha
    return np.ascontiguousarray(np.dstack([frame, a]))
