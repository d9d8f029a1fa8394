"""Surrogate models: every downloadable catalog entry gets one that the loader's validator accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from pipeline.errors import ModelMismatch
from pipeline.models import catalog, sessions
from tests.surrogates import (
    SURROGATE_NAMES,
    default_classes,
    default_landmarks68,
    install_surrogate,
    make_surrogate,
)
from tests.surrogates.writer import BUILDERS

_NP = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}
_CATALOG_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "double",
                  "tensor(int64)": "int64"}  # fairface's ids


def _feeds(session: object, size: int = 160) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    feeds = {}
    for arg in session.get_inputs():  # type: ignore[attr-defined]
        shape = [d if isinstance(d, int) else (1 if i == 0 else size) for i, d in enumerate(arg.shape)]
        feeds[arg.name] = rng.uniform(-1, 1, shape).astype(_NP[arg.type])
    return feeds


def test_every_downloadable_model_has_a_surrogate_builder_and_a_builtin_none(tmp_path: Path) -> None:
    """Each role of a downloadable entry has its builder (a new role without one is named here, not met as a
    KeyError deep in another test); a built-in model is refused: it is tested as the real file."""
    downloadable = [e for e in catalog.CATALOG.values() if not e.builtin]
    assert len(downloadable) >= 20
    missing = sorted({e.role for e in downloadable} - set(BUILDERS))
    assert not missing, f"no surrogate builder for the roles {missing}"
    builtin = next(e for e in catalog.CATALOG.values() if e.builtin)
    with pytest.raises(ValueError, match="built in"):
        make_surrogate(builtin.name, tmp_path / builtin.file)
    assert not (tmp_path / builtin.file).exists()


@pytest.mark.parametrize("name", SURROGATE_NAMES)
def test_surrogate_loads_through_the_validator_and_runs(name: str, tmp_path: Path) -> None:
    entry = catalog.get(name)
    path = make_surrogate(name, tmp_path / entry.file)
    assert path.stat().st_size < 4_000_000
    session = sessions.load(path, entry)
    outputs = session.run(None, _feeds(session))
    for spec, out in zip(entry.outputs, outputs, strict=False):
        assert out.ndim == len(spec.shape)
        for expected, actual in zip(spec.shape, out.shape, strict=True):
            if isinstance(expected, int):
                assert actual == expected
        assert np.isfinite(out.astype(np.float64)).all()


@pytest.mark.parametrize("name", SURROGATE_NAMES)
def test_surrogate_io_is_the_catalog_declaration_one_for_one(name: str, tmp_path: Path) -> None:
    """Names, order, ranks, fixed dims and dtypes come from the catalog entry (nothing restated that could
    drift from it): a declared name is the graph's, in the declared order."""
    entry = catalog.get(name)
    session = sessions.load(make_surrogate(name, tmp_path / entry.file), entry)
    for declared, graph in ((entry.inputs, session.get_inputs()), (entry.outputs, session.get_outputs())):
        assert len(graph) == len(declared)
        for spec, arg in zip(declared, graph, strict=True):
            assert spec.name in (None, arg.name)
            assert len(arg.shape) == len(spec.shape)
            assert all(a == d for a, d in zip(arg.shape, spec.shape, strict=True) if isinstance(d, int))
            assert spec.dtype in (None, _CATALOG_TYPES[arg.type])


@pytest.mark.parametrize(("built", "loaded_as"), [
    ("inswapper_128", "hyperswap_1a_256"),
    ("gfpgan_1.4", "codeformer"),
    ("arcface_w600k_r50", "yolo_face"),
    ("gpen_bfr_256", "gpen_bfr_512"),
])
def test_a_wrong_surrogate_is_refused_naming_expected_and_actual(built: str, loaded_as: str,
                                                                 tmp_path: Path) -> None:
    path = make_surrogate(built, tmp_path / "model.onnx")
    with pytest.raises(ModelMismatch) as info:
        sessions.load(path, catalog.get(loaded_as))
    message = str(info.value)
    assert f"does not look like {loaded_as}" in message
    assert "expected inputs" in message and "the file has inputs" in message
    if built == "gpen_bfr_256":
        assert "[1,3,512,512]" in message and "[1,3,256,256]" in message


def test_inswapper_surrogate_carries_emap_last_and_mixes_source(tmp_path: Path) -> None:
    path = make_surrogate("inswapper_128", tmp_path / "a.onnx", emap="permutation")
    last = onnx.load(str(path)).graph.initializer[-1]
    emap = numpy_helper.to_array(last)
    assert emap.shape == (512, 512) and emap.dtype == np.float32
    assert np.array_equal(np.sort(emap.argmax(axis=1)), np.arange(512))  # a permutation
    session = sessions.load(path, catalog.get("inswapper_128"))
    target = np.random.default_rng(0).uniform(0, 1, (1, 3, 128, 128)).astype(np.float32)
    a, b = np.eye(512, dtype=np.float32)[[0, 1]]
    out_a = session.run(None, {"target": target, "source": a[None]})[0]
    out_b = session.run(None, {"target": target, "source": b[None]})[0]
    assert not np.allclose(out_a, out_b)
    assert np.corrcoef(out_a.ravel(), target.ravel())[0, 1] > 0.5  # still the target underneath


