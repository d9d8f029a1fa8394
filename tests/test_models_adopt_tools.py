"""``models adopt`` on folders laid out as each tool leaves them: ComfyUI (ReActor), insightface packs, rembg,
Deep-Live-Cam / roop / Rope, DeepFaceLive. Files are made here: surrogates with each tool's names and exports
(rembg's ``input.1`` and seven side outputs), PyTorch checkpoints, a misnamed file, links (relative, looping,
dangling) and an unreadable file. Judged through the CLI: its exit code, its table, the files installed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import zlib
from pathlib import Path

import pytest

from cli.main import main
from pipeline.models import catalog, exports, store
from pipeline.models.catalog import TensorSpec
from tests.surrogates import make_surrogate

ZIP = b"PK\x03\x04" + b"\x00" * 60 + b"archive/data.pkl"  # how a torch.save checkpoint starts


def _pin(monkeypatch: pytest.MonkeyPatch, name: str, path: Path) -> None:
    """``name``'s catalog sha256 set to the surrogate's at ``path`` (the real file's cannot be made here)."""
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setitem(catalog.CATALOG, name, dataclasses.replace(catalog.get(name), sha256=sha))


def _surrogate(monkeypatch: pytest.MonkeyPatch, name: str, path: Path, pin: bool = True,
               **options: object) -> Path:
    make_surrogate(name, path, **options)
    if pin:
        _pin(monkeypatch, name, path)
    return path


Table = tuple[dict[str, list[str]], dict[str, str], str]


def _adopt(capsys: pytest.CaptureFixture[str], *args: str) -> Table:
    """Run ``models adopt``; (adopted rows by file, skipped reasons by file, the whole output)."""
    assert main(["models", "adopt", *args]) == 0
    out = capsys.readouterr().out
    adopted: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    section = ""
    for line in out.splitlines():
        if line.startswith(("adopted ", "skipped ")) and "  " in line:
            section = line.split()[0]
            continue
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        if section == "adopted" and len(cells) >= 4:
            adopted[cells[0]] = cells[1:]
        elif section == "skipped" and len(cells) >= 2:
            skipped[cells[0]] = "  ".join(cells[1:])
    return adopted, skipped, out


def test_a_comfyui_folder_with_reactor_and_an_insightface_pack(
        tmp_path: Path, isolated_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    comfy = tmp_path / "ComfyUI"
    models = comfy / "models"
    pack = models / "insightface" / "models" / "buffalo_l"
    _surrogate(monkeypatch, "inswapper_128", models / "insightface" / "inswapper_128.onnx")
    _surrogate(monkeypatch, "retinaface", pack / "det_10g.onnx")
    _surrogate(monkeypatch, "arcface_w600k_r50", pack / "w600k_r50.onnx")
    (pack / "2d106det.onnx").write_bytes(b"insightface 106 points" * 50)
    restore = models / "facerestore_models"
    restore.mkdir(parents=True)
    (restore / "GFPGANv1.4.pth").write_bytes(ZIP)
    make_surrogate("yolo_face", restore / "GFPGANv1.4.onnx")  # a face detector under GFPGAN's name
    for sub, name in (("upscale_models", "RealESRGAN_x4plus.pth"), ("reactor/faces", "me.safetensors"),
                      ("facedetection", "detection_Resnet50_Final.pth"),
                      ("checkpoints", "sd_xl.safetensors")):
        (models / sub).mkdir(parents=True)
        (models / sub / name).write_bytes(ZIP)

    adopted, skipped, out = _adopt(capsys, str(comfy))

    assert {f: row[:3] for f, row in adopted.items()} == {
        "models/insightface/inswapper_128.onnx": ["inswapper_128", "sha256", "hard link"],
        "models/insightface/models/buffalo_l/det_10g.onnx": ["retinaface", "sha256", "hard link"],
        "models/insightface/models/buffalo_l/w600k_r50.onnx": ["arcface_w600k_r50", "sha256", "hard link"]}
    looked = out.splitlines()[0]
    for folder in ("models/insightface (ComfyUI)", "models/facerestore_models (ComfyUI)",
                   "models/reactor/faces (ComfyUI)", "models/insightface/models/buffalo_l (insightface pack "
                   "buffalo_l)"):
        assert folder in looked, looked
    assert "checkpoints" not in out  # no tool keeps face models there: not looked in
    assert skipped["models/insightface/models/buffalo_l/2d106det.onnx"].startswith(
        "insightface's 106-point landmarker")
    assert skipped["models/facerestore_models/GFPGANv1.4.pth"] == (
        "GFPGAN 1.4 as a PyTorch checkpoint (.pth): facestation runs ONNX files, so it needs converting to "
        "ONNX first; the catalog's ONNX export of it: facestation models fetch gfpgan_1.4")
    misnamed = skipped["models/facerestore_models/GFPGANv1.4.onnx"]
    assert misnamed.startswith("named like gfpgan_1.4's file, but it is built like yolo_face")
    assert misnamed.endswith("import it as such: facestation models import FILE --name yolo_face")
    assert "Real-ESRGAN x4 as a PyTorch checkpoint" in skipped["models/upscale_models/RealESRGAN_x4plus.pth"]
    assert skipped["models/reactor/faces/me.safetensors"].startswith("a ReActor face model")
    assert skipped["models/facedetection/detection_Resnet50_Final.pth"].startswith(
        "facexlib's RetinaFace ResNet-50 detector as a PyTorch checkpoint")
    assert out.splitlines()[-1] == f"3 adopted, 6 skipped from {comfy}"
    assert not store.is_installed(catalog.get("gfpgan_1.4"))


REMBG_OUTPUTS = tuple(TensorSpec(str(n), (1, 1, 320, 320)) for n in range(1959, 1966))


def _rembg(name: str, path: Path, **options: object) -> Path:
    """A surrogate with rembg's export of ``name``: input ``input.1``, seven side outputs, the matte first."""
    return make_surrogate(name, path, signature=((TensorSpec("input.1", (1, 3, 320, 320)),), REMBG_OUTPUTS),
                          **options)


def test_rembgs_folder_needs_trust_and_a_passing_check_for_files_on_no_record(
        tmp_path: Path, isolated_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    u2net = tmp_path / ".u2net"
    _rembg("u2net_human", u2net / "u2net_human_seg.onnx", gain=4.0)
    _rembg("u2net_general", u2net / "u2net.onnx", invert=True)  # marks the background: a wrong file

    _, skipped, _ = _adopt(capsys, str(u2net))
    assert skipped["u2net_human_seg.onnx"] == (
        "named like u2net_human's file and built like it (another export of u2net_human (bound by structure: "
        "input.1 as input)), but no sha256 or CRC32 on record verifies it; no u2net_human_seg.hash beside "
        "it: adopt it with --trust-structure (models check runs it first)")
    assert not store.is_installed(catalog.get("u2net_human"))

    adopted, skipped, _ = _adopt(capsys, str(u2net), "--trust-structure")
    assert adopted["u2net_human_seg.onnx"] == [
        "u2net_human", "structure + models check (unverified source)", "hard link",
        "another export of u2net_human (bound by structure: input.1 as input)"]
    assert skipped["u2net.onnx"].startswith("fits u2net_general but models check did not pass it (FAIL: ")
    assert not store.is_installed(catalog.get("u2net_general"))  # taken back out
    assert exports.unverified() == {"u2net_human.onnx": str((u2net / "u2net_human_seg.onnx").resolve())}
    from webui import models_tab

    note = next(row for row in models_tab.rows() if row[0] == "u2net_human")[5]
    assert "another export of u2net_human (bound by structure: input.1 as input)" in note
    assert f"unverified source: {(u2net / 'u2net_human_seg.onnx').resolve()}" in note


@pytest.mark.parametrize("tool", ["Deep-Live-Cam", "roop", "Rope"])
def test_the_models_folder_of_deep_live_cam_roop_and_rope(
        tool: str, tmp_path: Path, isolated_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / tool
    # Deep-Live-Cam and roop keep FaceFusion's name for the half-precision swapper, Rope VisoMaster's
    name = "inswapper_128.fp16.onnx" if tool == "Rope" else "inswapper_128_fp16.onnx"
    _surrogate(monkeypatch, "inswapper_128_fp16", root / "models" / name)
    (root / "models" / "GFPGANv1.4.pth").write_bytes(ZIP)
    adopted, skipped, out = _adopt(capsys, str(root))
    assert adopted[f"models/{name}"][:2] == ["inswapper_128_fp16", "sha256"]
    assert "models (Deep-Live-Cam, roop, Rope)" in out.splitlines()[0]
    assert "needs converting to ONNX first" in skipped["models/GFPGANv1.4.pth"]
    assert store.installed_path(catalog.get("inswapper_128_fp16")).is_file()


def test_deepfacelives_dfm_models(tmp_path: Path, isolated_dirs: dict[str, Path],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    dfm = tmp_path / "DeepFaceLive" / "userdata" / "dfm_models"
    dfm.mkdir(parents=True)
    (dfm / "Keanu_Reeves_320.dfm").write_bytes(b"a dfm graph")
    adopted, _, _ = _adopt(capsys, str(tmp_path / "DeepFaceLive"))
    assert adopted["userdata/dfm_models/Keanu_Reeves_320.dfm"][0] == "custom/Keanu_Reeves_320"


def test_links_are_followed_loops_and_dangling_ones_skipped(
        tmp_path: Path, isolated_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A relative link is installed as the file it names (it was installed as a link that dangled from the
    models folder); a link loop and a link to nothing are skipped, each with its reason, the rest adopted."""
    folder = tmp_path / "ff" / ".assets" / "models"
    folder.mkdir(parents=True)
    blob = _surrogate(monkeypatch, "gfpgan_1.4", tmp_path / "store" / "GFPGANv1.4.onnx").read_bytes()
    (folder / "GFPGANv1.4.onnx").symlink_to(Path("../../../store/GFPGANv1.4.onnx"))
    (folder / "dfm.dfm").write_bytes(b"dfm")
    (folder / "mine.dfm").symlink_to("dfm.dfm")
    (folder / "loop.onnx").symlink_to("loop.onnx")
    (folder / "a.onnx").symlink_to("b.onnx")
    (folder / "b.onnx").symlink_to("a.onnx")
    (folder / "gone.onnx").symlink_to("nowhere.onnx")
    (folder / "twice").symlink_to(".")  # a folder linked into itself: looked in once

    adopted, skipped, _ = _adopt(capsys, str(tmp_path / "ff"))
    assert adopted[".assets/models/GFPGANv1.4.onnx"][:2] == ["gfpgan_1.4", "sha256"]
    installed = store.installed_path(catalog.get("gfpgan_1.4"))
    assert installed.read_bytes() == blob  # a link resolved to its file, not a link dangling from here
    assert store.installed_path(catalog.get("custom/mine")).read_bytes() == b"dfm"
    for name in ("loop.onnx", "a.onnx", "b.onnx"):
        assert skipped[f".assets/models/{name}"] == "a symlink loop (it never reaches a file)"
    assert skipped[".assets/models/gone.onnx"] == "a symlink to nowhere.onnx, which does not exist"
    assert not any("twice" in f for f in [*adopted, *skipped])


def test_a_file_that_cannot_be_read_midway_is_skipped_and_the_rest_adopted(
        tmp_path: Path, isolated_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "roop" / "models"
    _surrogate(monkeypatch, "gfpgan_1.4", folder / "GFPGANv1.4.onnx")
    _surrogate(monkeypatch, "xseg", folder / "XSeg_model.onnx")
    real = store.sha256_of

    def flaky(path: Path, chunk: int = 1 << 20) -> str:
        if Path(path).name == "XSeg_model.onnx":
            raise PermissionError(13, "Permission denied")
        return real(path, chunk)

    monkeypatch.setattr(store, "sha256_of", flaky)
    adopted, skipped, _ = _adopt(capsys, str(folder))
    assert list(adopted) == ["GFPGANv1.4.onnx"]
    assert skipped == {"XSeg_model.onnx": "cannot be read (Permission denied)"}


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads a file of any mode")
def test_an_unreadable_file_is_skipped_with_its_reason(tmp_path: Path, isolated_dirs: dict[str, Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "roop" / "models"
    folder.mkdir(parents=True)
    locked = folder / "GFPGANv1.4.onnx"
    locked.write_bytes(b"x" * 100)
    locked.chmod(0)
    try:
        _, skipped, _ = _adopt(capsys, str(folder))
    finally:
        locked.chmod(0o600)
    assert skipped["GFPGANv1.4.onnx"] == "cannot be read (permission denied)"


def test_a_file_that_fits_several_models_is_refused_naming_them(
        tmp_path: Path, isolated_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "mine"
    make_surrogate("gfpgan_1.4", folder / "my_enhancer.onnx")
    _, skipped, _ = _adopt(capsys, str(folder), "--trust-structure")
    why = skipped["my_enhancer.onnx"]
    assert why.startswith("fits gfpgan_1.4, gpen_bfr_512, restoreformer_plus_plus") and "\n" not in why
    assert why.endswith(" alike by its structure: import it by name (facestation models import FILE --name "
                        "gfpgan_1.4)")
    assert not store.is_installed(catalog.get("gfpgan_1.4"))


def test_facefusions_own_export_of_a_pinned_model_is_verified_by_its_hash(
        tmp_path: Path, isolated_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """gfpgan_1.4's pinned sha256 is VisoMaster's file; FaceFusion's gfpgan_1.4.onnx is another export of the
    same network, checked by the CRC32 of the .hash FaceFusion published beside it."""
    folder = tmp_path / "facefusion" / ".assets" / "models"
    blob = make_surrogate("gfpgan_1.4", folder / "gfpgan_1.4.onnx", signature=(
        (TensorSpec("input", (1, 3, 512, 512)),), (TensorSpec("output", (1, 3, 512, 512)),))).read_bytes()
    (folder / "gfpgan_1.4.hash").write_text(f"{zlib.crc32(blob) & 0xFFFFFFFF:08x}")
    make_surrogate("retinaface", folder / "retinaface_10g.onnx")
    (folder / "retinaface_10g.hash").write_text("deadbeef")
    adopted, skipped, _ = _adopt(capsys, str(tmp_path / "facefusion"))
    assert adopted[".assets/models/gfpgan_1.4.onnx"][:3] == [
        "gfpgan_1.4", "name + CRC32 (FaceFusion .hash) + structure", "hard link"]
    assert skipped[".assets/models/retinaface_10g.onnx"].startswith("hash mismatch: CRC32 ")
    assert store.installed_path(catalog.get("gfpgan_1.4")).read_bytes() == blob
