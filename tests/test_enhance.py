"""ONNX enhancers on surrogate models: catalog I/O, batching, blend, CodeFormer fidelity,
and the enhance stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.chain import Chain, Work
from pipeline.errors import ModelMismatch, ModelMissing, UserError
from pipeline.models import catalog
from pipeline.process import FaceProcessor
from pipeline.processors.face_enhancer.base import mix
from pipeline.processors.face_enhancer.onnx import OnnxEnhancer
from pipeline.settings import Settings, apply_overrides
from tests import photos, steps
from tests.surrogates import install_surrogate, make_surrogate

ENHANCERS = [e.name for e in catalog.by_role("enhancer")]


def _crops(n: int, size: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(40, 215, (n, size // 8, size // 8, 3)).astype(np.uint8)
    return np.ascontiguousarray(base.repeat(8, axis=1).repeat(8, axis=2))  # blocks: edges to sharpen


def _expected(crop: np.ndarray, sharpen: float) -> np.ndarray:
    """What the surrogate (an unsharp mask in [-1, 1]) does to one BGR crop, computed without onnxruntime."""
    import cv2

    x = crop[..., ::-1].astype(np.float64) / 127.5 - 1.0
    blur = cv2.blur(x, (3, 3), borderType=cv2.BORDER_CONSTANT)
    count = cv2.blur(np.ones(x.shape[:2]), (3, 3), borderType=cv2.BORDER_CONSTANT)[..., None]
    y = np.clip(x + (x - blur / count) * sharpen, -1, 1)
    return np.clip(np.floor((y + 1) * 127.5 + 0.5), 0, 255).astype(np.uint8)[..., ::-1]


@pytest.mark.parametrize("name", ENHANCERS)
def test_each_enhancer_loads_its_entry_and_restores_a_batch(name: str) -> None:
    install_surrogate(name, sharpen=0.8)
    enhancer = OnnxEnhancer(name, fidelity=1.0)
    entry = catalog.get(name)
    assert (enhancer.crop_size, enhancer.template) == (entry.input_size, entry.template)
    crops = _crops(3, enhancer.crop_size)
    out = enhancer.enhance(crops, 100)
    assert out.shape == crops.shape and out.dtype == np.uint8
    assert enhancer.runner.batch is None  # the batch-1 export was made dynamic: one run for all crops
    tol = 2 if "fp16" in entry.file or entry.inputs[0].dtype is None else 1
    for crop, got in zip(crops, out, strict=True):
        assert np.abs(got.astype(int) - _expected(crop, 0.8)).max() <= tol
    assert not np.array_equal(out, crops)


@pytest.mark.parametrize("name", ["gfpgan_1.4", "codeformer"])
def test_blend_zero_keeps_the_face_and_hundred_gives_the_model_output(name: str) -> None:
    install_surrogate(name)
    enhancer = OnnxEnhancer(name, fidelity=1.0)
    crops = _crops(2, 512)
    full = enhancer.enhance(crops, 100)
    assert np.array_equal(enhancer.enhance(crops, 0), crops)
    half = enhancer.enhance(crops, 50).astype(int)
    assert np.abs(half - (crops.astype(int) + full) / 2).max() <= 1


def test_mix_rejects_out_of_range() -> None:
    a = np.zeros((1, 4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="between 0 and 100"):
        mix(a, a, 101)


def test_codeformer_fidelity_weight_reaches_the_model() -> None:
    install_surrogate("codeformer", sharpen=1.0)  # the surrogate's effect scales with w
    crops = _crops(1, 512)
    weak = OnnxEnhancer("codeformer", fidelity=0.0).enhance(crops)
    strong = OnnxEnhancer("codeformer", fidelity=1.0).enhance(crops)
    assert np.abs(weak.astype(int) - crops).max() <= 1  # w = 0: no sharpening at all
    assert np.abs(strong.astype(int) - crops).mean() > 2


def test_missing_and_mismatched_models_are_refused(isolated_dirs: dict[str, Path]) -> None:
    with pytest.raises(ModelMissing, match="gfpgan_1.4"):
        OnnxEnhancer("gfpgan_1.4").enhance(_crops(1, 512))
    make_surrogate("gpen_bfr_256", isolated_dirs["models"] / catalog.get("gfpgan_1.4").file)
    with pytest.raises(ModelMismatch):
        OnnxEnhancer("gfpgan_1.4").enhance(_crops(1, 512))
    with pytest.raises(UserError, match="not an enhancer"):
        OnnxEnhancer("inswapper_128")


def _processor(tmp_path: Path, *overrides: str) -> FaceProcessor:
    settings = apply_overrides(Settings(), ["face_swapper.model=classic", *overrides])
    return FaceProcessor(settings, [photos.grace_hopper_path()])


def test_enhance_stage_batches_across_frames_and_respects_blend(tmp_path: Path) -> None:
    install_surrogate("gfpgan_1.4", sharpen=1.0)
    target = photos.astronaut()
    plain = _processor(tmp_path)
    faces = plain.select(target, plain.detect([target])[0])
    baseline = Chain(plain).through([Work(target, list(faces))])[0].out
    assert baseline is not None

    off = _processor(tmp_path, "face_enhancer.model=gfpgan_1.4", "face_enhancer.blend=0")
    assert np.array_equal(Chain(off).through([Work(target, list(faces))])[0].out, baseline)  # blend 0: as is

    on = _processor(tmp_path, "face_enhancer.model=gfpgan_1.4", "face_enhancer.blend=100")
    assert on.models == ["yunet", "classic", "gfpgan_1.4"]
    calls: list[int] = []
    enhancer = steps.enhancer(on).enhancer
    real = enhancer.enhance

    def counting(crops: np.ndarray, blend: int = 100) -> Any:
        calls.append(len(crops))
        return real(crops, blend)

    enhancer.enhance = counting  # type: ignore[method-assign]
    frames = [target, target[:, ::-1].copy()]
    works = Chain(on).through([Work(frames[0], list(faces)),
                               Work(frames[1], on.select(frames[1], on.detect([frames[1]])[0]))])
    assert calls == [2]  # both frames' faces in one enhancer batch, its own stage after the swap
    item = works[0].items[0]
    assert item.result.shape == (512, 512, 3) and item.mask is None and item.paste_mask.shape == (512, 512)
    assert len(item.below) == 1  # the swap's paste, kept beneath the enhancer's
    enhanced = works[0].out
    assert enhanced is not None
    changed = np.any(enhanced != baseline, axis=2)
    assert changed.sum() > 2000
    # pasted under its own box (as FaceFusion's enhancer): outside it, the swap exactly as it was
    import cv2

    reach = cv2.warpAffine(np.asarray(item.paste_mask, np.float32), item.matrix, target.shape[1::-1],
                           flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP) > 0
    assert not changed[~cv2.dilate(reach.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)].any()
    # the (sharpening) enhancer shows in the face
    face = np.any(baseline != target, axis=2)
    assert _detail(enhanced, face) > 1.1 * _detail(baseline, face)


def _detail(image: np.ndarray, where: np.ndarray) -> float:
    import cv2

    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    return float(np.abs(cv2.Laplacian(grey, cv2.CV_32F))[where].mean())
