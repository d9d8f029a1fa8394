"""LivePortrait processors (docs/processors.md §3, §4): the generator gets the formula's keypoints.

Surrogates stand in for FaceFusion's six exports (tests/surrogates/): a motion extractor returning known
motions (one for a dark crop, one for a bright crop), retargeters and a stitcher that are known linear maps.
The expected keypoints are computed here independently: R by scipy's
``Rotation.from_euler('xyz', degrees=True)``, the restorer's areas and the editor's slider table written out
again from docs/processors.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pipeline.blend import mask as masks
from pipeline.errors import ModelMismatch
from pipeline.faces import align
from pipeline.liveportrait import kinematics
from pipeline.liveportrait.network import PARTS, LivePortraitPart, model_name
from pipeline.models import catalog
from pipeline.models.catalog import TensorSpec
from pipeline.processors import PROCESSORS
from pipeline.processors.crops import FaceItem
from pipeline.processors.expression_restorer import ExpressionRestorerProcessor
from pipeline.processors.face_editor import FaceEditorProcessor
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Face
from tests.surrogates import (
    STITCH_PULL,
    default_landmarks68,
    default_motion,
    install_live_portrait,
    install_surrogate,
    retargeter_weights,
    stitch_offset,
)

LO, HI = kinematics.EXPRESSION_MIN, kinematics.EXPRESSION_MAX


def _r(pitch: float, yaw: float, roll: float) -> np.ndarray:
    return Rotation.from_euler("xyz", [pitch, yaw, roll], degrees=True).as_matrix()


def _x(m: dict[str, Any], delta: np.ndarray, angles: tuple[float, float, float] | None = None) -> np.ndarray:
    r = _r(*(angles or (m["pitch"], m["yaw"], m["roll"])))
    return m["scale"] * (m["points"] @ r.T + delta) + m["translation"]


def _face(template: Any = "arcface_128") -> Face:
    landmarks = (align.TEMPLATES[template] * 300 + [170, 150]).astype(np.float32)
    pts = default_landmarks68(300) + [170, 150]
    return Face(np.array([170, 150, 470, 450], np.float32), landmarks, 0.9,
                landmarks68=pts.astype(np.float32))


def _record(processor: Any) -> list[dict[str, np.ndarray]]:
    """The feeds of every generator run (by graph name), recorded at the session boundary."""
    part = processor.lp.parts["generator"]
    seen: list[dict[str, np.ndarray]] = []
    real = part.run_feeds

    def run_feeds(feeds: Any, outputs: Any = None) -> Any:
        seen.append({k: np.array(v) for k, v in feeds.items()})
        return real(feeds, outputs)

    part.run_feeds = run_feeds
    return seen


# --- the maths -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("angles", [(10.0, -25.0, 7.0), (-33.0, 61.0, -19.0), (0.0, 90.0, 45.0)])
def test_rotation_is_scipys_extrinsic_xyz_in_degrees(angles: tuple[float, float, float]) -> None:
    np.testing.assert_allclose(kinematics.rotation(*angles), _r(*angles), atol=1e-6)


def test_angle_limits_widen_to_take_in_the_faces_own_angle() -> None:
    assert kinematics.limit_angle("pitch", 10.0, 45.0) == 30.0
    assert kinematics.limit_angle("pitch", 40.0, 50.0) == 40.0  # own angle beyond the base: the new max
    assert kinematics.limit_angle("yaw", -70.0, -100.0) == -70.0
    assert kinematics.limit_angle("roll", -5.0, 25.0) == 20.0
    assert kinematics.limit_angle("roll", -25.0, -24.0) == -24.0


def test_restorer_factor_maps_0_100_to_0_1_2() -> None:
    assert kinematics.restore_factor(80) == pytest.approx(0.96)
    assert kinematics.restore_factor(0) == 0.0 and kinematics.restore_factor(100) == pytest.approx(1.2)


# --- expression restorer -------------------------------------------------------------------------------

def _restorer(settings: Settings) -> ExpressionRestorerProcessor:
    return ExpressionRestorerProcessor(settings, ExpressionRestorerProcessor.models(settings))


TARGET_MOTION = {**default_motion(1), "expression": (HI * 0.9).copy()}
TARGET_MOTION["expression"][19] = HI[19] * 1.8  # beyond the limit: clipped
PROCESSED_MOTION = {**default_motion(2), "expression": (LO * 0.5).copy()}
UPPER = [1, 2, 6, 10, 11, 12, 13, 15, 16]
LOWER = [3, 7, 14, 17, 18, 19, 20]


def _restorer_expected(factor: int, areas: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    f = factor / 100 * 1.2
    d_t, d_p = TARGET_MOTION["expression"].copy(), PROCESSED_MOTION["expression"]
    keep = [0, 4, 5, 8, 9] + ([] if "upper-face" in areas else UPPER)
    keep += [] if "lower-face" in areas else LOWER
    d_t[keep] = d_p[keep]
    wanted = np.clip(f * d_t + (1 - f) * d_p, LO, HI)
    return _x(PROCESSED_MOTION, wanted), _x(PROCESSED_MOTION, d_p)


@pytest.mark.parametrize(("factor", "areas"), [(80, ("upper-face", "lower-face")), (50, ("upper-face",)),
                                               (100, ("lower-face",))])
def test_restorer_hands_the_generator_the_formulas_keypoints(factor: int, areas: tuple[str, ...]) -> None:
    install_live_portrait(["feature_extractor", "motion_extractor", "generator"],
                          motions=[TARGET_MOTION, PROCESSED_MOTION])  # dark crop: the target's; bright: ours
    areas_json = "[" + ",".join(f'"{a}"' for a in areas) + "]"
    settings = apply_overrides(Settings(), [f"expression_restorer.factor={factor}",
                                            f"expression_restorer.areas={areas_json}"])
    restorer = _restorer(settings)
    seen = _record(restorer)
    face = _face()
    frame = np.full((640, 640, 3), 30, np.uint8)  # the original target: dark
    matrix = align.estimate(face.landmarks, "arcface_128", 512)
    swapped = np.full((512, 512, 3), 220, np.uint8)  # an earlier processor's result: bright
    item = FaceItem(matrix, align.warp(frame, matrix, 512), swapped, face, np.ones((512, 512), np.float32),
                   masks.box_mask(512, 0.3))
    restorer.run([frame], [[item]], None, None, [0])  # type: ignore[arg-type]
    assert len(seen) == 1
    wanted, own = _restorer_expected(factor, areas)
    np.testing.assert_allclose(seen[0]["source"][0], wanted, atol=1e-5)
    np.testing.assert_allclose(seen[0]["target"][0], own, atol=1e-5)
    assert item.result.shape == (512, 512, 3)  # pasted under its own box, the earlier paste kept beneath
    assert item.mask is None and item.paste_mask is restorer.box and len(item.below) == 1
    assert item.result.mean() > 100  # the bright processed face re-rendered, not the dark target


def test_restorer_batches_every_face_of_the_batch_in_one_motion_and_one_generator_pass() -> None:
    install_live_portrait(["feature_extractor", "motion_extractor", "generator"])
    settings = Settings()
    restorer = _restorer(settings)
    seen = _record(restorer)
    frames = [np.full((640, 640, 3), v, np.uint8) for v in (40, 60, 80)]
    items = [[FaceItem.unframed(_face())] for _ in frames]
    restorer.run(frames, items, None, None, [0, 1, 2])  # type: ignore[arg-type]
    batch = restorer.lp.parts["generator"].batch
    assert sum(len(s["source"]) for s in seen) == 3
    assert len(seen) == (1 if batch is None else -(-3 // batch))
    assert all(row[0].result.shape == (512, 512, 3) for row in items)


# --- face editor ---------------------------------------------------------------------------------------

EDIT_MOTION = {**default_motion(3), "pitch": 25.0, "yaw": -70.0, "roll": 5.0}
SLIDERS = {"mouth_smile": 0.5, "eyebrow_direction": -0.3, "eye_gaze_horizontal": 0.6, "mouth_grim": -0.4,
           "head_pitch": -1.0, "head_yaw": 0.5, "head_roll": 0.4, "eye_open_ratio": -0.5,
           "lip_open_ratio": 0.7}


def _edited_expression(delta: np.ndarray, v: dict[str, float]) -> np.ndarray:
    d = delta.copy()
    x, y, z = 0, 1, 2
    h = v["eye_gaze_horizontal"]  # > 0
    d[11, x] += 0.015 * h
    d[15, x] += 0.020 * h
    g = v["mouth_grim"]  # ≤ 0
    d[19, y] -= 0.05 * g
    d[19, z] -= 0.02 * g
    d[20, z] -= 0.03 * g
    s = v["mouth_smile"]  # > 0
    d[20, y] -= 0.015 * s
    d[14, y] -= 0.025 * s
    d[17, y] += 0.01 * s
    d[17, z] += 0.004 * s
    d[3, y] -= 0.0045 * s
    d[7, y] -= 0.0045 * s
    e = v["eyebrow_direction"]  # ≤ 0
    d[1, x] -= 0.015 * e
    d[2, x] += 0.020 * e
    d[1, y] += 0.005 * e
    d[2, y] -= 0.005 * e
    return np.clip(d, LO, HI)


def _ratio(p: np.ndarray, a: int, b: int, c: int, d: int) -> float:
    return float(np.linalg.norm(p[a] - p[b]) / (np.linalg.norm(p[c] - p[d]) + 1e-6))


def _editor_expected(landmarks68: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    m = EDIT_MOTION
    own = _x(m, m["expression"])
    angles = (30.0, -70.0, 5.0 + 15 * 0.4)  # pitch 25+20 clipped to 30; yaw −70−30 held at the face's own −70
    wanted = _x(m, _edited_expression(m["expression"], SLIDERS), angles)
    if landmarks68 is not None:
        p = landmarks68
        eye = np.concatenate([own.ravel(), [_ratio(p, 37, 40, 39, 36), _ratio(p, 43, 46, 45, 42), 0.0]])
        wanted = wanted + (eye @ retargeter_weights(66)).reshape(21, 3) * 0.5
        lip = np.concatenate([own.ravel(), [_ratio(p, 62, 66, 54, 48), 1.0]])
        wanted = wanted + (lip @ retargeter_weights(65)).reshape(21, 3) * 0.7
    stitched = wanted + STITCH_PULL * (own - wanted) + stitch_offset()[0]
    return stitched, own


def _editor(landmarker: str = "2dfan4") -> FaceEditorProcessor:
    settings = apply_overrides(Settings(), [f"face_editor.{k}={v}" for k, v in SLIDERS.items()]
                               + [f"landmarks.model={landmarker}"])
    return FaceEditorProcessor(settings, FaceEditorProcessor.models(settings))


@pytest.mark.parametrize("with_landmarks", [True, False])
def test_editor_hands_the_generator_the_formulas_keypoints(with_landmarks: bool) -> None:
    install_live_portrait(motions=[EDIT_MOTION])
    editor = _editor()
    seen = _record(editor)
    face = _face("ffhq_512")  # its five points on the editor's template: the framing is exact
    if not with_landmarks:  # no 68 points: the eyes and lips are not retargeted
        face = Face(face.box, face.landmarks, face.score)
    frame = np.random.default_rng(4).integers(0, 255, (640, 640, 3), np.uint8)
    item = FaceItem.unframed(face)
    editor.run([frame], [[item]], None, None, [0])  # type: ignore[arg-type]
    wanted, own = _editor_expected(face.landmarks68)
    np.testing.assert_allclose(seen[0]["source"][0], wanted, atol=1e-5)
    np.testing.assert_allclose(seen[0]["target"][0], own, atol=1e-5)
    # framed zoomed out: the landmarks scaled 1.5 about the nose tip onto ffhq_512
    five = align.transform_points(face.landmarks, item.matrix)
    nose = align.TEMPLATES["ffhq_512"][2] * 512
    expected = (align.TEMPLATES["ffhq_512"] * 512 - nose) / 1.5 + nose
    np.testing.assert_allclose(five, expected, atol=0.5)


def test_editor_is_off_with_every_slider_at_0_and_runs_only_the_retargeters_it_needs() -> None:
    assert not FaceEditorProcessor.active(Settings())
    assert FaceEditorProcessor.active(apply_overrides(Settings(), ["face_editor.head_yaw=-0.25"]))
    smile = apply_overrides(Settings(), ["face_editor.mouth_smile=0.5"])
    assert FaceEditorProcessor.models(smile) == tuple(model_name(p) for p in
                                                          ("feature_extractor", "motion_extractor",
                                                           "generator", "stitcher"))
    eyes = apply_overrides(Settings(), ["face_editor.eye_open_ratio=0.5"])
    assert model_name("eye_retargeter") in FaceEditorProcessor.models(eyes)
    off = apply_overrides(Settings(), ["expression_restorer.factor=0"])
    assert not ExpressionRestorerProcessor.active(off)
    assert set(PROCESSORS) >= {"expression_restorer", "face_editor"}


def test_editor_says_the_eye_and_lip_sliders_need_a_landmark_model() -> None:
    install_live_portrait()
    assert any("landmarks.model" in n for n in _editor("none").notices)
    assert _editor("2dfan4").notices == []


@pytest.mark.parametrize("bad", ["face_editor.mouth_smile=1.5", "face_editor.head_yaw=0.33",
                                 "expression_restorer.factor=120", "expression_restorer.areas=[]",
                                 'expression_restorer.areas=["mouth"]'])
def test_out_of_range_settings_are_refused_with_one_line(bad: str) -> None:
    from pipeline.errors import SettingsError

    with pytest.raises(SettingsError) as err:
        apply_overrides(Settings(), [bad])
    assert "\n" not in str(err.value) and bad.split("=")[0] in str(err.value)


# --- the real files' signatures (docs/processors.md §3.1, stated here, not read from the catalog) -----------

K = (1, 21, 3)
FF_ASSETS = "https://github.com/facefusion/facefusion-assets/releases/download/"
# input names as FaceFusion feeds them; outputs read by position
REAL: dict[str, tuple[list[str | None], list[str | None]]] = {
    "feature_extractor": (["input"], [None]),
    "motion_extractor": (["input"], [None] * 7),
    "generator": (["feature_volume", "source", "target"], [None]),
    "eye_retargeter": (["input"], [None]),
    "lip_retargeter": (["input"], [None]),
    "stitcher": (["source", "target"], [None]),
}


def test_catalog_declares_facefusions_tensor_names_and_marks_the_unknowns() -> None:
    for part, (inputs, outputs) in REAL.items():
        entry = catalog.get(model_name(part))
        assert [s.name for s in entry.inputs] == inputs, part
        assert len(entry.outputs) == len(outputs), part
        assert entry.url == f"{FF_ASSETS}models-3.0.0/live_portrait_{part}.onnx"
        assert entry.crc32_url is not None and entry.crc32_url.endswith(f"live_portrait_{part}.hash")
        assert entry.unverified and entry.role == "liveportrait"
    motion = catalog.get(model_name("motion_extractor"))
    assert [s.shape for s in motion.outputs[5:]] == [K, K]  # expression, canonical keypoints
    assert "z" in motion.unverified  # whether FaceFusion's translation has t_z = 0


def test_loader_takes_scalar_angles_and_refuses_another_signature() -> None:
    install_surrogate(model_name("motion_extractor"), scalar_angles=True)  # rank-0 pitch/yaw/roll
    part = LivePortraitPart(model_name("motion_extractor"))
    out = part.infer({"input": np.zeros((2, 3, 256, 256), np.float32)})
    assert out[0].shape == (2, 1) and out[5].shape == (2, 21, 3)
    entry = catalog.get(model_name("generator"))
    vm_names = (entry.inputs[0], TensorSpec("kp_source", K), TensorSpec("kp_driving", K))  # VisoMaster's set
    install_surrogate(model_name("generator"), signature=(vm_names, entry.outputs))
    with pytest.raises(ModelMismatch, match="live_portrait_generator"):
        _ = LivePortraitPart(model_name("generator")).io


def test_every_part_loads_its_surrogate() -> None:
    install_live_portrait()
    for part in PARTS:
        assert LivePortraitPart(model_name(part)).io


# --- models check ----------------------------------------------------------------------------------------

def _check(*names: str) -> dict[str, Any]:
    from pipeline import modelcheck

    return {c.model: c for c in modelcheck.check(names)}


def test_models_check_passes_the_right_surrogates() -> None:
    pytest.importorskip("matplotlib")
    install_live_portrait()
    found = _check(*(model_name(p) for p in PARTS))
    assert {n: c.verdict for n, c in found.items()} == {model_name(p): "PASS" for p in PARTS}, found


@pytest.mark.parametrize("case", ["turned_head", "wild_expression", "negative_generator"])
def test_models_check_flags_wrong_surrogates(case: str) -> None:
    pytest.importorskip("matplotlib")
    install_live_portrait()
    turned, wild = {**default_motion(), "yaw": 85.0}, {**default_motion(), "expression": HI * 5}
    wrong = {"turned_head": ("motion_extractor", {"motions": [turned]}),
             "wild_expression": ("motion_extractor", {"motions": [wild]}),
             "negative_generator": ("generator", {"invert": True})}[case]
    install_surrogate(model_name(wrong[0]), **wrong[1])
    found = _check(model_name(wrong[0]))[model_name(wrong[0])]
    assert found.verdict == "FAIL", found


def test_models_check_skips_a_part_whose_companions_are_missing() -> None:
    pytest.importorskip("matplotlib")
    install_surrogate(model_name("stitcher"))
    found = _check(model_name("stitcher"))[model_name("stitcher")]
    assert found.verdict == "SKIP" and "live_portrait_motion_extractor" in found.reason


# --- pre-check and presets -------------------------------------------------------------------------------

def test_missing_parts_stop_a_swap_with_one_line_naming_them(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main
    from tests import photos

    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target",
                 str(photos.astronaut_path(tmp_path)), "--output", str(tmp_path / "out.png"),
                 "--set", 'processors.order=["face_swapper","expression_restorer"]'])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert all(model_name(p) in err for p in ("feature_extractor", "motion_extractor", "generator"))
    assert "live_portrait_stitcher" not in err  # the restorer does not run it


def test_a_preset_keeps_both_sections() -> None:
    from pipeline import presets

    settings = apply_overrides(Settings(), ["face_editor.head_roll=-0.35", "expression_restorer.factor=55",
                                            'expression_restorer.areas=["lower-face"]'])
    presets.save("lp", settings)
    back = presets.load("lp")
    assert back.face_editor.head_roll == -0.35 and back.expression_restorer.areas == ("lower-face",)
    assert back == settings
