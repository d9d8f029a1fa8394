"""One judge per model family or role: run the model on the check photos, measure, give a verdict.

A judge takes the model's catalog name and the :class:`Context` (settings, photos, the built-in reference
models) and returns a :class:`Finding`. Every figure is measured by independent means: the built-in YuNet
says where the face is, the built-in SFace who it is, and plain image statistics (SSIM, Laplacian
variance, mean colour, coverage) the rest, so a file that is wrong or mis-fed cannot vouch for itself.
A new family adds its judge to :data:`JUDGES` under its family name (or relies on its role's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import cv2
import numpy as np
import numpy.typing as npt

from pipeline import families
from pipeline.blend.region import REGION_CLASSES
from pipeline.enhance.age import (
    FRAN_SIZE,
    STYLEGANEX_CROP,
    STYLEGANEX_EXTEND,
    STYLEGANEX_ZOOM,
    bucket_age,
    fran_direction,
    styleganex_direction,
)
from pipeline.faces import align
from pipeline.faces.landmark68 import five_from_68
from pipeline.liveportrait import kinematics
from pipeline.liveportrait.network import PARTS, LivePortrait, model_name, prepare
from pipeline.modelcheck import measures
from pipeline.modelcheck.photos import NO_SECOND_PERSON, Photos, Shot
from pipeline.models import catalog, store
from pipeline.settings import Settings

Verdict = Literal["PASS", "FAIL", "SKIP"]

# thresholds: generous enough for every real file of a family, far from what a mis-fed one gives
MIN_IOU = 0.5  # detector box vs YuNet's
MAX_POINT_ERROR = 0.1  # detector landmarks vs YuNet's, fraction of the box side
MIN_RANK_GAP = 0.1  # recogniser: worst same-person cosine − best different-person cosine
MIN_IDENTITY_GAIN = 0.1  # swapper: SFace cos(output, source) − cos(target, source)
MAX_COLOUR_SHIFT = 20.0  # mean colour change of the face region, 0..255 levels
MIN_CONTRAST = 0.6  # grey-level std of the face region, relative to the input's
MAX_CONTRAST = 1.6
MIN_SSIM = 0.6  # enhancer output vs input, at 128 px
MIN_SHARPNESS = 0.9  # enhancer Laplacian variance, relative to the input's
MIN_CENTRE = 0.6  # mask mean over the face centre
MAX_CORNERS = 0.4  # mask mean over the crop's corners
MIN_INSIDE = 0.9  # 68 points inside the box (grown by 10 %)
MAX_FIVE_ERROR = 0.15  # 68-point model's five points vs YuNet's, fraction of the box side
MASK_CROP = ("arcface_128", 256)  # masks are judged on the usual swap crop
MIN_CHROMA = 4.0  # colouriser: mean Lab chroma it adds to a grey photo (and at most MAX_CHROMA)
MAX_CHROMA = 60.0
MIN_SKIN = 2.0  # colouriser: the face's mean Lab a and b (a skin tone is red-yellow: both above 0)
MIN_LIGHTNESS_SSIM = 0.9  # colouriser: the lightness of its output vs the grey input
MAX_HEAD_ANGLE = (45.0, 60.0, 45.0)  # LivePortrait: |pitch|, |yaw|, |roll| of the near-frontal check photo
MAX_EXPRESSION = 2.0  # LivePortrait: the expression within twice FaceFusion's limits
MAX_KEYPOINT_MOVE = 0.5  # LivePortrait retargeters and stitcher: the largest keypoint change they may make
LP_CROP = ("arcface_128", 512)  # the expression restorer's crop
MAX_DFM_COLOUR_SHIFT = 40.0  # deep swapper: another person's skin, before colour matching, but no cast


@dataclass(frozen=True)
class Finding:
    verdict: Verdict
    reason: str
    figures: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    settings: Settings
    photos: Photos
    sface: Any  # the built-in SFace recogniser: who a face is, for the swapper judge


Judge = Callable[[str, Context], Finding]


def decide(figures: dict[str, float], failures: list[str], passed: str) -> Finding:
    """FAIL naming every failed measure, else PASS with ``passed``; figures rounded for the table."""
    rounded = {k: round(float(v), 3) for k, v in figures.items()}
    if failures:
        return Finding("FAIL", "; ".join(failures), rounded)
    return Finding("PASS", passed, rounded)


def aligned(shot: Shot, template: Any, size: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float64]]:
    matrix = align.estimate(shot.face.landmarks, template, size)
    return np.asarray(align.warp(shot.frame, matrix, size), np.uint8), matrix


def _build(name: str, ctx: Context) -> Any:
    return families.build(name, ctx.settings, catalog.get(name).role)


# --- detectors, landmarks -------------------------------------------------------------------------------

def judge_reference(name: str, ctx: Context) -> Finding:
    """The built-in YuNet is the reference the other detectors are judged by: it must find the face."""
    face = ctx.photos.person.face
    return decide({"score": face.score}, [] if face.score >= 0.5 else ["weak face score"],
                  "the reference detector: finds the face in grace_hopper")


def judge_detector(name: str, ctx: Context) -> Finding:
    ref = ctx.photos.person
    faces = _build(name, ctx).detect([ref.frame])[0]
    if not faces:
        return Finding("FAIL", "finds no face where the built-in YuNet finds one", {"faces": 0.0})
    best = max(faces, key=lambda f: measures.iou(f.box, ref.face.box))
    overlap = measures.iou(best.box, ref.face.box)
    error = measures.point_error(best.landmarks, ref.face.landmarks, ref.face.box)
    failures = []
    if overlap < MIN_IOU:
        failures.append(f"box IoU with YuNet's {overlap:.2f} < {MIN_IOU}")
    if error > MAX_POINT_ERROR:
        failures.append(f"landmarks off by {error:.2f} of the face size (> {MAX_POINT_ERROR})")
    return decide({"faces": len(faces), "iou": overlap, "landmark_error": error}, failures,
                  "finds the face where YuNet does")


def judge_landmarker(name: str, ctx: Context) -> Finding:
    ref = ctx.photos.person
    points, confidence = _build(name, ctx).landmarks(ref.frame, [ref.face])
    share = measures.inside(points[0], ref.face.box)
    error = measures.point_error(five_from_68(points[0]), ref.face.landmarks, ref.face.box)
    failures = []
    if share < MIN_INSIDE:
        failures.append(f"only {share:.0%} of the 68 points inside the face box")
    if error > MAX_FIVE_ERROR:
        failures.append(f"eyes/nose/mouth off by {error:.2f} of the face size (> {MAX_FIVE_ERROR})")
    return decide({"inside": share, "five_point_error": error, "confidence": float(confidence[0])},
                  failures, "68 points on the face, near YuNet's five")


# --- recognisers, swappers --------------------------------------------------------------------------------

def _embed(recogniser: Any, shot: Shot) -> npt.NDArray[np.float32]:
    crop, _ = aligned(shot, recogniser.template, recogniser.size)
    return np.asarray(recogniser.embed(crop[None])[0], np.float32)


def judge_recogniser(name: str, ctx: Context) -> Finding:
    photos = ctx.photos
    if photos.other is None:
        return Finding("SKIP", NO_SECOND_PERSON)
    model = _build(name, ctx)
    person = _embed(model, photos.person)
    same_e = [_embed(model, s) for s in photos.same]
    other = _embed(model, photos.other)
    same = min(measures.cosine(person, e) for e in same_e)
    different = max(measures.cosine(e, other) for e in (person, *same_e))
    gap = same - different
    if not np.isfinite(gap):
        return Finding("FAIL", "embeddings are not finite numbers", {})
    failures = [] if gap >= MIN_RANK_GAP else [
        f"same person {same:.2f} is not above different people {different:.2f} by {MIN_RANK_GAP}"]
    return decide({"same": same, "different": different, "gap": gap}, failures,
                  "ranks the same person above another")


def _swapper_missing(entry: catalog.ModelEntry) -> Finding | None:
    if entry.recogniser and not store.is_installed(catalog.get(entry.recogniser)):
        return Finding("SKIP", f"needs its recogniser {entry.recogniser}: run facestation models fetch "
                               f"{entry.recogniser}")
    return None


def judge_swapper(name: str, ctx: Context) -> Finding:
    """Grace Hopper's identity swapped onto the astronaut: SFace must see the output nearer Grace Hopper
    than the astronaut was, with the face's colour and contrast kept."""
    photos, entry = ctx.photos, catalog.get(name)
    if photos.other is None:
        return Finding("SKIP", NO_SECOND_PERSON)
    if (missing := _swapper_missing(entry)) is not None:
        return missing
    swapper = _build(name, ctx)
    identity = swapper.prepare_source([(photos.person.frame, photos.person.face)])
    target, matrix = aligned(photos.other, swapper.template, swapper.crop_size)
    output = np.asarray(swapper.swap(target[None], identity)[0], np.uint8)
    sface = ctx.sface  # the output judged in SFace's own crop, cut from the swapper's crop
    to_sface = align.estimate(align.transform_points(photos.other.face.landmarks, matrix), sface.template,
                              sface.size)
    t_crop, o_crop = (np.asarray(align.warp(c, to_sface, sface.size), np.uint8) for c in (target, output))
    source = _embed(sface, photos.person)
    e_target, e_output = sface.embed(np.stack([t_crop, o_crop]))
    gain = measures.cosine(e_output, source) - measures.cosine(e_target, source)
    region = measures.face_region(sface.size)
    shift = measures.colour_shift(o_crop, t_crop, region)
    kept = measures.contrast(o_crop, t_crop, region)
    failures = []
    if gain < MIN_IDENTITY_GAIN:
        failures.append(f"the output is not nearer the source's identity (SFace gain {gain:+.2f} < "
                        f"{MIN_IDENTITY_GAIN})")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    if kept < MIN_CONTRAST:
        failures.append(f"flat: {kept:.0%} of the face's contrast left")
    if kept > MAX_CONTRAST:
        failures.append(f"harsh: the face's contrast ×{kept:.1f}")
    return decide({"identity_gain": gain, "colour_shift": shift, "contrast": kept}, failures,
                  "moves the identity toward the source, colours kept")


