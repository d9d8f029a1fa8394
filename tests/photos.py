"""Real face photos for tests, taken from installed packages or a cached wheel; never committed.

Each helper skips the calling test, with a reason, when its source is not available.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline import env
from pipeline.types import Frame
from tests.timing import scaled

T1_WHEEL = "insightface==2.1"
T1_MEMBER = "insightface/data/images/t1.jpg"


def cache_folder() -> Path:
    """Downloads kept between test runs, outside the checkout (FACESTATION_TEST_DATA overrides)."""
    path = env.TEST_DATA.get() or Path.home() / ".cache" / "facestation-tests"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _read(path: Path) -> Frame:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        pytest.skip(f"cannot decode {path}")
    return np.ascontiguousarray(image)


def grace_hopper_path() -> Path:
    """matplotlib's sample photo of Grace Hopper: 512×600, one face."""
    try:
        import matplotlib
    except ImportError:
        pytest.skip("matplotlib is not installed (it holds grace_hopper.jpg)")
    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    if not path.is_file():
        pytest.skip(f"{path} is missing from the installed matplotlib")
    return path


def grace_hopper() -> Frame:
    return _read(grace_hopper_path())


def astronaut() -> Frame:
    """scikit-image's astronaut (Eileen Collins): 512×512, one face, as BGR."""
    try:
        from skimage import data
    except ImportError:
        pytest.skip("scikit-image is not installed (it holds the astronaut photo)")
    rgb = data.astronaut()
    return np.ascontiguousarray(rgb[:, :, ::-1])


def astronaut_path(tmp_dir: Path) -> Path:
    """The astronaut written as a PNG into ``tmp_dir``."""
    path = Path(tmp_dir) / "astronaut.png"
    if not cv2.imwrite(str(path), astronaut()):
        pytest.skip(f"cannot write {path}")
    return path


def _download_wheel(folder: Path) -> Path:
    found = sorted(folder.glob("insightface-2.1-*.whl"))
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        try:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", T1_WHEEL, "--no-deps", "--only-binary=:all:",
                 "-d", tmp, "--disable-pip-version-check", "--quiet"],
                check=True, capture_output=True, timeout=scaled(180),
            )
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"cannot download {T1_WHEEL} for t1.jpg: {exc}")
        wheels = sorted(Path(tmp).glob("insightface-*.whl"))
        if not wheels:
            pytest.skip(f"pip download {T1_WHEEL} gave no wheel")
        dest = folder / wheels[0].name
        shutil.move(str(wheels[0]), dest)  # same file system: an atomic rename
    return dest


def t1_path() -> Path:
    """insightface's t1.jpg (1280×886, six faces), extracted from its wheel; insightface is not installed."""
    folder = cache_folder()
    path = folder / "t1.jpg"
    if path.is_file():
        return path
    wheel = _download_wheel(folder)
    try:
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(T1_MEMBER)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        pytest.skip(f"cannot take {T1_MEMBER} from {wheel.name}: {exc}")
    fd, tmp = tempfile.mkstemp(prefix="t1.", suffix=".part", dir=folder)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return path


def t1() -> Frame:
    return _read(t1_path())
