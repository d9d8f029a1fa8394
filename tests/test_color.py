from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.blend.mask import ellipse_mask
from pipeline.processors.face_swapper.color import to_lab, transfer

S = 128


def textured(base_bgr: tuple[int, int, int], tint: tuple[float, float, float], seed: int) -> np.ndarray:
    """A smooth, textured, face-sized crop: a tinted gradient plus blurred noise around a base colour."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:S, 0:S].astype(np.float32) / S
    img = np.empty((S, S, 3), np.float32)
    for c in range(3):
        img[..., c] = base_bgr[c] + tint[c] * (xx - 0.5) * 60 + 25 * (yy - 0.5)
    noise = cv2.GaussianBlur(rng.normal(0, 18, (S, S, 3)).astype(np.float32), (0, 0), 2)
    return np.clip(img + noise, 0, 255).astype(np.uint8)


def face_mask() -> np.ndarray:
    return ellipse_mask(S, (S / 2, S / 2), (S * 0.35, S * 0.42), feather=6)


def lab_stats(crop: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lab = to_lab(crop)[mask > 0.5].astype(np.float64)
    return lab.mean(0), lab.std(0)


def hist_distance(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    """Sum over channels of the 1-D Wasserstein distance (L1 between CDFs) of the masked 8-bit values."""
    sel = mask > 0.5
    total = 0.0
    for c in range(3):
        ca = np.cumsum(np.bincount(a[..., c][sel], minlength=256)) / sel.sum()
        cb = np.cumsum(np.bincount(b[..., c][sel], minlength=256)) / sel.sum()
        total += float(np.abs(ca - cb).sum())
    return total


PAIRS = [
    (((90, 120, 180), (1.0, 0.5, -0.5), 1), ((150, 140, 120), (-0.3, 0.2, 1.0), 2)),  # warm -> cool light
    (((60, 80, 110), (0.2, 0.2, 0.2), 3), ((170, 190, 220), (0.5, -0.5, 0.0), 4)),  # dark -> bright
    (((120, 160, 200), (0.0, 1.0, 0.0), 5), ((80, 150, 90), (0.3, 0.3, 1.0), 6)),  # skin -> green cast
]


@pytest.mark.parametrize("method", ["reinhard", "mkl"])
@pytest.mark.parametrize(("src_args", "tgt_args"), PAIRS)
def test_lab_mean_matches_target_inside_mask(method: str, src_args: tuple, tgt_args: tuple) -> None:
    source, target = textured(*src_args), textured(*tgt_args)
    mask = face_mask()
    before = np.abs(lab_stats(source, mask)[0] - lab_stats(target, mask)[0]).max()
    out = transfer(source, target, method, 1.0, mask)  # type: ignore[arg-type]
    assert out.shape == source.shape and out.dtype == np.uint8
    mean_out, std_out = lab_stats(out, mask)
    mean_t, std_t = lab_stats(target, mask)
    assert before > 10, "the test pair must start out different"
    assert np.abs(mean_out - mean_t).max() < 3.0
    assert np.abs(std_out - std_t).max() < 3.0


def test_mkl_matches_channel_covariance_better_than_reinhard() -> None:
    source = textured((100, 130, 170), (1.0, 0.5, -0.5), 11)
    target = textured((140, 140, 120), (-1.0, 0.2, 1.0), 12)
    mask = face_mask()

    def cov(crop: np.ndarray) -> np.ndarray:
        return np.cov(to_lab(crop)[mask > 0.5].astype(np.float64), rowvar=False)

    err_mkl = np.abs(cov(transfer(source, target, "mkl", 1.0, mask)) - cov(target)).sum()
    err_rh = np.abs(cov(transfer(source, target, "reinhard", 1.0, mask)) - cov(target)).sum()
    assert err_mkl < err_rh


def test_statistics_come_from_inside_the_mask_only() -> None:
    source = textured((90, 120, 180), (0.5, 0.5, 0.5), 21)
    target = textured((150, 140, 120), (0.5, 0.5, 0.5), 22)
    mask = face_mask()
    polluted = target.copy()
    polluted[mask <= 0.5] = (0, 255, 0)  # a loud background outside the mask
    a = transfer(source, target, "reinhard", 1.0, mask)
    b = transfer(source, polluted, "reinhard", 1.0, mask)
    assert np.array_equal(a, b)


def test_histogram_matching_reduces_histogram_distance() -> None:
    source = textured((90, 120, 180), (1.0, 0.5, -0.5), 31)
    target = textured((150, 140, 120), (-0.3, 0.2, 1.0), 32)
    mask = face_mask()
    before = hist_distance(source, target, mask)
    after = hist_distance(transfer(source, target, "histogram", 1.0, mask), target, mask)
    assert after < 0.1 * before


@pytest.mark.parametrize("method", ["none", "reinhard", "mkl", "histogram"])
def test_strength_zero_and_none_leave_input_unchanged(method: str) -> None:
    source, target = textured((90, 120, 180), (1, 0, 0), 41), textured((150, 140, 120), (0, 0, 1), 42)
    out = transfer(source, target, method, 0.0, face_mask())  # type: ignore[arg-type]
    assert np.array_equal(out, source) and out is not source
    if method == "none":
        assert np.array_equal(transfer(source, target, "none", 1.0, None), source)


def test_strength_interpolates() -> None:
    source, target = textured((90, 120, 180), (1, 0, 0), 51), textured((170, 150, 120), (0, 0, 1), 52)
    mask = face_mask()
    full = transfer(source, target, "reinhard", 1.0, mask)
    half = transfer(source, target, "reinhard", 0.5, mask)
    expected = (source.astype(float) + full.astype(float)) / 2
    assert np.abs(half.astype(float) - expected).max() <= 1.0


def test_without_mask_uses_whole_crop_and_rejects_bad_input() -> None:
    source, target = textured((90, 120, 180), (1, 0, 0), 61), textured((170, 150, 120), (0, 0, 1), 62)
    out = transfer(source, target, "reinhard", 1.0, None)
    full = np.ones((S, S), np.float32)
    assert np.abs(lab_stats(out, full)[0] - lab_stats(target, full)[0]).max() < 3.0
    with pytest.raises(ValueError):
        transfer(source, target, "reinhard", 1.5, None)
    with pytest.raises(ValueError):
        transfer(source, target, "sepia", 1.0, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        transfer(source, target, "reinhard", 1.0, np.ones((8, 8), np.float32))


def test_flat_source_does_not_blow_up() -> None:
    flat = np.full((S, S, 3), 128, np.uint8)
    target = textured((150, 140, 120), (0, 0, 1), 71)
    for method in ("reinhard", "mkl", "histogram"):
        out = transfer(flat, target, method, 1.0, face_mask())  # type: ignore[arg-type]
        assert np.isfinite(out).all()
        assert np.abs(lab_stats(out, face_mask())[0] - lab_stats(target, face_mask())[0])[0] < 3.0


@pytest.mark.parametrize("method", ["reinhard", "mkl"])
def test_real_photos_lab_mean(method: str) -> None:
    photos = pytest.importorskip("tests.photos")
    align = pytest.importorskip("pipeline.faces.align")
    # Fixed face landmarks (YuNet 2023mar on these photos, rounded) so this test needs no detector.
    grace = align.align(photos.grace_hopper(), GRACE_LANDMARKS, "arcface_128", 256)[0]
    astro = align.align(photos.astronaut(), ASTRONAUT_LANDMARKS, "arcface_128", 256)[0]
    mask = ellipse_mask(256, (128, 150), (80, 105), feather=12)
    out = transfer(grace, astro, method, 1.0, mask)  # type: ignore[arg-type]
    assert np.abs(lab_stats(grace, mask)[0] - lab_stats(astro, mask)[0]).max() > 5
    assert np.abs(lab_stats(out, mask)[0] - lab_stats(astro, mask)[0]).max() < 3.0


GRACE_LANDMARKS = np.array([[227.8, 193.7], [307.9, 195.5], [266.9, 240.1], [229.2, 267.6], [302.1, 269.9]])
ASTRONAUT_LANDMARKS = np.array([[200.1, 101.8], [247.2, 102.6], [220.3, 124.7], [198.9, 143.2],
                                [239.8, 143.9]])
