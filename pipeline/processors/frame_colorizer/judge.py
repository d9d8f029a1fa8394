"""The frame colouriser's ``models check`` judge: Grace Hopper in grey, coloured."""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.checking import measures
from pipeline.checking.judging import Context, Finding, Judge, build, decide
from pipeline.processors.frame_colorizer.processor import FAMILIES

MIN_CHROMA = 4.0  # the mean Lab chroma it adds to a grey photo (and at most MAX_CHROMA)
MAX_CHROMA = 60.0
MIN_SKIN = 2.0  # the face's mean Lab a and b (a skin tone is red-yellow: both above 0)
MIN_LIGHTNESS_SSIM = 0.9  # the lightness of its output vs the grey input

def judge_colorizer(name: str, ctx: Context) -> Finding:
    """Grace Hopper in grey, coloured: colour must be added, the lightness kept, and the face come out in a
    skin tone (Lab a and b both positive) -- a colouriser fed the wrong range or channels tints it blue or
    green, or adds nothing."""
    shot = ctx.photos.person
    lightness = cv2.cvtColor(shot.frame, cv2.COLOR_BGR2GRAY)
    grey = np.asarray(cv2.cvtColor(lightness, cv2.COLOR_GRAY2BGR), np.uint8)
    colour = np.asarray(build(name, ctx, FAMILIES).colorize([grey])[0], np.uint8)
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


JUDGES: dict[str, Judge] = {"colorizer": judge_colorizer}
