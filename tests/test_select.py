from __future__ import annotations

from typing import get_args

import numpy as np
import pytest

from pipeline.errors import UserError
from pipeline.faces.recognise import aligned_crops, with_embeddings
from pipeline.faces.select import select
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yunet import YuNetDetector
from pipeline.types import Face, SelectorOrder
from tests import photos


def _face(x: float, y: float, side: float, score: float = 0.9, embedding: list[float] | None = None) -> Face:
    box = np.array([x, y, x + side, y + side], dtype=np.float32)
    landmarks = np.zeros((5, 2), dtype=np.float32)
    e = None if embedding is None else np.asarray(embedding, dtype=np.float32) / np.linalg.norm(embedding)
    return Face(box=box, landmarks=landmarks, score=score, embedding=e)


# positions chosen so that every order gives a different sequence
A = _face(300, 10, 50, 0.70)   # right, top, middle size
B = _face(10, 200, 120, 0.95)  # left, bottom, largest
C = _face(150, 100, 20, 0.80)  # middle, middle, smallest
FACES = [A, B, C]


@pytest.mark.parametrize(("order", "expected"), [
    ("large-small", [B, A, C]),
    ("small-large", [C, A, B]),
    ("left-right", [B, C, A]),
    ("right-left", [A, C, B]),
    ("top-bottom", [A, C, B]),
    ("best-score", [B, C, A]),
])
def test_many_sorts_by_order(order: SelectorOrder, expected: list[Face]) -> None:
    assert select(FACES, "many", order) == expected


def test_every_order_is_handled() -> None:
    for order in get_args(SelectorOrder):
        assert len(select(FACES, "many", order)) == 3


def test_one_is_the_largest_whatever_the_order() -> None:
    assert select(FACES, "one") == [B]
    assert select(FACES, "one", "small-large") == [B]
    assert select([], "one") == []


def test_min_size_filters_small_faces() -> None:
    assert select(FACES, "many", "left-right", min_size=40) == [B, A]
    assert select(FACES, "one", min_size=200) == []


def test_reference_keeps_near_faces_nearest_first() -> None:
    ref = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    near = _face(0, 0, 30, embedding=[1.0, 0.1, 0.0])     # distance ~0.005
    middle = _face(50, 0, 80, embedding=[1.0, 1.0, 0.0])  # distance ~0.29
    far = _face(90, 0, 90, embedding=[0.0, 1.0, 0.0])     # distance 1.0
    assert select([far, middle, near], "reference", reference=ref) == [near, middle]
    assert select([far, middle, near], "reference", reference=ref, max_distance=0.1) == [near]
    assert select([far, middle, near], "reference", reference=ref, max_distance=1.0) == [near, middle, far]
    assert select([far, middle, near], "reference", reference=ref, min_size=50) == [middle]


def test_reference_mode_without_reference_is_a_user_error() -> None:
    with pytest.raises(UserError, match="needs a reference face"):
        select(FACES, "reference")


def test_reference_needs_embeddings_of_the_same_length() -> None:
    with pytest.raises(ValueError, match="no embedding"):
        select(FACES, "reference", reference=np.ones(3, np.float32))
    face = _face(0, 0, 10, embedding=[1.0, 0.0])
    with pytest.raises(UserError, match="recogniser"):
        select([face], "reference", reference=np.ones(3, np.float32))


def test_unknown_mode_and_order() -> None:
    with pytest.raises(UserError, match="known: one, many, reference"):
        select(FACES, "all")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="unknown face order"):
        select(FACES, "many", "random")  # type: ignore[arg-type]


def test_reference_picks_the_same_person_in_t1() -> None:
    image = photos.t1()
    recogniser = SFaceRecogniser()
    faces = with_embeddings(recogniser, image, YuNetDetector().detect([image])[0])
    assert len(faces) == 6
    for index in range(len(faces)):
        # the reference comes from the crop itself, embedded separately from the batch
        reference = recogniser.embed(aligned_crops(recogniser, image, [faces[index]]))[0]
        chosen = select(faces, "reference", reference=reference)  # default max_distance 0.6
        assert chosen == [faces[index]]
