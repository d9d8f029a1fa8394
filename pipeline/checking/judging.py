"""What a ``models check`` judge is given and gives back, and the helpers every judge uses.

A judge takes the model's catalog name and the :class:`Context` (settings, photos, the built-in reference
models) and returns a :class:`Finding`. Every figure is measured by independent means: the built-in YuNet
says where the face is, the built-in SFace who it is, and plain image statistics (SSIM, Laplacian
variance, mean colour, coverage: ``measures.py``) the rest, so a file that is wrong or mis-fed cannot vouch
for itself. The shared models' judges are in ``judges.py``; a processor's are in its folder (``judge.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pipeline import families
from pipeline.checking import measures
from pipeline.checking.photos import Photos, Shot
from pipeline.faces import align
from pipeline.models import catalog
from pipeline.settings import Settings

Verdict = Literal["PASS", "FAIL", "SKIP"]

# thresholds shared by several judges: generous enough for every real file, far from what a mis-fed one gives
MAX_COLOUR_SHIFT = 20.0  # mean colour change of the face region, 0..255 levels
MIN_CONTRAST = 0.6  # grey-level std of the face region, relative to the input's
MAX_CONTRAST = 1.6
MIN_SSIM = 0.6  # an output vs its input, at its size
MIN_SHARPNESS = 0.9  # Laplacian variance, relative to the input's
MIN_CENTRE = 0.6  # mask mean over the face centre
MAX_CORNERS = 0.4  # mask mean over the crop's corners


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


def build(name: str, ctx: Context, table: Mapping[str, families.Family] = families.FAMILIES) -> Any:
    """Model ``name`` built as its catalog role, by the families of ``table`` (a processor's own)."""
    return families.build(name, ctx.settings, catalog.get(name).role, table)


def embed(recogniser: Any, shot: Shot) -> npt.NDArray[np.float32]:
    """``shot``'s face embedded by ``recogniser``, on its own crop."""
    crop, _ = aligned(shot, recogniser.template, recogniser.size)
    return np.asarray(recogniser.embed(crop[None])[0], np.float32)


def mask_finding(mask: npt.NDArray[np.floating]) -> Finding:
    """A face mask: the face centre covered, the crop's corners not."""
    centre, corners = measures.coverage(mask)
    failures = []
    if centre < MIN_CENTRE:
        failures.append(f"the face centre is {centre:.0%} covered (< {MIN_CENTRE:.0%})")
    if corners > MAX_CORNERS:
        failures.append(f"the crop's corners are {corners:.0%} covered (> {MAX_CORNERS:.0%})")
    return decide({"centre": centre, "corners": corners}, failures, "covers the face, not the corners")
