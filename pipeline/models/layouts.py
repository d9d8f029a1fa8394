"""Where other tools keep their model files, and what the files there are that facestation cannot run.

Facts, not code, of each tool: the folders it keeps models in (relative to the folder a user gives
``models adopt``: the tool's own folder, or the models folder itself), the names it gives files the catalog
knows under other names (``catalog.ModelEntry.aliases``), and the files of its own that are no catalog model
(a PyTorch checkpoint, insightface's other pack files, a ReActor face) with what each one is.
"""

from __future__ import annotations

from pathlib import Path

# (folder relative to the one given, whose layout it is); "*" is one folder level. An insightface pack folder
# (buffalo_l, antelopev2…) is told by its files (PACK_FILES), wherever it sits.
FOLDERS: tuple[tuple[str, str], ...] = (
    (".", "the folder given"),
    (".assets/models", "FaceFusion"),
    ("model_assets", "VisoMaster"),
    (".u2net", "rembg"),
    (".insightface/models", "insightface"),
    ("models", "Deep-Live-Cam, roop, Rope"),
    *((f"{root}{sub}", "ComfyUI") for root in ("models/", "") for sub in (
        "insightface", "facerestore_models", "upscale_models", "reactor", "reactor/faces", "facedetection",
        "hyperswap")),
)
PACK_PARENTS = (".", "models", ".insightface/models", "models/insightface/models", "insightface/models")
DFM_FOLDERS = ("dfm_models", "userdata/dfm_models", "model_assets/dfm_models")  # DeepFaceLive, VisoMaster

# insightface's pack files that are no catalog model, and other tools' ONNX files of the same kind
PACK_FILES: dict[str, str] = {
    "2d106det.onnx": "insightface's 106-point landmarker: no model of the catalog does its job (2dfan4 gives "
                     "68 points)",
    "1k3d68.onnx": "insightface's 3D 68-point landmarker: not a catalog model (2dfan4 gives the 68 points)",
    "genderage.onnx": "insightface's gender and age classifier: not used (the age modifier's estimate is "
                      "fairface)",
    "glintr100.onnx": "insightface's ArcFace R100 (glint360k): another identity encoder than the one the "
                      "swappers were trained with (arcface_w600k_r50)",
    "w600k_mbf.onnx": "insightface's ArcFace MobileFaceNet (buffalo_s): another identity encoder than the "
                      "swappers' (arcface_w600k_r50)",
    "det_500m.onnx": "insightface's SCRFD 500m detector (buffalo_s): not a catalog model",
    "det_2.5g.onnx": "insightface's SCRFD 2.5g detector (buffalo_m): not a catalog model (scrfd is the "
                     "keypoint export scrfd_2.5g_bnkps.onnx)",
    "scrfd_10g_bnkps.onnx": "insightface's SCRFD 10g detector (antelopev2): not a catalog model",
    "isnet-anime.onnx": "rembg's IS-Net for anime: not a catalog model",
}
PACK_MARKS = frozenset({"det_10g.onnx", "w600k_r50.onnx", *PACK_FILES})

# PyTorch weights other tools keep, by name: (what it is, the catalog model that is its ONNX export or None)
PYTORCH_FILES: dict[str, tuple[str, str | None]] = {
    "GFPGANv1.4.pth": ("GFPGAN 1.4", "gfpgan_1.4"),
    "GFPGANv1.3.pth": ("GFPGAN 1.3", None),
    "codeformer.pth": ("CodeFormer", "codeformer"),
    "codeformer-v0.1.0.pth": ("CodeFormer 0.1.0", "codeformer"),
    "GPEN-BFR-512.pth": ("GPEN BFR 512", "gpen_bfr_512"),
    "GPEN-BFR-1024.pth": ("GPEN BFR 1024", "gpen_bfr_1024"),
    "RestoreFormer.pth": ("RestoreFormer", None),
    "RealESRGAN_x2plus.pth": ("Real-ESRGAN x2", "real_esrgan_x2"),
    "RealESRGAN_x4plus.pth": ("Real-ESRGAN x4", "real_esrgan_x4"),
    "detection_Resnet50_Final.pth": ("facexlib's RetinaFace ResNet-50 detector", None),
    "detection_mobilenet0.25_Final.pth": ("facexlib's RetinaFace MobileNet detector", None),
    "parsing_parsenet.pth": ("facexlib's ParseNet face parser", None),
    "parsing_bisenet.pth": ("facexlib's BiSeNet face parser", None),
    "yolov5l-face.pth": ("a YOLOv5 face detector (facexlib)", None),
    "yolov5n-face.pth": ("a YOLOv5 face detector (facexlib)", None),
}
PYTORCH_SUFFIXES = (".pth", ".pt", ".ckpt", ".tar")
OTHER_SUFFIXES: dict[str, str] = {
    ".safetensors": "a safetensors checkpoint (PyTorch weights): facestation runs ONNX files, so it needs "
                    "converting to ONNX first",
    ".engine": "a TensorRT engine (built for one GPU and TensorRT version): facestation builds its own from "
               "the ONNX file",
    ".trt": "a TensorRT engine (built for one GPU and TensorRT version): facestation builds its own from the "
            "ONNX file",
    ".tflite": "a TensorFlow Lite model: facestation runs ONNX files",
    ".pb": "a TensorFlow graph: facestation runs ONNX files",
    ".bin": "raw weights (an ncnn/OpenVINO or PyTorch .bin): facestation runs ONNX files",
}


def model_folders(root: Path) -> list[tuple[Path, str]]:
    """The folders under ``root`` that a known tool keeps models in (``root`` itself first), each once (by
    the folder it really is: a folder linked twice, or a link loop, is visited once), with whose layout."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()

    def add(folder: Path, tool: str) -> None:
        try:
            real = folder.resolve(strict=True)
        except (OSError, RuntimeError):  # gone, or a link loop
            return
        if folder.is_dir() and real not in seen:
            seen.add(real)
            found.append((folder, tool))

    for rel, tool in FOLDERS:
        add(root / rel, tool)
    for parent in PACK_PARENTS:
        for pack in sorted(_subfolders(root / parent)):
            if _is_pack(pack):
                add(pack, f"insightface pack {pack.name}")
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir()] if folder.is_dir() else []
    except OSError:
        return []


def _is_pack(folder: Path) -> bool:
    try:
        return any(p.name in PACK_MARKS for p in folder.iterdir())
    except OSError:
        return False


def foreign(path: Path) -> str:
    """What a file facestation cannot run is, and what to do ("" where it may be an ONNX model)."""
    name, suffix = path.name, path.suffix.lower()
    if name in PACK_FILES:
        return PACK_FILES[name]
    if name in PYTORCH_FILES or suffix in PYTORCH_SUFFIXES:
        what, ours = PYTORCH_FILES.get(name, ("PyTorch weights", None))
        instead = (f"; the catalog's ONNX export of it: facestation models fetch {ours}" if ours
                   else "")
        return (f"{what} as a PyTorch checkpoint ({suffix}): facestation runs ONNX files, so it needs "
                f"converting to ONNX first{instead}")
    if suffix == ".safetensors" and path.parent.name == "faces":
        return ("a ReActor face model (a saved face, not a network): give the photos it was made from as the "
                "source instead")
    return OTHER_SUFFIXES.get(suffix, "")
