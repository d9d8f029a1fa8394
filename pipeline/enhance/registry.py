"""Enhancer registry: ``enhancer.model`` from the settings -> an Enhancer (or None for ``none``)."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.enhance.base import Enhancer
from pipeline.settings import EnhancerSettings
from pipeline.types import Provider


def make_enhancer(settings: EnhancerSettings, providers: Sequence[Provider] = ("cpu",),
                  threads: int = 0) -> Enhancer | None:
    if settings.model == "none":
        return None
    from pipeline.enhance.onnx import OnnxEnhancer

    return OnnxEnhancer(settings.model, tuple(providers), threads, fidelity=settings.fidelity)
