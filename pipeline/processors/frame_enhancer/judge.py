"""The frame enhancer's ``models check`` judge: the face upscaled, its structure and colour kept."""

from __future__ import annotations

import cv2
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
from pipeline.processors.frame_enhancer.processor import FAMILIES

FRAME_CHECK_SIDE = 128  # the face cut to this side, upscaled: a few tiles at most


def judge_frame_enhancer(name: str, ctx: Context) -> Finding:
    """The face (an aligned 128 px crop) upscaled: exactly ``scale`` × its size, its structure and colour
    kept once brought back to 128 px, and not blurrier than the same crop resized linearly."""
    model = build(name, ctx, FAMILIES)
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


JUDGES: dict[str, Judge] = {"frame_enhancer": judge_frame_enhancer}
