"""Pixel boost (space-to-depth sub-swaps in one batch) and every catalog swapper end to end
through FaceProcessor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.models import catalog
from pipeline.process import FaceProcessor
from pipeline.processors.face_swapper import pixel_boost
from pipeline.processors.face_swapper.color import transfer
from pipeline.settings import Settings, apply_overrides
from tests import photos, steps
from tests.surrogates import install_face_swapper, install_surrogate


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
    settings = apply_overrides(Settings(), ["selector.mode=one", *overrides])
    return FaceProcessor(settings, [photos.grace_hopper_path()])


def test_pixel_boost_512_runs_sixteen_sub_swaps_in_one_batch_and_reassembles_exactly() -> None:
    install_surrogate("inswapper_128", identity=True)
    install_surrogate("arcface_w600k_r50")
    proc = _processor("face_swapper.model=inswapper_128", "face_swapper.pixel_boost=512")
    swapper = steps.swapper(proc)
    assert swapper.boost == 4 and proc.crop_size == 512
    recorder = _Recorder(swapper.swapper.session)  # type: ignore[attr-defined]
    swapper.swapper._session = recorder  # type: ignore[attr-defined]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    item = steps.swap(proc, [target], [faces])[0][0]
    assert recorder.batches == [16]
    # the identity swap, matched to its own crop: the colour step's Lab round trip moves a level at most
    assert item.crop.shape == (512, 512, 3) and np.abs(item.result.astype(int) - item.crop).max() <= 1
    out = proc.blend(target, [item])
    assert np.abs(out.astype(int) - target).mean() < 0.5  # the identity swap pasted back: only resampling


def test_pixel_boost_batches_the_sub_images_of_every_frame_together() -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    proc = _processor("face_swapper.model=inswapper_128", "face_swapper.pixel_boost=256")
    swapper = steps.swapper(proc)
    recorder = _Recorder(swapper.swapper.session)  # type: ignore[attr-defined]
    swapper.swapper._session = recorder  # type: ignore[attr-defined]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    items = steps.swap(proc, [target, target, target], [faces, faces, faces])
    assert recorder.batches == [12]  # 3 frames × 4 sub-images
    item = items[1][0]
    subs = pixel_boost.split(item.crop[None], 2)
    alone = np.stack([swapper.swapper.swap(s[None], swapper.identities[0])[0] for s in subs])
    # each sub-image swapped and put back in place (then the whole swap colour-matched to its crop)
    c = proc.settings.color
    merged = pixel_boost.merge(alone, 2)[0]
    assert np.array_equal(item.result, transfer(merged, item.crop, c.method, c.strength, item.paste_mask))


def test_classic_swapper_ignores_pixel_boost_with_a_notice() -> None:
    proc = _processor("face_swapper.model=classic", "face_swapper.pixel_boost=512")
    assert steps.swapper(proc).boost == 1 and any("pixel_boost" in n for n in proc.notices)


SWAPPERS = ["simswap_256", "simswap_512_unoff", "ghost_1_256", "ghost_2_256", "ghost_3_256",
            "hyperswap_1a_256", "inswapper_128_fp16"]


@pytest.mark.parametrize("name", SWAPPERS)
def test_every_neural_swapper_swaps_a_real_photo_end_to_end(name: str) -> None:
    entry = catalog.get(name)
    install_face_swapper(name)  # another face's shape: it shows through the colour matching
    install_surrogate(entry.recogniser or "")
    proc = _processor(f"face_swapper.model={name}")
    assert proc.models == ["yunet", name, entry.recogniser]  # the recogniser is a model it runs (provenance)
    assert steps.swapper(proc).swapper.recogniser.name == entry.recogniser  # type: ignore[attr-defined]
    target = photos.astronaut()
    faces = proc.select(target, proc.detect([target])[0])
    item = steps.swap(proc, [target], [faces])[0][0]
    assert item.crop.shape == (entry.input_size, entry.input_size, 3)
    out = proc.blend(target, [item])
    x1, y1, x2, y2 = (int(v) for v in faces[0].box)
    inner = (slice(y1 + (y2 - y1) // 4, y2 - (y2 - y1) // 4), slice(x1 + (x2 - x1) // 4, x2 - (x2 - x1) // 4))
    assert np.abs(out[inner].astype(int) - target[inner]).mean() > 5
    far = np.ones(target.shape[:2], bool)
    far[max(0, y1 - (y2 - y1)):y2 + (y2 - y1), max(0, x1 - (x2 - x1)):x2 + (x2 - x1)] = False
    assert np.array_equal(out[far], target[far])