# --- enhancers, masks ---------------------------------------------------------------------------------

def judge_enhancer(name: str, ctx: Context) -> Finding:
    enhancer = _build(name, ctx)
    crop, _ = aligned(ctx.photos.person, enhancer.template, enhancer.crop_size)
    output = np.asarray(enhancer.enhance(crop[None], 100)[0], np.uint8)
    structure = measures.ssim(output, crop)
    sharp = measures.sharpness(output) / max(measures.sharpness(crop), 1e-6)
    shift = measures.colour_shift(output, crop, measures.face_region(enhancer.crop_size))
    failures = []
    if structure < MIN_SSIM:
        failures.append(f"structure lost (SSIM {structure:.2f} < {MIN_SSIM})")
    if sharp < MIN_SHARPNESS:
        failures.append(f"blurrier than its input ({sharp:.0%} of the detail)")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    return decide({"ssim": structure, "sharpness": sharp, "colour_shift": shift}, failures,
                  "keeps the face's structure and colour, not blurrier")


def _mask_finding(mask: npt.NDArray[np.floating]) -> Finding:
    centre, corners = measures.coverage(mask)
    failures = []
    if centre < MIN_CENTRE:
        failures.append(f"the face centre is {centre:.0%} covered (< {MIN_CENTRE:.0%})")
    if corners > MAX_CORNERS:
        failures.append(f"the crop's corners are {corners:.0%} covered (> {MAX_CORNERS:.0%})")
    return decide({"centre": centre, "corners": corners}, failures, "covers the face, not the corners")


