"""Detection on keyframes (pipeline.faces.keyframes): schedule, following (region re-detection and optical
flow), cuts, faces leaving the frame; YuNet's region detection against its full-frame detection."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline.bench import make_test_clip
from pipeline.errors import SettingsError
from pipeline.faces.base import region_detection
from pipeline.faces.keyframes import KeyframeDetector, interval_for
from pipeline.faces.yunet import YuNetDetector
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Face, Frame
from pipeline.video.decode import read_frames
from tests import photos
from tests.keyframe_measure import bench_clip_warp, compare

W, H = 320, 240
LM = np.array([[-18, -12], [18, -12], [0, 4], [-14, 22], [14, 22]], np.float32)  # around the centre
HALF = 40  # half the face box


def _texture(seed: int, size: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 256, (size[1], size[0]), dtype=np.uint8)
    grey = cv2.GaussianBlur(noise, (0, 0), 2.0)
    grey = cv2.normalize(grey, None, 0, 255, cv2.NORM_MINMAX)
    return np.asarray(cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR))


class Scene:
    """Frames with a textured square ``face`` at known centres, and a detector that reports it exactly
    (while at least half of it is in the frame), recording which frames it was asked about."""

    def __init__(self, centres: Sequence[tuple[float, float]], cut_at: int | None = None) -> None:
        self.centres = [np.array(c, np.float64) for c in centres]
        patch = _texture(1, (2 * HALF + 40, 2 * HALF + 40))
        self.frames: list[Frame] = []
        for i, (cx, cy) in enumerate(self.centres):
            frame = np.full((H, W, 3), 200 if cut_at is not None and i >= cut_at else 60, np.uint8)
            m = np.array([[1, 0, cx - patch.shape[1] / 2], [0, 1, cy - patch.shape[0] / 2]], np.float32)
            cv2.warpAffine(patch, m, (W, H), dst=frame, borderMode=cv2.BORDER_TRANSPARENT)
            self.frames.append(frame)
        self._index = {id(f): i for i, f in enumerate(self.frames)}
        self.detected: list[int] = []
        self.searched: list[int] = []  # frames asked about by region
        self.hidden: set[int] = set()  # frames where region detection does not find the face
        self.grown: dict[int, float] = {}  # frame -> size factor of the face region detection finds

    def face(self, i: int) -> Face:
        cx, cy = self.centres[i]
        box = np.array([cx - HALF, cy - HALF, cx + HALF, cy + HALF], np.float32)
        return Face(box=box, landmarks=LM + np.array([cx, cy], np.float32), score=0.9)

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        out = []
        for frame in frames:
            i = self._index[id(frame)]
            self.detected.append(i)
            cx, cy = self.centres[i]
            out.append([self.face(i)] if 0 <= cx < W and 0 <= cy < H else [])
        return out

    def regions(self, frame: Frame, boxes: Sequence[np.ndarray]) -> list[list[Face]]:
        """Region detection: the face, where it overlaps the box (unless hidden), once per box."""
        i = self._index[id(frame)]
        self.searched.append(i)
        face = self.face(i)
        if i in self.grown:
            c, half = np.array(self.centres[i], np.float32), HALF * self.grown[i]
            face = replace(face, box=np.r_[c - half, c + half].astype(np.float32))
        near = [face] if i not in self.hidden else []
        return [[f for f in near
                 if f.box[0] < b[2] and b[0] < f.box[2] and f.box[1] < b[3] and b[1] < f.box[3]]
                for b in boxes]

    @staticmethod
    def select(frame: Frame, faces: list[Face]) -> list[Face]:
        return faces

    def run(self, interval: int, batch: int = 4, regions: bool = False) -> list[list[Face]]:
        keys = KeyframeDetector(self.detect, self.select, interval, scene_cut=0.35,
                                regions=self.regions if regions else None)
        out: list[list[Face]] = []
        for start in range(0, len(self.frames), batch):
            out.extend(keys.faces(self.frames[start:start + batch]))
        return out


def test_interval_setting() -> None:
    assert Settings().detector.interval == "auto"
    assert apply_overrides(Settings(), ["detector.interval=4"]).detector.interval == 4
    for bad in ("0", "often"):
        with pytest.raises(SettingsError, match="detector.interval"):
            apply_overrides(Settings(), [f"detector.interval={bad}"])


def test_auto_interval_is_about_six_detections_a_second() -> None:
    assert [interval_for("auto", fps) for fps in (5, 12, 24, 25, 30, 60, 120)] == [1, 2, 4, 4, 5, 8, 8]
    assert interval_for(3, 30) == 3 and interval_for(1, 60) == 1


def test_interval_1_detects_every_frame_in_one_batch_as_before() -> None:
    calls: list[int] = []
    selected: list[int] = []
    frames = [np.full((8, 8, 3), i, np.uint8) for i in range(6)]

    def detect(batch: Sequence[Frame]) -> list[list[Face]]:
        calls.append(len(batch))
        return [[Scene([(0, 0)]).face(0)] for _ in batch]

    def select(frame: Frame, faces: list[Face]) -> list[Face]:
        selected.append(int(frame[0, 0, 0]))
        return faces[:0] if frame[0, 0, 0] == 2 else faces

    keys = KeyframeDetector(detect, select, 1, scene_cut=0.35)
    out = keys.faces(frames[:4]) + keys.faces(frames[4:])
    assert calls == [4, 2] and selected == list(range(6))
    assert [len(f) for f in out] == [1, 1, 0, 1, 1, 1]
    assert not any(f.extra.get("tracked") for faces in out for f in faces)


def test_faces_are_followed_between_keyframes() -> None:
    scene = Scene([(120 + 3.5 * i, 110 + 1.25 * i) for i in range(20)])
    out = scene.run(interval=5)
    assert scene.detected == [0, 5, 10, 15]
    for i, faces in enumerate(out):
        assert len(faces) == 1
        assert bool(faces[0].extra.get("tracked")) == (i % 5 != 0)
        truth = scene.face(i)
        assert np.abs(faces[0].landmarks - truth.landmarks).max() < 0.5, i
        assert np.abs(faces[0].box - truth.box).max() < 1.0, i


def test_a_detector_without_regions_is_followed_by_flow() -> None:
    assert region_detection(Scene([(0, 0)])) is None  # no detect_regions: optical flow
    scene = Scene([(120 + 3 * i, 110) for i in range(10)])
    out = scene.run(interval=5)
    assert scene.searched == [] and scene.detected == [0, 5]
    assert {f.extra.get("followed_by") for faces in out[1:5] for f in faces} == {"flow"}


def test_faces_are_redetected_around_them_between_keyframes() -> None:
    scene = Scene([(120 + 3.5 * i, 110 + 1.25 * i) for i in range(20)])

    def select(frame: Frame, faces: list[Face]) -> list[Face]:  # selection's own fields must survive
        return [replace(f, embedding=np.ones(4, np.float32), extra={"who": 7}) for f in faces]

    refined: list[int] = []

    def refine(frame: Frame, faces: list[Face]) -> list[Face]:
        refined.append(scene._index[id(frame)])
        return [replace(f, landmarks=f.landmarks + 1) for f in faces]

    keys = KeyframeDetector(scene.detect, select, 5, 0.35, regions=scene.regions, refine=refine)
    out = [faces for start in range(0, 20, 3) for faces in keys.faces(scene.frames[start:start + 3])]
    assert scene.detected == [0, 5, 10, 15] and keys.keyframes == 4 and keys.followed == 16
    assert scene.searched == refined == [i for i in range(20) if i % 5]
    for i, faces in enumerate(out):
        face, truth = faces[0], scene.face(i)
        assert len(faces) == 1 and face.extra["who"] == 7 and face.embedding is not None
        assert face.extra.get("followed_by") == ("region" if i % 5 else None)
        np.testing.assert_array_equal(face.box, truth.box)
        np.testing.assert_array_equal(face.landmarks, truth.landmarks + (1 if i % 5 else 0))


def test_a_face_not_found_around_it_or_resized_is_detected_in_full() -> None:
    scene = Scene([(140 + 2 * i, 120) for i in range(12)])
    scene.hidden, scene.grown = {3}, {7: 1.3}
    out = scene.run(interval=10, regions=True)
    assert scene.detected == [0, 3, 7, 10]  # the schedule (0, 10) does not move
    assert [i for i, faces in enumerate(out) if "followed_by" not in faces[0].extra] == [0, 3, 7, 10]
    np.testing.assert_array_equal(out[7][0].box, scene.face(7).box)


def test_batching_does_not_change_the_faces() -> None:
    scene = Scene([(100 + 4 * i, 120 - 2 * i) for i in range(17)])
    one, many = scene.run(interval=4, batch=1), scene.run(interval=4, batch=6)
    for a, b in zip(one, many, strict=True):
        assert len(a) == len(b)
        assert all(np.array_equal(x.landmarks, y.landmarks) for x, y in zip(a, b, strict=True))


def test_a_scene_cut_forces_a_detection() -> None:
    scene = Scene([(140 + 2 * i, 120) for i in range(16)], cut_at=7)
    out = scene.run(interval=10)
    assert scene.detected == [0, 7, 10]
    assert not out[7][0].extra.get("tracked")


def test_a_face_that_leaves_the_frame_is_not_followed() -> None:
    scene = Scene([(200 + 12 * i, 120) for i in range(24)])  # gone past x=320 from frame 10
    out = scene.run(interval=50)
    gone = [i for i, c in enumerate(scene.centres) if c[0] >= W]
    assert gone and all(out[i] == [] for i in gone)
    for i, faces in enumerate(out):
        for face in (f for f in faces if f.extra.get("tracked")):  # followed only while mostly inside
            x1, _, x2, _ = face.box
            assert min(W, x2) - max(0, x1) >= 0.7 * (x2 - x1), i
    assert len(scene.detected) < len(scene.frames)  # it was followed while it could be


def test_a_lost_face_is_detected_again_on_the_next_frame() -> None:
    centres = [(120 + 2 * i, 120) for i in range(12)]
    scene = Scene(centres)
    scene.frames[6] = np.full_like(scene.frames[6], 60)  # the face vanishes for one frame (no cut)
    scene._index = {id(f): i for i, f in enumerate(scene.frames)}
    scene.run(interval=50)
    assert 6 in scene.detected and 0 in scene.detected


def _on_canvas(photo: np.ndarray, size: tuple[int, int], x: float, y: float, scale: float) -> Frame:
    canvas = np.full((size[1], size[0], 3), 40, np.uint8)
    m = np.array([[scale, 0, x], [0, scale, y]], np.float32)
    cv2.warpAffine(photo, m, size, dst=canvas, borderMode=cv2.BORDER_TRANSPARENT)
    return canvas


@pytest.fixture(scope="module")
def yunet() -> YuNetDetector:
    return YuNetDetector()


def test_yunet_region_input_is_the_full_input_cut_out(yunet: YuNetDetector) -> None:
    rng = np.random.default_rng(3)
    for size in ((1920, 1080), (3840, 2160), (1280, 720), (1080, 1920)):
        frame = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        whole, _ = yunet.resized(frame)
        for window in ((0, 0, 224, 192), (288, 96, 640, 384), (96, 32, 320, 288)):
            got = yunet.resized_window(frame, window)
            left, top, right, bottom = window
            assert got is not None and np.array_equal(got, whole[top:bottom, left:right]), (size, window)
    assert yunet.resized_window(rng.integers(0, 256, (768, 1366, 3), dtype=np.uint8), (0, 0, 64, 64)) is None


@pytest.mark.parametrize("size", [(1920, 1080), (1366, 768)])  # window cut from the frame; from the whole
def test_yunet_region_detection_finds_what_full_detection_finds(yunet: YuNetDetector,
                                                                 size: tuple[int, int]) -> None:
    assert region_detection(yunet) == yunet.detect_regions
    errors = []
    for photo, x, y, scale in ((photos.grace_hopper(), 700, 200, 1.3), (photos.astronaut(), 100, 300, 1.0),
                               (photos.t1(), 0, 0, 1.5)):
        frame = _on_canvas(photo, size, x, y, scale)
        full = yunet.detect([frame])[0]
        assert full
        for face, found in zip(full, yunet.detect_regions(frame, [f.box for f in full]), strict=True):
            same = min(found, key=lambda f: float(np.abs(f.box - face.box).sum()))
            assert same.score == pytest.approx(face.score, abs=0.02)
            errors.append(float(np.linalg.norm(same.landmarks - face.landmarks, axis=1).mean()))
    assert len(errors) >= 6 and max(errors) < 1.5 and float(np.mean(errors)) < 0.5, errors


@pytest.mark.slow
def test_real_face_1080p_clip_keyframes_against_every_frame(tmp_path: Path) -> None:
    """Grace Hopper drifting and zooming over 2 s of 1080p30 (the bench clip's path at 5x its speed: up to
    30 px a frame), built-in yunet + classic, interval auto (5 at 30 fps)."""
    face = photos.grace_hopper_path()
    clip = make_test_clip(tmp_path / "face.mp4", face, seconds=2.0)
    photo = photos.grace_hopper().shape[:2]
    n = interval_for("auto", 30.0)
    result = compare(read_frames(clip), face, Settings(), n, 30.0, identity_every=2,
                     warp=bench_clip_warp((photo[0], photo[1]), 60))
    got = result.summary()
    assert result.frames == 60 and got["missing"] == 0, got
    assert result.keyframes <= 60 // n + 3, got  # the schedule, a few forced detections at most
    assert result.follower == "region", got  # yunet re-detects around the face between keyframes
    # the figures: landmarks within 1.5 px of detection on every frame, on average...
    assert got["landmark_error_px"] <= 1.5, got
    # ...so as close to the clip's true landmarks as detection on every frame
    assert got["keyframes_vs_truth_px"] <= got["every_frame_vs_truth_px"] + 0.25, got
    # the swapped face looks as much like the source (SFace, the face found again in the output)
    assert got["identity_change"] <= 0.01, got


@pytest.mark.parametrize("interval", [1, 5])
def test_scene_cuts_are_decided_once_and_handed_to_the_tracker(interval: int) -> None:
    """The keyframe detector's cut flags are what the render gives the tracker, so both see the same cuts
    (they used to test different pixels, and could disagree near the threshold)."""
    from pipeline.faces.track import Tracker
    from pipeline.settings import TrackerSettings

    dark, light = np.full((90, 160, 3), 20, np.uint8), np.full((90, 160, 3), 230, np.uint8)
    keys = KeyframeDetector(lambda frames: [[] for _ in frames], lambda frame, faces: faces, interval, 0.3)
    keys.faces([dark, dark, light, light])
    assert keys.cuts == [False, False, True, False]
    keys.faces([light, dark])
    assert keys.cuts == [False, True]
    tracker: Tracker[int] = Tracker(TrackerSettings(), 30.0)
    out = [p for i, cut in enumerate([False, False, True]) for p, _ in tracker.push(dark, [], i, cut=cut)]
    assert out == [0, 1]  # a cut flushes what came before it at once
