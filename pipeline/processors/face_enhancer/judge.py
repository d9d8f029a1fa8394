"""The face enhancer's ``models check`` judge: the restored face keeps its structure and colour, not
blurrier."""

from __future__ import annotations

import numpy as np

from pipeline.checking import measures
from pipeline.checking.judging import (
    MAX_COLOUR_SHIFT,
    MIN_SHARPNESS,
    MIN_SSIM,
    Context,
    Finding,
    Judge,
    aligned,
    build,
    decide,
)
from pipeline.processors.face_enhancer.processor import FAMILIES


def judge_enhancer(name: str, ctx: Context) -> Finding:
    enhancer = build(name, ctx, FAMILIES)
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


JUDGES: dict[str, Judge] = {"enhancer": judge_enhancer}