def judge_occluder(name: str, ctx: Context) -> Finding:
    crop, _ = aligned(ctx.photos.person, *MASK_CROP)
    return _mask_finding(_build(name, ctx).masks(crop[None])[0])


def judge_parser(name: str, ctx: Context) -> Finding:
    crop, _ = aligned(ctx.photos.person, *MASK_CROP)
    return _mask_finding(_build(name, ctx).masks(crop[None], list(REGION_CLASSES))[0])


def judge_colorizer(name: str, ctx: Context) -> Finding:
    """Grace Hopper in grey, coloured: colour must be added, the lightness kept, and the face come out in a
    skin tone (Lab a and b both positive) -- a colouriser fed the wrong range or channels tints it blue or
    green, or adds nothing."""
    shot = ctx.photos.person
    lightness = cv2.cvtColor(shot.frame, cv2.COLOR_BGR2GRAY)
    grey = np.asarray(cv2.cvtColor(lightness, cv2.COLOR_GRAY2BGR), np.uint8)
    colour = np.asarray(_build(name, ctx).colorize([grey])[0], np.uint8)
    lab = cv2.cvtColor(colour, cv2.COLOR_BGR2LAB).astype(np.float32)
    a, b = lab[..., 1] - 128.0, lab[..., 2] - 128.0
    chroma = float(np.mean(np.hypot(a, b)))
    x1, y1, x2, y2 = (int(v) for v in shot.face.box)
    face_a, face_b = float(a[y1:y2, x1:x2].mean()), float(b[y1:y2, x1:x2].mean())
    kept = measures.ssim(colour, grey)
    failures = []
    if chroma < MIN_CHROMA:
        failures.append(f"adds no colour (mean chroma {chroma:.1f} < {MIN_CHROMA})")
    if chroma > MAX_CHROMA:
        failures.append(f"colours far too strong (mean chroma {chroma:.1f} > {MAX_CHROMA})")
    if min(face_a, face_b) < MIN_SKIN:
        failures.append(f"the face is not a skin tone (Lab a {face_a:.1f}, b {face_b:.1f})")
    if kept < MIN_LIGHTNESS_SSIM:
        failures.append(f"the lightness changed (SSIM {kept:.2f} < {MIN_LIGHTNESS_SSIM})")
    return decide({"chroma": chroma, "face_a": face_a, "face_b": face_b, "ssim": kept}, failures,
                  "adds colour, keeps the lightness, a skin tone on the face")


