from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.faces.yunet import YuNetDetector, to_bgr
from pipeline.models import builtin, catalog
from tests import photos


def _xywh(box: np.ndarray) -> np.ndarray:
    return np.r_[box[:2], box[2:] - box[:2]]


@pytest.fixture(scope="module")
def detector() -> YuNetDetector:
    return YuNetDetector()


def test_grace_hopper_at_native_size_matches_the_published_box() -> None:
    image = photos.grace_hopper()  # 512×600: size 600 means no resize, only padding to 512×608
    faces = YuNetDetector(size=600).detect([image])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(_xywh(faces[0].box), [182.6, 120.0, 170.1, 212.5], atol=2.0)
    assert faces[0].score == pytest.approx(0.943, abs=0.01)


def test_grace_hopper_at_640(detector: YuNetDetector) -> None:
    faces = detector.detect([photos.grace_hopper()])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(_xywh(faces[0].box), [182.6, 120.0, 170.1, 212.5], atol=6.0)
    assert faces[0].score == pytest.approx(0.94, abs=0.02)
    assert faces[0].box.dtype == np.float32 and faces[0].landmarks.dtype == np.float32
    assert faces[0].landmarks.shape == (5, 2)


def test_landmarks_are_in_image_orientation(detector: YuNetDetector) -> None:
    image = photos.grace_hopper()
    face = detector.detect([image])[0][0]
    left_eye, right_eye, nose, left_mouth, right_mouth = face.landmarks
    assert left_eye[0] < nose[0] < right_eye[0]
    assert left_mouth[0] < right_mouth[0]
    assert max(left_eye[1], right_eye[1]) < nose[1] < min(left_mouth[1], right_mouth[1])
    x1, y1, x2, y2 = face.box
    assert np.all((face.landmarks >= [x1, y1]) & (face.landmarks <= [x2, y2]))
    # the mirror image's left eye is the original's right eye, reflected
    width = image.shape[1]
    mirrored = detector.detect([np.ascontiguousarray(image[:, ::-1])])[0][0]
    reflected = face.landmarks[[1, 0, 2, 4, 3]] * [-1, 1] + [width - 1, 0]
    # the detector is not exactly mirror-equivariant
    assert np.abs(mirrored.landmarks - reflected).max() < 8.0
    unswapped = face.landmarks * [-1, 1] + [width - 1, 0]
    assert np.abs(mirrored.landmarks - unswapped).max() > 40.0  # eyes ~80 px apart: the swap is what matches


def test_astronaut_has_one_face(detector: YuNetDetector) -> None:
    faces = detector.detect([photos.astronaut()])[0]
    assert len(faces) == 1 and faces[0].score > 0.85


def test_t1_has_six_faces_best_first(detector: YuNetDetector) -> None:
    faces = detector.detect([photos.t1()])[0]
    assert len(faces) == 6
    scores = [f.score for f in faces]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("size", [320, 640, 800])
def test_matches_opencv_at_the_same_input(size: int) -> None:
    image = photos.t1()
    ours = YuNetDetector(size=size)
    blob, scale = ours.prepare(image)
    padded = np.ascontiguousarray(blob.transpose(1, 2, 0).astype(np.uint8))
    reference = cv2.FaceDetectorYN.create(str(builtin.source_path(catalog.get("yunet"))), "",
                                          (padded.shape[1], padded.shape[0]), 0.5, 0.3)
    _, found = reference.detect(padded)
    found = np.zeros((0, 15), np.float32) if found is None else found
    faces = ours.detect([image])[0]
    assert len(faces) == len(found) > 0
    ours_rows = np.array([np.r_[_xywh(f.box), f.landmarks.ravel(), f.score] for f in faces])
    theirs = np.concatenate([found[:, :14] / scale, found[:, 14:]], axis=1)
    ours_rows = ours_rows[np.argsort(ours_rows[:, 0])]
    theirs = theirs[np.argsort(theirs[:, 0])]
    np.testing.assert_allclose(ours_rows[:, :14], theirs[:, :14], atol=0.5)
    np.testing.assert_allclose(ours_rows[:, 14], theirs[:, 14], atol=1e-3)


def test_same_size_frames_batch_like_single_frames(detector: YuNetDetector) -> None:
    grace = photos.grace_hopper()
    frames = [grace, np.ascontiguousarray(grace[:, ::-1]), photos.astronaut()]
    together = detector.detect(frames)
    for frame, faces in zip(frames, together, strict=True):
        alone = detector.detect([frame])[0]
        assert len(alone) == len(faces) == 1
        np.testing.assert_allclose(faces[0].box, alone[0].box, atol=1e-3)
        np.testing.assert_allclose(faces[0].landmarks, alone[0].landmarks, atol=1e-3)


def test_grey_and_bgra_input(detector: YuNetDetector) -> None:
    image = photos.grace_hopper()
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    bgra = cv2.cvtColor(image, cv2.COLOR_BGR2BGRA)
    assert to_bgr(grey).shape == image.shape
    faces = detector.detect([grey, bgra, grey[:, :, None]])
    assert [len(f) for f in faces] == [1, 1, 1]
    np.testing.assert_allclose(faces[1][0].box, detector.detect([image])[0][0].box, atol=1e-3)
    with pytest.raises(ValueError, match="grey, BGR or BGRA"):
        to_bgr(np.zeros((4, 4, 2), np.uint8))


def test_blank_frame_and_no_frames(detector: YuNetDetector) -> None:
    assert detector.detect([np.full((360, 480, 3), 127, np.uint8)]) == [[]]
    assert detector.detect([]) == []


def test_small_frames_are_upscaled_to_size(detector: YuNetDetector) -> None:
    image = photos.grace_hopper()
    small = cv2.resize(image, (256, 300), interpolation=cv2.INTER_AREA)
    faces = detector.detect([small])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(_xywh(faces[0].box) * 2, [182.6, 120.0, 170.1, 212.5], atol=8.0)
