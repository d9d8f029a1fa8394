"""deep_swapper (docs/processors.md §8): DeepFaceLive DFM files on surrogates with the real signature.

The acceptance facts: the morph value reaches an AMP model and is never fed to one without that input; the
paste mask is min(box, the least of the DFM's two masks eroded by a 3×3 ellipse twice and blurred σ 6.25),
recomputed here with cv2; a non-AMP and a custom file work through the engine; ``models adopt`` takes a
DeepFaceLive ``dfm_models`` folder (and VisoMaster's ``model_assets/dfm_models``).
"""

from __future__ import annotations

import os
import typing
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli.main import main
from pipeline import adopt, families, preview, processors
from pipeline.blend import mask as masks
from pipeline.blend.frame_color import conditional_match_frame_color, match_frame_color, match_sizes
from pipeline.errors import ModelMismatch, ModelMissing, SettingsError
from pipeline.faces import align
from pipeline.image import read_image
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run
from pipeline.modelcheck.judges import judge_for
from pipeline.models import catalog, store
from pipeline.models.catalog import TensorSpec
from pipeline.plan import ModelPlan
from pipeline.processors.crops import FaceItem
from pipeline.processors.deep_swapper import DeepSwapperProcessor
from pipeline.processors.deep_swapper.dfm import presharpen
from pipeline.processors.deep_swapper.judge import JUDGES
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from pipeline.types import DeepSwapperName, Face
from tests import photos
from tests.surrogates import DFM_KEEP, dfm_masks, install_dfm, make_surrogate
from tests.videos import count_frames, make_clip

DEFAULT = "iperov/elon_musk_224"
FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=2", "detector.size=320"])
ONLY = 'processors.order=["deep_swapper"]'


def _settings(*overrides: str) -> Settings:
    return apply_overrides(FAST, list(overrides))


def _t(name: str | None, *shape: int | None) -> TensorSpec:
    return TensorSpec(name, tuple(shape))


def _face(frame_side: int = 400) -> Face:
    points = (align.TEMPLATES["arcface_128"] * 220 + [90, 80]).astype(np.float32)
    return Face(np.array([90, 80, 310, 300], np.float32), points, 0.9)


def _frame() -> np.ndarray:
    rng = np.random.default_rng(5)
    base = cv2.resize(rng.integers(40, 220, (25, 25, 3), dtype=np.uint8), (400, 400))
    return np.ascontiguousarray(base)


# --- the real files' facts ----------------------------------------------------------------------------

def test_catalog_declares_the_dfm_signature_and_the_settings_name_every_model() -> None:
    entry = catalog.get(DEFAULT)
    assert entry.inputs[0] == _t("in_face:0", 1, 224, 224, 3) and entry.channels == "bgr"
    morph = entry.inputs[1]
    assert morph.name == "morph_value:0" and morph.shape == (1,) and morph.optional
    assert [o.shape for o in entry.outputs] == [(1, 224, 224, 1), (1, 224, 224, 3), (1, 224, 224, 1)]
    assert entry.url == "https://huggingface.co/facefusion/deepfacelive-models-iperov/resolve/main/elon_musk_224.dfm"
    assert entry.crc32_url == entry.url.removesuffix(".dfm") + ".hash"
    assert entry.file == "iperov/elon_musk_224.dfm" and entry.template == "dfl_whole_face"
    keanu = catalog.get("dflive/keanu_reeves_320")
    assert keanu.url == ("https://github.com/iperov/DeepFaceLive/releases/download/KEANU_REEVES_320/"
                         "Keanu_Reeves_320.dfm") and keanu.input_size == 320
    dfm = {e.name for e in catalog.by_role("deep_swapper")}
    assert dfm == set(typing.get_args(DeepSwapperName))
    assert all("UNKNOWN" in catalog.get(n).licence for n in dfm)
    assert Settings().deep_swapper.model == DEFAULT and Settings().deep_swapper.morph == 100


def test_dfl_whole_face_template_is_facefusions() -> None:
    assert np.allclose(align.TEMPLATES["dfl_whole_face"][0], [0.35342266, 0.39285716])
    assert np.allclose(align.TEMPLATES["dfl_whole_face"][4], [0.59821427, 0.68750011])


def test_bad_names_and_morph_are_one_line_errors() -> None:
    for bad in ("deep_swapper.model=iperov/nobody_224", "deep_swapper.model=custom/../x",
                "deep_swapper.morph=101"):
        with pytest.raises(SettingsError) as info:
            _settings(bad)
        assert "deep_swapper." in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("amp", [True, False])
def test_the_loader_accepts_the_real_signature_with_or_without_morph(amp: bool) -> None:
    install_dfm(DEFAULT, amp=amp)
    model = families.build(DEFAULT, Settings(), "deep_swapper", processors.families())
    assert model.crop_size == 224 and model.amp is amp


