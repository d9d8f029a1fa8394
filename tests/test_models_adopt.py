"""``models adopt DIR``: the FaceFusion and VisoMaster folders a user already has, adopted offline.

The adopt runs in a child process with the network cut (``unshare -n`` where it works) and an audit hook
that records, and refuses, any socket connect or name lookup: the test asserts none was attempted.
Files are surrogates (their contents made here); a model whose catalog entry pins a real sha256 has it
replaced by the surrogate's, in the child, for the files meant to match.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from pipeline import adopt
from pipeline.models import catalog, store

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import dataclasses, json, sys
attempts = []

def guard(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request"):
        attempts.append(event)
        raise RuntimeError(f"network use during adopt: {event}")

sys.addaudithook(guard)
from pipeline import adopt
from pipeline.models import catalog
patches, folder, result = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
for name, sha in patches.items():
    catalog.CATALOG[name] = dataclasses.replace(catalog.CATALOG[name], sha256=sha)
report = adopt.adopt(folder)
with open(result, "w") as fh:
    json.dump({"attempts": attempts, "adopted": [a.__dict__ for a in report.adopted],
               "skipped": {k.file: k.reason for k in report.skipped}}, fh)
"""


def _network_cut() -> list[str]:
    """``unshare -n`` where this machine allows it (root, or user namespaces), else nothing: the audit hook
    still refuses every connect."""
    if not shutil.which("unshare"):
        return []
    works = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return ["unshare", "-n"] if works else []


