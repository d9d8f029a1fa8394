"""Shared test set-up: every test runs with its own model, data and output folders.

The converted built-in models are cached once per test session (FACESTATION_CACHE) since converting
them is the slowest step of a fresh run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import env
from tests.timing import timeout_scale


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def session_uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Gradio's upload folder for this test run: /tmp/gradio is shared by every run on the machine, an
    upload is named by its content and each app deletes its own at exit, so two runs side by side deleted
    each other's uploads (the same generated clip, the same photo)."""
    return tmp_path_factory.mktemp("gradio")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, session_cache: Path, session_uploads: Path,
                  monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    dirs = {
        "models": tmp_path / "models",
        "data": tmp_path / "data",
    }
    for d in dirs.values():
        d.mkdir()
    monkeypatch.setenv("FACESTATION_MODELS", str(dirs["models"]))
    monkeypatch.setenv("FACESTATION_DATA", str(dirs["data"]))
    monkeypatch.setenv("FACESTATION_CACHE", str(session_cache))
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(session_uploads))
    for var in ("FACESTATION_PRESETS", "FACESTATION_OUTPUTS", "FACESTATION_FFMPEG"):
        monkeypatch.delenv(var, raising=False)
    dirs["cache"] = session_cache
    return dirs


def pytest_configure(config: pytest.Config) -> None:
    try:
        timeout_scale()  # a bad FACESTATION_TEST_TIMEOUT_SCALE stops the run before any test, naming it
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if env.GPU_TESTS.get():
        return
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (set FACESTATION_GPU_TESTS=1 on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
