"""background_remover (docs/processors.md §7): each family's mask from a surrogate of its real signature (its
foreground is the input's red, mean/std undone, so a wrong channel order, mean, std or size shows), the
despill and fill maths, and the processor in the chain: a fill colour outside the mask, or the frame's alpha
(stills: PNG/WebP; combined with a still's own alpha; scaled by a later upscaler). Videos, jobs and the farm
with alpha: tests/test_background_video.py."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from cli.main import main
from pipeline import checks, modelcheck
from pipeline.chain import Chain
from pipeline.errors import SettingsError, UserError
from pipeline.jobs.store import JobStore
from pipeline.models import catalog, sessions
from pipeline.models.catalog import TensorSpec
from pipeline.paths import models_dir
from pipeline.process import FaceProcessor
from pipeline.processors.background_remover.background import (
    BackgroundRemover,
    ClothRemover,
    CorridorKey,
    despill,
    fill,
)
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from tests import photos
from tests.surrogates import install_surrogate, make_surrogate

RED = (40, 40, 255)  # BGR: the surrogate's foreground
BLUE = (220, 90, 0)  # no red: its background


def _scene(w: int = 200, h: int = 120) -> np.ndarray:
    """A blue frame with a red rectangle (x 60..140, y 30..90)."""
    frame = np.zeros((h, w, 3), np.uint8)
    frame[:] = BLUE
    frame[30:90, 60:140] = RED
    return frame


def _inside(a: np.ndarray) -> np.ndarray:
    return a[36:84, 66:134]  # the rectangle, a few pixels in from its edge (the resize blends the edge)


def _outside(a: np.ndarray) -> np.ndarray:
    """The frame less the rectangle grown by 6 px, flattened."""
    keep = np.ones(a.shape[:2], bool)
    keep[24:96, 54:146] = False
    return a[keep]


def _settings(*overrides: str) -> Settings:
    return apply_overrides(Settings(), ["processors.order=background_remover", *overrides])


# ---------------------------------------------------------------- each family's facts

@pytest.mark.parametrize("name", ["modnet", "u2net_human", "birefnet_general", "isnet_general"])
def test_the_mask_is_the_models_probability_at_the_frames_size(name: str) -> None:
    """Levels of red 0..255 in columns: the mask is each level (the surrogate's output is the red it was fed,
    its mean/std undone) at the frame's size; a wrong mean, std or channel order changes every level."""
    install_surrogate(name)
    levels = np.repeat(np.linspace(0, 255, 9).astype(np.uint8), 40)[None, :].repeat(90, 0)
    frame = np.zeros((90, 360, 3), np.uint8)
    frame[..., 2], frame[..., 0] = levels, 255 - levels  # red rises, blue falls
    remover = BackgroundRemover(name)
    assert remover.side == catalog.get(name).input_size
    (mask,), (kept,) = remover.remove([frame])
    assert mask.shape == frame.shape[:2] and mask.dtype == np.uint8 and kept is frame
    centres = mask[45, 20::40].astype(int)  # the middle of each column band
    assert np.abs(centres - levels[0, 20::40].astype(int)).max() <= 2, centres


def test_u2net_cloth_takes_every_class_but_the_first() -> None:
    install_surrogate("u2net_cloth")  # class scores (0.5, red, 0, 0): class 1 wins where red > 0.5
    (mask,), _ = ClothRemover("u2net_cloth").remove([_scene()])
    assert (_inside(mask) == 255).all() and (_outside(mask) == 0).all()


def test_corridor_key_feeds_the_coarse_key_and_its_foreground_replaces_the_frame() -> None:
    """The surrogate's alpha is its 4th input channel: 1 − clip(2·(G − max(R, B)), 0, 1), un-normalised,
    so the green screen is 0 and the red subject 1; its foreground (1 − the RGB it was fed, normalisation
    undone) becomes the frame."""
    install_surrogate("corridor_key_1024")
    frame = np.zeros((120, 200, 3), np.uint8)
    frame[:] = (0, 255, 0)  # green screen
    frame[30:90, 60:140] = RED
    (mask,), (fg,) = CorridorKey("corridor_key_1024").remove([frame])
    assert (_inside(mask) == 255).all() and (_outside(mask) == 0).all()
    assert fg.shape == frame.shape
    negative = 255 - frame.astype(int)
    for part in (_inside, _outside):  # away from the edge, which the resizes blend
        assert np.abs(part(fg).astype(int) - part(negative)).max() <= 2


