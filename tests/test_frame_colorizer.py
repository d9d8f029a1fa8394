"""frame_colorizer (docs/processors.md §6): DDColor's a/b and DeOldify's colour merged under the frame's own
lightness, checked against an independent Lab computation (scikit-image), and the processor in the chain
(preview-style single frame, a still, a video render), the loader and the models check."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import color as skcolor

from pipeline import modelcheck
from pipeline.chain import Chain
from pipeline.errors import UserError
from pipeline.models.catalog import TensorSpec
from pipeline.process import FaceProcessor
from pipeline.processors.frame_colorizer.colorize import DDColor, DeOldify
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from tests import photos
from tests.surrogates import DDCOLOR_AB, DEOLDIFY_RGB, install_surrogate, make_surrogate
from tests.videos import count_frames, make_clip


def _grey(size: tuple[int, int] = (256, 256)) -> np.ndarray:
    """A grey BGR frame with a smooth ramp and a dark disc (every level from 30 to 220)."""
    w, h = size
    ramp = np.linspace(30, 220, w)[None, :].repeat(h, 0)
    cv2.circle(ramp, (w // 2, h // 2), min(w, h) // 5, 40.0, -1)
    g = np.rint(ramp).astype(np.uint8)
    return np.repeat(g[..., None], 3, axis=2)


def _expected(frame: np.ndarray, ab: np.ndarray, blend: int) -> np.ndarray:
    """Independent: the frame's Lab L (scikit-image) with ``ab`` (H, W, 2), back to BGR, mixed by blend."""
    lab = skcolor.rgb2lab(frame[..., ::-1] / 255.0)
    lab[..., 1:] = ab
    colour = np.clip(skcolor.lab2rgb(lab) * 255.0, 0, 255)[..., ::-1]
    return frame * (1 - blend / 100) + colour * (blend / 100)


def _settings(model: str, blend: int = 100, size: str = "256x256") -> Settings:
    return apply_overrides(Settings(), [f"frame_colorizer.model={model}", f"frame_colorizer.blend={blend}",
                                        f"frame_colorizer.size={size}",
                                        "processors.order=face_swapper,frame_colorizer"])


@pytest.mark.parametrize("blend", [100, 60])
def test_ddcolor_ab_goes_under_the_frames_own_lightness(blend: int) -> None:
    install_surrogate("ddcolor")
    frame = _grey()
    colorizer = DDColor("ddcolor", 256)
    from pipeline.processors.frame_colorizer.colorize import blend as mix

    out = mix(frame, colorizer.colorize([frame])[0], blend).astype(float)
    x0 = frame[..., 0] / 255.0  # what the model is fed: the grey level in [0, 1]
    ab = np.stack([gain * x0 + off for gain, off in DDCOLOR_AB], axis=-1)
    want = _expected(frame, ab, blend)
    assert np.abs(out - want).max() <= 2.0
    lab = skcolor.rgb2lab(out[..., ::-1] / 255.0)
    assert lab[..., 1].mean() > 10 and lab[..., 2].mean() > 10  # the surrogate's warm tint is there


def test_deoldify_keeps_its_8_bit_a_b_and_the_frames_lightness() -> None:
    install_surrogate("deoldify")
    frame = _grey()
    out = DeOldify("deoldify", 256).colorize([frame])[0].astype(float)
    g = frame[..., 0].astype(float)  # fed as 0..255
    rgb = np.stack([np.clip(np.rint(gain * g + off), 0, 255) for gain, off in DEOLDIFY_RGB], axis=-1)
    ab = skcolor.rgb2lab(rgb / 255.0)[..., 1:]
    assert np.abs(out - _expected(frame, ab, 100)).max() <= 4.0  # 8-bit Lab: a and b quantised
    # the lightness is the frame's, not the model's output's (FaceFusion's blue-channel quirk aside)
    l_out = skcolor.rgb2lab(out[..., ::-1] / 255.0)[..., 0]
    l_in = skcolor.rgb2lab(frame[..., ::-1] / 255.0)[..., 0]
    assert np.abs(l_out - l_in).mean() < 1.0


