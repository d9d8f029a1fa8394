from __future__ import annotations

import numpy as np
import pytest

from pipeline.blend.mask import box_mask, combine, ellipse_mask


def test_box_mask_shape_range_and_zero_border() -> None:
    m = box_mask(128, 0.3)
    assert m.shape == (128, 128) and m.dtype == np.float32
    assert m.min() == 0.0 and m.max() == pytest.approx(1.0)
    assert np.all(m[0] == 0) and np.all(m[-1] == 0) and np.all(m[:, 0] == 0) and np.all(m[:, -1] == 0)
    assert m[64, 64] == pytest.approx(1.0)


def test_box_mask_is_zero_outside_padded_box() -> None:
    size = 200
    m = box_mask(size, 0.2, (10, 20, 30, 5))  # top, right, bottom, left in %
    top, right, bottom, left = 20, 40, 60, 10  # pixels
    assert np.all(m[: top + 1] == 0)
    assert np.all(m[size - 1 - bottom :] == 0)
    assert np.all(m[:, : left + 1] == 0)
    assert np.all(m[:, size - 1 - right :] == 0)
    inner = m[top + 1 : size - 1 - bottom, left + 1 : size - 1 - right]
    assert np.all(inner > 0)
    cy, cx = (top + size - 1 - bottom) // 2, (left + size - 1 - right) // 2
    assert m[cy, cx] == pytest.approx(1.0)


def test_blur_widens_the_feather_monotonically() -> None:
    sharp, soft = box_mask(256, 0.05), box_mask(256, 0.5)
    row_sharp, row_soft = sharp[128], soft[128]
    # The feathered band (0 < m < 1) is wider with more blur, and the profile rises monotonically.
    band_soft = np.count_nonzero((row_soft > 0) & (row_soft < 1))
    assert band_soft > 3 * np.count_nonzero((row_sharp > 0) & (row_sharp < 1))
    assert np.all(np.diff(row_soft[:128]) >= 0)
    assert np.all(soft <= sharp + 1e-6)


def test_box_mask_zero_blur_is_still_zero_on_the_border() -> None:
    m = box_mask(64, 0.0)
    assert np.all(m[0] == 0) and np.all(m[:, -1] == 0)
    assert np.all(m[1:-1, 1:-1] == 1.0)


def test_box_mask_is_cached_and_read_only() -> None:
    a, b = box_mask(96, 0.3, (5, 5, 5, 5)), box_mask(96, 0.3, (5, 5, 5, 5))
    assert a is b
    with pytest.raises(ValueError):
        a[0, 0] = 1.0


@pytest.mark.parametrize("kwargs", [{"blur": 1.5}, {"blur": -0.1}, {"padding": (0, 0, 0, 101)},
                                    {"padding": (0, 0)}])
def test_box_mask_rejects_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        box_mask(64, **kwargs)


def test_full_padding_gives_empty_mask() -> None:
    assert not box_mask(64, 0.3, (50, 0, 50, 0)).any()


def test_combine_is_elementwise_minimum() -> None:
    rng = np.random.default_rng(0)
    a, b, c = (rng.random((32, 32), dtype=np.float32) for _ in range(3))
    out = combine(a, b, c)
    assert np.array_equal(out, np.minimum(np.minimum(a, b), c))
    assert out is not a
    with pytest.raises(ValueError):
        combine(a, np.zeros((8, 8), np.float32))
    with pytest.raises(ValueError):
        combine()


def test_ellipse_mask_inside_outside() -> None:
    m = ellipse_mask(100, (50, 40), (30, 20), feather=6)
    assert m[40, 50] == pytest.approx(1.0)
    assert m[40, 50 + 31] == 0 and m[40 + 21, 50] == 0 and m[0, 0] == 0
    assert 0 < m[40, 50 + 28] < 1  # inside the feather band
