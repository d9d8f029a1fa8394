from __future__ import annotations

import logging

import cv2
import numpy as np
import pytest

from pipeline.blend.mask import box_mask
from pipeline.blend.paste import paste_back
from pipeline.errors import NoFaceFound
from pipeline.faces.align import align, template_points
from pipeline.processors.face_swapper.classic import ClassicIdentity, ClassicSwapper
from pipeline.processors.face_swapper.color import to_lab
from pipeline.types import Face

log = logging.getLogger(__name__)
S = ClassicSwapper.crop_size


def synthetic_face_frame(seed: int, tint: tuple[int, int, int]) -> tuple[np.ndarray, Face]:
    """A textured frame and a Face whose landmarks are the template points under a known similarity."""
    rng = np.random.default_rng(seed)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (400, 500, 3), dtype=np.uint8), (0, 0), 3)
    frame = cv2.add(frame, np.full_like(frame, tint))
    angle, scale = np.deg2rad(rng.uniform(-20, 20)), rng.uniform(0.8, 1.4)
    rot = scale * np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    points = template_points(ClassicSwapper.template, S) @ rot.T + np.array([120.0, 80.0])
    box = np.array([*points.min(0) - 30, *points.max(0) + 30], np.float32)
    return frame, Face(box=box, landmarks=points.astype(np.float32), score=0.9)


def test_protocol_attributes() -> None:
    swapper = ClassicSwapper()
    assert (swapper.name, swapper.builtin, swapper.crop_size, swapper.template) == (
        "classic", True, 256, "ffhq_512")
    assert swapper.poisson is False and ClassicSwapper(poisson=True).poisson is True
    mask = swapper.face_mask
    assert mask.shape == (S, S) and mask.max() == pytest.approx(1.0)
    assert np.all(mask[0] == 0) and np.all(mask[-1] == 0)
    assert np.all(mask[:, 0] == 0) and np.all(mask[:, -1] == 0)
    # Eyes, nose and mouth are fully inside the face mask.
    for x, y in template_points(swapper.template, S):
        assert mask[int(round(y)), int(round(x))] == pytest.approx(1.0)


def test_prepare_source_aligns_and_averages() -> None:
    swapper = ClassicSwapper()
    a, b = synthetic_face_frame(1, (40, 0, 0)), synthetic_face_frame(2, (0, 0, 40))
    one = swapper.prepare_source([a])
    assert isinstance(one, ClassicIdentity) and one.count == 1
    assert np.array_equal(one.crop, align(a[0], a[1].landmarks, "ffhq_512", S)[0])
    two = swapper.prepare_source([a, b])
    crop_b = align(b[0], b[1].landmarks, "ffhq_512", S)[0]
    expected = (one.crop.astype(float) + crop_b.astype(float)) / 2
    assert two.count == 2 and np.abs(two.crop.astype(float) - expected).max() <= 0.5 + 1e-9
    with pytest.raises(NoFaceFound):
        swapper.prepare_source([])


@pytest.mark.parametrize("poisson", [False, True])
def test_swap_keeps_outer_ring_and_takes_source_inside(poisson: bool) -> None:
    swapper = ClassicSwapper(poisson=poisson)
    identity = swapper.prepare_source([synthetic_face_frame(3, (60, 20, 0))])
    targets = np.stack([align(f, face.landmarks, "ffhq_512", S)[0]
                        for f, face in (synthetic_face_frame(s, (0, 30, 70)) for s in (4, 5))])
    out = swapper.swap(targets, identity)
    assert out.shape == targets.shape and out.dtype == np.uint8
    outside = swapper.face_mask == 0
    assert np.array_equal(out[:, outside], targets[:, outside])
    inside = swapper.inner_mask > 0.99
    for swapped, target in zip(out, targets, strict=True):
        # The source's texture shows inside: correlate high-pass detail with the source crop's.
        def detail(img: np.ndarray) -> np.ndarray:
            grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY).astype(np.float32)
            return (grey - cv2.GaussianBlur(grey, (0, 0), 4))[inside]

        corr_src = np.corrcoef(detail(swapped), detail(identity.crop))[0, 1]
        corr_tgt = np.corrcoef(detail(swapped), detail(target))[0, 1]
        assert corr_src > 0.8 and corr_tgt < 0.3
        # ...in the target's colours.
        mean_out = to_lab(swapped)[inside].mean(0)
        mean_tgt = to_lab(target)[inside].mean(0)
        mean_src = to_lab(identity.crop)[inside].mean(0)
        assert np.abs(mean_out - mean_tgt).max() < 0.25 * np.abs(mean_src - mean_tgt).max() + 3


def test_swap_rejects_foreign_identity_and_wrong_shape() -> None:
    swapper = ClassicSwapper()
    identity = swapper.prepare_source([synthetic_face_frame(6, (0, 0, 0))])
    with pytest.raises(TypeError):
        swapper.swap(np.zeros((1, S, S, 3), np.uint8), np.zeros(512, np.float32))
    with pytest.raises(ValueError):
        swapper.swap(np.zeros((1, 128, 128, 3), np.uint8), identity)


def test_real_photos_identity_moves_to_source() -> None:
    """Product acceptance: grace_hopper swapped onto the astronaut is recognised as grace_hopper."""
    photos = pytest.importorskip("tests.photos")
    yunet = pytest.importorskip("pipeline.faces.yunet")
    sface = pytest.importorskip("pipeline.faces.sface")
    recognise = pytest.importorskip("pipeline.faces.recognise")
    detector, recogniser = yunet.YuNetDetector(), sface.SFaceRecogniser()
    grace, astro = photos.grace_hopper(), photos.astronaut()
    faces_g, faces_a = detector.detect([grace, astro])
    assert faces_g and faces_a
    e_grace = recognise.embed_faces(recogniser, grace, faces_g[:1])[0]
    before = recognise.cosine(e_grace, recognise.embed_faces(recogniser, astro, faces_a[:1])[0])
    for poisson in (False, True):
        swapper = ClassicSwapper(poisson=poisson)
        identity = swapper.prepare_source([(grace, faces_g[0])])
        crop, matrix = align(astro, faces_a[0].landmarks, swapper.template, swapper.crop_size)
        swapped = swapper.swap(crop[None], identity)[0]
        mask = box_mask(swapper.crop_size, 0.3)
        result = paste_back(astro, swapped, matrix, mask)
        # Outside the pasted area the astronaut photo is untouched.
        alpha = cv2.warpAffine(mask, matrix, astro.shape[1::-1],
                               flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP)
        assert np.array_equal(result[alpha == 0], astro[alpha == 0])
        found = detector.detect([result])[0]
        assert found, "the swapped face must still be detected"
        after = recognise.cosine(e_grace, recognise.embed_faces(recogniser, result, found[:1])[0])
        log.info("classic swap poisson=%s: SFace cosine to grace %.3f (astronaut before: %.3f)",
                 poisson, after, before)
        assert after - before >= 0.3, f"poisson={poisson}: cosine {after:.3f} vs {before:.3f} before"
