"""Face mapping: several source identities onto several chosen people, each picked by a reference face."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline.chain import Chain, Work
from pipeline.errors import UserError
from pipeline.faces.mapping import assign, distances, identity_of
from pipeline.faces.recognise import cosine, embed_faces
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yunet import YuNetDetector
from pipeline.process import FaceProcessor
from pipeline.settings import Settings, apply_overrides
from pipeline.types import Face
from tests import photos


def _face(x: float, emb: list[float]) -> Face:
    return Face(box=np.array([x, 0, x + 10, 10], np.float32), landmarks=np.zeros((5, 2), np.float32),
                score=0.9, embedding=np.asarray(emb, np.float32))


def test_assign_is_one_to_one_nearest_first_within_the_threshold() -> None:
    refs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    a, b, c = _face(0, [0.9, 0.1, 0]), _face(20, [0.8, 0.0, 0.2]), _face(40, [0.1, 1.0, 0])
    chosen = assign([a, b, c], refs, max_distance=0.3)
    # b loses reference 0 to the nearer a
    assert [(f.box[0], identity_of(f)) for f in chosen] == [(0, 0), (40, 1)]
    assert distances([a], refs)[0, 0] == pytest.approx(1 - cosine([0.9, 0.1, 0], [1, 0, 0]))
    assert assign([c], refs[:1], max_distance=0.3) == []  # too far from every reference
    assert identity_of(a) == 0 and "identity" not in a.extra  # the input faces are not changed


def _cut(image: np.ndarray, face: Face, folder: Path, name: str) -> Path:
    """A reference photo: the face with a wide margin, cut from ``image``."""
    x1, y1, x2, y2 = (int(v) for v in face.box)
    w, h = x2 - x1, y2 - y1
    crop = image[max(0, y1 - h):y2 + h, max(0, x1 - w):x2 + w]
    path = folder / f"{name}.png"
    cv2.imwrite(str(path), crop)
    return path


def test_two_sources_replace_exactly_the_two_chosen_people_in_t1(tmp_path: Path) -> None:
    target = photos.t1()
    detector, recogniser = YuNetDetector(), SFaceRecogniser()
    faces = sorted(detector.detect([target])[0], key=lambda f: f.center[0])
    assert len(faces) == 6
    first, second = faces[2], faces[4]
    refs = [_cut(target, first, tmp_path, "ref_a"), _cut(target, second, tmp_path, "ref_b")]
    astronaut = photos.astronaut_path(tmp_path)
    settings = apply_overrides(Settings(), {"face_swapper.model": "classic",
                                            "selector.mapping": [str(r) for r in refs],
                                            "selector.reference_distance": 0.5})
    proc = FaceProcessor(settings, [photos.grace_hopper_path(), astronaut])
    assert "sface" in proc.models
    chosen = proc.select(target, proc.detect([target])[0])
    assert sorted((round(float(f.center[0])), identity_of(f)) for f in chosen) == [
        (round(first.center[0]), 0), (round(second.center[0]), 1)]
    out = Chain(proc).through([Work(target, list(chosen))])[0].out
    assert out is not None

    changed = np.any(out != target, axis=2)
    for i, face in enumerate(faces):
        x1, y1, x2, y2 = (int(v) for v in face.box)
        touched = changed[y1:y2, x1:x2].mean()
        assert (touched > 0.3) == (i in (2, 4)), (i, touched)
    # nothing changed outside the two faces' neighbourhoods
    near = np.zeros(target.shape[:2], bool)
    for face in (first, second):
        x1, y1, x2, y2 = (int(v) for v in face.box)
        w, h = x2 - x1, y2 - y1
        near[max(0, y1 - h):y2 + h, max(0, x1 - w):x2 + w] = True
    assert not changed[~near].any()
    # each chosen person wears its own source
    new = detector.detect([out])[0]
    src = [embed_faces(recogniser, im, [max(detector.detect([im])[0], key=lambda f: f.area)])[0]
           for im in (photos.grace_hopper(), photos.astronaut())]
    for face, mine, other in ((first, 0, 1), (second, 1, 0)):
        got = min(new, key=lambda f: np.hypot(*(np.subtract(f.center, face.center))))
        e = embed_faces(recogniser, out, [got])[0]
        assert cosine(e, src[mine]) > cosine(e, src[other]) + 0.1


def test_mapping_needs_one_reference_per_source(tmp_path: Path) -> None:
    settings = apply_overrides(Settings(), {"face_swapper.model": "classic",
                                            "selector.mapping": [str(photos.astronaut_path(tmp_path))]})
    with pytest.raises(UserError, match="one reference per source"):
        FaceProcessor(settings, [photos.grace_hopper_path(), photos.grace_hopper_path()])