def test_another_input_layout_is_refused_in_one_line(tmp_path: Path) -> None:
    install_dfm(DEFAULT, nchw=True)
    with pytest.raises(ModelMismatch) as info:
        _ = families.build(DEFAULT, Settings(), "deep_swapper", processors.families()).amp
    assert "in_face:0" in str(info.value) and "\n" not in str(info.value)


def test_a_custom_file_without_a_fixed_resolution_is_refused(tmp_path: Path) -> None:
    path = install_dfm("custom/open", open_size=True)
    assert path.is_file()
    with pytest.raises(ModelMismatch, match="resolution"):
        _ = families.build("custom/open", Settings(), "deep_swapper", processors.families()).crop_size


# --- the morph value and the masks (acceptance) -------------------------------------------------------

@pytest.mark.parametrize("morph", [0.0, 0.3, 1.0])
def test_the_morph_value_reaches_an_amp_model(morph: float) -> None:
    install_dfm(DEFAULT, amp=True)
    model = families.build(DEFAULT, Settings(), "deep_swapper", processors.families())
    crops = np.stack([cv2.resize(_frame(), (224, 224))] * 3)
    _, celeb, _ = model.swap(crops, morph)
    x = presharpen(crops[0])
    expected = np.clip((DFM_KEEP * x + (1 - DFM_KEEP) * morph) * 255, 0, 255).astype(np.uint8)
    assert np.abs(celeb[0].astype(int) - expected).max() <= 1 and np.array_equal(celeb[0], celeb[2])


def test_a_model_without_morph_is_not_fed_it() -> None:
    install_dfm(DEFAULT, amp=False)  # onnxruntime refuses a feed the graph has no input for
    model = families.build(DEFAULT, Settings(), "deep_swapper", processors.families())
    crop = cv2.resize(_frame(), (224, 224))
    _, celeb, _ = model.swap(crop[None], 0.5)
    assert np.abs(celeb[0].astype(int) - np.clip(presharpen(crop) * 255, 0, 255).astype(np.uint8)).max() <= 1


def test_presharpen_is_the_weighted_unsharp_mask() -> None:
    crop = _frame()[:64, :64]
    blurred = cv2.GaussianBlur(crop.astype(np.float64), (0, 0), 2.0)
    want = np.clip(np.rint(1.75 * crop - 0.75 * blurred), 0, 255) / 255
    assert np.abs(presharpen(crop) - want).max() <= 1.5 / 255


def test_the_paste_mask_is_the_box_and_the_dfm_masks_eroded_and_blurred() -> None:
    face_mask, celeb_mask = dfm_masks(224)
    face_mask[100:110, :] = 0.4  # a band only one of them has: their minimum must keep it
    install_dfm(DEFAULT, face_mask=face_mask, celeb_mask=celeb_mask)
    settings = _settings(ONLY, "mask.blur=0.2")
    proc = DeepSwapperProcessor(settings, (DEFAULT,))
    item = FaceItem.unframed(_face())
    frame = _frame()
    proc.run([frame], [[item]], None, None, [0])  # type: ignore[arg-type]
    m = np.minimum(face_mask, celeb_mask)
    m = cv2.erode(m, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)), iterations=2)
    m = cv2.GaussianBlur(m, (0, 0), 6.25)
    want = np.minimum(masks.box_mask(224, 0.2), m)
    assert item.mask is not None and np.abs(item.mask - want).max() < 1e-5
    assert item.crop.shape == (224, 224, 3)
    expected_matrix = align.estimate(_face().landmarks, "dfl_whole_face", 224)
    assert np.allclose(item.matrix, expected_matrix)
    # the swapped face, colour-matched to the raw crop
    celeb = np.clip((DFM_KEEP * presharpen(item.crop) + (1 - DFM_KEEP)) * 255, 0, 255).astype(np.uint8)
    assert np.abs(item.result.astype(int) - conditional_match_frame_color(item.crop, celeb)).max() <= 1


def test_frame_colour_matching_sizes_and_limits() -> None:
    assert match_sizes(224) == [16, 86, 154] and match_sizes(1024) == [16, 352, 688]
    a = _frame()[:224, :224]
    assert np.array_equal(conditional_match_frame_color(a, a), a)
    noise = np.random.default_rng(2).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    flat = np.full_like(noise, 60)
    out = match_frame_color(noise, flat)  # flat + the coarse (≈16²) colour of the noise: its mean, no detail
    assert abs(out.mean() - noise.mean()) < 3 and out.std() < noise.std() / 5


# --- through the engine -----------------------------------------------------------------------------------

def test_a_still_is_deep_swapped_and_morph_changes_it(tmp_path: Path) -> None:
    install_dfm(DEFAULT)
    target = photos.astronaut_path(tmp_path)
    outs = {}
    for morph in (0, 100):
        summary = swap_image(_settings(ONLY, f"deep_swapper.morph={morph}"), [photos.grace_hopper_path()],
                             target, tmp_path / f"m{morph}.png")
        outs[morph] = read_image(Path(summary["output"])).bgr
    before = read_image(target).bgr
    changed = np.any(outs[100] != before, axis=2)
    assert changed.sum() > 2000 and not changed[330:].any()  # the face only
    assert np.any(outs[0] != outs[100])


