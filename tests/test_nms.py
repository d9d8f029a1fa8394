from __future__ import annotations

import numpy as np
import pytest

from pipeline.faces.nms import iou_one_to_many, nms


def _reference_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    """Plain double loop, for comparison."""
    def iou(a: np.ndarray, b: np.ndarray) -> float:
        w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = w * h
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / union if union > 0 else 0.0

    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    keep: list[int] = []
    for i in order:
        if all(iou(boxes[i], boxes[k]) <= threshold for k in keep):
            keep.append(i)
    return keep


def test_iou_of_known_boxes() -> None:
    box = np.array([0, 0, 10, 10.0])
    others = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 5, 5]], dtype=float)
    np.testing.assert_allclose(iou_one_to_many(box, others), [1.0, 50 / 150, 0.0, 0.25])


def test_overlap_above_threshold_is_suppressed() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [50, 50, 60, 60]], dtype=np.float32)
    scores = np.array([0.8, 0.9, 0.7])
    assert nms(boxes, scores, 0.3).tolist() == [1, 2]
    assert nms(boxes, scores, 0.95).tolist() == [1, 0, 2]  # IoU 0.818 is under 0.95: all kept, by score


def test_empty_and_single() -> None:
    assert nms(np.zeros((0, 4)), np.zeros(0), 0.3).tolist() == []
    assert nms(np.array([[0, 0, 1, 1]]), np.array([0.1]), 0.3).tolist() == [0]


def test_degenerate_boxes_do_not_divide_by_zero() -> None:
    boxes = np.array([[5, 5, 5, 5], [5, 5, 5, 5], [0, 0, 2, 2]], dtype=float)
    assert nms(boxes, np.array([0.9, 0.8, 0.7]), 0.3).tolist() == [0, 1, 2]


def test_matches_a_plain_loop_on_random_boxes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 60))
        xy = rng.uniform(0, 100, size=(n, 2))
        wh = rng.uniform(5, 40, size=(n, 2))
        boxes = np.concatenate([xy, xy + wh], axis=1)
        scores = rng.uniform(size=n)
        threshold = float(rng.uniform(0.1, 0.7))
        assert nms(boxes, scores, threshold).tolist() == _reference_nms(boxes, scores, threshold)


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError, match="2 boxes but 3 scores"):
        nms(np.zeros((2, 4)), np.zeros(3), 0.3)
