"""The judges of the models the engine shares (detectors, landmarks, recognisers, masks, LivePortrait's
parts), and :func:`judge_for`: a model's judge, its family's or its role's, here or in its processor's folder
(``pipeline/processors/<name>/judge.py``). What a judge takes and gives: ``judging.py``.
A new family adds its judge to the table of whoever runs it, under its family name (or relies on its role's).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pipeline.blend.region import REGION_CLASSES
from pipeline.checking import measures
from pipeline.checking.judging import (
    MAX_COLOUR_SHIFT,
    MIN_SSIM,
    Context,
    Finding,
    Judge,
    aligned,
    build,
    decide,
    embed,
    mask_finding,
)
from pipeline.checking.photos import NO_SECOND_PERSON
from pipeline.faces.landmark68 import five_from_68
from pipeline.liveportrait import kinematics
from pipeline.liveportrait.network import PARTS, LivePortrait, model_name, prepare
from pipeline.models import catalog, store
from pipeline.processors import judges

MIN_IOU = 0.5  # detector box vs YuNet's
MAX_POINT_ERROR = 0.1  # detector landmarks vs YuNet's, fraction of the box side
MIN_RANK_GAP = 0.1  # recogniser: worst same-person cosine − best different-person cosine
MIN_INSIDE = 0.9  # 68 points inside the box (grown by 10 %)
MAX_FIVE_ERROR = 0.15  # 68-point model's five points vs YuNet's, fraction of the box side
MASK_CROP = ("arcface_128", 256)  # masks are judged on the usual swap crop
MAX_HEAD_ANGLE = (45.0, 60.0, 45.0)  # LivePortrait: |pitch|, |yaw|, |roll| of the near-frontal check photo
MAX_EXPRESSION = 2.0  # LivePortrait: the expression within twice FaceFusion's limits
MAX_KEYPOINT_MOVE = 0.5  # LivePortrait retargeters and stitcher: the largest keypoint change they may make
LP_CROP = ("arcface_128", 512)  # the expression restorer's crop


# --- detectors, landmarks -------------------------------------------------------------------------------

def judge_reference(name: str, ctx: Context) -> Finding:
    """The built-in YuNet is the reference the other detectors are judged by: it must find the face."""
    face = ctx.photos.person.face
    return decide({"score": face.score}, [] if face.score >= 0.5 else ["weak face score"],
                  "the reference detector: finds the face in grace_hopper")


def judge_detector(name: str, ctx: Context) -> Finding:
    ref = ctx.photos.person
    faces = build(name, ctx).detect([ref.frame])[0]
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
    points, confidence = build(name, ctx).landmarks(ref.frame, [ref.face])
    share = measures.inside(points[0], ref.face.box)
    error = measures.point_error(five_from_68(points[0]), ref.face.landmarks, ref.face.box)
    failures = []
    if share < MIN_INSIDE:
        failures.append(f"only {share:.0%} of the 68 points inside the face box")
    if error > MAX_FIVE_ERROR:
        failures.append(f"eyes/nose/mouth off by {error:.2f} of the face size (> {MAX_FIVE_ERROR})")
    return decide({"inside": share, "five_point_error": error, "confidence": float(confidence[0])},
                  failures, "68 points on the face, near YuNet's five")


# --- recognisers -------------------------------------------------------------------------------------------

def judge_recogniser(name: str, ctx: Context) -> Finding:
    photos = ctx.photos
    if photos.other is None:
        return Finding("SKIP", NO_SECOND_PERSON)
    model = build(name, ctx)
    person = embed(model, photos.person)
    same_e = [embed(model, s) for s in photos.same]
    other = embed(model, photos.other)
    same = min(measures.cosine(person, e) for e in same_e)
    different = max(measures.cosine(e, other) for e in (person, *same_e))
    gap = same - different
    if not np.isfinite(gap):
        return Finding("FAIL", "embeddings are not finite numbers", {})
    failures = [] if gap >= MIN_RANK_GAP else [
        f"same person {same:.2f} is not above different people {different:.2f} by {MIN_RANK_GAP}"]
    return decide({"same": same, "different": different, "gap": gap}, failures,
                  "ranks the same person above another")


def judge_occluder(name: str, ctx: Context) -> Finding:
    crop, _ = aligned(ctx.photos.person, *MASK_CROP)
    return mask_finding(build(name, ctx).masks(crop[None])[0])


def judge_parser(name: str, ctx: Context) -> Finding:
    crop, _ = aligned(ctx.photos.person, *MASK_CROP)
    return mask_finding(build(name, ctx).masks(crop[None], list(REGION_CLASSES))[0])


# --- LivePortrait ------------------------------------------------------------------------------------------

def _live_portrait(ctx: Context, parts: tuple[str, ...]) -> LivePortrait | Finding:
    """The parts, or SKIP naming the ones not installed."""
    missing = [model_name(p) for p in parts if not store.is_installed(catalog.get(model_name(p)))]
    if missing:
        return Finding("SKIP", f"needs {', '.join(missing)}: run facestation models fetch "
                               f"{' '.join(missing)}")
    return LivePortrait({p: build(model_name(p), ctx) for p in parts})


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


JUDGES: dict[str, Judge] = {  # a family's own judge first, else its role's
    "yunet": judge_reference,
    "detector": judge_detector,
    "landmarker": judge_landmarker,
    "recogniser": judge_recogniser,
    "occluder": judge_occluder,
    "parser": judge_parser,
    "live_portrait": judge_live_portrait,
}


def judge_for(entry: catalog.ModelEntry) -> Judge | None:
    """The judge of ``entry``: its family's, else its role's (the shared ones, then the processors')."""
    table = JUDGES | judges()
    return table.get(entry.family) or table.get(entry.role)
