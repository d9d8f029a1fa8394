"""Pixel boost (space-to-depth sub-swaps in one batch) and every catalog swapper end to end
through FaceProcessor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.models import catalog
from pipeline.process import FaceProcessor
from pipeline.settings import Settings, apply_overrides
from pipeline.swap import pixel_boost
from tests import photos
from tests.surrogates import install_surrogate


def test_split_takes_every_kth_pixel_and_merge_inverts_it() -> None:
    crops = np.random.default_rng(0).integers(0, 255, (2, 12, 12, 3), dtype=np.uint8)
    subs = pixel_boost.split(crops, 3)
    assert subs.shape == (18, 4, 4, 3)
    for n in range(2):
        for i in range(3):
            for j in range(3):
                assert np.array_equal(subs[n * 9 + i * 3 + j], crops[n, i::3, j::3])
    assert np.array_equal(pixel_boost.merge(subs, 3), crops)


def test_factor() -> None:
    assert pixel_boost.factor(128, 512) == 4
    assert pixel_boost.factor(256, 512) == 2
    assert pixel_boost.factor(256, 128) == 1
    with pytest.raises(ValueError, match="not a multiple"):
        pixel_boost.factor(256, 384)


class _Recorder:
    def __init__(self, session: Any) -> None:
        self.session, self.batches = session, []

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def get_providers(self) -> Any:
        return self.session.get_providers()

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.batches.append(len(feeds["target"]))
        return self.session.run(names, feeds)


def _processor(*overrides: str) -> FaceProcessor:
    settings = apply_overrides(Settings(), ["color.method=none", "selector.mode=one", *overrides])
    return FaceProcessor(settings, [photos.grace_hopper_path()])


def test_pixel_boost_512_runs_sixteen_sub_swaps_in_one_batch_and_reassembles_exactly() -> None:
    install_surrogate("inswapper_128", identity=True)
    install_surrogate("arcface_w600k_r50")
    proc = _processor("swapper.model=inswapper_128", "swapper.pixel_boost=512")
    assert proc.boost == 4 and proc.crop_size == 512
    recorder = _Recorder(proc.swapper.session)
    proc.swapper._session = recorder  # type: ignore[attr-defined]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    item = proc.swap([target], [faces])[0][0]
    assert recorder.batches == [16]
    assert item.crop.shape == (512, 512, 3) and np.array_equal(item.result, item.crop)
    out = proc.blend(target, [item])
    assert np.abs(out.astype(int) - target).mean() < 0.5  # the identity swap pasted back: only resampling


def test_pixel_boost_batches_the_sub_images_of_every_frame_together() -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    proc = _processor("swapper.model=inswapper_128", "swapper.pixel_boost=256")
    recorder = _Recorder(proc.swapper.session)
    proc.swapper._session = recorder  # type: ignore[attr-defined]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    items = proc.swap([target, target, target], [faces, faces, faces])
    assert recorder.batches == [12]  # 3 frames × 4 sub-images
    crop = items[1][0].crop
    sub = pixel_boost.split(crop[None], 2)[3]  # crop[1::2, 1::2]
    alone = proc.swapper.swap(sub[None], proc.identity)[0]
    # each sub-image swapped and put back in place
    assert np.array_equal(items[1][0].result[1::2, 1::2], alone)


def test_classic_swapper_ignores_pixel_boost_with_a_notice() -> None:
    proc = _processor("swapper.model=classic", "swapper.pixel_boost=512")
    assert proc.boost == 1 and any("pixel_boost" in n for n in proc.notices)


SWAPPERS = ["simswap_256", "simswap_512_unoff", "ghost_1_256", "ghost_2_256", "ghost_3_256",
            "hyperswap_1a_256", "inswapper_128_fp16"]


@pytest.mark.parametrize("name", SWAPPERS)
def test_every_neural_swapper_swaps_a_real_photo_end_to_end(name: str) -> None:
    entry = catalog.get(name)
    install_surrogate(name)
    install_surrogate(entry.recogniser or "")
    proc = _processor(f"swapper.model={name}")
    assert proc.models == ["yunet", name, entry.recogniser]  # the recogniser is a model it runs (provenance)
    assert proc.swapper.recogniser.name == entry.recogniser  # type: ignore[union-attr]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    item = proc.swap([target], [faces])[0][0]
    assert item.crop.shape == (entry.input_size, entry.input_size, 3)
    out = proc.blend(target, [item])
    x1, y1, x2, y2 = (int(v) for v in faces[0].box)
    inner = (slice(y1 + (y2 - y1) // 4, y2 - (y2 - y1) // 4), slice(x1 + (x2 - x1) // 4, x2 - (x2 - x1) // 4))
    assert np.abs(out[inner].astype(int) - target[inner]).mean() > 5
    far = np.ones(target.shape[:2], bool)
    far[max(0, y1 - (y2 - y1)):y2 + (y2 - y1), max(0, x1 - (x2 - x1)):x2 + (x2 - x1)] = False
    assert np.array_equal(out[far], target[far])