# --- frame enhancers -------------------------------------------------------------------------------------

FRAME_CHECK_SIDE = 128  # the face cut to this side, upscaled: a few tiles at most


def judge_frame_enhancer(name: str, ctx: Context) -> Finding:
    """The face (an aligned 128 px crop) upscaled: exactly ``scale`` × its size, its structure and colour
    kept once brought back to 128 px, and not blurrier than the same crop resized linearly."""
    model = _build(name, ctx)
    crop, _ = aligned(ctx.photos.person, "ffhq_512", FRAME_CHECK_SIDE)
    output = np.asarray(model.enhance([crop], 100)[0], np.uint8)
    side = FRAME_CHECK_SIDE * model.scale
    if output.shape != (side, side, 3):
        return Finding("FAIL", f"a {FRAME_CHECK_SIDE} px frame came out {output.shape[1]}×{output.shape[0]}, "
                               f"not ×{model.scale} ({side}×{side})", {})
    back = np.asarray(cv2.resize(output, (FRAME_CHECK_SIDE,) * 2, interpolation=cv2.INTER_AREA), np.uint8)
    plain = np.asarray(cv2.resize(crop, (side, side), interpolation=cv2.INTER_LINEAR), np.uint8)
    structure = measures.ssim(back, crop)
    sharp = measures.sharpness(output) / max(measures.sharpness(plain), 1e-6)
    shift = measures.colour_shift(back, crop, measures.face_region(FRAME_CHECK_SIDE))
    failures = []
    if structure < MIN_SSIM:
        failures.append(f"structure lost (SSIM {structure:.2f} < {MIN_SSIM})")
    if sharp < MIN_SHARPNESS:
        failures.append(f"blurrier than a plain resize ({sharp:.0%} of its detail)")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    return decide({"ssim": structure, "sharpness": sharp, "colour_shift": shift}, failures,
                  f"×{model.scale}, the face's structure and colour kept, not blurrier than a resize")