def test_despill_and_fill_follow_the_formulas() -> None:
    rng = np.random.default_rng(3)
    frame = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    mask = rng.integers(0, 256, (8, 8), dtype=np.uint8)
    i = frame.astype(np.float64)
    b, g, r = i[..., 0], i[..., 1], i[..., 2]
    want = i.copy()
    want[..., 1] = np.minimum(g, (b + r) / 2)  # green despill: weight 1 on green, 0 elsewhere
    assert np.array_equal(despill(frame, (0, 255, 0)), want.astype(np.uint8))
    k = 1 - mask[..., None] / 255.0
    painted = i * (1 - k) + np.array([30, 20, 10.0]) * k  # fill (10, 20, 30) RGB = (30, 20, 10) BGR
    assert np.abs(fill(frame, mask, (10, 20, 30)).astype(int) - painted.astype(int)).max() <= 1


# The facts of docs/processors.md §7, stated here (not read from the catalog): key -> (S, mean, std, bucket)
_I = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
_Z, _H = ((0.0,) * 3, (1.0,) * 3), ((0.5,) * 3, (1.0,) * 3)
FACTS: dict[str, tuple[int, tuple[float, ...], tuple[float, ...], str]] = {
    "ben_2": (1024, *_Z, "models-3.5.0"), "birefnet_general": (1024, *_Z, "models-3.5.0"),
    "birefnet_portrait": (1024, *_Z, "models-3.5.0"), "corridor_key_1024": (1024, *_I, "models-3.6.0"),
    "corridor_key_2048": (2048, *_I, "models-3.6.0"), "isnet_general": (1024, *_H, "models-3.5.0"),
    "modnet": (512, (0.5,) * 3, (0.5,) * 3, "models-3.5.0"), "ormbg": (1024, *_Z, "models-3.5.0"),
    "rmbg_1.4": (1024, *_H, "models-3.5.0"), "rmbg_2.0": (1024, *_I, "models-3.5.0"),
    "silueta": (320, *_I, "models-3.5.0"), "u2net_cloth": (768, *_I, "models-3.5.0"),
    "u2net_general": (320, *_I, "models-3.5.0"), "u2net_human": (320, *_I, "models-3.5.0"),
    "u2netp": (320, *_I, "models-3.5.0"),
}


def test_the_catalog_holds_facefusions_fifteen_with_their_facts() -> None:
    from typing import get_args

    from pipeline.types import BackgroundRemoverName

    assert set(get_args(BackgroundRemoverName)) == set(FACTS) == {
        e.name for e in catalog.by_role("background_remover")}
    for name, (side, mean, std, bucket) in FACTS.items():
        e = catalog.get(name)
        assert (e.input_size, e.mean, e.std, e.channels) == (side, mean, std, "rgb"), name
        assert e.url is not None and f"/{bucket}/{name}.onnx" in e.url and e.crc32_url, name
        assert e.inputs[0].name == "input" and e.inputs[0].shape[1] == (4 if "corridor" in name else 3)
        assert e.unverified, name  # the outputs' names and shapes are not read off the files yet


def test_the_model_is_fed_the_frame_resized_square_as_rgb_normalised() -> None:
    """Independent of the catalog: cv2.resize to S×S (linear), BGR->RGB, /255, (x − mean)/std."""
    install_surrogate("rmbg_2.0")
    frame = np.random.default_rng(1).integers(0, 256, (90, 160, 3), dtype=np.uint8)
    side, mean, std, _ = FACTS["rmbg_2.0"]
    want = cv2.resize(frame, (side, side), interpolation=cv2.INTER_LINEAR)[..., ::-1] / 255.0
    want = ((want - np.array(mean)) / np.array(std)).transpose(2, 0, 1)
    assert np.abs(BackgroundRemover("rmbg_2.0").blob([frame])[0] - want).max() < 1e-4


