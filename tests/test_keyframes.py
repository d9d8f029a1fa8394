"""Detection on keyframes (pipeline.faces.keyframes): schedule, following, cuts, faces leaving the frame."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline.bench import make_test_clip
from pipeline.errors import SettingsError
from pipeline.faces.keyframes import KeyframeDetector, interval_for
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

    @staticmethod
    def select(frame: Frame, faces: list[Face]) -> list[Face]:
        return faces

    def run(self, interval: int, batch: int = 4) -> list[list[Face]]:
        keys = KeyframeDetector(self.detect, self.select, interval, scene_cut=0.35)
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
    # Following is as accurate as detecting every frame: both against the true landmarks of the clip...
    assert got["keyframes_vs_truth_px"] <= got["every_frame_vs_truth_px"] + 0.5, got
    # ...so the distance to per-frame detection is that detector's own frame-to-frame error, no more
    assert got["landmark_error_px"] <= 1.25 * got["every_frame_vs_truth_px"], got
    # the swapped face looks as much like the source (SFace, the face found again in the output)
    assert got["identity_change"] <= 0.01, got
