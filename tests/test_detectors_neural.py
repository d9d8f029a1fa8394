"""SCRFD-family and YOLO-face detectors decoded against surrogates that emit known faces."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import families
from pipeline.errors import UserError
from pipeline.faces import scrfd, yolo
from pipeline.faces.scrfd import ScrfdDetector
from pipeline.faces.yolo import YoloFaceDetector
from pipeline.models import catalog
from pipeline.settings import Settings
from tests.surrogates import install_surrogate


def _kps(x1: float, y1: float, x2: float, y2: float) -> np.ndarray:
    w, h = x2 - x1, y2 - y1
    rel = np.array([[0.3, 0.4], [0.7, 0.4], [0.5, 0.6], [0.35, 0.8], [0.65, 0.8]])
    return (rel * [w, h] + [x1, y1]).astype(np.float32)


def _face(x1: float, y1: float, x2: float, y2: float, score: float) -> tuple:
    return (x1, y1, x2, y2, _kps(x1, y1, x2, y2), score)


# in 640-input pixels: one face per SCRFD stride level (small, medium, large) and one below threshold
FACES = [
    _face(100.5, 80.0, 148.0, 135.0, 0.93),   # ~50 px: stride 8
    _face(300.0, 100.0, 420.0, 250.0, 0.88),  # ~150 px: stride 16
    _face(20.0, 120.0, 250.0, 350.0, 0.81),   # ~230 px: stride 32
    _face(500.0, 40.0, 560.0, 110.0, 0.30),   # under the 0.5 threshold
]


def _frame(width: int, height: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)


@pytest.mark.parametrize("name", ["retinaface", "scrfd"])
def test_scrfd_detector_finds_exactly_the_known_faces(name: str) -> None:
    install_surrogate(name, faces=FACES, size=640)
    detector = ScrfdDetector(name, score=0.5, nms=0.4, size=640)
    frame = _frame(1280, 720)  # letterboxed at scale 0.5 into the top-left 640×360
    (faces,) = detector.detect([frame])
    assert len(faces) == 3  # each face's duplicate anchor suppressed, the weak one dropped
    assert [f.score for f in faces] == pytest.approx([0.93, 0.88, 0.81], abs=1e-6)
    for face, (x1, y1, x2, y2, kps, _) in zip(faces, FACES, strict=False):
        np.testing.assert_allclose(face.box, np.array([x1, y1, x2, y2]) / 0.5, atol=1e-3)
        np.testing.assert_allclose(face.landmarks, kps / 0.5, atol=1e-3)
        assert face.landmarks[0, 0] < face.landmarks[1, 0]  # left eye first, image orientation
        assert face.landmarks.shape == (5, 2) and face.box.dtype == np.float32


def test_scrfd_threshold_and_nms_are_applied() -> None:
    install_surrogate("scrfd", faces=FACES, size=640)
    everything = ScrfdDetector("scrfd", score=0.25, nms=1.0).detect([_frame(640, 640)])[0]
    assert len(everything) == 8  # 4 faces × 2 anchors: nothing suppressed at IoU 1.0
    kept = ScrfdDetector("scrfd", score=0.25, nms=0.4).detect([_frame(640, 640)])[0]
    assert kept[-1].score == pytest.approx(0.30)
    assert ScrfdDetector("scrfd", score=0.95).detect([_frame(640, 640)]) == [[]]


def test_scrfd_detects_each_frame_of_a_batch() -> None:
    install_surrogate("retinaface", faces=FACES[:1], size=320)
    detector = ScrfdDetector("retinaface", size=320)
    small, large = _frame(320, 200), _frame(640, 400)
    results = detector.detect([small, large])
    assert [len(r) for r in results] == [1, 1]
    np.testing.assert_allclose(results[1][0].box, results[0][0].box * 2, atol=1e-3)


def test_scrfd_decode_accepts_outputs_with_a_leading_batch_axis() -> None:
    from tests.surrogates import scrfd_arrays

    arrays = scrfd_arrays(FACES, 640, 0.02, True)
    flat = scrfd.decode(arrays, 640, 0.5)
    batched = scrfd.decode([a[None] for a in arrays], 640, 0.5)
    for a, b in zip(flat, batched, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(flat[0]) == 6


def test_letterbox_is_top_left_and_normalised_per_catalog() -> None:
    frame = np.zeros((100, 200, 3), np.uint8)
    frame[..., 0], frame[..., 2] = 255, 0  # blue
    blob, scale = scrfd.letterbox(frame, 320, catalog.get("scrfd"))
    assert blob.shape == (1, 3, 320, 320) and scale == pytest.approx(1.6)
    assert blob[0, 2, :160, :].min() == pytest.approx((255 - 127.5) / 128)  # RGB: channel 2 is blue
    assert blob[0, 0, :160, :].max() == pytest.approx(-127.5 / 128)
    assert np.all(blob[0, :, 160:, :] == pytest.approx(-127.5 / 128))  # zero padding below
    rgb, _ = scrfd.letterbox(frame, 640, catalog.get("yolo_face"))
    assert rgb[0, 2, :320].min() == pytest.approx(1.0) and rgb[0, 0].max() == 0.0  # RGB /255: blue last


def test_scrfd_refuses_bad_settings() -> None:
    with pytest.raises(UserError, match="multiple of 32"):
        ScrfdDetector("scrfd", size=650)
    with pytest.raises(UserError, match="'yunet' is not a swapper"):  # the family registry checks the role
        families.build("yunet", Settings(), "swapper")


def test_yolo_face_detector_finds_exactly_the_known_faces() -> None:
    install_surrogate("yolo_face", faces=FACES)
    detector = YoloFaceDetector(score=0.5, nms=0.4, size=480)  # size is fixed by the model
    assert detector.size == 640
    frame = _frame(960, 600)  # scale 640/960
    scale = 640 / 960
    (faces,) = detector.detect([frame])
    assert len(faces) == 3
    assert [f.score for f in faces] == pytest.approx([0.93, 0.88, 0.81], abs=1e-6)
    for face, (x1, y1, x2, y2, kps, _) in zip(faces, FACES, strict=False):
        expected_box = np.minimum(np.array([x1, y1, x2, y2]) / scale, [960, 600, 960, 600])
        np.testing.assert_allclose(face.box, expected_box, atol=1e-3)
        np.testing.assert_allclose(face.landmarks, kps / scale, atol=1e-3)


def test_yolo_decode_reads_centre_size_and_landmark_triplets() -> None:
    out = np.zeros((20, 8400), np.float32)
    out[:, 7] = [50, 60, 20, 30, 0.7, *np.arange(15, dtype=np.float32)]
    scores, boxes, points = yolo.decode(out[None], 0.5)
    assert scores.tolist() == pytest.approx([0.7])
    np.testing.assert_allclose(boxes, [[40, 45, 60, 75]])
    np.testing.assert_allclose(points[0], np.arange(15).reshape(5, 3)[:, :2])