# --- LivePortrait ------------------------------------------------------------------------------------------

def _live_portrait(ctx: Context, parts: tuple[str, ...]) -> LivePortrait | Finding:
    """The parts, or SKIP naming the ones not installed."""
    missing = [model_name(p) for p in parts if not store.is_installed(catalog.get(model_name(p)))]
    if missing:
        return Finding("SKIP", f"needs {', '.join(missing)}: run facestation models fetch "
                               f"{' '.join(missing)}")
    return LivePortrait({p: _build(model_name(p), ctx) for p in parts})


def _lp_motion(ctx: Context, lp: LivePortrait) -> tuple[npt.NDArray[np.float32], kinematics.Motion,
                                                          npt.NDArray[np.uint8]]:
    crop, _ = aligned(ctx.photos.person, *LP_CROP)
    blob = prepare(crop[None])
    return blob, lp.motion(blob)[0], crop


def judge_live_portrait(name: str, ctx: Context) -> Finding:
    """The motion extractor: a near-frontal head and an expression within the limits; the feature
    extractor and generator: the photo re-rendered with its own keypoints keeps its structure and colour;
    retargeters and stitcher: small, finite keypoint changes."""
    part = name.removeprefix("live_portrait_")
    needs = {"feature_extractor": PARTS[:3], "generator": PARTS[:3]}.get(part, ("motion_extractor", part))
    lp = _live_portrait(ctx, tuple(dict.fromkeys(needs)))
    if isinstance(lp, Finding):
        return lp
    blob, motion, crop = _lp_motion(ctx, lp)
    own = motion.keypoints()
    if part == "motion_extractor":
        return _judge_motion(motion)
    if part in ("feature_extractor", "generator"):
        output = lp.generate(lp.features(blob), own[None], own[None])[0]
        structure = measures.ssim(output, crop)
        shift = measures.colour_shift(output, crop, measures.face_region(crop.shape[0]))
        failures = [] if structure >= MIN_SSIM else [f"structure lost (SSIM {structure:.2f} < {MIN_SSIM})"]
        if shift > MAX_COLOUR_SHIFT:
            failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
        return decide({"ssim": structure, "colour_shift": shift}, failures,
                      "re-renders the face with its own keypoints, structure and colour kept")
    if part == "stitcher":
        moved = lp.stitch(own[None], own[None])[0] - own
    else:  # a retargeter, fed open-eye / open-lip ratios of a typical face
        eye = part == "eye_retargeter"
        extra = [0.3, 0.3, kinematics.EYE_TARGET[1]] if eye else [0.1, kinematics.LIP_TARGET[1]]
        inputs = np.concatenate([own.reshape(-1), extra]).astype(np.float32)[None]
        moved = lp.retarget(part, inputs)[0]
    largest = float(np.abs(moved).max())
    if not np.isfinite(largest):
        return Finding("FAIL", "keypoint changes are not finite numbers", {})
    failures = [] if largest <= MAX_KEYPOINT_MOVE else [
        f"moves a keypoint by {largest:.2f} (> {MAX_KEYPOINT_MOVE})"]
    return decide({"largest_move": largest}, failures, "small keypoint changes")


