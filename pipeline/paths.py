"""Where facestation keeps its files. Every folder can be moved with an environment variable (see env.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import platformdirs

from pipeline import env

REPO_ROOT = Path(__file__).resolve().parent.parent


def _env_dir(var: env.Folder, default: Path) -> Path:
    path = var.get() or default
    path.mkdir(parents=True, exist_ok=True)
    return path


CHECKOUT_MODELS = REPO_ROOT / "models"  # where weights lived before 2026-12: still used while it holds some


def models_dir() -> Path:
    """Installed model weights: FACESTATION_MODELS; else ``models/`` in the checkout where it already holds
    weights (an install from before keeps working); else ``models/`` in the user data folder."""
    if env.MODELS.get() is None and holds_weights(CHECKOUT_MODELS):
        return CHECKOUT_MODELS
    return _env_dir(env.MODELS, data_dir() / "models")


def holds_weights(folder: Path) -> bool:
    """Does ``folder`` hold anything but its README (a model file, a layout's subfolder)?"""
    return folder.is_dir() and any(p.name != "README.md" for p in folder.iterdir())


def data_dir() -> Path:
    """User data: queue database, user presets, outputs."""
    return _env_dir(env.DATA, Path(platformdirs.user_data_dir("facestation")))


def cache_dir() -> Path:
    """Derived files that can be rebuilt: converted built-in models, TensorRT engines."""
    return _env_dir(env.CACHE, Path(platformdirs.user_cache_dir("facestation")))


def builtin_presets_dir() -> Path:
    return REPO_ROOT / "presets"


def user_presets_dir() -> Path:
    return _env_dir(env.PRESETS, data_dir() / "presets")


def outputs_dir() -> Path:
    return _env_dir(env.OUTPUTS, data_dir() / "outputs")


def write_atomic(dest: Path, data: bytes) -> None:
    """Write via a unique temp file in the same folder, fsync, rename: readers and concurrent writers never
    see half a file, and a crash leaves either the old file or the new one."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
