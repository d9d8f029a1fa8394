"""The real files' facts (docs/models.md §1 and §5), each checked on a surrogate with that file's signature.

The signatures and conventions below are taken from docs/models.md, not read from the catalog: each surrogate
is built with them (``make_surrogate(signature=..., input_norm=..., logits=...)``), so that a catalog entry or
a model class that disagrees with the real file fails here instead of being echoed by its own surrogate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cli.main import main
from pipeline.blend.occlusion import Occluder
from pipeline.faces.scrfd import ScrfdDetector
from pipeline.models import catalog
from pipeline.models.catalog import TensorSpec
from pipeline.models.runner import normalise
from pipeline.processors.face_enhancer.onnx import OnnxEnhancer
from pipeline.processors.face_swapper.neural import InswapperSwapper, NeuralSwapper
from pipeline.types import Face
from tests.surrogates import RAW_NORM, install_surrogate
from tests.synthetic import random_crops as _crops
from tests.synthetic import textured_face as _source

UNIT = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))  # RGB /255: pixels in [0, 1]
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


def _t(name: str | None, *shape: int | None, dtype: str | None = "float32") -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype)


# The real files' signatures (docs/models.md §5; det_10g's tensor names as tests/test_twins.py has them).
REAL: dict[str, tuple[Sequence[TensorSpec], Sequence[TensorSpec]]] = {
    "simswap_256": ([_t("target", 1, 3, 256, 256), _t("source", 1, 512)], [_t("output", 1, 3, 256, 256)]),
    "simswap_512_unoff": ([_t("input", 1, 3, 512, 512), _t("onnx::Gemm_1", 1, 512)],
                          [_t("output", 1, 3, 512, 512)]),
    "ghost_1_256": ([_t("target", 1, 3, 256, 256), _t("source", 1, 512)], [_t("output", 1, 3, 256, 256)]),
    "occluder": ([_t("img", 1, 3, 256, 256)], [_t("output", 1, 1, 256, 256)]),
    "xseg": ([_t("in_face:0", 1, 3, 256, 256)], [_t("out_mask:0", 1, 1, 256, 256)]),
    "codeformer": ([_t("x", 1, 3, 512, 512, dtype=None), _t("w", 1, dtype="double")],
                   [_t("output", 1, 3, 512, 512, dtype=None)]),
    "restoreformer_plus_plus": ([_t("input", 1, 3, 512, 512, dtype=None)],
                                [_t("2359", 1, 3, 512, 512, dtype=None)]),  # one of several outputs
    "retinaface": ([_t("input.1", 1, 3, None, None)],
                   [_t(n, None, d) for n, d in (("448", 1), ("471", 1), ("494", 1), ("451", 4), ("474", 4),
                                                ("497", 4), ("454", 10), ("477", 10), ("500", 10))]),
}
RESTOREFORMER_DECOYS = ("1483", "2357")  # its other outputs (names of ours), listed before the image




def _blocks(n: int, size: int, seed: int = 3) -> np.ndarray:
    """Crops of 8 px blocks: edges for an enhancer to sharpen."""
    base = np.random.default_rng(seed).integers(40, 215, (n, size // 8, size // 8, 3)).astype(np.uint8)
    return np.ascontiguousarray(base.repeat(8, axis=1).repeat(8, axis=2))


SKIN_BGR, BLUE_BGR = (120, 150, 210), (200, 120, 60)  # R above B; B above R


def _skin_crop_with_blue_patch(size: int = 128) -> np.ndarray:
    """(1, size, size, 3) BGR: skin, with a blue object over rows/cols 40-90 / 30-80 (at 128 px)."""
    crop = np.empty((1, size, size, 3), np.uint8)
    crop[:] = SKIN_BGR
    u = size / 128
    crop[0, int(40 * u):int(90 * u), int(30 * u):int(80 * u)] = BLUE_BGR
    return crop


def test_catalog_declares_the_real_signatures() -> None:
    """Every catalog spec of these models is the real tensor (a name the catalog leaves open is bound by
    position, and then must be at the real tensor's place)."""
    for name, (inputs, outputs) in REAL.items():
        entry = catalog.get(name)
        for declared, real in ((entry.inputs, inputs), (entry.outputs, outputs)):
            assert len(declared) == len(real), name
            for d, r in zip(declared, real, strict=True):
                assert d.name in (r.name, None), (name, d, r)
                assert tuple(d.shape) == tuple(r.shape) or name == "retinaface", (name, d, r)
                assert d.dtype in (r.dtype, None), (name, d, r)


# --- 1. simswap_256: ImageNet-normalised input, output clipped to [0, 1] (no de-normalisation) ---------

def test_simswap_256_output_is_pixels_in_0_1_not_imagenet_normalised() -> None:
    install_surrogate("simswap_256", signature=REAL["simswap_256"], identity=True, input_norm=IMAGENET,
                      output_norm=UNIT)  # the real file: returns the face it was given, in [0, 1]
    install_surrogate("arcface_simswap")
    swapper = NeuralSwapper("simswap_256")
    crops = _crops(2, 256)
    out = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    assert np.abs(out.astype(int) - crops.astype(int)).max() <= 1
    assert out.std() > 0.95 * crops.std()  # read as ImageNet-normalised it would keep ~23 % of the contrast


# --- 2. occluder and xseg: NCHW, RGB /255; occluder logits (face > 0), xseg [0, 1] with a 0.1 floor ----

def test_occluder_is_nchw_rgb_and_its_logits_mark_the_visible_face() -> None:
    install_surrogate("occluder", signature=REAL["occluder"], skin=True, logits=True)  # logit = R − B
    crop = _skin_crop_with_blue_patch()
    mask = Occluder("occluder").masks(crop)[0]
    assert mask.shape == (128, 128)
    assert np.all(mask[50:80, 40:70] == 0.0)  # the blue object: occluded, target pixels kept
    assert mask[100:, :].min() >= 0.99 and mask[:, 90:].min() >= 0.99  # the skin: fully visible (logit 0.35)
    # the surrogate is sensitive to what the test checks: the same crop with its channels swapped reads
    # as a blue face (mask 0) behind a red object
    swapped = Occluder("occluder").masks(crop[..., ::-1].copy())[0]
    assert swapped[100:, :].max() == 0.0 and swapped[50:80, 40:70].min() >= 0.99


def test_xseg_is_nchw_rgb_probability_with_small_values_zeroed() -> None:
    install_surrogate("xseg", signature=REAL["xseg"], skin=True, logits=False)  # sigmoid(8·(R − B))
    crop = _skin_crop_with_blue_patch()
    mask = Occluder("xseg").masks(crop)[0]
    assert np.all(mask[50:80, 40:70] == 0.0)  # 0.012 there: below VisoMaster's 0.1 floor, so exactly 0
    skin = 1 / (1 + np.exp(-8 * (SKIN_BGR[2] - SKIN_BGR[0]) / 255))
    np.testing.assert_allclose(mask[100:, :], skin, atol=0.01)  # the model's probability, as it is
    swapped = Occluder("xseg").masks(crop[..., ::-1].copy())[0]
    assert swapped[100:, :].max() == 0.0


# --- 3. simswap_512_unoff: inputs `input` and `onnx::Gemm_1`, RGB /255, output `output` in [0, 1] ------

def test_simswap_512_unoff_binds_its_real_tensor_names() -> None:
    install_surrogate("simswap_512_unoff", signature=REAL["simswap_512_unoff"], identity=True,
                      input_norm=UNIT, output_norm=UNIT)
    install_surrogate("arcface_simswap")
    swapper = NeuralSwapper("simswap_512_unoff")
    crops = _crops(1, 512)
    out = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    assert np.abs(out.astype(int) - crops.astype(int)).max() <= 1
    install_surrogate("simswap_512_unoff", signature=REAL["simswap_512_unoff"], input_norm=UNIT,
                      output_norm=UNIT, full_norm=1.0)  # its source: an L2-normalised embedding
    swapper = NeuralSwapper("simswap_512_unoff")
    a = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    b = swapper.swap(crops, swapper.prepare_source([_source(2)]))
    assert np.abs(a.astype(int) - b.astype(int)).mean() > 2.0  # `onnx::Gemm_1` carries the identity


def test_models_list_marks_what_is_not_yet_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "not yet checked against the real file" in lines["simswap_512_unoff"]
    assert "template" in lines["simswap_512_unoff"]
    assert "not yet checked" not in lines["inswapper_128"]


# --- 4. ghost 1/2/3: the ghost arcface backbone's raw embedding (norm ≈ 20), not L2-normalised ---------

def _raw_ghost_embedding(sources: Sequence[tuple[np.ndarray, Face]]) -> np.ndarray:
    """The backbone's output for each source face, computed straight from its session."""
    from pipeline.faces.arcface import OnnxRecogniser

    recogniser = OnnxRecogniser("arcface_ghost")
    crops = np.stack([recogniser.align(frame, face) for frame, face in sources])
    session = recogniser.session
    name = session.get_inputs()[0].name
    return np.asarray(session.run(None, {name: normalise(crops, recogniser.entry)})[0], np.float32)


@pytest.mark.parametrize("name", ["ghost_1_256", "ghost_2_256", "ghost_3_256"])
def test_ghost_takes_the_raw_backbone_embedding(name: str) -> None:
    install_surrogate(name, signature=REAL["ghost_1_256"], input_norm=HALF, output_norm=HALF,
                      full_norm=RAW_NORM)  # the real file: tuned to sources of norm ≈ 20
    install_surrogate("arcface_ghost", norm=RAW_NORM)
    swapper = NeuralSwapper(name)
    sources = [_source(1), _source(2)]
    identity = swapper.prepare_source(sources)
    raw = _raw_ghost_embedding(sources).mean(axis=0)
    np.testing.assert_allclose(identity.latent, raw, rtol=1e-4, atol=1e-4)
    assert np.linalg.norm(identity.latent) > 10
    crops = _crops(1, 256)
    out = swapper.swap(crops, identity)
    assert np.abs(out.astype(int) - crops.astype(int)).mean() > 15  # the identity at full strength


# --- 5. VisoMaster's assets: release v0.1.0 ------------------------------------------------------------

def test_every_visomaster_url_uses_release_v0_1_0() -> None:
    prefix = "https://github.com/visomaster/visomaster-assets/releases/download/"
    visomaster = [e for e in catalog.CATALOG.values() if e.url and e.url.startswith(prefix)]
    assert len(visomaster) == 21
    for entry in visomaster:
        assert entry.url == f"{prefix}v0.1.0/{entry.file}", entry.name


# --- 6. codeformer's w is a double [1]; restoreformer++'s image is the output `2359`; bound by name ----

def test_codeformer_w_is_fed_as_the_graph_declares_it() -> None:
    install_surrogate("codeformer", signature=REAL["codeformer"], sharpen=1.0)  # w: double [1]
    crops = _blocks(2, 512)
    weak = OnnxEnhancer("codeformer", fidelity=0.0).enhance(crops)
    strong = OnnxEnhancer("codeformer", fidelity=1.0).enhance(crops)
    assert np.abs(weak.astype(int) - crops).max() <= 1  # w = 0: no sharpening at all
    assert np.abs(strong.astype(int) - crops).mean() > 2


def test_restoreformer_image_is_read_by_name_among_several_outputs() -> None:
    install_surrogate("restoreformer_plus_plus", signature=REAL["restoreformer_plus_plus"], sharpen=0.5,
                      decoys=RESTOREFORMER_DECOYS)  # the decoys (the negated face) come first
    crops = _blocks(2, 512)
    out = OnnxEnhancer("restoreformer_plus_plus").enhance(crops)
    diff = np.abs(out.astype(int) - crops.astype(int))
    assert 0 < diff.mean() < 10  # sharpened, not the negated decoy (which would differ by ~100)


def test_enhancer_inputs_are_bound_by_name_whatever_the_file_order() -> None:
    entry = catalog.get("codeformer")
    install_surrogate("codeformer", signature=(entry.inputs[::-1], entry.outputs), sharpen=1.0)  # w, then x
    crops = _blocks(1, 512)
    assert np.abs(OnnxEnhancer("codeformer", fidelity=0.0).enhance(crops).astype(int) - crops).max() <= 1
    assert np.abs(OnnxEnhancer("codeformer", fidelity=1.0).enhance(crops).astype(int) - crops).mean() > 2


def test_swapper_inputs_are_bound_by_name_whatever_the_file_order() -> None:
    entry = catalog.get("inswapper_128")
    install_surrogate("inswapper_128", signature=(entry.inputs[::-1], entry.outputs),  # source, then target
                      input_norm=UNIT, output_norm=UNIT, full_norm=1.0)
    install_surrogate("arcface_w600k_r50")
    swapper = InswapperSwapper("inswapper_128")
    crops = _crops(1, 128)
    a = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    b = swapper.swap(crops, swapper.prepare_source([_source(2)]))
    assert np.abs(a.astype(int) - b.astype(int)).mean() > 2.0
    assert np.corrcoef(a[0].ravel(), crops[0].ravel())[0, 1] > 0.5  # the target is still underneath


# --- 7. SCRFD / det_10g: fed RGB (x − 127.5) / 128 -----------------------------------------------------

FACE: Any = (220.0, 180.0, 420.0, 430.0,
             np.array([[270, 270], [370, 270], [320, 330], [280, 380], [360, 380]], np.float32))


@pytest.mark.parametrize("name", ["retinaface", "scrfd"])
def test_scrfd_family_is_fed_rgb(name: str) -> None:
    signature = REAL["retinaface"] if name == "retinaface" else None  # scrfd_2.5g's names: the catalog's
    install_surrogate(name, signature=signature, faces=[FACE], size=640, channel_gate=True)
    frame = np.empty((640, 640, 3), np.uint8)
    frame[:] = SKIN_BGR  # channel 0 above channel 2 only when fed RGB
    faces = ScrfdDetector(name, size=640).detect([frame])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(faces[0].box, FACE[:4], atol=1.0)
    # the surrogate sees no face in the blue-cast frame: it really depends on the channel order
    assert ScrfdDetector(name, size=640).detect([frame[..., ::-1].copy()])[0] == []