def test_the_model_sees_the_chosen_size_and_the_colour_is_resized_back() -> None:
    path = install_surrogate("ddcolor")
    frame = _grey((320, 200))
    out = DDColor("ddcolor", 192).colorize([frame])[0]
    assert out.shape == frame.shape
    lab = skcolor.rgb2lab(out[..., ::-1] / 255.0)
    # a follows the grey level (a = 20·g + 10 at 192 px, resized back): the dark disc less red than the right
    assert lab[100, 160, 1] < lab[100, 300, 1] - 5
    from pipeline.models import sessions

    session = sessions.load(path, None)
    assert session.get_inputs()[0].name == "input"


def test_another_input_name_is_bound_by_structure_and_another_channel_count_refused() -> None:
    from pipeline.models import catalog, sessions
    from pipeline.paths import models_dir

    entry = catalog.get("ddcolor")

    make_surrogate("ddcolor", models_dir() / entry.file,
                   signature=((TensorSpec("image", (1, 3, None, None)),), entry.outputs))
    colouriser = DDColor("ddcolor", 256)
    assert len(colouriser.colorize([_grey()])) == 1
    assert colouriser.runner.binding.by_structure == (("input", "image"),)
    sessions.release()
    make_surrogate("ddcolor", models_dir() / entry.file,
                   signature=((TensorSpec("image", (1, 4, None, None)),), entry.outputs))
    with pytest.raises(UserError, match="input"):
        DDColor("ddcolor", 256).colorize([_grey()])


def test_in_the_chain_after_a_swap_and_in_a_still(tmp_path: Path) -> None:
    install_surrogate("ddcolor")
    grey = cv2.cvtColor(cv2.cvtColor(photos.astronaut(), cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    settings = _settings("ddcolor")
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    assert [p.name for p in proc.processors] == ["face_swapper", "frame_colorizer"]
    work = Chain(proc).one(grey)
    assert work.out is not None and work.out.shape == grey.shape
    lab = cv2.cvtColor(work.out, cv2.COLOR_BGR2LAB).astype(float)
    assert (lab[..., 1] - 128).mean() > 5  # coloured after the swap
    target = tmp_path / "grey.png"
    cv2.imwrite(str(target), grey)
    summary = swap_image(settings, [photos.grace_hopper_path()], target, tmp_path / "out.png")
    assert "ddcolor" in summary["models"]
    still = cv2.imread(str(tmp_path / "out.png"))
    assert still.shape == grey.shape and np.abs(still.astype(int) - work.out.astype(int)).max() <= 1


def test_a_render_colours_every_frame(tmp_path: Path) -> None:
    install_surrogate("ddcolor")
    clip = make_clip(tmp_path / "c.mp4", seconds=0.5, size=(160, 120), face_image=photos.astronaut())
    settings = apply_overrides(_settings("deoldify", 80), ["frame_colorizer.model=ddcolor"])
    result = render(settings, [photos.grace_hopper_path()], clip, tmp_path / "out.mp4")
    assert result.frames == count_frames(clip) == count_frames(tmp_path / "out.mp4")
    assert result.stage_s["colorize"] > 0 and "ddcolor" in result.models


def test_models_check_passes_the_surrogate_and_flags_wrong_files() -> None:
    install_surrogate("ddcolor")
    (row,) = modelcheck.check(["ddcolor"])
    assert row.verdict == "PASS", row
    install_surrogate("ddcolor", invert=True)
    (row,) = modelcheck.check(["ddcolor"])
    assert row.verdict == "FAIL" and "not a skin tone" in row.reason, row
    install_surrogate("deoldify", constant=128.0)
    (row,) = modelcheck.check(["deoldify"])
    assert row.verdict == "FAIL" and "adds no colour" in row.reason, row
