"""Model masks (occlusion, face regions), the mouth-area mask, 68-point landmarks, and how FaceProcessor
combines them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.blend import area
from pipeline.blend.mask import box_mask
from pipeline.blend.mouth import mouth_mask
from pipeline.blend.occlusion import Occluder
from pipeline.blend.region import FaceParser, region_classes
from pipeline.errors import ModelMismatch, UserError
from pipeline.faces import align
from pipeline.faces.landmark68 import Landmarker68, box_matrix, five_from_68
from pipeline.models import catalog
from pipeline.plan import ModelPlan
from pipeline.process import FaceProcessor
from pipeline.settings import Settings, apply_overrides
from tests import photos, steps
from tests.surrogates import (
    default_classes,
    default_landmarks68,
    install_face_swapper,
    install_surrogate,
    make_surrogate,
)

ALL_BUT_MOUTH = "skin,left-eyebrow,right-eyebrow,left-eye,right-eye,glasses,nose,upper-lip,lower-lip"


def _processor(*overrides: str) -> FaceProcessor:
    install_face_swapper("inswapper_128")  # a face of another shape: it shows through the colour matching
    install_surrogate("arcface_w600k_r50")
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one",
                                            *overrides])
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
    items = steps.swap(proc, [frame], [faces])[0]
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
    item = steps.swap(proc, [target], [faces])[0][0]
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
    item = steps.swap(proc, [target], [proc.select(target, proc.detect([target])[0])])[0][0]
    models = proc.face_models
    assert item.mask is None and models.occluder is None and models.parser is None
    assert [p.name for p in proc.processors] == ["face_swapper"]


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
    item = steps.swap(proc, [frame], [[face]])[0][0]
    assert np.allclose(item.matrix, align.estimate(five_from_68(face.landmarks68), "arcface_128", 128))
    low = _processor("landmarks.model=2dfan4")
    install_surrogate("2dfan4", confidence=0.1)  # not confident: the detector's points stay
    assert low.select(frame, low.detect([frame])[0])[0].landmarks68 is None


# --- the area mask (mask.types area, mask.areas) ------------------------------------------------------------

def test_area_masks_are_the_hull_of_their_points_feathered_inside_it() -> None:
    """FaceFusion's sets of the 68 points, one hull for the chosen areas, σ 5 and (clip(0.5, 1) − 0.5)·2: 1
    well inside, exactly 0 outside the hull."""
    import cv2

    points = default_landmarks68(512).astype(np.float64)
    lower = area.area_mask(512, ["lower-face"], points[[36, 45, 30, 48, 54]], points)
    hull = np.zeros((512, 512), np.uint8)
    cv2.fillConvexPoly(hull, cv2.convexHull(points[list(area.AREAS["lower-face"])].astype(np.int32)), 1)
    assert np.all(lower[hull == 0] == 0.0)
    assert np.all(lower[cv2.erode(hull, np.ones((31, 31), np.uint8)) == 1] > 0.99)
    both = area.area_mask(512, ["upper-face", "mouth"], points[[36, 45, 30, 48, 54]], points)
    assert both[int(points[27, 1]), int(points[27, 0])] > 0.99  # the bridge of the nose: upper face
    assert both[int(points[66, 1]), int(points[66, 0])] > 0.99  # the lower lip: mouth
    assert both[int(points[8, 1]) - 5, int(points[8, 0])] == 0.0  # the chin: neither


def test_area_masks_from_five_points_outline_each_area_where_it_is() -> None:
    five = align.template_points("ffhq_512", 512)
    eyes_y, nose_y, mouth_y = five[0, 1], five[2, 1], five[3, 1]
    upper = area.area_mask(512, ["upper-face"], five)
    lower = area.area_mask(512, ["lower-face"], five)
    mouth = area.area_mask(512, ["mouth"], five)
    centre = int(five[2, 0])
    assert upper[int(eyes_y), centre] == 1.0 and upper[int(mouth_y), centre] == 0.0
    assert lower[int(mouth_y), centre] == 1.0 and lower[int(eyes_y), centre] == 0.0
    assert mouth[int(mouth_y), centre] == 1.0 and mouth[int(nose_y), centre] == 0.0


def test_the_swap_is_pasted_under_the_area_mask_and_the_plan_says_when_it_is_estimated() -> None:
    install_surrogate("2dfan4", confidence=0.9)
    estimated = _processor("mask.types=box,area", "mask.areas=mouth")
    assert area.ESTIMATED in estimated.notices
    proc = _processor("mask.types=box,area", "mask.areas=mouth", "landmarks.model=2dfan4")
    assert area.ESTIMATED not in proc.notices
    target = photos.astronaut()
    face = proc.select(target, proc.detect([target])[0])[0]
    item = steps.swap(proc, [target], [[face]])[0][0]
    assert face.landmarks68 is not None and item.mask is not None
    inside = align.transform_points(face.landmarks68, item.matrix)
    want = np.minimum(box_mask(128, proc.settings.mask.blur),
                      area.area_mask(128, ["mouth"], inside[[36, 45, 30, 48, 54]], inside))
    assert np.array_equal(item.mask, want)
    assert ModelPlan.from_settings(apply_overrides(Settings(), ["mask.types=area"])).masks == ()


def test_region_masks_are_made_on_the_swappers_output() -> None:
    """FaceFusion's swappers parse the face they made (the swapped one), not the target's."""
    install_surrogate("bisenet_resnet34")
    proc = _processor("mask.types=box,region")
    fed: list[np.ndarray] = []
    real = proc.masks.parser.masks  # type: ignore[union-attr]

    def recording(crops: np.ndarray, regions: object) -> np.ndarray:
        fed.append(crops.copy())
        return real(crops, regions)  # type: ignore[arg-type]

    proc.masks.parser.masks = recording  # type: ignore[union-attr, method-assign]
    target = photos.astronaut()
    item = steps.swap(proc, [target], [proc.select(target, proc.detect([target])[0])])[0][0]
    swapper = steps.swapper(proc)
    swapped = swapper.swapper.swap(item.crop[None], swapper.identities[0])
    assert len(fed) == 1 and np.array_equal(fed[0], swapped) and not np.array_equal(fed[0][0], item.crop)


def test_the_area_setting_takes_the_three_areas_and_refuses_others() -> None:
    from pipeline.errors import SettingsError

    assert Settings().mask.areas == ("upper-face", "lower-face", "mouth")
    with pytest.raises(SettingsError, match="mask.areas"):
        apply_overrides(Settings(), ["mask.areas=ears"])
    with pytest.raises(SettingsError, match="mask.areas"):
        apply_overrides(Settings(), ["mask.areas=[]"])
