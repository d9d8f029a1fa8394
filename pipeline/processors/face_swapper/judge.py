"""The face swapper's ``models check`` judge: Grace Hopper's identity swapped onto the astronaut."""

from __future__ import annotations

import numpy as np

from pipeline.checking import measures
from pipeline.checking.judging import (
    MAX_COLOUR_SHIFT,
    MAX_CONTRAST,
    MIN_CONTRAST,
    Context,
    Finding,
    Judge,
    aligned,
    build,
    decide,
    embed,
)
from pipeline.checking.photos import NO_SECOND_PERSON
from pipeline.faces import align
from pipeline.models import catalog, store
from pipeline.processors.face_swapper.processor import FAMILIES

MIN_IDENTITY_GAIN = 0.1  # SFace cos(output, source) − cos(target, source)

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
    swapper = build(name, ctx, FAMILIES)
    identity = swapper.prepare_source([(photos.person.frame, photos.person.face)])
    target, matrix = aligned(photos.other, swapper.template, swapper.crop_size)
    output = np.asarray(swapper.swap(target[None], identity)[0], np.uint8)
    sface = ctx.sface  # the output judged in SFace's own crop, cut from the swapper's crop
    to_sface = align.estimate(align.transform_points(photos.other.face.landmarks, matrix), sface.template,
                              sface.size)
    t_crop, o_crop = (np.asarray(align.warp(c, to_sface, sface.size), np.uint8) for c in (target, output))
    source = embed(sface, photos.person)
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


JUDGES: dict[str, Judge] = {"swapper": judge_swapper}