def test_identity_swapper_returns_the_target(tmp_path: Path) -> None:
    path = make_surrogate("inswapper_128", tmp_path / "a.onnx", identity=True)
    session = sessions.load(path, catalog.get("inswapper_128"))
    target = np.random.default_rng(0).uniform(0, 1, (1, 3, 128, 128)).astype(np.float32)
    out = session.run(None, {"target": target, "source": np.ones((1, 512), np.float32)})[0]
    assert np.array_equal(out, target)


def test_fp16_surrogates_have_half_precision_io(tmp_path: Path) -> None:
    path = make_surrogate("inswapper_128_fp16", tmp_path / "a.onnx")
    session = sessions.load(path, catalog.get("inswapper_128_fp16"))
    assert {a.type for a in session.get_inputs()} == {"tensor(float16)"}
    emap = onnx.load(str(tmp_path / "a.onnx")).graph.initializer[-1]
    assert numpy_helper.to_array(emap).shape == (512, 512)


def test_recogniser_surrogate_separates_images_and_is_deterministic(tmp_path: Path) -> None:
    path = make_surrogate("arcface_w600k_r50", tmp_path / "r.onnx")
    session = sessions.load(path, catalog.get("arcface_w600k_r50"))
    rng = np.random.default_rng(3)
    batch = rng.uniform(-1, 1, (3, 3, 112, 112)).astype(np.float32)
    out = session.run(None, {"input.1": batch})[0]
    assert out.shape == (3, 512)
    again = session.run(None, {"input.1": batch[1:2]})[0]
    np.testing.assert_allclose(again[0], out[1], rtol=1e-5, atol=1e-5)
    unit = out / np.linalg.norm(out, axis=1, keepdims=True)
    assert abs(float(unit[0] @ unit[1])) < 0.9


def test_codeformer_fidelity_changes_the_output(tmp_path: Path) -> None:
    session = sessions.load(make_surrogate("codeformer", tmp_path / "c.onnx"), catalog.get("codeformer"))
    x = np.random.default_rng(0).uniform(-0.5, 0.5, (1, 3, 512, 512)).astype(np.float16)
    low = session.run(None, {"x": x, "w": np.array([0.0])})[0]  # w: a double of shape [1], as declared
    high = session.run(None, {"x": x, "w": np.array([1.0])})[0]
    np.testing.assert_allclose(low.astype(np.float32), x.astype(np.float32), atol=1e-3)
    assert np.abs(high.astype(np.float32) - x.astype(np.float32)).mean() > 0.01


def test_parser_and_masks_follow_their_options(tmp_path: Path) -> None:
    classes = default_classes(512)
    classes[:100, :100] = 17
    parser = sessions.load(make_surrogate("bisenet_resnet34", tmp_path / "p.onnx", classes=classes),
                           catalog.get("bisenet_resnet34"))
    logits = parser.run(None, {"input": np.zeros((1, 3, 512, 512), np.float32)})[0]
    assert np.array_equal(logits[0].argmax(axis=0), classes)
    mask = np.zeros((256, 256), np.float32)
    mask[50:150, 60:200] = 1.0
    xseg = sessions.load(install_surrogate("xseg", tmp_path, mask=mask), catalog.get("xseg"))
    out = xseg.run(["out_mask:0"], {"in_face:0": np.zeros((1, 3, 256, 256), np.float32)})[0]
    np.testing.assert_allclose(out[0, 0], mask)  # a probability, 1 = face
    occluder = sessions.load(install_surrogate("occluder", tmp_path, mask=mask), catalog.get("occluder"))
    logits = occluder.run(["output"], {"img": np.zeros((1, 3, 256, 256), np.float32)})[0]
    np.testing.assert_allclose(logits[0, 0], (mask - 0.5) * 0.8, atol=1e-6)  # logits: face where > 0


def test_2dfan4_surrogate_reports_its_landmarks(tmp_path: Path) -> None:
    points = default_landmarks68(256) + 3.0
    path = make_surrogate("2dfan4", tmp_path / "l.onnx", landmarks=points)
    session = sessions.load(path, catalog.get("2dfan4"))
    coords, heat = session.run(None, {"input": np.zeros((1, 3, 256, 256), np.float32)})
    np.testing.assert_allclose(coords[0, :, :2] / 64 * 256, points, atol=1e-3)
    peaks = np.stack(np.unravel_index(heat[0].reshape(68, -1).argmax(axis=1), (64, 64)), axis=1)[:, ::-1]
    assert np.abs(peaks - points / 4).max() <= 0.5 + 1e-6


def test_install_surrogate_puts_the_file_where_the_store_looks(isolated_dirs: dict[str, Path]) -> None:
    from pipeline.models import store

    path = install_surrogate("gfpgan_1.4")
    assert path == isolated_dirs["models"] / "GFPGANv1.4.onnx"
    assert store.model_path(catalog.get("gfpgan_1.4")) == path
    assert sessions.get_session("gfpgan_1.4") is not None
