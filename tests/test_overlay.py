"""The face debugger overlay: a pure drawing of boxes, landmarks, mask outlines and distances."""

from __future__ import annotations

import numpy as np

from pipeline.blend.mask import box_mask
from pipeline.faces import align
from pipeline.overlay import CHOSEN, OTHER, OUTLINE, POINTS5, draw_debug, mask_outline
from pipeline.types import Face


def _face(x: int, y: int, side: int = 100) -> Face:
    landmarks = (align.TEMPLATES["arcface_128"] * side + [x, y]).astype(np.float32)
    return Face(box=np.array([x, y, x + side, y + side], np.float32), landmarks=landmarks, score=0.9)


def _has(image: np.ndarray, colour: tuple[int, int, int], region: tuple[slice, slice]) -> bool:
    return bool(np.all(image[region] == colour, axis=-1).any())


def test_draws_boxes_landmarks_outline_and_distance_without_touching_the_input() -> None:
    frame = np.full((300, 400, 3), 90, np.uint8)
    before = frame.copy()
    a, b = _face(40, 60), _face(240, 60)
    matrix = align.estimate(a.landmarks, "arcface_128", 128)
    out = draw_debug(frame, [a, b], chosen=[a], masks=[(box_mask(128, 0.3), matrix)], distances=[0.25, None])
    assert np.array_equal(frame, before) and out is not frame
    assert _has(out, CHOSEN, (slice(58, 63), slice(40, 140)))  # a's top edge, green
    assert _has(out, OTHER, (slice(58, 63), slice(240, 340)))  # b's top edge, red
    lx, ly = (int(round(v)) for v in a.landmarks[2])
    assert _has(out, POINTS5, (slice(ly - 1, ly + 2), slice(lx - 1, lx + 2)))
    assert _has(out, OUTLINE, (slice(60, 160), slice(40, 140)))
    assert not _has(out, OUTLINE, (slice(0, 300), slice(200, 400)))  # only the swapped face has a mask
    below_a, below_b = (slice(162, 180), slice(40, 140)), (slice(162, 180), slice(240, 340))
    assert np.any(out[below_a] != 90) and not np.any(out[below_b] != 90)  # distance text only where given


def test_mask_outline_follows_the_half_level_in_frame_space() -> None:
    mask = np.zeros((64, 64), np.float32)
    mask[16:48, 16:48] = 1.0
    matrix = np.array([[0.5, 0, -10], [0, 0.5, -20]], np.float64)  # frame -> crop: scale 1/2, shifted
    (polygon,) = mask_outline(mask, matrix)
    xs, ys = polygon[:, 0], polygon[:, 1]
    assert (xs.min(), ys.min()) == (52, 72) and (xs.max(), ys.max()) == (114, 134)
