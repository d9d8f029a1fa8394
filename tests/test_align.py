from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.faces.align import (
    TEMPLATES,
    align,
    estimate,
    invert,
    similarity,
    template_points,
    transform_points,
    warp,
)

INSIGHTFACE_112 = [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655],
                   [70.7299, 92.2041]]


def _similarity(angle_deg: float, scale: float, tx: float, ty: float) -> np.ndarray:
    a = np.deg2rad(angle_deg)
    r = scale * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return np.hstack([r, [[tx], [ty]]])


def test_templates_are_normalised_and_match_the_classic_points() -> None:
    assert set(TEMPLATES) == {"arcface_112_v1", "arcface_112_v2", "arcface_128", "ffhq_512", "styleganex_384",
                              "dfl_whole_face"}
    for points in TEMPLATES.values():
        assert points.shape == (5, 2)
        assert np.all((points > 0) & (points < 1))
        assert points[0, 0] < points[1, 0] and points[3, 0] < points[4, 0]  # left before right
    np.testing.assert_allclose(template_points("arcface_112_v2", 112), INSIGHTFACE_112, atol=1e-3)


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@pytest.mark.parametrize(("angle", "scale", "tx", "ty"), [(0, 1, 0, 0), (23, 2.7, 310, 95),
                                                          (-71, 0.4, 12, 640), (179, 5.0, -40, 20)])
def test_estimate_recovers_an_exact_similarity(template: str, angle: float, scale: float, tx: float,
                                               ty: float) -> None:
    size = 112 if "112" in template else 256
    crop_points = template_points(template, size)  # type: ignore[arg-type]
    crop_to_frame = _similarity(angle, scale, tx, ty)
    landmarks = transform_points(crop_points, crop_to_frame)
    matrix = estimate(landmarks, template, size)  # type: ignore[arg-type]
    error = np.linalg.norm(transform_points(landmarks, matrix) - crop_points, axis=1)
    assert error.max() < 0.5
    assert error.max() < 1e-6  # exact on exact points
    np.testing.assert_allclose(invert(matrix), crop_to_frame, atol=1e-6)


def test_least_squares_on_noisy_points_equals_the_linear_solution() -> None:
    rng = np.random.default_rng(3)
    src = rng.uniform(0, 200, size=(5, 2))
    dst = transform_points(src, _similarity(12, 0.6, 30, -8)) + rng.normal(0, 2.0, size=(5, 2))
    # the similarity [a -b tx; b a ty] is linear in (a, b, tx, ty): solve it directly
    rows = []
    for (x, y) in src:
        rows += [[x, -y, 1, 0], [y, x, 0, 1]]
    a, b, tx, ty = np.linalg.lstsq(np.array(rows), dst.reshape(-1), rcond=None)[0]
    np.testing.assert_allclose(similarity(src, dst), [[a, -b, tx], [b, a, ty]], atol=1e-9)


def test_mirrored_points_give_a_rotation_not_a_reflection() -> None:
    points = template_points("arcface_112_v2", 112)
    mirrored = points * [-1, 1] + [300, 0]
    assert np.linalg.det(similarity(mirrored, points)[:, :2]) > 0


def test_coincident_points_raise() -> None:
    with pytest.raises(ValueError, match="coincide"):
        similarity(np.ones((5, 2)), template_points("arcface_128", 128))


def test_invert_and_transform_points_round_trip() -> None:
    m = _similarity(40, 1.7, 5, 9)
    pts = np.array([[1.0, 2.0], [30, -4], [0, 0]])
    np.testing.assert_allclose(transform_points(transform_points(pts, m), invert(m)), pts, atol=1e-9)


def test_warp_puts_each_landmark_on_its_template_point() -> None:
    frame = np.zeros((480, 640, 3), dtype=np.uint8)
    crop_to_frame = _similarity(-15, 2.5, 250, 130)
    landmarks = transform_points(template_points("arcface_112_v2", 112), crop_to_frame)
    for x, y in landmarks:
        cv2.circle(frame, (round(x), round(y)), 4, (255, 255, 255), -1)
    crop, matrix = align(frame, landmarks, "arcface_112_v2", 112)
    assert crop.shape == (112, 112, 3) and crop.dtype == np.uint8
    grey = crop[:, :, 0].astype(float)
    for tx, ty in template_points("arcface_112_v2", 112):
        x0, y0 = int(tx) - 4, int(ty) - 4
        window = grey[y0:y0 + 9, x0:x0 + 9]
        yy, xx = np.mgrid[y0:y0 + 9, x0:x0 + 9]
        centroid = np.array([(xx * window).sum(), (yy * window).sum()]) / window.sum()
        assert np.linalg.norm(centroid - [tx, ty]) < 1.0
    np.testing.assert_array_equal(crop, warp(frame, matrix, 112))
