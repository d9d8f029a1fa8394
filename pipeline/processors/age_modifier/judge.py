"""The age modifier's ``models check`` judges: fran and styleganex_age (Grace Hopper made older, still her
face), FairFace (adults' ages for adults)."""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.checking import measures
from pipeline.checking.judging import MAX_COLOUR_SHIFT, Context, Finding, Judge, aligned, build, decide
from pipeline.faces import align
from pipeline.faces.classify import bucket_age
from pipeline.models import catalog
from pipeline.processors.age_modifier.age import (
    FRAN_SIZE,
    STYLEGANEX_CROP,
    STYLEGANEX_EXTEND,
    STYLEGANEX_ZOOM,
    fran_direction,
    styleganex_direction,
)
from pipeline.processors.age_modifier.processor import FAMILIES

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
    output = build(name, ctx, FAMILIES).modify(crop[None], [fran_direction(AGE_CHECK_FROM, AGE_CHECK)])[0]
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
    raw = build(name, ctx, FAMILIES).modify(crop[None], extend[None], styleganex_direction(AGE_CHECK))[0]
    output = cv2.resize(raw, (STYLEGANEX_EXTEND, STYLEGANEX_EXTEND), interpolation=cv2.INTER_AREA)
    return _age_finding(np.asarray(output, np.uint8), extend)


def judge_classifier(name: str, ctx: Context) -> Finding:
    """FairFace's age bucket for the photos' faces: both are adults (an id below 20-29, or none in range, is
    a file read wrongly)."""
    model = build(name, ctx)  # a shared family (pipeline/faces/classify.py)
    entry = catalog.get(name)
    shots = [shot for shot in (ctx.photos.person, ctx.photos.other) if shot is not None]
    crops = np.stack([aligned(shot, entry.template, entry.input_size)[0] for shot in shots])
    ages = model.ages(crops)
    failures = [f"an adult's age read as {age:g} (bucket below 20-29)" for age in ages
                if age < bucket_age(ADULT_BUCKET)]
    return decide({f"age_{i}": age for i, age in enumerate(ages)}, failures, "adults' ages for adults")


JUDGES: dict[str, Judge] = {"fran": judge_fran, "styleganex_age": judge_styleganex_age,
                            "classifier": judge_classifier}