def _judge_motion(motion: kinematics.Motion) -> Finding:
    angles = (motion.pitch, motion.yaw, motion.roll)
    values = np.array([*angles, motion.scale, *motion.translation, *motion.expression.ravel()])
    if not np.all(np.isfinite(values)):
        return Finding("FAIL", "its motion is not finite numbers", {})
    reach = float(np.max(np.abs(motion.expression) / np.maximum(np.abs(np.where(
        motion.expression < 0, kinematics.EXPRESSION_MIN, kinematics.EXPRESSION_MAX)), 1e-6)))
    failures = [f"{k} {a:.0f}° on a near-frontal face (> {m:.0f}°)" for k, a, m
                in zip(("pitch", "yaw", "roll"), angles, MAX_HEAD_ANGLE, strict=True) if abs(a) > m]
    if motion.scale <= 0:
        failures.append(f"scale {motion.scale:.2f} is not positive")
    if reach > MAX_EXPRESSION:
        failures.append(f"expression at {reach:.1f}× the limits (> {MAX_EXPRESSION})")
    return decide({"pitch": motion.pitch, "yaw": motion.yaw, "roll": motion.roll, "scale": motion.scale,
                   "expression_reach": reach}, failures,
                  "a near-frontal head, an expression within the limits")
# --- lip syncers, voice extractors --------------------------------------------------------------------------

MIN_LOWER_SSIM = 0.4  # lip syncer: the re-drawn lower face vs the photo's, at 128 px
MIN_MOUTH_MOTION = 1.0  # lip syncer: mean change of the lower face between silence and a voice (levels)
MIN_VOICE_CORRELATION = 0.5  # voice extractor: a voice alone comes back (correlation with the input)
VOICE_LOUDNESS = (0.3, 1.5)  # voice extractor: its RMS relative to the input's


def check_voice(seconds: float = 1.0) -> npt.NDArray[np.int16]:
    """48 kHz stereo: a vowel-like voice (a 140 Hz tone's harmonics, opening and closing 4 times a second)."""
    t = np.arange(int(seconds * 48_000)) / 48_000
    wave = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 24))
    wave = wave * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) / 3.0
    return (np.stack([wave, wave], axis=1) * 12_000).astype(np.int16)


