"""What a creator gets with the default settings: each processor's effect, judged in the output file.

Each of the ten processors runs through ``facestation swap`` (the CLI's own main, in process) on a real photo
with the default settings and a surrogate of its real file's signature whose effect is known (a constant
colour, a brightness shift, a matte from the red channel), alone, after the face swapper, and before and after
a frame processor (the colouriser with a constant colour: a per-pixel map, so "before" and "after" can be told
exactly). The effect must be the one the reference code makes (±2 levels) under exactly the reference's paste
mask (weighed pixel by pixel where the mask fades), and every pixel outside that mask byte-identical to what
the processors before it made.

The face swapper is judged alone and around the frame processor (after itself there is nothing to judge),
with its colour step (the one processor that matches colour: to the face it replaced); the frame processors'
paste mask is the whole frame, and the colouriser's partner frame processor is the upscaler. The expected
images are made here from the facts (the reference's masks, crops and maths with cv2), on the face as the
engine detects it. Every other setting stays at its default (the lip syncer's and the age modifier's default
models, the background remover's default fill).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from cli.main import main
from pipeline.blend import area
from pipeline.blend.frame_color import conditional_match_frame_color
from pipeline.blend.mask import box_mask
from pipeline.faces import align
from pipeline.image import read_image
from pipeline.models import catalog
from pipeline.process import FaceProcessor
from pipeline.settings import Settings
from pipeline.types import Face, Frame
from tests import photos
from tests.sounds import voice
from tests.surrogates import dfm_masks, install_live_portrait, install_surrogate

COLOUR_AB = 30.0  # the colouriser surrogate's constant a = b (Lab units): the frame processor of the order
RED = (0.0, 0.0, 1.0)  # BGR in [0, 1]
PAINT_RGB = (0.25, 0.5, 0.75)  # a paint in the middle of the range (a shift on it shows, unclipped)
PLACES = ["alone", "after_swap", "after_frame", "before_frame"]


# --- running the CLI, reading the result --------------------------------------------------------------------

def swap(tmp: Path, order: list[str], *sets: str, target: Path | None = None, name: str = "out") -> Frame:
    """``facestation swap`` of grace_hopper onto ``target`` (the astronaut) with ``order`` and the defaults
    (``sets``: the feature under test); the output's pixels."""
    target = target or photos.astronaut_path(tmp)
    out = tmp / f"{name}.png"
    args = ["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
            "--output", str(out), "--set", f"processors.order={json.dumps(order)}"]
    for s in sets:
        args += ["--set", s]
    if "lip_syncer" in order:
        args += ["--audio", str(voice(tmp / "voice.wav", seconds=1.0))]
    assert main(args) == 0
    return read_image(out).bgr


def face_of(frame: Frame) -> Face:
    """The face the engine picks in ``frame`` with the default settings."""
    proc = FaceProcessor(Settings(), [photos.grace_hopper_path()])
    faces = proc.select(frame, proc.detect([frame])[0])
    assert len(faces) == 1
    return faces[0]


def crop_matrix(face: Face, template: str, size: int, zoom: float = 1.0) -> np.ndarray:
    points = np.asarray(face.landmarks, np.float64)
    points = (points - points[2]) * zoom + points[2]
    return align.estimate(points, template, size)  # type: ignore[arg-type]