def test_another_export_is_bound_by_structure_and_a_wrong_size_refused_at_load() -> None:
    """Another input name (rembg's exports say ``input.1``): the one input of the declared shape is bound;
    the same network at another size is refused, naming the sizes."""
    entry = catalog.get("modnet")
    make_surrogate("modnet", models_dir() / entry.file,
                   signature=((TensorSpec("image", (1, 3, 512, 512)),), entry.outputs))
    remover = BackgroundRemover("modnet")
    masks, _ = remover.remove([_scene()])
    assert masks[0].shape == _scene().shape[:2]
    assert remover.runner.binding.by_structure == (("input", "image"),)
    sessions.release()
    make_surrogate("modnet", models_dir() / entry.file,
                   signature=((TensorSpec("input", (1, 3, 320, 320)),), entry.outputs))  # u2net's size
    with pytest.raises(UserError, match="320"):
        BackgroundRemover("modnet").remove([_scene()])


# ---------------------------------------------------------------- settings

def test_fill_and_despill_take_a_colour_transparent_or_none() -> None:
    s = _settings("background_remover.fill=10,20,30", "background_remover.despill=#00FF00")
    assert (s.background_remover.fill, s.background_remover.despill) == ("#0a141e", "#00ff00")
    assert Settings().background_remover.fill == "#00ff00"  # green screen: every output keeps it
    assert _settings("background_remover.fill=Transparent").background_remover.transparent
    with pytest.raises(SettingsError, match=r"'red' is not a colour: use #RRGGBB or R,G,B"):
        _settings("background_remover.fill=red")
    with pytest.raises(SettingsError, match="not a colour"):
        _settings("background_remover.despill=1,2,300")


# ---------------------------------------------------------------- in the chain, stills

def _chain(settings: Settings) -> Chain:
    return Chain(FaceProcessor(settings, [photos.grace_hopper_path()]))


def test_a_fill_colour_paints_every_pixel_outside_the_mask() -> None:
    install_surrogate("modnet", gain=4.0)
    frame = _scene()
    work = _chain(_settings("background_remover.fill=#102030")).one(frame)
    assert work.out is not None and work.alpha is None
    assert (_outside(work.out) == (0x30, 0x20, 0x10)).all()  # BGR of #102030
    assert np.array_equal(_inside(work.out), _inside(frame))


def test_transparent_keeps_the_pixels_and_gives_the_frame_its_alpha() -> None:
    install_surrogate("modnet", gain=4.0)
    frame = _scene()
    work = _chain(_settings("background_remover.fill=transparent")).one(frame)
    assert work.out is not None and np.array_equal(work.out, frame)
    assert work.alpha is not None and work.alpha.shape == frame.shape[:2]
    assert (_outside(work.alpha) == 0).all() and (_inside(work.alpha) == 255).all()


def test_a_later_upscaler_scales_the_alpha_with_the_frame() -> None:
    install_surrogate("modnet", gain=4.0)
    install_surrogate("real_esrgan_x2")
    settings = _settings("processors.order=background_remover,frame_enhancer",
                         "frame_enhancer.model=real_esrgan_x2", "background_remover.fill=transparent")
    work = _chain(settings).one(_scene())
    assert work.out is not None and work.out.shape == (240, 400, 3)
    assert work.alpha is not None and work.alpha.shape == (240, 400)
    assert (work.alpha[80:160, 140:260] == 255).all() and work.alpha[10, 10] == 0 == work.alpha[230, 390]


@pytest.mark.parametrize("suffix", [".png", ".webp"])
def test_a_transparent_still_has_alpha_0_outside_the_mask(tmp_path: Path, suffix: str) -> None:
    install_surrogate("modnet", gain=4.0)
    target = tmp_path / "t.png"
    cv2.imwrite(str(target), _scene())
    out = tmp_path / f"out{suffix}"
    settings = _settings("background_remover.fill=transparent")
    summary = swap_image(settings, [photos.grace_hopper_path()], target, out)
    assert "modnet" in summary["models"]
    with Image.open(out) as img:
        assert img.mode == "RGBA"
        rgba = np.asarray(img)
    assert (_outside(rgba[..., 3]) == 0).all() and (_inside(rgba[..., 3]) == 255).all()
    if suffix == ".png":  # lossless: the pixels are the target's
        assert np.array_equal(rgba[..., 2::-1], _scene())