def test_a_custom_non_amp_file_works_after_the_swapper(tmp_path: Path) -> None:
    install_dfm("custom/mine", amp=False, size=160)
    settings = _settings('processors.order=["face_swapper","deep_swapper"]', "deep_swapper.model=custom/mine")
    plan = ModelPlan.from_settings(settings)
    assert "custom/mine" in plan.models and not plan.missing()
    target = photos.astronaut_path(tmp_path)
    image = preview.preview(settings, [photos.grace_hopper_path()], target)
    assert image.shape == read_image(target).bgr.shape
    preview.clear()


def test_a_missing_custom_file_says_where_it_goes() -> None:
    settings = _settings(ONLY, "deep_swapper.model=custom/absent")
    assert [e.name for e in ModelPlan.from_settings(settings).missing()] == ["custom/absent"]
    with pytest.raises(ModelMissing, match="custom"):
        store.model_path(catalog.get("custom/absent"))


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=0.5, size=(320, 240),
                     face_image=photos.astronaut())


def test_a_video_render_and_a_queued_job_run_it(clip: Path, tmp_path: Path) -> None:
    install_dfm(DEFAULT)
    result = render(_settings(ONLY), [photos.grace_hopper_path()], clip, tmp_path / "out.mp4")
    assert result.frames == 15 == count_frames(tmp_path / "out.mp4")
    assert result.stage_s["deep_swap"] > 0 and DEFAULT in result.models
    jobs = JobStore(tmp_path / "q.sqlite3")
    job = jobs.add([photos.grace_hopper_path()], clip, tmp_path / "queued.mp4",
                   _settings(ONLY, "deep_swapper.morph=40"))
    assert run(jobs, "w", once=True) == 1
    done = jobs.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert count_frames(tmp_path / "queued.mp4") == 15 and done.settings.deep_swapper.morph == 40


# --- models adopt, list, check ------------------------------------------------------------------------

def test_adopt_takes_a_deepfacelive_and_a_visomaster_dfm_folder(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    dfl = tmp_path / "userdata"
    make_surrogate("custom/Keanu_Reeves_320", dfl / "dfm_models" / "Keanu_Reeves_320.dfm")
    vm = tmp_path / "VisoMaster"
    make_surrogate("custom/Other", vm / "model_assets" / "dfm_models" / "Other.dfm", amp=False)
    report = adopt.adopt(dfl)
    assert [(a.file, a.model) for a in report.adopted] == [("dfm_models/Keanu_Reeves_320.dfm",
                                                           "custom/Keanu_Reeves_320")]
    assert os.stat(dfl / "dfm_models" / "Keanu_Reeves_320.dfm").st_ino == os.stat(
        store.installed_path(catalog.get("custom/Keanu_Reeves_320"))).st_ino  # hard-linked
    assert [a.model for a in adopt.adopt(vm).adopted] == ["custom/Other"]
    assert "already installed" in adopt.adopt(dfl).skipped[0].reason
    assert main(["models", "list"]) == 0
    listed = capsys.readouterr().out
    assert "custom/Keanu_Reeves_320" in listed and "custom/Other" in listed
    model = families.build("custom/Other", Settings(), "deep_swapper", processors.families())
    assert model.crop_size == 224 and not model.amp  # its I/O read and checked at load


def test_models_check_judges_a_dfm_and_fails_a_wrong_one() -> None:
    from pipeline.modelcheck import check

    assert judge_for(catalog.get("custom/x")) is JUDGES["dfm"]
    install_dfm(DEFAULT)
    good = check([DEFAULT])[0]
    assert good.verdict == "PASS", good.reason
    blank = np.zeros((224, 224), np.float32)
    install_dfm(DEFAULT, face_mask=blank)
    bad = check([DEFAULT])[0]
    assert bad.verdict == "FAIL" and "centre" in bad.reason





def test_the_region_mask_is_made_on_the_deep_swapped_face() -> None:
    """FaceFusion's deep swapper parses the swapped (colour-matched) face it pastes, not the target's crop."""
    from pipeline.blend.region import FaceParser
    from pipeline.processors.crops import FaceMasks
    from tests.surrogates import install_surrogate

    install_dfm(DEFAULT, constant=(0.2, 0.4, 0.6))
    install_surrogate("bisenet_resnet34")
    settings = _settings(ONLY, "mask.types=box,region")
    proc = DeepSwapperProcessor(settings, (DEFAULT,))
    parser = FaceParser()
    fed: list[np.ndarray] = []
    real = parser.masks
    parser.masks = lambda crops, regions: fed.append(crops.copy()) or real(crops, regions)  # type: ignore[method-assign]
    item = FaceItem.unframed(_face())
    proc.run([_frame()], [[item]], None, FaceMasks(settings, None, parser), [0])  # type: ignore[arg-type]
    assert len(fed) == 1 and np.array_equal(fed[0][0], item.result)
    assert not np.array_equal(item.result, item.crop)