def weight(mask: np.ndarray, matrix: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A crop-space mask as the paste weighs each frame pixel (linear, 0 beyond the crop)."""
    w = cv2.warpAffine(np.ascontiguousarray(mask, np.float32), matrix, (shape[1], shape[0]),
                       flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_CONSTANT,
                       borderValue=0)
    return np.clip(w, 0.0, 1.0)


def to_frame(crop: np.ndarray, matrix: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return cv2.warpAffine(crop, matrix, (shape[1], shape[0]), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE).astype(np.float64)


def colourised(frame: Frame) -> Frame:
    """The colouriser surrogate's output (DDColor, a = b = COLOUR_AB): the frame's own L under that colour."""
    lab = cv2.cvtColor(frame.astype(np.float32) / 255.0, cv2.COLOR_BGR2LAB)
    lab[..., 1:] = COLOUR_AB
    return np.clip(np.rint(cv2.cvtColor(lab, cv2.COLOR_LAB2BGR) * 255.0), 0, 255).astype(np.uint8)


def bgr(rgb: tuple[float, float, float]) -> np.ndarray:
    return np.array(rgb[::-1], np.float64) * 255.0


# --- the judge ----------------------------------------------------------------------------------------------

def outside(w: np.ndarray) -> np.ndarray:
    """The pixels no paste weight reaches (one pixel of margin for the linear warp's reach)."""
    return ~cv2.dilate((w > 0).astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)


def judge(out: Frame, base: Frame, w: np.ndarray, paint: np.ndarray, *, weigh: bool = True,
          tol: float = 2.0) -> None:
    """``out`` is ``base`` with ``paint`` (a colour, or an image in frame space) pasted under the weight
    ``w``:
    byte-identical where ``w`` does not reach, ``paint`` where ``w`` is 1 (±``tol`` on average per channel),
    and in between ``w`` itself, read back pixel by pixel where the paint differs enough from the base."""
    assert out.shape == base.shape
    keep = outside(w)
    assert keep.sum() > 1000
    moved = np.any(out[keep] != base[keep], axis=1)
    assert not moved.any(), f"{int(moved.sum())} pixels outside the paste mask changed"
    paint = np.broadcast_to(np.asarray(paint, np.float64), out.shape)
    core = w >= 0.999
    assert core.sum() > 1000, "no pixel fully under the mask"
    error = (out[core].astype(np.float64) - paint[core]).mean(axis=0)
    assert np.abs(error).max() <= tol, f"the effect is off by {error} levels"
    if weigh:
        diff = paint - base
        channel = np.abs(diff).argmax(axis=2)[..., None]
        d = np.take_along_axis(diff, channel, axis=2)[..., 0]
        seen = np.take_along_axis(out.astype(np.float64) - base, channel, axis=2)[..., 0]
        band = (w > 0.05) & (w < 0.95) & (np.abs(d) >= 60)
        assert band.sum() > 200, "no fading edge to weigh"
        read = seen[band] / d[band]
        assert np.median(np.abs(read - w[band])) <= 0.02 and np.abs(read - w[band]).max() <= 0.1, \
            "the paste weight is not the reference's mask"


def after(frame_out: Frame, expected_before: np.ndarray) -> Frame:
    """What the colouriser makes of an expected frame (uint8)."""
    return colourised(np.clip(np.rint(expected_before), 0, 255).astype(np.uint8))


def place_order(place: str, name: str) -> list[str]:
    return {"alone": [name], "after_swap": ["face_swapper", name], "after_frame": ["frame_colorizer", name],
            "before_frame": [name, "frame_colorizer"]}[place]


def base_of(tmp: Path, place: str, target: Frame, *sets: str) -> Frame:
    """What the processors before the one under test make (its input, as a frame; ``sets`` as its run's)."""
    if place == "after_swap":
        return swap(tmp, ["face_swapper"], *sets, name="base")  # the built-in classic swapper, colour-matched
    if place == "after_frame":
        return colourised(target)
    return target


def check(tmp: Path, place: str, out: Frame, base: Frame, w: np.ndarray, paint: np.ndarray,
          **options: Any) -> None:
    """The judge, through the colouriser where it comes after (``before_frame``: every pixel outside the
    mask is the colouriser's of the input; under it, the colouriser's of the paint)."""
    if place != "before_frame":
        judge(out, base, w, paint, **options)
        return
    assert np.array_equal(out[outside(w)], colourised(base)[outside(w)])
    weights = w[..., None]
    painted = np.asarray(base, np.float64) * (1 - weights) + np.broadcast_to(paint, base.shape) * weights
    core = w >= 0.999
    error = (out[core].astype(np.float64) - after(out, painted)[core]).mean(axis=0)
    assert np.abs(error).max() <= options.get("tol", 2.0)


@pytest.fixture
def target() -> Frame:
    return photos.astronaut()


@pytest.fixture
def face(target: Frame) -> Face:
    return face_of(target)


def _colouriser() -> None:
    install_surrogate("ddcolor", constant=COLOUR_AB)


def _face_crop_weight(face: Face, shape: tuple[int, ...], template: str, size: int, mask: np.ndarray,
                      zoom: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(frame -> crop matrix, the mask's weight in the frame) of a face processor's crop."""
    m = crop_matrix(face, template, size, zoom)
    return m, weight(mask, m, shape)


# --- face_swapper: the swap, colour-matched to the crop it replaced -----------------------------------------

def _lab_mean_colour(crop: Frame, mask: np.ndarray) -> np.ndarray:
    """BGR of the mean Lab colour of ``crop`` where ``mask`` > 0.5 (a flat swap matched by Reinhard: the
    target's mean, its spread scaled from none)."""
    lab = cv2.cvtColor(crop.astype(np.float32) / 255.0, cv2.COLOR_BGR2LAB)
    mean = lab[mask > 0.5].astype(np.float64).mean(axis=0).astype(np.float32)
    return cv2.cvtColor(mean.reshape(1, 1, 3), cv2.COLOR_LAB2BGR)[0, 0].astype(np.float64) * 255.0


def _flat_swapper() -> tuple[str, int]:
    install_surrogate("inswapper_128", constant=PAINT_RGB)
    install_surrogate("arcface_w600k_r50")
    entry = catalog.get("inswapper_128")
    assert entry.template is not None
    return entry.template, entry.input_size


@pytest.mark.parametrize("place", ["alone", "after_frame", "before_frame"])
def test_face_swapper_pastes_its_swap_matched_to_the_target_under_its_box(tmp_path: Path, target: Frame,
                                                                          face: Face, place: str) -> None:
    template, size = _flat_swapper()
    _colouriser()
    out = swap(tmp_path, place_order(place, "face_swapper"))
    base = base_of(tmp_path, place, target)
    mask = box_mask(size, 0.3)
    m, w = _face_crop_weight(face, target.shape, template, size, mask)
    check(tmp_path, place, out, base, w, _lab_mean_colour(align.warp(base, m, size), mask))


def test_face_swapper_with_colour_matching_off_pastes_the_model_output(tmp_path: Path, target: Frame,
                                                                       face: Face) -> None:
    template, size = _flat_swapper()
    out = swap(tmp_path, ["face_swapper"], "color.method=none")
    _, w = _face_crop_weight(face, target.shape, template, size, box_mask(size, 0.3))
    judge(out, target, w, bgr(PAINT_RGB))


# --- face_enhancer: its own box (padding 0), after the swap the swap kept beneath ---------------------------

@pytest.mark.parametrize("place", PLACES)
def test_face_enhancer_pastes_its_blend_under_its_own_box(tmp_path: Path, target: Frame, face: Face,
                                                          place: str) -> None:
    install_surrogate("gfpgan_1.4", constant=-0.8)  # every pixel (−0.8 + 1)/2 · 255 = 25.5
    _colouriser()
    sets = ["face_enhancer.model=gfpgan_1.4", "mask.padding=[10,10,10,10]"]  # the enhancer's box has none
    out = swap(tmp_path, place_order(place, "face_enhancer"), *sets)
    base = base_of(tmp_path, place, target, *sets)
    entry = catalog.get("gfpgan_1.4")
    assert entry.template is not None
    size = entry.input_size
    _, w = _face_crop_weight(face, target.shape, entry.template, size, box_mask(size, 0.3))
    paint = 0.2 * base.astype(np.float64) + 0.8 * 25.5  # face_enhancer.blend 80
    check(tmp_path, place, out, base, w, paint)


# --- lip_syncer: wav2lip under the lower face's area mask (no box), edtalk under the box, each once ---------

def _lower_face(face: Face, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(frame -> 512 crop, the five points in it, the lower face's mask weight in the frame), as wav2lip
    pastes
    at the defaults (no 68-point model: the outline estimated from the five points)."""
    m = crop_matrix(face, "ffhq_512", 512)
    five = align.transform_points(face.landmarks, m)
    return m, five, weight(area.hull_mask(area.estimated(five, "lower-face"), 512), m, shape)


@pytest.mark.parametrize("place", PLACES)
def test_wav2lip_pastes_its_mouth_under_the_lower_face_only(tmp_path: Path, target: Frame, face: Face,
                                                             place: str) -> None:
    install_surrogate("wav2lip_gan_96", constant=RED)
    _colouriser()
    out = swap(tmp_path, place_order(place, "lip_syncer"))
    base = base_of(tmp_path, place, target)
    _, _, w = _lower_face(face, target.shape)
    check(tmp_path, place, out, base, w, bgr(RED[::-1]))


def test_wav2lip_leaves_the_upper_face_byte_identical_and_paints_the_chin(tmp_path: Path, target: Frame,
                                                                          face: Face) -> None:
    """The acceptance: a surrogate that paints its output red; above the nose line every pixel is the input's,
    at the chin the red's weight is at least 0.9 (FaceFusion's 0.975; a second paste under the box gave
    0.385)."""
    install_surrogate("wav2lip_gan_96", constant=RED)
    out = swap(tmp_path, ["lip_syncer"])
    m, five, _ = _lower_face(face, target.shape)
    yy, xx = np.mgrid[0:target.shape[0], 0:target.shape[1]]
    in_crop = align.transform_points(np.stack([xx.ravel(), yy.ravel()], 1), m).reshape(*target.shape[:2], 2)
    per_pixel = float(np.hypot(*m[:, 0]))  # crop pixels per frame pixel
    above = in_crop[..., 1] < five[2, 1] - per_pixel  # above the nose tip's line (a pixel: the paste's reach)
    x1, y1, x2, y2 = (int(v) for v in face.box)
    assert above[y1:y2, x1:x2].sum() > 3000  # the upper face among them
    assert np.array_equal(out[above], target[above])
    eyes = (five[0] + five[1]) / 2
    d = float(np.linalg.norm(five[1] - five[0]))
    chin = align.transform_points([eyes + [0.0, 1.8 * d]], align.invert(m))[0]  # the chin, inside its edge
    x, y = (int(round(v)) for v in chin)
    red_weight = (float(out[y, x, 2]) - target[y, x, 2]) / (255.0 - target[y, x, 2])
    assert red_weight >= 0.9
    assert np.abs(out[y, x, :2].astype(int) - (1 - red_weight) * target[y, x, :2]).max() <= 2  # the rest: red


@pytest.mark.parametrize("place", ["alone", "after_swap"])
def test_edtalk_pastes_under_its_box_once(tmp_path: Path, target: Frame, face: Face, place: str) -> None:
    install_surrogate("edtalk_256", constant=RED[::-1])  # its output is RGB
    sets = ["lip_syncer.model=edtalk_256"]
    out = swap(tmp_path, place_order(place, "lip_syncer"), *sets)
    base = base_of(tmp_path, place, target, *sets)
    _, w = _face_crop_weight(face, target.shape, "ffhq_512", 512, box_mask(512, 0.3))
    judge(out, base, w, bgr(RED[::-1]))


# --- expression_restorer and face_editor (LivePortrait): their box only, or box and occlusion ---------------

def _uniform_paint(out: Frame, w: np.ndarray, painted: tuple[float, float, float]) -> np.ndarray:
    """The colour the generator painted (its constant plus the keypoints' shift, the same on every channel),
    read where the mask is 1: it must be uniform there."""
    core = out[w >= 0.999].astype(np.float64)
    colour = np.median(core, axis=0)
    assert np.abs(core - colour).max() <= 2, "the re-rendered face is not the generator's uniform colour"
    shift = colour - bgr(painted)
    assert np.ptp(shift) <= 2, f"not one shift on every channel: {shift}"
    return colour


@pytest.mark.parametrize("place", PLACES)
def test_expression_restorer_pastes_under_its_box(tmp_path: Path, target: Frame, face: Face,
                                                  place: str) -> None:
    install_live_portrait(generator={"constant": PAINT_RGB})  # one motion for every crop: nothing to restore
    _colouriser()
    out = swap(tmp_path, place_order(place, "expression_restorer"), "mask.padding=[10,10,10,10]")
    base = base_of(tmp_path, place, target, "mask.padding=[10,10,10,10]")
    _, w = _face_crop_weight(face, target.shape, "arcface_128", 512, box_mask(512, 0.3))  # padding 0
    check(tmp_path, place, out, base, w, bgr(PAINT_RGB))


def _restored_shift(target_motion: dict[str, Any], processed_motion: dict[str, Any],
                    factor: int = 80) -> float:
    """The surrogate generator's shift for the restorer's keypoints (the formulas of the facts): GAIN × the
    mean of x_target − x_temp = s·(δ* − δ_P), δ* = clip(f·δ_T′ + (1 − f)·δ_P), f = factor/100·1.2, δ_T′ = δ_T
    with keypoints 0, 4, 5, 8, 9 from δ_P (both areas restored)."""
    from pipeline.liveportrait.kinematics import EXPRESSION_MAX, EXPRESSION_MIN
    from tests.surrogates import GENERATOR_GAIN

    d_t = np.asarray(target_motion["expression"], np.float64).reshape(21, 3).copy()
    d_p = np.asarray(processed_motion["expression"], np.float64).reshape(21, 3)
    d_t[[0, 4, 5, 8, 9]] = d_p[[0, 4, 5, 8, 9]]
    f = factor / 100 * 1.2
    wanted = np.clip(f * d_t + (1 - f) * d_p, EXPRESSION_MIN.reshape(21, 3), EXPRESSION_MAX.reshape(21, 3))
    return GENERATOR_GAIN * float(processed_motion["scale"]) * float((wanted - d_p).mean())


@pytest.mark.slow  # its frames upscaled to 2048²
def test_expression_restorer_after_a_frame_processor_restores_the_decoded_target(tmp_path: Path) -> None:
    """The original is the target as decoded: an upscaler that darkens the frame (×4) comes first; the motion
    surrogate gives the bright original one expression and the darkened face another, so the restorer's
    generator is moved by their difference (the frames' own: nothing restored at all)."""
    from pipeline.liveportrait.kinematics import EXPRESSION_MAX, EXPRESSION_MIN
    from tests.surrogates import default_motion

    processed = {**default_motion(1), "expression": EXPRESSION_MIN * 0.8}  # a dark crop's
    original = {**default_motion(1), "expression": EXPRESSION_MAX * 0.8}  # a bright crop's
    install_live_portrait(generator={"constant": PAINT_RGB}, motions=[processed, original])
    install_surrogate("span_kendata_x4", shift=-0.5)
    lighter = np.full((512, 512, 3), 40, np.uint8)
    picture = np.asarray(cv2.add(photos.astronaut(), lighter), np.uint8)  # its face surely bright
    path = tmp_path / "bright.png"
    cv2.imwrite(str(path), picture)
    base = swap(tmp_path, ["frame_enhancer"], target=path, name="base")
    out = swap(tmp_path, ["frame_enhancer", "expression_restorer"], target=path)
    face = face_of(picture).scaled(4)
    _, w = _face_crop_weight(face, base.shape, "arcface_128", 512, box_mask(512, 0.3))
    shift = _restored_shift(original, processed)
    assert shift > 0.1  # a difference of tens of levels: restored, not the processed face's own
    judge(out, base, w, bgr(tuple(np.clip(np.array(PAINT_RGB) + shift, 0, 1))))


@pytest.mark.parametrize("place", PLACES)
def test_face_editor_pastes_under_its_box_only(tmp_path: Path, target: Frame, face: Face, place: str) -> None:
    """Box only, with padding 0 (FaceFusion's editor): no occlusion mask of the pose the head had, even with
    the occlusion mask chosen (an occluder that hides the whole lower half of the crop here)."""
    install_live_portrait(generator={"constant": PAINT_RGB})
    hidden = np.ones((256, 256), np.float32)
    hidden[128:] = 0.0
    install_surrogate("xseg", mask=hidden)
    _colouriser()
    sets = ["face_editor.head_yaw=0.5", "mask.types=box,occlusion", "mask.padding=[10,10,10,10]"]
    out = swap(tmp_path, place_order(place, "face_editor"), *sets)
    base = base_of(tmp_path, place, target, *sets)
    _, w = _face_crop_weight(face, target.shape, "ffhq_512", 512, box_mask(512, 0.3), zoom=1.5)
    alone = out if place != "before_frame" else swap(tmp_path, ["face_editor"], *sets, name="alone")
    check(tmp_path, place, out, base, w, _uniform_paint(alone, w, PAINT_RGB))


# --- age_modifier: fran under its 1024 crop's box (padding 0) -----------------------------------------------

@pytest.mark.parametrize("place", PLACES)
def test_age_modifier_pastes_fran_under_its_box(tmp_path: Path, target: Frame, face: Face,
                                                place: str) -> None:
    """fran fed [age, age + direction] / 100 (FairFace: 24, direction +30: [0.24, 0.54]); its surrogate paints
    that as a colour (R, G, B) = (0.24, 0.54, FRAN_BLUE)."""
    from tests.surrogates import FRAN_BLUE

    install_surrogate("fairface", age=3)
    install_surrogate("fran", encode=True)
    _colouriser()
    sets = ["age_modifier.direction=30", "mask.padding=[10,10,10,10]"]
    out = swap(tmp_path, place_order(place, "age_modifier"), *sets)
    base = base_of(tmp_path, place, target, *sets)
    _, w = _face_crop_weight(face, target.shape, "ffhq_512", 1024, box_mask(1024, 0.3))
    check(tmp_path, place, out, base, w, bgr((0.24, 0.54, FRAN_BLUE)))


def _face_region(face: Face, shape: tuple[int, ...]) -> np.ndarray:
    """The inner face: the middle of the box the engine found (what every processor here replaces)."""
    x1, y1, x2, y2 = (int(v) for v in face.box)
    region = np.zeros(shape[:2], bool)
    region[y1 + (y2 - y1) // 5:y2 - (y2 - y1) // 5, x1 + (x2 - x1) // 5:x2 - (x2 - x1) // 5] = True
    return region


def test_ageing_after_the_swap_keeps_its_colour_change_with_colour_matching_on(tmp_path: Path, target: Frame,
                                                                                face: Face) -> None:
    """The acceptance: ``swap`` of a real photo with face_swapper, age_modifier (direction 30) and the
    defaults: the face's mean colour change from the age model (fran's surrogate brightens by its age change:
    +0.075, 19 levels) is the colour-off run's within 2 levels (colour matching is the swap's step, so it
    no longer washes the ageing out)."""
    install_surrogate("fairface", age=3)
    install_surrogate("fran")
    inner = _face_region(face, target.shape)
    change = {}
    for colour in ("reinhard", "none"):
        swapped = swap(tmp_path, ["face_swapper"], f"color.method={colour}", name=f"swap-{colour}")
        aged = swap(tmp_path, ["face_swapper", "age_modifier"], "age_modifier.direction=30",
                    f"color.method={colour}", name=f"aged-{colour}")
        change[colour] = (aged[inner].astype(np.float64) - swapped[inner]).mean(axis=0)
    assert np.all(change["none"] > 12), change  # the model's brightening, where the face is not already white
    assert np.abs(change["reinhard"] - change["none"]).max() <= 2, change


# --- deep_swapper: its own colour step, under the box and its DFM's mask ------------------------------------

def _dfm_mask(size: int) -> np.ndarray:
    """The least of the box and the DFM's two masks (the surrogate's), eroded twice by a 3×3 ellipse and
    blurred σ 6.25."""
    face_mask, celeb_mask = dfm_masks(size)
    m = cv2.erode(np.minimum(face_mask, celeb_mask), cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)),
                  iterations=2)
    return np.minimum(box_mask(size, 0.3), cv2.GaussianBlur(m, (0, 0), 6.25))


@pytest.mark.parametrize("place", PLACES)
def test_deep_swapper_pastes_its_own_colour_match_under_its_masks(tmp_path: Path, target: Frame, face: Face,
                                                                  place: str) -> None:
    """The DFM paints a flat colour; the deep swapper's own conditional colour match (to the crop it was fed)
    is the only colour step; pasted under the box and the DFM's mask."""
    name = "iperov/elon_musk_224"
    install_surrogate(name, constant=PAINT_RGB[::-1])  # its output is BGR
    _colouriser()
    sets = [f"deep_swapper.model={name}"]
    out = swap(tmp_path, place_order(place, "deep_swapper"), *sets)
    base = base_of(tmp_path, place, target, *sets)
    size = catalog.get(name).input_size
    mask = _dfm_mask(size)
    m, w = _face_crop_weight(face, target.shape, "dfl_whole_face", size, mask)
    flat = np.full((size, size, 3), np.round(bgr(PAINT_RGB)), np.uint8)
    matched = conditional_match_frame_color(align.warp(base, m, size), flat)
    check(tmp_path, place, out, base, w, to_frame(matched, m, target.shape))


# --- the frame processors: the whole frame ------------------------------------------------------------------

def enhanced(frame: Frame, shift: float = 0.0) -> Frame:
    """span_kendata_x4's surrogate (each pixel repeated 4 × 4, plus ``shift``) mixed 80 % with the frame's
    linear resize (frame_enhancer.blend)."""
    near = np.repeat(np.repeat(frame.astype(np.float64), 4, axis=0), 4, axis=1) + shift * 255.0
    near = np.clip(np.floor(near + 0.5), 0, 255).astype(np.uint8)
    linear = cv2.resize(frame, (frame.shape[1] * 4, frame.shape[0] * 4), interpolation=cv2.INTER_LINEAR)
    return np.asarray(cv2.addWeighted(linear, 0.2, near, 0.8, 0.0), np.uint8)


def removed(frame: Frame) -> Frame:
    """modnet's surrogate (the foreground is the red level) with the default fill, opaque green: I·m + green·
    (1 − m), m = red/255 (truncated)."""
    m = frame[..., 2:3].astype(np.float64) / 255.0
    return (frame * m + np.array([0.0, 255.0, 0.0]) * (1.0 - m)).astype(np.uint8)


FRAME_PROCESSORS = {"frame_colorizer": colourised, "frame_enhancer": enhanced, "background_remover": removed}


def _frame_models() -> None:
    _colouriser()
    install_surrogate("span_kendata_x4")
    install_surrogate("modnet")


def _frame_cases() -> list[Any]:
    """(place, name) of every frame processor; the upscaler's 2048² frames make its cases slow."""
    cases = []
    for place in PLACES:
        for name in FRAME_PROCESSORS:
            upscaled = name == "frame_enhancer" or (name == "frame_colorizer" and place.endswith("frame"))
            cases.append(pytest.param(place, name, marks=[pytest.mark.slow] if upscaled else []))
    return cases


@pytest.mark.parametrize(("place", "name"), _frame_cases())
def test_a_frame_processor_makes_its_known_frame(tmp_path: Path, target: Frame, name: str,
                                                 place: str) -> None:
    """Alone, after the swap, after and before another frame processor (the colouriser; for the colouriser
    itself the upscaler): the reference's frame, every pixel within 2 levels."""
    _frame_models()
    other = "frame_enhancer" if name == "frame_colorizer" else "frame_colorizer"
    order = {"alone": [name], "after_swap": ["face_swapper", name], "after_frame": [other, name],
             "before_frame": [name, other]}[place]
    out = swap(tmp_path, order)
    make, then = FRAME_PROCESSORS[name], FRAME_PROCESSORS[other]
    if place == "after_swap":
        expected = make(swap(tmp_path, ["face_swapper"], name="base"))
    elif place == "after_frame":
        expected = make(then(target))
    elif place == "before_frame":
        expected = then(make(target))
    else:
        expected = make(target)
    assert out.shape == expected.shape
    assert np.abs(out.astype(int) - expected).max() <= 2
