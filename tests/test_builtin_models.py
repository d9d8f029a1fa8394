from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from pipeline.errors import ModelMissing
from pipeline.faces.recognise import aligned_crops, cosine, embed_faces
from pipeline.faces.sface import SAME_PERSON_COSINE, SFaceRecogniser
from pipeline.faces.yunet import YuNetDetector
from pipeline.models import builtin, catalog, sessions, store
from tests import photos


@pytest.mark.parametrize("name", ["yunet", "sface"])
def test_conversion_is_cached_by_source_hash(name: str) -> None:
    entry = catalog.get(name)
    path = store.model_path(entry)
    digest = store.sha256_of(builtin.source_path(entry))
    assert path.parent == builtin.cache_dir() / "builtin"
    assert digest[:16] in path.name
    stamp = path.stat().st_mtime_ns
    builtin._known.clear()  # forget the in-process shortcut: the file on disk must be reused
    assert builtin.builtin_path(entry) == path and path.stat().st_mtime_ns == stamp


@pytest.mark.parametrize("name", ["yunet", "sface"])
def test_converted_graph_has_no_quantisation_and_only_real_inputs(name: str) -> None:
    model = onnx.load(str(store.model_path(catalog.get(name))))
    ops = {n.op_type for n in model.graph.node}
    assert "DequantizeLinear" not in ops
    assert [i.name for i in model.graph.input] == [catalog.get(name).inputs[0].name]
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param  # batch axis is symbolic
    if name == "yunet":
        assert dims[2].dim_param and dims[3].dim_param


def test_concurrent_conversions_leave_one_good_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACESTATION_CACHE", str(tmp_path))
    monkeypatch.setattr(builtin, "_known", {})
    entry = catalog.get("yunet")
    results: list[Path] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(builtin.builtin_path(entry))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert sorted(p.name for p in (tmp_path / "builtin").iterdir()) == [results[0].name]  # no temp files left
    onnx.checker.check_model(str(results[0]))


def test_missing_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtin, "PACKAGE", "no_such_package_facestation")
    with pytest.raises(ModelMissing, match="pip install no_such_package_facestation"):
        builtin.source_path(catalog.get("yunet"))


def test_dequantize_modes() -> None:
    q = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.int8)
    per_tensor = builtin._dequantize(q, np.array([0.5], np.float32), np.array([1], np.int8), 1, 64)
    np.testing.assert_allclose(per_tensor, (q - 1) * 0.5)
    per_axis = builtin._dequantize(q, np.array([1.0, 2.0], np.float32), None, 0, 0)
    np.testing.assert_allclose(per_axis, q * np.array([[1.0], [2.0]]))
    blocked = builtin._dequantize(q, np.array([[1.0, 10.0], [2.0, 20.0]], np.float32),
                                  np.array([[0, 1], [0, 1]], np.int8), 1, 2)
    np.testing.assert_allclose(blocked, [[1, 2, 20, 30], [10, 12, 120, 140]])


def test_yunet_raw_outputs_equal_opencv_on_the_shipped_file() -> None:
    session = sessions.get_session("yunet")
    image = cv2.resize(photos.grace_hopper(), (640, 640))
    blob = image.transpose(2, 0, 1)[None].astype(np.float32)
    names = [o.name for o in session.get_outputs()]
    ours = session.run(names, {"input": blob})
    net = cv2.dnn.readNetFromONNX(str(builtin.source_path(catalog.get("yunet"))))
    net.setInput(blob, "input")
    theirs = net.forward(names)
    for name, a, b in zip(names, ours, theirs, strict=True):
        np.testing.assert_allclose(a.reshape(b.shape), b, atol=2e-3, rtol=1e-3, err_msg=name)


def test_yunet_batch_of_two_equals_two_singles() -> None:
    session = sessions.get_session("yunet")
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 255, size=(2, 3, 96, 128)).astype(np.float32)
    both = session.run(None, {"input": x})
    for i in range(2):
        for a, b in zip(both, session.run(None, {"input": x[i:i + 1]}), strict=True):
            np.testing.assert_allclose(a[i:i + 1], b, atol=1e-4)


def _grace_face_crop() -> np.ndarray:
    image = photos.grace_hopper()
    faces = YuNetDetector().detect([image])[0]
    return aligned_crops(SFaceRecogniser(), image, faces[:1])


def test_sface_equals_opencv_on_the_same_crop() -> None:
    crop = _grace_face_crop()
    ours = SFaceRecogniser().embed(crop)[0]
    assert ours.shape == (128,) and ours.dtype == np.float32
    assert abs(float(np.linalg.norm(ours)) - 1.0) < 1e-5
    source = str(builtin.source_path(catalog.get("sface")))
    net = cv2.dnn.readNetFromONNX(source)  # the shipped file, in OpenCV's own runtime
    net.setInput(cv2.dnn.blobFromImage(crop[0], 1.0, (112, 112), (0, 0, 0), swapRB=True, crop=False), "data")
    assert cosine(ours, net.forward().ravel()) >= 0.999
    # OpenCV's recogniser API (which feeds RGB) on our converted file confirms the channel order
    recogniser = cv2.FaceRecognizerSF.create(str(store.model_path(catalog.get("sface"))), "")
    assert cosine(ours, recogniser.feature(crop[0]).ravel()) >= 0.999


def test_sface_batch_equals_singles() -> None:
    image = photos.t1()
    recogniser = SFaceRecogniser()
    crops = aligned_crops(recogniser, image, YuNetDetector().detect([image])[0])
    assert len(crops) >= 2
    batch = recogniser.embed(crops)
    singles = np.concatenate([recogniser.embed(c[None]) for c in crops])
    np.testing.assert_allclose(batch, singles, atol=1e-5)


def test_sface_identity() -> None:
    detector, recogniser = YuNetDetector(), SFaceRecogniser()
    grace, astronaut = photos.grace_hopper(), photos.astronaut()
    mirror = np.ascontiguousarray(grace[:, ::-1])
    e_grace, e_mirror, e_astro = (embed_faces(recogniser, img, detector.detect([img])[0][:1])[0]
                                  for img in (grace, mirror, astronaut))
    assert cosine(e_grace, e_mirror) >= 0.9
    assert cosine(e_grace, e_astro) < SAME_PERSON_COSINE
