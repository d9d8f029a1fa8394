"""The provenance tag every output carries (video container metadata, image metadata)."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline import __version__


def provenance_tag(models: Iterable[str]) -> str:
    """One line saying the media is synthetic, made with which facestation and which models."""
    names = ", ".join(dict.fromkeys(m for m in models if m)) or "none"
    return f"synthetic media: face swapped with facestation {__version__}; models: {names}"


def provenance_metadata(models: Iterable[str]) -> dict[str, str]:
    """Container metadata keys carrying the tag (``comment`` and ``description``)."""
    tag = provenance_tag(models)
    return {"comment": tag, "description": tag}