def judge_lip_syncer(name: str, ctx: Context) -> Finding:
    from pipeline.audio import mel
    from pipeline.lipsync import geometry
    from pipeline.lipsync.base import CROP, TEMPLATE, Mouth

    model = _build(name, ctx)
    crop, matrix = aligned(ctx.photos.person, TEMPLATE, CROP)
    shape = geometry.from_5(align.transform_points(ctx.photos.person.face.landmarks, matrix))
    loud = mel.Windows(mel.spectrogram(check_voice()), 25.0).window(10)
    quiet, voiced = (model.sync([Mouth(crop, shape, w)], 0.5)[0] for w in (mel.empty(), loud))
    x1, y1, x2, y2 = (int(np.clip(v, 0, CROP)) for v in shape.box)
    mouth = (slice(y1 + (y2 - y1) * 11 // 20, y2), slice(x1, x2))  # the lower face: below the nose
    drawn, original = voiced[0][mouth], crop[mouth]
    structure = measures.ssim(drawn, original)
    shift = float(np.abs(drawn.reshape(-1, 3).mean(axis=0) - original.reshape(-1, 3).mean(axis=0)).max())
    motion = float(np.abs(voiced[0][mouth].astype(np.float64) - quiet[0][mouth]).mean())
    failures = []
    if structure < MIN_LOWER_SSIM:
        failures.append(f"the lower face is not the photo's (SSIM {structure:.2f} < {MIN_LOWER_SSIM})")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the lower face's mean colour moved {shift:.0f} levels")
    if motion < MIN_MOUTH_MOTION:
        failures.append(f"the mouth does not follow the sound (it moved {motion:.1f} levels)")
    return decide({"ssim": structure, "colour_shift": shift, "motion": motion}, failures,
                  "re-draws the photo's lower face, and it moves with the sound")


def judge_voice_extractor(name: str, ctx: Context) -> Finding:
    sound = check_voice(2.0)
    voice = np.asarray(_build(name, ctx).extract(sound), np.float64)
    given = sound.astype(np.float64) / 32767.0
    if not np.isfinite(voice).all():
        return Finding("FAIL", "gives non-finite samples", {})
    correlation = float(np.corrcoef(voice.ravel(), given.ravel())[0, 1]) if voice.std() > 0 else 0.0
    loudness = float(np.sqrt(np.mean(voice**2)) / max(np.sqrt(np.mean(given**2)), 1e-9))
    failures = []
    if correlation < MIN_VOICE_CORRELATION:
        failures.append(f"a voice alone does not come back (correlation {correlation:.2f})")
    if not VOICE_LOUDNESS[0] <= loudness <= VOICE_LOUDNESS[1]:
        failures.append(f"its loudness is ×{loudness:.2f} the voice's")
    return decide({"correlation": correlation, "loudness": loudness}, failures,
                  "a voice alone comes back, as loud")


def judge_dfm(name: str, ctx: Context) -> Finding:
    """A DeepFaceLive model on Grace Hopper's whole-face crop (morph 1): its two masks must cover the face and
    not the corners, and its face keep the crop's contrast without a colour cast (a file fed RGB, NCHW or
    out of range fails here)."""
    model = _build(name, ctx)
    crop, _ = aligned(ctx.photos.person, model.template, model.crop_size)
    face_mask, celeb, celeb_mask = model.swap(crop[None], 1.0)
    region = measures.face_region(model.crop_size)
    found = _mask_finding(np.minimum(face_mask[0], celeb_mask[0]))
    failures = [] if found.verdict == "PASS" else [found.reason]
    contrast = measures.contrast(celeb[0], crop, region)
    shift = measures.colour_shift(celeb[0], crop, region)
    if not MIN_CONTRAST <= contrast <= MAX_CONTRAST:
        failures.append(f"the face's contrast is {contrast:.0%} of the input's")
    if shift > MAX_DFM_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    return decide({**found.figures, "contrast": contrast, "colour_shift": shift}, failures,
                  "its masks cover the face, its face keeps the crop's contrast and colour")


# --- age modifier (fran, styleganex_age) and its age estimate (fairface) ----------------------------------
MIN_AGE_SSIM = 0.5  # age modifier: the output vs its input (the same face, older or younger)
AGE_CHECK = 20  # the direction the age modifiers are checked with (a face 20 years older)
AGE_CHECK_FROM = 40.0  # fran's age for the check (FairFace is judged on its own)
ADULT_BUCKET = 3  # fairface: both photos show adults (20-29 or older)


def _age_finding(output: npt.NDArray[np.uint8], reference: npt.NDArray[np.uint8]) -> Finding:
    structure = measures.ssim(output, reference)
    shift = measures.colour_shift(output, reference, measures.face_region(reference.shape[0]))
    failures = []
    if structure < MIN_AGE_SSIM:
        failures.append(f"not the same face (SSIM {structure:.2f} < {MIN_AGE_SSIM})")
    if shift > MAX_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    return decide({"ssim": structure, "colour_shift": shift}, failures,
                  "the same face, older, in its own colours")


def judge_fran(name: str, ctx: Context) -> Finding:
    """Grace Hopper made 20 years older from 40: the output must still be her face, in its colours (a file
    fed or read in the wrong channel order or range gives a colour cast or another image)."""
    crop, _ = aligned(ctx.photos.person, "ffhq_512", FRAN_SIZE)
    output = _build(name, ctx).modify(crop[None], [fran_direction(AGE_CHECK_FROM, AGE_CHECK)])[0]
    return _age_finding(np.asarray(output, np.uint8), crop)


def judge_styleganex_age(name: str, ctx: Context) -> Finding:
    """As fran's judge, on the model's own output (before the colour match, which would hide a cast) against
    the 384 extend it was fed."""
    shot = ctx.photos.person
    crop, _ = aligned(shot, "ffhq_512", STYLEGANEX_CROP)
    nose = shot.face.landmarks[2]
    zoomed = (np.asarray(shot.face.landmarks) - nose) * STYLEGANEX_ZOOM + nose
    matrix = align.estimate(zoomed, "styleganex_384", STYLEGANEX_EXTEND)
    extend = np.asarray(align.warp(shot.frame, matrix, STYLEGANEX_EXTEND), np.uint8)
    raw = _build(name, ctx).modify(crop[None], extend[None], styleganex_direction(AGE_CHECK))[0]
    output = cv2.resize(raw, (STYLEGANEX_EXTEND, STYLEGANEX_EXTEND), interpolation=cv2.INTER_AREA)
    return _age_finding(np.asarray(output, np.uint8), extend)


def judge_classifier(name: str, ctx: Context) -> Finding:
    """FairFace's age bucket for the photos' faces: both are adults (an id below 20-29, or none in range, is
    a file read wrongly)."""
    model = _build(name, ctx)
    entry = catalog.get(name)
    shots = [shot for shot in (ctx.photos.person, ctx.photos.other) if shot is not None]
    crops = np.stack([aligned(shot, entry.template, entry.input_size)[0] for shot in shots])
    ages = model.ages(crops)
    failures = [f"an adult's age read as {age:g} (bucket below 20-29)" for age in ages
                if age < bucket_age(ADULT_BUCKET)]
    return decide({f"age_{i}": age for i, age in enumerate(ages)}, failures, "adults' ages for adults")


def judge_background_remover(name: str, ctx: Context, *, clothes: bool = False, keyer: bool = False
                             ) -> Finding:
    """Grace Hopper's background removed: her face must be foreground (the mask's mean over YuNet's box;
    ``clothes``, u2net_cloth's, over her uniform below it) and the photo's top corners background
    (``keyer``, corridor_key's, sees them painted green-screen green) -- a remover fed the wrong range or
    channels, or an inverted file, marks the background or nothing."""
    shot = ctx.photos.person
    frame = shot.frame.copy()
    h, w = frame.shape[:2]
    side = max(8, min(h, w) // 8)
    if keyer:
        frame[:side, :side] = frame[:side, -side:] = (0, 255, 0)
    (mask,), _ = _build(name, ctx).remove([frame])
    m = mask.astype(np.float32) / 255.0
    x1, y1, x2, y2 = (max(int(v), 0) for v in shot.face.box)
    if clothes:
        y1, y2 = y2 + (h - y2) // 3, h  # her uniform, under her chin
    face = float(m[y1:y2, x1:x2].mean())
    corners = float((m[:side, :side].mean() + m[:side, -side:].mean()) / 2)
    failures = []
    what = "her uniform is not foreground" if clothes else "the person's face is not foreground"
    if face < MIN_CENTRE:
        failures.append(f"{what} (mask mean {face:.2f} < {MIN_CENTRE})")
    if corners > MAX_CORNERS:
        failures.append(f"the background is kept (top corners' mask mean {corners:.2f} > {MAX_CORNERS})")
    return decide({"face": face, "corners": corners}, failures,
                  "the person is foreground, the top corners background")


JUDGES: dict[str, Judge] = {  # a family's own judge first, else its role's
    "yunet": judge_reference,
    "detector": judge_detector,
    "landmarker": judge_landmarker,
    "recogniser": judge_recogniser,
    "swapper": judge_swapper,
    "enhancer": judge_enhancer,
    "occluder": judge_occluder,
    "parser": judge_parser,
    "colorizer": judge_colorizer,
    "background_remover": judge_background_remover,
    "u2net_cloth": lambda name, ctx: judge_background_remover(name, ctx, clothes=True),
    "corridor_key": lambda name, ctx: judge_background_remover(name, ctx, keyer=True),
    "frame_enhancer": judge_frame_enhancer,
    "live_portrait": judge_live_portrait,
    "lip_syncer": judge_lip_syncer,
    "voice_extractor": judge_voice_extractor,
    "dfm": judge_dfm,
    "fran": judge_fran,
    "styleganex_age": judge_styleganex_age,
    "classifier": judge_classifier,
}


def judge_for(entry: catalog.ModelEntry) -> Judge | None:
    return JUDGES.get(entry.family) or JUDGES.get(entry.role)

