"""Colour transfer through FaceProcessor on real photos (grace_hopper -> astronaut) with the built-in models.

The classic swapper already matches colours inside its own face ellipse, so each case also runs with
its output given a strong colour cast (what a neural swapper's drift looks like) to show the transfer at work.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from pipeline.blend import paste
from pipeline.faces import align
from pipeline.process import FaceProcessor
from pipeline.processors.face_swapper.color import to_lab
from pipeline.settings import Settings, apply_overrides
from tests import photos, steps

CAST = np.array([40, -25, 10], np.int16)  # BGR


def _run(
        method: str, cast: bool) -> tuple[np.ndarray, np.ndarray, npt.NDArray[np.bool_], FaceProcessor, list]:
    target = photos.astronaut()
    settings = apply_overrides(Settings(), {"face_swapper.model": "classic", "color.method": method})
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    swapper = steps.swapper(proc).swapper
    if cast:
        real = swapper.swap

        def tinted(crops: np.ndarray, identity: object) -> np.ndarray:
            return np.clip(real(crops, identity).astype(np.int16) + CAST, 0, 255).astype(np.uint8)

        swapper.swap = tinted  # type: ignore[method-assign]
    faces = proc.select(target, proc.detect([target])[0])
    items = steps.swap(proc, [target], [faces])[0]
    out = proc.blend(target, items)
    region = cv2.warpAffine(np.ascontiguousarray(steps.swapper(proc).box), align.invert(items[0].matrix),
                            (target.shape[1], target.shape[0])) > 0.5
    return out, target, region, proc, items


def _lab_gap(a: np.ndarray, b: np.ndarray, region: npt.NDArray[np.bool_]) -> float:
    return float(np.linalg.norm(to_lab(a)[region].mean(0) - to_lab(b)[region].mean(0)))


def _hist_gap(a: np.ndarray, b: np.ndarray, region: npt.NDArray[np.bool_]) -> float:
    """Mean over B, G, R of the total-variation distance between the region's histograms."""
    n = region.sum()
    return float(np.mean([0.5 * np.abs(np.bincount(a[..., c][region], minlength=256)
                                       - np.bincount(b[..., c][region], minlength=256)).sum() / n
                          for c in range(3)]))


@pytest.mark.parametrize("cast", [False, True])
@pytest.mark.parametrize("method", ["reinhard", "mkl"])
def test_reinhard_and_mkl_match_the_target_face_mean_within_3_lab_units(method: str, cast: bool) -> None:
    out, target, region, _, _ = _run(method, cast)
    none_out, *_ = _run("none", cast)
    gap, before = _lab_gap(out, target, region), _lab_gap(none_out, target, region)
    assert gap <= 3.0, gap
    assert gap < before  # measured: 1.0 -> 0.1 plain, 35 -> 0.1 with the cast
    if cast:
        assert before > 10


@pytest.mark.parametrize("cast", [False, True])
def test_histogram_matching_brings_the_histograms_closer(cast: bool) -> None:
    out, target, region, _, _ = _run("histogram", cast)
    none_out, *_ = _run("none", cast)
    gap, before = _hist_gap(out, target, region), _hist_gap(none_out, target, region)
    assert gap < before and gap < 0.1, (gap, before)


def test_none_changes_nothing() -> None:
    out, target, _, proc, items = _run("none", True)
    expected = paste.paste_back(target, items[0].result, items[0].matrix, steps.swapper(proc).box)
    assert np.array_equal(out, expected)
