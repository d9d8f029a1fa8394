"""Model masks (occlusion, face regions), the mouth-area mask, 68-point landmarks, and how FaceProcessor
combines them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.blend.mask import box_mask
from pipeline.blend.mouth import mouth_mask
from pipeline.blend.occlusion import Occluder
from pipeline.blend.region import FaceParser, region_classes
from pipeline.errors import ModelMismatch, UserError
from pipeline.faces import align
from pipeline.faces.landmark68 import Landmarker68, box_matrix, five_from_68
from pipeline.models import catalog
from pipeline.process import FaceProcessor
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.surrogates import default_classes, default_landmarks68, install_surrogate, make_surrogate

ALL_BUT_MOUTH = "skin,left-eyebrow,right-eyebrow,left-eye,right-eye,glasses,nose,upper-lip,lower-lip"


def _processor(*overrides: str) -> FaceProcessor:
    install_surrogate("inswapper_128", alpha=0.8)
    install_surrogate("arcface_w600k_r50")
    settings = apply_overrides(Settings(), ["swapper.model=inswapper_128", "color.method=none",
                                            "selector.mode=one", *overrides])
    return FaceProcessor(settings, [photos.grace_hopper_path()])


def _in_crop_rect(matrix: np.ndarray, shape: tuple[int, ...],
                  rect: tuple[float, float, float, float]) -> np.ndarray:
    """Frame pixels whose position in the crop (under ``matrix``, frame -> crop) lies inside ``rect``
    (x0, y0, x1, y1)."""
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    pts = align.transform_points(np.stack([xx.ravel(), yy.ravel()], 1), matrix)
    x0, y0, x1, y1 = rect
    inside = (pts[:, 0] >= x0) & (pts[:, 0] < x1) & (pts[:, 1] >= y0) & (pts[:, 1] < y1)
    return inside.reshape(shape[:2])


def _run(proc: FaceProcessor, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    faces = proc.select(frame, proc.detect([frame])[0])
    items = proc.swap([frame], [faces])[0]
    return proc.blend(frame, items), items[0].matrix


def test_occluded_square_keeps_the_target_pixels() -> None:
    occluded = np.ones((256, 256), np.float32)
    occluded[130:200, 60:130] = 0.0  # crop 128: rows 65-100, cols 30-65
    install_surrogate("xseg", mask=occluded)
    target = photos.astronaut()
    out, matrix = _run(_processor("mask.types=box,occlusion"), target)
    square = _in_crop_rect(matrix, target.shape, (33, 68, 62, 97))
    assert square.sum() > 500
    assert np.array_equal(out[square], target[square])
    cheek = _in_crop_rect(matrix, target.shape, (70, 40, 100, 60))
    assert np.abs(out[cheek].astype(int) - target[cheek]).mean() > 5  # the rest of the face is swapped


def test_region_mask_without_mouth_keeps_the_mouth_exactly() -> None:
    classes = default_classes(512)
    classes[300:400, 180:330] = 11  # a large mouth: crop 128 rows 75-100, cols 45-82
    install_surrogate("bisenet_resnet34", classes=classes)
    target = photos.astronaut()
    out, matrix = _run(_processor("mask.types=box,region", f"mask.regions={ALL_BUT_MOUTH}"), target)
    mouth = _in_crop_rect(matrix, target.shape, (48, 78, 79, 97))
    assert mouth.sum() > 300
    assert np.array_equal(out[mouth], target[mouth])
    nose = _in_crop_rect(matrix, target.shape, (60, 60, 68, 72))
    assert np.abs(out[nose].astype(int) - target[nose]).mean() > 5
    # with the mouth among the regions it is swapped like the rest
    out_all, _ = _run(_processor("mask.types=box,region", f"mask.regions={ALL_BUT_MOUTH},mouth"), target)
    assert np.abs(out_all[mouth].astype(int) - target[mouth]).mean() > 5


def test_combined_mask_is_the_minimum_of_its_parts() -> None:
    occluded = np.ones((256, 256), np.float32)
    occluded[0:80, :] = 0.0
    install_surrogate("xseg", mask=occluded)
    install_surrogate("bisenet_resnet34")
    proc = _processor("mask.types=box,occlusion,region,mouth", "mask.regions=skin,nose,upper-lip,lower-lip")
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    item = proc.swap([target], [faces])[0][0]
    crops = item.crop[None]
    parts = [
        box_mask(128, proc.settings.mask.blur),
        Occluder("xseg").masks(crops)[0],
        FaceParser().masks(crops, ["skin", "nose", "upper-lip", "lower-lip"])[0],
        mouth_mask(128, align.transform_points(faces[0].landmarks, item.matrix)),
    ]
    assert item.mask is not None
    assert np.array_equal(item.mask, np.minimum.reduce(parts))
    assert all(np.any(item.mask < p - 0.1) for p in parts[:1])  # the other parts really cut into the box
    assert proc.models == ["yunet", "inswapper_128", "arcface_w600k_r50", "xseg", "bisenet_resnet34"]


def test_default_settings_keep_the_plain_box_mask() -> None:
    proc = _processor()
    target = photos.astronaut()
    item = proc.swap([target], [proc.select(target, proc.detect([target])[0])])[0][0]
    assert item.mask is None and proc.occluder is None and proc.parser is None and proc.enhancer is None


def test_occluder_and_parser_refuse_wrong_files(isolated_dirs: dict[str, Path]) -> None:
    make_surrogate("bisenet_resnet34", isolated_dirs["models"] / catalog.get("xseg").file)
    with pytest.raises(ModelMismatch):
        Occluder("xseg").masks(np.zeros((1, 128, 128, 3), np.uint8))
    with pytest.raises(UserError, match="unknown face region"):
        region_classes(["skin", "ears"])


def test_mouth_mask_from_five_and_from_68_points() -> None:
    five = align.template_points("arcface_128", 128)
    m5 = mouth_mask(128, five)
    cx, cy = five[3:].mean(0)
    assert m5[int(cy), int(cx)] == 0.0 and m5[int(five[0, 1]), int(five[0, 0])] == 1.0
    pts68 = default_landmarks68(128)
    m68 = mouth_mask(128, five, pts68)
    inner = pts68[60:68].mean(0)
    assert m68[int(inner[1]), int(inner[0])] == 0.0
    assert m68[int(pts68[30, 1]), int(pts68[30, 0])] == 1.0  # nose tip untouched
    assert 0 < (m68 < 1).sum() < 0.05 * m68.size


def test_landmarker_maps_points_back_to_the_frame_and_refines_five() -> None:
    install_surrogate("2dfan4")
    frame = photos.astronaut()
    proc = _processor()
    face = proc.select(frame, proc.detect([frame])[0])[0]
    refined = Landmarker68().refine(frame, [face])[0]
    expected = align.transform_points(default_landmarks68(256), align.invert(box_matrix(face.box)))
    assert refined.landmarks68 is not None
    assert np.allclose(refined.landmarks68, expected, atol=0.05)
    assert np.allclose(refined.landmarks, five_from_68(expected), atol=0.05)


def test_processor_aligns_with_refined_landmarks_when_installed() -> None:
    frame = photos.astronaut()
    missing = _processor("landmarks.model=2dfan4")
    assert any("2dfan4" in n and "not installed" in n for n in missing.notices)
    install_surrogate("2dfan4", confidence=0.9)
    proc = _processor("landmarks.model=2dfan4", "mask.types=box,mouth")
    face = proc.select(frame, proc.detect([frame])[0])[0]
    assert face.landmarks68 is not None and "2dfan4" in proc.models
    item = proc.swap([frame], [[face]])[0][0]
    assert np.allclose(item.matrix, align.estimate(five_from_68(face.landmarks68), "arcface_128", 128))
    low = _processor("landmarks.model=2dfan4")
    install_surrogate("2dfan4", confidence=0.1)  # not confident: the detector's points stay
    assert low.select(frame, low.detect([frame])[0])[0].landmarks68 is None
