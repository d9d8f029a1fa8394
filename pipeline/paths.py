"""Where facestation keeps its files. Every folder can be moved with an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

REPO_ROOT = Path(__file__).resolve().parent.parent


def _env_dir(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    path = Path(value).expanduser() if value else default
    path.mkdir(parents=True, exist_ok=True)
    return path


def models_dir() -> Path:
    """Installed model weights (``models/`` in the checkout unless FACESTATION_MODELS is set)."""
    return _env_dir("FACESTATION_MODELS", REPO_ROOT / "models")


def data_dir() -> Path:
    """User data: queue database, user presets, outputs."""
    return _env_dir("FACESTATION_DATA", Path(platformdirs.user_data_dir("facestation")))


def cache_dir() -> Path:
    """Derived files that can be rebuilt: converted built-in models, TensorRT engines."""
    return _env_dir("FACESTATION_CACHE", Path(platformdirs.user_cache_dir("facestation")))


def builtin_presets_dir() -> Path:
    return REPO_ROOT / "presets"


def user_presets_dir() -> Path:
    return _env_dir("FACESTATION_PRESETS", data_dir() / "presets")


def outputs_dir() -> Path:
    return _env_dir("FACESTATION_OUTPUTS", data_dir() / "outputs")
