"""The deep swapper's ``models check`` judge: a DeepFaceLive model on Grace Hopper's whole-face crop."""

from __future__ import annotations

import numpy as np

from pipeline.checking import measures
from pipeline.checking.judging import (
    MAX_CONTRAST,
    MIN_CONTRAST,
    Context,
    Finding,
    Judge,
    aligned,
    build,
    decide,
    mask_finding,
)
from pipeline.processors.deep_swapper.processor import FAMILIES

MAX_DFM_COLOUR_SHIFT = 40.0  # another person's skin, before colour matching, but no cast

def judge_dfm(name: str, ctx: Context) -> Finding:
    """A DeepFaceLive model on Grace Hopper's whole-face crop (morph 1): its two masks must cover the face and
    not the corners, and its face keep the crop's contrast without a colour cast (a file fed RGB, NCHW or
    out of range fails here)."""
    model = build(name, ctx, FAMILIES)
    crop, _ = aligned(ctx.photos.person, model.template, model.crop_size)
    face_mask, celeb, celeb_mask = model.swap(crop[None], 1.0)
    region = measures.face_region(model.crop_size)
    found = mask_finding(np.minimum(face_mask[0], celeb_mask[0]))
    failures = [] if found.verdict == "PASS" else [found.reason]
    contrast = measures.contrast(celeb[0], crop, region)
    shift = measures.colour_shift(celeb[0], crop, region)
    if not MIN_CONTRAST <= contrast <= MAX_CONTRAST:
        failures.append(f"the face's contrast is {contrast:.0%} of the input's")
    if shift > MAX_DFM_COLOUR_SHIFT:
        failures.append(f"colour cast: the face's mean colour moved {shift:.0f} levels")
    return decide({**found.figures, "contrast": contrast, "colour_shift": shift}, failures,
                  "its masks cover the face, its face keeps the crop's contrast and colour")


JUDGES: dict[str, Judge] = {"dfm": judge_dfm}
