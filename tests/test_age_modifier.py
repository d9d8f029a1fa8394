"""age_modifier (docs/processors.md §5): the directions each model is fed, match_frame_color (§0.4), and the
paste at each model's own crop and masks — checked on surrogates that write what they were fed into their
output (fran: a constant colour; styleganex_age: a checkerboard's amplitude), on a frame whose crop is the
frame itself, so that every pasted pixel can be read back exactly. The real files' signatures, the loader,
FairFace's ids and logits, the plan and the models check."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline import modelcheck
from pipeline.blend import mask as masks
from pipeline.blend.frame_color import match_frame_color
from pipeline.blend.occlusion import Occluder
from pipeline.errors import ModelMismatch
from pipeline.faces import align
from pipeline.faces.classify import FairFace, bucket_age
from pipeline.models import catalog
from pipeline.models.catalog import TensorSpec
from pipeline.plan import ModelPlan
from pipeline.processors import PROCESSORS
from pipeline.processors.age_modifier import AgeModifierProcessor
from pipeline.processors.age_modifier.age import (
    Fran,
    StyleGanExAge,
    fran_direction,
    styleganex_direction,
)
from pipeline.processors.crops import FaceItem, FaceMasks, blend
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Face
from tests.surrogates import FRAN_BLUE, STYLEGANEX_ENCODE, install_surrogate

SIDE = 1024
ORDER = 'processors.order=["face_swapper","age_modifier"]'


def _settings(*overrides: str) -> Settings:
    return apply_overrides(Settings(), list(overrides))


def _face(landmarks: np.ndarray) -> Face:
    x1, y1 = landmarks.min(axis=0) - 40
    x2, y2 = landmarks.max(axis=0) + 40
    return Face(np.array([x1, y1, x2, y2], np.float32), landmarks.astype(np.float32), 0.9)


def _identity_face(template: str, zoom: float = 1.0) -> Face:
    """A face whose crop at ``template`` × 1024 (its landmarks scaled by ``zoom`` about the nose tip first) is
    the 1024 frame itself: frame -> crop is the identity."""
    points = align.TEMPLATES[template] * SIDE  # type: ignore[index]
    nose = points[2]
    return _face(nose + (points - nose) / zoom)


def _run(settings: Settings, frame: np.ndarray, face: Face, face_masks: FaceMasks | None = None,
         ) -> tuple[np.ndarray, FaceItem]:
    step = AgeModifierProcessor(settings, AgeModifierProcessor.models(settings))
    item = FaceItem.unframed(face)
    step.run([frame], [[item]], None, face_masks, [0])  # type: ignore[arg-type]
    return blend(frame, [item]), item


# --- the facts as numbers -------------------------------------------------------------------------------

def test_the_age_buckets_and_the_directions() -> None:
    assert [bucket_age(i) for i in range(9)] == [0.5, 5.5, 14, 24, 34, 44, 54, 64, 84.5]
    np.testing.assert_allclose(fran_direction(24, 30), [0.24, 0.54], atol=1e-6)  # docs/processors.md §5.1
    np.testing.assert_allclose(fran_direction(84.5, 40), [0.845, 1.0], atol=1e-6)  # clipped to [0, 1]
    np.testing.assert_allclose(fran_direction(5.5, -20), [0.055, 0.0], atol=1e-6)
    assert fran_direction(24, 30).shape == (2,) and fran_direction(24, 30).dtype == np.float32
    assert styleganex_direction(40) == pytest.approx(-1.0)
    assert styleganex_direction(-100) == pytest.approx(2.5)
    assert styleganex_direction(100) == pytest.approx(-2.5)


def test_match_frame_color_adds_the_low_frequency_difference_and_keeps_the_detail() -> None:
    """A 1 px checkerboard over 60 grey (the target) takes the flat colour of the source: the result is the
    source's colour plus the target's checkerboard (area averages of the pattern vanish), but for the three
    truncations to uint8 that FaceFusion makes too."""
    checker = np.indices((SIDE, SIDE)).sum(axis=0) % 2 * 2 - 1
    target = np.repeat((60 + 20 * checker)[..., None], 3, axis=2).astype(np.uint8)
    source = np.full((384, 384, 3), (100, 150, 30), np.uint8)
    out = match_frame_color(source, target)
    expected = np.array([100, 150, 30])[None, None] + 20 * checker[..., None]
    assert out.shape == target.shape
    assert np.abs(out.astype(int) - expected).max() <= 3


# --- acceptance: fran -------------------------------------------------------------------------------------

def test_fran_is_fed_the_estimated_age_and_its_image_is_pasted_with_its_1024_box() -> None:
    """FairFace says 20-29 (id 3: 24 years), direction +30: fran is fed [0.24, 0.54]; its constant output
    (R, G, B) = (0.24, 0.54, FRAN_BLUE) fills the box mask of the ffhq_512 1024 crop, and nothing else."""
    install_surrogate("fairface", age=3)
    install_surrogate("fran", encode=True)
    frame = np.full((SIDE, SIDE, 3), 200, np.uint8)
    settings = _settings("age_modifier.direction=30")
    out, item = _run(settings, frame, _identity_face("ffhq_512"))
    np.testing.assert_allclose(item.matrix, [[1, 0, 0], [0, 1, 0]], atol=1e-3)
    colour = np.array([FRAN_BLUE, 0.54, 0.24]) * 255  # BGR
    assert np.abs(out[512, 512].astype(float) - colour).max() <= 1
    # every pixel is frame·(1 − m) + colour·m, m the box mask of the crop (padding 0, mask.blur)
    seen = (200.0 - out[..., 2]) / (200.0 - colour[2])
    box = masks.box_mask(SIDE, settings.mask.blur)
    assert np.abs(seen - box).max() < 0.02


def test_fran_takes_fairface_logits_and_a_younger_direction() -> None:
    install_surrogate("fairface", age=7, logits=True)  # 60-69: 64 years, as (N, 9) scores
    install_surrogate("fran", encode=True)
    frame = np.full((SIDE, SIDE, 3), 200, np.uint8)
    out, _ = _run(_settings("age_modifier.direction=-70"), frame, _identity_face("ffhq_512"))
    assert np.abs(out[512, 512].astype(float) - np.array([FRAN_BLUE, 0.0, 0.64]) * 255).max() <= 1


# --- acceptance: styleganex_age ---------------------------------------------------------------------------

def _checker_amplitude(out: np.ndarray, base: float, weight: np.ndarray) -> tuple[float, np.ndarray]:
    """(the checkerboard's amplitude in [−1, 1] model units where the mask is 1, the mask seen per pixel)."""
    checker = 1 - np.indices(out.shape[:2]).sum(axis=0) % 2 * 2  # the surrogate's: +1 at (0, 0)
    signed = (out[..., 2].astype(float) - base) * checker
    core = weight > 0.999
    pixels = float(signed[core].mean())
    assert abs(pixels) > 10, "no pattern where the mask is 1"
    return pixels / 127.5 / STYLEGANEX_ENCODE, signed / pixels


@pytest.mark.parametrize("direction", [40, -100])
def test_styleganex_is_fed_minus_d_over_40_and_pasted_with_its_extends_box(direction: int) -> None:
    """The surrogate writes 0.2·direction·checkerboard into R at 1024²; match_frame_color keeps that pattern
    on the flat extend's colour; the paste is the box of the 384 extend (landmarks scaled 0.875 about the
    nose, styleganex_384), resized to 1024, and only R carries the pattern (RGB order kept)."""
    install_surrogate("styleganex_age", encode=True)
    grey = (90, 120, 150)
    frame = np.full((SIDE, SIDE, 3), grey, np.uint8)
    settings = _settings("age_modifier.model=styleganex_age", f"age_modifier.direction={direction}")
    out, item = _run(settings, frame, _identity_face("styleganex_384", zoom=0.875))
    np.testing.assert_allclose(item.matrix, [[1, 0, 0], [0, 1, 0]], atol=1e-3)
    box = cv2.resize(masks.box_mask(384, settings.mask.blur), (SIDE, SIDE), interpolation=cv2.INTER_LINEAR)
    amplitude, seen = _checker_amplitude(out, grey[2], box)
    assert amplitude == pytest.approx(-direction / 40, abs=0.03)
    assert np.abs(seen - box).max() < 0.1  # truncation: ±1 level of a ±25..64 pattern
    assert np.abs(out[..., :2].astype(int) - frame[..., :2]).max() <= 1  # G and B: the flat colour


def test_styleganex_occlusion_is_made_on_its_256_crop_and_warped_by_m_times_a_inverse() -> None:
    """An occluder that sees only the left half of its crop, on a turned face: in the 1024 crop the mask's
    edge is the 256 crop's middle column carried through M·A⁻¹ (not FaceFusion's A⁻¹·E, §5 step 8)."""
    install_surrogate("styleganex_age")
    left = np.zeros((256, 256), np.float32)
    left[:, :128] = 1.0
    install_surrogate("xseg", mask=left)
    settings = _settings("age_modifier.model=styleganex_age", "age_modifier.direction=40",
                         'mask.types=["box","occlusion"]')
    turn = cv2.getRotationMatrix2D((500.0, 520.0), 20.0, 0.6)
    face = _face(align.transform_points(align.TEMPLATES["ffhq_512"] * SIDE, turn))
    frame = np.full((SIDE, SIDE, 3), 128, np.uint8)
    _, item = _run(settings, frame, face, FaceMasks(settings, Occluder("xseg"), None))
    a = align.estimate(face.landmarks, "ffhq_512", 256)  # frame -> the 256 crop
    nose = face.landmarks[2]
    m = align.estimate((face.landmarks - nose) * 0.875 + nose, "styleganex_384", SIDE)  # frame -> 1024 crop
    np.testing.assert_allclose(item.matrix, m, atol=1e-4)
    crop_to_crop = m @ np.vstack([align.invert(a), [0, 0, 1]])  # M·A⁻¹: 256 crop -> 1024 crop
    assert item.mask is not None
    for y in (90.0, 130.0, 170.0):
        (xl, yl), (xr, yr) = align.transform_points([[116.0, y], [140.0, y]], crop_to_crop)
        assert item.mask[int(round(yl)), int(round(xl))] > 0.9
        assert item.mask[int(round(yr)), int(round(xr))] < 0.1


# --- the processor, the plan ------------------------------------------------------------------------------

def test_the_plan_runs_it_only_with_a_direction_and_fetches_fairface_for_fran() -> None:
    assert PROCESSORS["age_modifier"] is AgeModifierProcessor
    off = ModelPlan.from_settings(_settings(ORDER))
    assert [p.name for p in off.processors] == ["face_swapper"]  # direction 0: left out
    fran = ModelPlan.from_settings(_settings(ORDER, "age_modifier.direction=20"))
    assert fran.models_of("age_modifier") == ("fran", "fairface")
    assert {"fran", "fairface"} <= {e.name for e in fran.missing()}
    gan = ModelPlan.from_settings(_settings(ORDER, "age_modifier.model=styleganex_age",
                                            "age_modifier.direction=-20"))
    assert gan.models_of("age_modifier") == ("styleganex_age",)


@pytest.mark.parametrize("value", ["101", "-101", "2.5"])
def test_a_direction_out_of_range_is_one_clear_line(value: str) -> None:
    from pipeline.errors import SettingsError

    with pytest.raises(SettingsError, match="age_modifier.direction") as info:
        _settings(f"age_modifier.direction={value}")
    assert "\n" not in str(info.value)


# --- the real files' signatures, the loader ----------------------------------------------------------------

def _t(name: str | None, *shape: int | None) -> TensorSpec:
    return TensorSpec(name, tuple(shape))


REAL = {  # docs/processors.md §5.1: FaceFusion fills these inputs by name
    "fran": ([_t("target", 1, 3, 1024, 1024), _t("direction", 2)], [_t(None, 1, 3, 1024, 1024)]),
    "styleganex_age": ([_t("target", 1, 3, 256, 256), _t("target_with_background", 1, 3, 384, 384),
                        _t("direction")], [_t(None, 1, 3, None, None)]),
}


def test_catalog_declares_the_real_signatures_and_marks_the_unknowns() -> None:
    for name, (inputs, outputs) in REAL.items():
        entry = catalog.get(name)
        assert [(s.name, s.shape) for s in entry.inputs] == [(s.name, s.shape) for s in inputs], name
        assert len(entry.outputs) == len(outputs) and entry.unverified and entry.crc32_url
    assert catalog.get("fran").url.endswith("models-3.6.0/fran.onnx")  # type: ignore[union-attr]
    assert catalog.get("styleganex_age").url.endswith("models-3.1.0/styleganex_age.onnx")  # type: ignore[union-attr]
    assert catalog.get("styleganex_age").mean == (0.5, 0.5, 0.5) and catalog.get("fran").mean == (0, 0, 0)
    fairface = catalog.get("fairface")
    assert (fairface.template, fairface.input_size, fairface.mean) == ("arcface_112_v2", 224,
                                                                      (0.485, 0.456, 0.406))
    assert "outputs" in fairface.unverified


def test_the_real_signatures_load_and_another_input_name_is_bound_by_structure() -> None:
    for name, (inputs, outputs) in REAL.items():
        install_surrogate(name, signature=(inputs, outputs))
    crops = np.full((2, 1024, 1024, 3), 100, np.uint8)
    aged = Fran("fran").modify(crops, [fran_direction(24, 30), fran_direction(24, -30)])
    assert aged[0].mean() > crops.mean() > aged[1].mean()  # each face its own direction
    gan = StyleGanExAge("styleganex_age")
    out = gan.modify(np.zeros((3, 256, 256, 3), np.uint8), np.full((3, 384, 384, 3), 128, np.uint8), -1.0)
    assert len(out) == 3 and out[0].shape == (384, 384, 3)
    assert int(out[0][0, 0, 0]) == int(((128 / 127.5 - 1) - 0.05 + 1) / 2 * 255)  # (x + 1)/2·255, truncated
    install_surrogate("fran", signature=([_t("input", 1, 3, 1024, 1024), _t("direction", 2)],
                                         REAL["fran"][1]))
    assert Fran("fran").binding.by_structure == (("target", "input"),)  # the one image input there is
    install_surrogate("fran", signature=([_t("input", 1, 3, 512, 512), _t("direction", 2)],
                                         REAL["fran"][1]))
    with pytest.raises(ModelMismatch, match="fran"):  # the same names, not the same network
        _ = Fran("fran").io


def test_fairface_reads_ids_or_logits() -> None:
    crops = np.zeros((2, 224, 224, 3), np.uint8)
    install_surrogate("fairface", age=5)
    assert FairFace("fairface").ages(crops) == [44.0, 44.0]
    install_surrogate("fairface", age=8, logits=True)
    assert FairFace("fairface").ages(crops) == [84.5, 84.5]


# --- models check ------------------------------------------------------------------------------------------

def test_models_check_passes_the_surrogates_and_flags_swapped_channels() -> None:
    for name in ("fran", "styleganex_age", "fairface"):
        install_surrogate(name)
    rows = {row.model: row for row in modelcheck.check(["fran", "styleganex_age", "fairface"])}
    assert all(row.verdict == "PASS" for row in rows.values()), rows
    install_surrogate("fran", swap_channels=True)
    install_surrogate("styleganex_age", swap_channels=True)
    install_surrogate("fairface", age=0)  # a baby: the photos are adults
    rows = {row.model: row for row in modelcheck.check(["fran", "styleganex_age", "fairface"])}
    assert all(row.verdict == "FAIL" for row in rows.values()), rows
    assert "colour" in rows["fran"].reason and "colour" in rows["styleganex_age"].reason
    assert "age" in rows["fairface"].reason