def _adopt_offline(folder: Path, patches: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    result = tmp_path / "result.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([*_network_cut(), sys.executable, "-c", CHILD, json.dumps(patches), str(folder),
                          str(result)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found: dict[str, Any] = json.loads(result.read_text())
    assert found["attempts"] == [], "adopt tried the network"
    return found


def _crc(blob: bytes) -> str:
    return f"{zlib.crc32(blob) & 0xFFFFFFFF:08x}"


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _put(folder: Path, name: str, blob: bytes, hash_file: str | None = "right") -> bytes:
    """A surrogate file, with a FaceFusion .hash sibling holding its CRC32 ("right"), another ("wrong")
    or none (None)."""
    (folder / name).write_bytes(blob)
    if hash_file:
        crc = _crc(blob) if hash_file == "right" else "deadbeef"
        (folder / name).with_suffix(".hash").write_text(crc)
    return blob


def test_a_facefusion_folder_is_adopted_offline(tmp_path: Path, isolated_dirs: dict[str, Path]) -> None:
    ff = tmp_path / "facefusion" / ".assets" / "models"
    ff.mkdir(parents=True)
    swapper = _put(ff, "inswapper_128.onnx", b"surrogate inswapper" * 999)
    arcface = _put(ff, "arcface_w600k_r50.onnx", b"surrogate arcface" * 777)
    hyper = _put(ff, "hyperswap_1b_256.onnx", b"surrogate hyperswap 1b" * 555)  # no sha256 known: CRC32
    _put(ff, "simswap_256.onnx", b"surrogate simswap" * 333, hash_file="wrong")
    _put(ff, "hyperswap_1c_256.onnx", b"surrogate hyperswap 1c" * 222, hash_file=None)
    (ff / "hyperswap_1a_256.hash").write_text("0badc0de")  # its file was never downloaded
    _put(ff, "gfpgan_1.4.onnx", b"facefusion's own gfpgan export" * 111)  # another file than the pinned one
    detector = _put(ff, "retinaface_10g.onnx", b"surrogate det_10g" * 444)
    (isolated_dirs["models"] / "det_10g.onnx").write_bytes(detector)  # installed before
    _put(ff, "face_landmarker_68.onnx", b"a model the catalog does not have" * 10)

    found = _adopt_offline(ff, {"inswapper_128": _sha(swapper), "arcface_w600k_r50": _sha(arcface),
                                "retinaface": _sha(detector)}, tmp_path)

    adopted = {a["file"]: (a["model"], a["by"], a["how"]) for a in found["adopted"]}
    assert adopted == {
        "inswapper_128.onnx": ("inswapper_128", "sha256", "hard link"),
        "arcface_w600k_r50.onnx": ("arcface_w600k_r50", "sha256", "hard link"),
        "hyperswap_1b_256.onnx": ("hyperswap_1b_256", "name + CRC32 (FaceFusion .hash)", "hard link"),
    }
    models = isolated_dirs["models"]
    assert (models / "w600k_r50.onnx").read_bytes() == arcface  # installed under our file name
    assert (models / "inswapper_128.onnx").stat().st_ino == (ff / "inswapper_128.onnx").stat().st_ino
    assert (models / "hyperswap_1b_256.onnx").read_bytes() == hyper
    skipped = found["skipped"]
    assert set(skipped) == {"simswap_256.onnx", "hyperswap_1c_256.onnx", "hyperswap_1a_256.hash",
                            "gfpgan_1.4.onnx", "retinaface_10g.onnx", "face_landmarker_68.onnx"}
    assert "hash mismatch" in skipped["simswap_256.onnx"]
    assert "expected deadbeef" in skipped["simswap_256.onnx"]
    assert "no hyperswap_1c_256.hash beside it" in skipped["hyperswap_1c_256.onnx"]
    assert "a .hash without its file" in skipped["hyperswap_1a_256.hash"]
    assert "hash mismatch" in skipped["gfpgan_1.4.onnx"]
    assert catalog.get("gfpgan_1.4").sha256 in skipped["gfpgan_1.4.onnx"]  # names what it expected
    assert "already installed" in skipped["retinaface_10g.onnx"]
    assert "unknown file" in skipped["face_landmarker_68.onnx"]
    for name in ("simswap_256", "hyperswap_1c_256", "gfpgan_1.4"):
        assert not store.is_installed(catalog.get(name)), name


def test_a_visomaster_folder_is_adopted_offline(tmp_path: Path, isolated_dirs: dict[str, Path]) -> None:
    vm = tmp_path / "VisoMaster" / "model_assets"
    vm.mkdir(parents=True)
    fp16 = _put(vm, "inswapper_128.fp16.onnx", b"surrogate fp16 inswapper" * 500, hash_file=None)
    _put(vm, "inswapper_128.fp16 (copy).onnx", fp16, hash_file=None)
    det = _put(vm, "det_10g.onnx", b"surrogate det_10g" * 300, hash_file=None)
    gfpgan = _put(vm, "GFPGANv1.4.onnx", b"surrogate gfpgan" * 400, hash_file=None)
    _put(vm, "XSeg_model.onnx", b"a damaged xseg download" * 100, hash_file=None)
    (vm / "readme.txt").write_text("VisoMaster's models")

    found = _adopt_offline(vm, {"inswapper_128_fp16": _sha(fp16), "retinaface": _sha(det),
                                "gfpgan_1.4": _sha(gfpgan)}, tmp_path)

    assert {a["file"]: a["model"] for a in found["adopted"]} == {
        "inswapper_128.fp16.onnx": "inswapper_128_fp16", "det_10g.onnx": "retinaface",
        "GFPGANv1.4.onnx": "gfpgan_1.4"}
    assert (isolated_dirs["models"] / "GFPGANv1.4.onnx").read_bytes() == gfpgan
    skipped = found["skipped"]
    assert set(skipped) == {"inswapper_128.fp16 (copy).onnx", "XSeg_model.onnx", "readme.txt"}
    assert "already adopted from inswapper_128.fp16.onnx" in skipped["inswapper_128.fp16 (copy).onnx"]
    assert "named like xseg's file" in skipped["XSeg_model.onnx"]
    assert catalog.get("xseg").sha256 in skipped["XSeg_model.onnx"]
    assert "not an .onnx model file" in skipped["readme.txt"]


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> catalog.ModelEntry:
    import dataclasses

    entry = dataclasses.replace(catalog.get(name), **changes)
    monkeypatch.setitem(catalog.CATALOG, name, entry)
    return entry


def test_where_no_link_is_possible_the_file_is_copied_and_the_report_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "models elsewhere"
    folder.mkdir()
    blob = _put(folder, "GFPGANv1.4.onnx", b"surrogate gfpgan" * 50, hash_file=None)
    _patch(monkeypatch, "gfpgan_1.4", sha256=_sha(blob))

    def refuse(*_args: Any, **_kw: Any) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    monkeypatch.setattr(os, "symlink", refuse)
    assert main(["models", "adopt", str(folder)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("GFPGANv1.4.onnx"))
    assert row.split() == ["GFPGANv1.4.onnx", "gfpgan_1.4", "sha256", "copy"]
    installed = store.installed_path(catalog.get("gfpgan_1.4"))
    assert installed.read_bytes() == blob and not installed.is_symlink()
    assert installed.stat().st_ino != (folder / "GFPGANv1.4.onnx").stat().st_ino


def test_a_symlink_where_a_hard_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ff"
    folder.mkdir()
    blob = _put(folder, "hyperswap_1c_256.onnx", b"surrogate 1c" * 80)

    def refuse(*_args: Any, **_kw: Any) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    report = adopt.adopt(folder)
    assert [(a.model, a.how) for a in report.adopted] == [("hyperswap_1c_256", "symlink")]
    installed = store.installed_path(catalog.get("hyperswap_1c_256"))
    assert installed.is_symlink() and installed.read_bytes() == blob


def test_a_file_under_another_name_is_told_by_its_pinned_size(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "any"
    folder.mkdir()
    blob = _put(folder, "my swapper.onnx", b"surrogate simswap" * 70)
    _patch(monkeypatch, "simswap_256", size=len(blob))  # no sha256: the size tells it, the .hash verifies it
    report = adopt.adopt(folder)
    assert [(a.file, a.model, a.by) for a in report.adopted] == [
        ("my swapper.onnx", "simswap_256", "size + CRC32 (FaceFusion .hash)")]


def test_adopt_of_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "adopt", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
