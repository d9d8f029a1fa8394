from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.blend.mask import box_mask
from pipeline.blend.paste import paste_back, poisson_blend

S = 128


def similarity(angle_deg: float, scale: float, tx: float, ty: float) -> np.ndarray:
    """Frame -> crop similarity: rotate/scale about the origin, then translate."""
    a = np.deg2rad(angle_deg)
    c, s = scale * np.cos(a), scale * np.sin(a)
    return np.array([[c, -s, tx], [s, c, ty]], np.float64)


def face_matrix(cx: float, cy: float, face_px: float, angle_deg: float) -> np.ndarray:
    """Matrix mapping a face of ``face_px`` centred at (cx, cy) onto the S×S crop."""
    m = similarity(angle_deg, S / face_px, 0, 0)
    m[:, 2] = np.array([S / 2, S / 2]) - m[:, :2] @ np.array([cx, cy])
    return m


def noise_frame(h: int = 360, w: int = 480, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def reference_alpha(mask: np.ndarray, matrix: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The mask warped over the whole frame: independent of paste_back's ROI arithmetic."""
    return cv2.warpAffine(mask, matrix, (shape[1], shape[0]), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


@pytest.mark.parametrize("seed", range(6))
def test_pixels_outside_warped_mask_are_bit_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    frame = noise_frame(seed=seed)
    matrix = face_matrix(rng.uniform(60, 420), rng.uniform(60, 300), rng.uniform(60, 200),
                         rng.uniform(-40, 40))
    crop = np.full((S, S, 3), (0, 255, 0), np.uint8)
    mask = box_mask(S, 0.3, (5, 10, 0, 10))
    before = frame.copy()
    out = paste_back(frame, crop, matrix, mask)
    assert np.array_equal(frame, before), "input frame must not be mutated"
    alpha = reference_alpha(mask, matrix, frame.shape)
    outside = alpha == 0
    assert outside.any() and (~outside).any()
    assert np.array_equal(out[outside], frame[outside])
    # Inside, the swap shows: where the mask is fully on, the pixel is the crop's green.
    full = alpha > 0.999
    if full.any():
        assert np.abs(out[full].astype(int) - (0, 255, 0)).max() <= 1
    # Pixels that changed lie where the mask is on.
    changed = np.any(out != frame, axis=2)
    assert not np.any(changed & outside)


def test_alpha_blend_weights_follow_the_mask() -> None:
    frame = np.full((200, 200, 3), 100, np.uint8)
    matrix = face_matrix(100, 100, 100, 0)
    crop = np.full((S, S, 3), 200, np.uint8)
    mask = box_mask(S, 0.5)
    out = paste_back(frame, crop, matrix, mask)
    alpha = reference_alpha(mask, matrix, frame.shape)
    expected = 100 + 100 * alpha
    assert np.abs(out[..., 0].astype(float) - expected).max() <= 1.01


def test_round_trip_of_an_unchanged_crop_is_close() -> None:
    yy, xx = np.mgrid[0:300, 0:400]
    frame = np.stack([xx * 255 // 400, yy * 255 // 300, (xx + yy) * 255 // 700], axis=-1).astype(np.uint8)
    matrix = face_matrix(200, 150, 150, 15)
    crop = cv2.warpAffine(frame, matrix, (S, S), flags=cv2.INTER_LINEAR)
    out = paste_back(frame, crop, matrix, box_mask(S, 0.2))
    assert np.abs(out.astype(int) - frame.astype(int)).max() <= 3


def test_face_partly_outside_the_frame_and_empty_mask() -> None:
    frame = noise_frame(seed=3)
    matrix = face_matrix(5, 350, 150, 30)  # centre near the bottom-left corner
    crop = np.zeros((S, S, 3), np.uint8)
    mask = box_mask(S, 0.3)
    out = paste_back(frame, crop, matrix, mask)
    alpha = reference_alpha(mask, matrix, frame.shape)
    assert np.array_equal(out[alpha == 0], frame[alpha == 0])
    assert np.any(out != frame)
    empty = np.zeros((S, S), np.float32)
    assert np.array_equal(paste_back(frame, crop, matrix, empty), frame)
    off = face_matrix(-500, -500, 100, 0)  # wholly outside
    assert np.array_equal(paste_back(frame, crop, off, mask), frame)


def test_inplace_writes_the_given_frame() -> None:
    frame = noise_frame(seed=4)
    before = frame.copy()
    black = np.zeros((S, S, 3), np.uint8)
    out = paste_back(frame, black, face_matrix(240, 180, 120, 0), box_mask(S, 0.3), inplace=True)
    assert out is frame
    assert not np.array_equal(frame, before)


def test_poisson_keeps_outside_exact_and_matches_surroundings() -> None:
    frame = np.full((300, 300, 3), (40, 90, 160), np.uint8)
    frame = cv2.add(frame, noise_frame(300, 300, seed=5) // 16)
    matrix = face_matrix(150, 150, 140, 10)
    crop = np.full((S, S, 3), (220, 220, 30), np.uint8)
    mask = box_mask(S, 0.3)
    plain = paste_back(frame, crop, matrix, mask)
    cloned = paste_back(frame, crop, matrix, mask, poisson=True)
    alpha = reference_alpha(mask, matrix, frame.shape)
    assert np.array_equal(cloned[alpha == 0], frame[alpha == 0])
    # Poisson takes the crop's gradients (flat) and the frame's boundary colour: the centre ends up
    # near the frame's colour, far from the crop's flat colour that the alpha blend shows.
    centre = np.s_[140:160, 140:160]
    d_frame = np.abs(cloned[centre].astype(int) - frame[centre].astype(int)).mean()
    d_plain = np.abs(plain[centre].astype(int) - frame[centre].astype(int)).mean()
    assert d_frame < d_plain / 3


def test_faces_pasted_one_after_the_other_in_place_each_land_and_leave_the_rest() -> None:
    """The blend pastes a frame's faces one by one into the same frame (``inplace``)."""
    frame = noise_frame(seed=6)
    matrices = [face_matrix(120, 180, 100, 0), face_matrix(360, 180, 100, -20)]
    crops = [np.full((S, S, 3), 0, np.uint8), np.full((S, S, 3), 255, np.uint8)]
    mask = box_mask(S, 0.2)
    out = frame.copy()
    for crop, matrix in zip(crops, matrices, strict=True):
        assert paste_back(out, crop, matrix, mask, inplace=True) is out
    assert np.all(out[180, 120] == 0) and np.all(out[180, 360] == 255)
    union = np.maximum(reference_alpha(mask, matrices[0], frame.shape),
                       reference_alpha(mask, matrices[1], frame.shape))
    assert np.array_equal(out[union == 0], frame[union == 0])


def test_mask_crop_size_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="same size"):
        paste_back(noise_frame(), np.zeros((S, S, 3), np.uint8), face_matrix(200, 200, 100, 0), box_mask(64))


def test_poisson_blend_solver_properties() -> None:
    rng = np.random.default_rng(8)
    src = cv2.GaussianBlur(rng.integers(0, 256, (120, 150, 3), dtype=np.uint8), (0, 0), 2)
    dst = cv2.GaussianBlur(rng.integers(0, 256, (120, 150, 3), dtype=np.uint8), (0, 0), 2)
    mask = np.zeros((120, 150), np.float32)
    cv2.ellipse(mask, (75, 60), (40, 30), 0, 0, 360, 1.0, -1)
    # Blending an image into itself, or into itself plus a constant, returns it: only gradients count.
    assert np.array_equal(poisson_blend(dst, dst, mask), dst)
    assert np.array_equal(poisson_blend(cv2.add(dst, 30), dst, mask), dst)
    out = poisson_blend(src, dst, mask)
    assert np.array_equal(out, poisson_blend(src, dst, mask)), "must be deterministic"
    inside = mask > 0
    ys, xs = np.nonzero(inside)
    box = np.zeros_like(inside)
    box[ys.min():ys.max() + 1, xs.min():xs.max() + 1] = True
    assert np.array_equal(out[~box], dst[~box])  # outside the mask's bounding box: untouched

    def detail(im: np.ndarray) -> np.ndarray:
        green = im[..., 1]
        return (green.astype(float) - cv2.GaussianBlur(green, (0, 0), 3).astype(float))[inside]

    assert np.corrcoef(detail(out), detail(src))[0, 1] > 0.9
    assert np.array_equal(poisson_blend(src, dst, np.zeros_like(mask)), dst)
