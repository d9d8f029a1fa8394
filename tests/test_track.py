from __future__ import annotations

import numpy as np

from pipeline.faces.track import Tracker
from pipeline.settings import TrackerSettings
from pipeline.types import Face

BASE_LM = np.array([[80, 90], [120, 90], [100, 110], [85, 130], [115, 130]], np.float32)


def _face(dx: float = 0.0, dy: float = 0.0, noise: np.ndarray | None = None) -> Face:
    lm = BASE_LM + np.array([dx, dy], np.float32)
    if noise is not None:
        lm = lm + noise.astype(np.float32)
    box = np.array([60 + dx, 60 + dy, 140 + dx, 160 + dy], np.float32)
    return Face(box=box, landmarks=lm, score=0.9)


def _frame(value: int = 100) -> np.ndarray:
    img = np.full((120, 160, 3), value, np.uint8)
    img[:, :80] = 40  # some structure so the histogram is not degenerate
    return img


def _run(tracker: Tracker[int], faces_per_frame: list[list[Face]], frames: list[np.ndarray] | None = None):
    out = []
    for i, faces in enumerate(faces_per_frame):
        out.extend(tracker.push(frames[i] if frames else _frame(), faces, i))
    out.extend(tracker.flush())
    return out


def test_order_is_kept_and_every_frame_comes_out() -> None:
    out = _run(Tracker(TrackerSettings(), 30), [[_face(i)] for i in range(20)])
    assert [p for p, _ in out] == list(range(20))


def test_missed_detections_are_interpolated() -> None:
    faces = [[_face(dx=i * 2.0)] for i in range(12)]
    for i in (4, 5, 6):
        faces[i] = []  # detector missed the face
    out = _run(Tracker(TrackerSettings(enabled=True, max_gap=5, beta=100.0, min_cutoff=100.0), 30), faces)
    for i in (4, 5, 6):
        got = out[i][1]
        assert len(got) == 1 and got[0].extra.get("interpolated")
        assert np.allclose(got[0].landmarks[0], BASE_LM[0] + [i * 2.0, 0], atol=0.5)


def test_gap_longer_than_max_gap_is_not_filled() -> None:
    faces = [[_face()] for _ in range(12)]
    for i in range(2, 9):
        faces[i] = []
    out = _run(Tracker(TrackerSettings(max_gap=3), 30), faces)
    assert all(len(out[i][1]) == 0 for i in range(2, 9))


def test_smoothing_cuts_jitter_at_least_4x() -> None:
    rng = np.random.default_rng(0)
    n = 150
    noisy = [[_face(noise=rng.normal(0, 1.5, (5, 2)))] for _ in range(n)]
    raw = np.stack([f[0].landmarks for f in noisy])
    out = _run(Tracker(TrackerSettings(), 30), noisy)
    smooth = np.stack([faces[0].landmarks for _, faces in out])
    skip = 15  # let the filter settle
    jitter_raw = np.std(raw[skip:] - BASE_LM, axis=0).mean()
    jitter_smooth = np.std(smooth[skip:] - BASE_LM, axis=0).mean()
    assert jitter_raw / jitter_smooth >= 4.0, (jitter_raw, jitter_smooth)
    off = _run(Tracker(TrackerSettings(enabled=False), 30), noisy)
    assert np.array_equal(np.stack([f[0].landmarks for _, f in off]), raw)


def test_moving_face_is_followed_without_large_lag() -> None:
    faces = [[_face(dx=i * 6.0)] for i in range(40)]  # 180 px/s at 30 fps
    out = _run(Tracker(TrackerSettings(), 30), faces)
    lag = abs(out[-1][1][0].landmarks[0, 0] - faces[-1][0].landmarks[0, 0])
    assert lag < 6.0


def test_scene_cut_stops_interpolation() -> None:
    frames = [_frame(100)] * 5 + [np.full((120, 160, 3), 250, np.uint8)] * 5
    faces = [[_face()] for _ in range(10)]
    faces[4] = []
    faces[5] = []  # lost just before the cut, found after it
    out = _run(Tracker(TrackerSettings(max_gap=5), 30), faces, frames)
    assert out[4][1] == [] and out[5][1] == []


def test_size_jitter_does_not_move_a_still_face() -> None:
    """Smoothing works in units of the face's size, but one unit per track: a detector whose box size
    jitters by a few % must not shake landmarks that stand still far from the frame's corner."""
    rng = np.random.default_rng(1)
    lm = BASE_LM + np.array([1500.0, 900.0], np.float32)
    faces = []
    for _ in range(40):
        half = 50 * (1 + rng.uniform(-0.04, 0.04))
        box = np.array([1600 - half, 910 - half, 1600 + half, 910 + half], np.float32)
        faces.append([Face(box=box, landmarks=lm.copy(), score=0.9)])
    out = _run(Tracker(TrackerSettings(), 30), faces)
    worst = max(float(np.abs(f[0].landmarks - lm).max()) for _, f in out)
    assert worst < 0.5, worst