def test_a_stills_own_alpha_is_kept_where_it_is_lower(tmp_path: Path) -> None:
    install_surrogate("modnet", gain=4.0)
    rgba = np.dstack([_scene()[..., ::-1], np.full((120, 200), 255, np.uint8)])
    rgba[:60, :, 3] = 100  # the top half half-transparent already
    target = tmp_path / "t.png"
    Image.fromarray(rgba, "RGBA").save(target)
    swap_image(_settings("background_remover.fill=transparent"), [photos.grace_hopper_path()], target,
               tmp_path / "o.png")
    with Image.open(tmp_path / "o.png") as img:
        alpha = np.asarray(img)[..., 3]
    assert (alpha[40:56, 70:130] == 100).all()  # inside the mask, the still's own 100: min(255, 100)
    assert (alpha[64:84, 70:130] == 255).all() and alpha[5, 5] == 0 == alpha[110, 5]
    swap_image(_settings("background_remover.fill=#000000"), [photos.grace_hopper_path()], target,
               tmp_path / "c.png")
    with Image.open(tmp_path / "c.png") as img:
        assert (np.asarray(img)[..., 3] == rgba[..., 3]).all()  # a fill colour leaves the still's alpha


def test_the_preview_shows_a_transparent_background_as_a_checkerboard(tmp_path: Path) -> None:
    from pipeline.preview import preview

    install_surrogate("modnet", gain=4.0)
    target = tmp_path / "t.png"
    cv2.imwrite(str(target), _scene())
    rgb = preview(_settings("background_remover.fill=transparent"), [photos.grace_hopper_path()], target)
    assert set(np.unique(_outside(rgb))) == {153, 204}  # grey squares where the background was
    assert np.array_equal(_inside(rgb), _inside(_scene())[..., ::-1])


# ---------------------------------------------------------------- the pre-check

@pytest.mark.parametrize("name", ["o.jpg", "o.mp4", "o.mkv", "o.m4v"])
def test_a_transparent_output_that_cannot_carry_alpha_is_refused_in_one_line(
        tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("modnet")
    target = tmp_path / ("t.png" if name.endswith(".jpg") else "t.mp4")
    if name.endswith(".jpg"):
        cv2.imwrite(str(target), _scene())
    else:
        from tests.videos import make_clip

        make_clip(target, seconds=0.2, size=(64, 48), audio=False)
    settings = _settings("background_remover.fill=transparent")
    with pytest.raises(UserError, match=r"needs an output that keeps transparency: .* use \.png or \.webp "
                                        r"for a still, \.webm \(VP9\) or \.mov \(ProRes 4444\)"):
        checks.check_alpha_output(settings, tmp_path / name)
    args = ["--source", str(photos.grace_hopper_path()), "--target", str(target), "--output",
            str(tmp_path / name), "--set", "processors.order=background_remover",
            "--set", "background_remover.fill=transparent"]
    assert main(["swap", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{name} cannot; use .png or .webp" in err, err
    assert not (tmp_path / name).exists()
    assert main(["queue", "add", *args]) == 2
    assert "keeps transparency" in capsys.readouterr().err
    assert JobStore().list() == []  # nothing queued
    checks.check_alpha_output(_settings(), tmp_path / name)  # a fill colour: any output


# ---------------------------------------------------------------- models check

@pytest.mark.parametrize("name", ["modnet", "corridor_key_1024"])
def test_models_check_passes_the_surrogate_and_flags_an_inverted_file(name: str) -> None:
    install_surrogate(name)
    (row,) = modelcheck.check([name])
    assert row.verdict == "PASS", row
    install_surrogate("modnet", invert=True)
    (row,) = modelcheck.check(["modnet"])
    assert row.verdict == "FAIL" and "face is not foreground" in row.reason, row
    assert "background is kept" in row.reason, row


def test_the_ui_names_a_transparent_output_in_a_format_that_keeps_it(tmp_path: Path) -> None:
    from pipeline.workspace import output_path

    assert output_path(tmp_path, "clip.mp4", transparent=True).suffix == ".webm"
    assert output_path(tmp_path, "photo.jpg", transparent=True).suffix == ".png"
    assert output_path(tmp_path, "photo.webp", transparent=True).suffix == ".webp"
    assert output_path(tmp_path, "photo.jpg").suffix == ".jpg"
    assert output_path(tmp_path, "c.mp4").suffix == ".mp4"
