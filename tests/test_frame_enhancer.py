"""frame_enhancer: FaceFusion's tiling and blend (docs/processors.md §1.3-1.4) on surrogates of the real
files' signature, and the ×scale output through stills, previews, renders, queued jobs and the pre-check.

The real signature (docs/processors.md §1.2) is stated here (not from the catalog): ``input`` 1×3×S×S float32
RGB in [0, 1] -> output 0, 1×3×(S·scale)×(S·scale). The surrogates add a fixed pattern over each output tile's
own pixels (a tile put in the wrong place, or cropped by the wrong overlap, shows), or blur with zero padding
first (a tile's border darkens: a kept overlap would be a seam).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from cli.main import main
from pipeline import checks, modelcheck
from pipeline.errors import ModelMismatch, SettingsError, UserError
from pipeline.image import Picture, write_image
from pipeline.jobs import segments
from pipeline.jobs.hold import Gate
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run, start_in_thread
from pipeline.models import catalog, sessions
from pipeline.models.catalog import TensorSpec
from pipeline.paths import models_dir
from pipeline.plan import ModelPlan
from pipeline.processors.frame_enhancer.tiles import TileGrid
from pipeline.processors.frame_enhancer.upscaler import TiledUpscaler, group_size
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.farmkit import local_farm, render_on_farm
from tests.surrogates import make_surrogate
from tests.timing import scaled
from tests.videos import count_frames, make_clip, stream_info

# docs/processors.md §1.1: (S, P, O) and scale of the files used here
FACTS = {"span_kendata_x4": ((128, 8, 4), 4), "real_esrgan_x2": ((256, 16, 8), 2),
         "real_web_photo_x4": ((64, 4, 2), 4), "ultra_sharp_2_x4": ((1024, 64, 32), 4),
         "real_esrgan_x8": ((256, 16, 8), 8), "real_esrgan_x2_fp16": ((256, 16, 8), 2)}


def _real(side: int, scale: int, dtype: str = "float32") -> tuple[list[TensorSpec], list[TensorSpec]]:
    return ([TensorSpec("input", (1, 3, side, side), dtype)],
            [TensorSpec("output", (1, 3, side * scale, side * scale), dtype)])


def _install(name: str, **options: object) -> Path:
    (side, _, _), scale = FACTS[name]
    dtype = "float16" if name.endswith("_fp16") else "float32"
    return make_surrogate(name, models_dir() / catalog.get(name).file, signature=_real(side, scale, dtype),
                          **options)


def _frame(h: int, w: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), np.uint8)


X2 = "frame_enhancer.model=real_esrgan_x2"


def _settings(*overrides: str) -> Settings:
    return apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", *overrides])


# ---------------------------------------------------------------- the tiling arithmetic (§1.3)

def test_the_worked_examples_of_the_tiling() -> None:
    grid = TileGrid(1080, 1920, 128, 8, 4)
    assert (grid.top, grid.left, grid.right, grid.bottom) == (12, 12, 116, 116)
    assert grid.padded_shape == (1208, 2048)
    assert (len(grid.cols), len(grid.rows), grid.count, grid.n_cols) == (17, 10, 170, 17)
    wide = TileGrid(1080, 1920, 256, 16, 8)
    assert (wide.top, wide.right, wide.bottom) == (24, 232, 112)
    assert (len(wide.cols), len(wide.rows), wide.count) == (9, 5, 45)


def test_the_catalog_has_all_nineteen_upscalers_with_their_tiles_and_scales() -> None:
    entries = catalog.by_role("frame_enhancer")
    assert len(entries) == 19
    for name, (tile, scale) in FACTS.items():
        entry = catalog.get(name)
        assert (entry.tile, entry.scale) == (tile, scale)
        assert entry.crc32_url is not None and entry.crc32_url.endswith(f"/{name}.hash")
    assert catalog.get("real_esrgan_x2_fp16").unverified  # its I/O dtype is not known
    assert Settings().frame_enhancer.model == "span_kendata_x4" and Settings().frame_enhancer.blend == 80
    with pytest.raises(SettingsError, match="frame_enhancer.blend"):
        apply_overrides(Settings(), ["frame_enhancer.blend=101"])


# ---------------------------------------------------------------- the acceptance: equal inside each tile

def _expected_with_pattern(frame: np.ndarray, pattern_levels: np.ndarray, tile: tuple[int, int, int],
                           scale: int) -> np.ndarray:
    """The frame repeated ``scale`` ×, plus, at each output pixel, the pattern at that pixel's place in the
    output tile that §1.3 says produced it: the core holding it (rows of ``S − 2O`` after ``P``, offset by the
    overlap ``O``)."""
    side, pad, overlap = tile
    core = (side - 2 * overlap) * scale
    h, w = frame.shape[0] * scale, frame.shape[1] * scale
    yy, xx = np.mgrid[0:h, 0:w]
    ly = (yy + pad * scale) % core + overlap * scale  # the pixel's row in its tile's output
    lx = (xx + pad * scale) % core + overlap * scale
    big = frame.repeat(scale, 0).repeat(scale, 1).astype(np.int32)
    return np.clip(big + pattern_levels[ly, lx][..., None], 0, 255).astype(np.uint8)


@pytest.mark.parametrize("name", ["span_kendata_x4", "real_web_photo_x4"])
def test_the_output_is_scale_times_the_input_and_each_tile_is_the_models_upscale(name: str) -> None:
    (side, _, _), scale = tile_facts = FACTS[name]
    out_side = side * scale
    levels = np.random.default_rng(4).integers(-40, 41, (out_side, out_side))  # whole levels: exact
    _install(name, pattern=levels / 255.0)
    upscaler = TiledUpscaler(name)
    frames = [_frame(190, 250, 1), _frame(61, 97, 2)]  # sizes of no whole number of cores; one batch
    outs = upscaler.enhance(frames, 100)
    for frame, out in zip(frames, outs, strict=True):
        assert out.shape == (frame.shape[0] * scale, frame.shape[1] * scale, 3)
        np.testing.assert_array_equal(out, _expected_with_pattern(frame, levels, tile_facts[0], scale))


def _blur_then_repeat(frame: np.ndarray, scale: int) -> np.ndarray:
    """The whole frame through a 3×3 mean with zero padding (as the model sees it: black beyond the frame),
    repeated ``scale`` ×: what one tile as large as the frame would give."""
    padded = np.pad(frame.astype(np.float64) / 255.0, ((1, 1), (1, 1), (0, 0)))
    h, w = frame.shape[:2]
    mean = sum(padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)) / 9.0
    return np.clip(np.floor(mean * 255.0 + 0.5), 0, 255).astype(np.uint8).repeat(scale, 0).repeat(scale, 1)


def test_no_seam_at_tile_borders_and_a_kept_overlap_would_show(monkeypatch: pytest.MonkeyPatch) -> None:
    _install("real_esrgan_x2", blur=True)
    frame = _frame(300, 530, 3)
    reference = _blur_then_repeat(frame, 2)
    out = TiledUpscaler("real_esrgan_x2").enhance([frame], 100)[0]
    assert np.abs(out.astype(int) - reference).max() <= 1  # float rounding only
    # the same tiles without their overlap: each tile's blurred border is in the output, at every border
    entry = catalog.get("real_esrgan_x2")
    unlapped = TiledUpscaler("real_esrgan_x2")
    monkeypatch.setattr(unlapped, "grid", lambda h, w: TileGrid(h, w, 256, 16, 0))
    seamed = unlapped.enhance([frame], 100)[0]
    assert entry.tile == (256, 16, 8)
    assert np.abs(seamed.astype(int) - reference).max() > 40


def test_blend_is_add_weighted_with_the_frame_resized_linearly() -> None:
    _install("span_kendata_x4")
    frame = _frame(150, 133, 5)
    upscaler = TiledUpscaler("span_kendata_x4")
    big = frame.repeat(4, 0).repeat(4, 1)
    plain = cv2.resize(frame, (133 * 4, 150 * 4), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_array_equal(upscaler.enhance([frame], 80)[0], cv2.addWeighted(plain, 0.2, big, 0.8, 0))
    np.testing.assert_array_equal(upscaler.enhance([frame], 100)[0], big)
    runs: list[int] = []
    upscaler.upscale = lambda tiles: runs.append(len(tiles))  # type: ignore[method-assign,assignment,return-value]
    np.testing.assert_array_equal(upscaler.enhance([frame], 0)[0], plain)
    assert runs == []  # blend 0: the model is not run


def test_tiles_run_in_bounded_groups_across_frames() -> None:
    assert group_size(128, 4) == 16 and group_size(256, 2) == 16 and group_size(1024, 4) == 1
    assert group_size(256, 8) == 1 and group_size(64, 4) == 64
    _install("span_kendata_x4")
    upscaler = TiledUpscaler("span_kendata_x4", group_pixels=3 * 512 * 512)
    seen: list[int] = []
    upscale = upscaler.upscale

    def counted(tiles: np.ndarray) -> np.ndarray:
        seen.append(len(tiles))
        return upscale(tiles)

    upscaler.upscale = counted  # type: ignore[method-assign]
    frames = [_frame(250, 250, 6), _frame(130, 250, 7)]
    counts = [upscaler.grid(*f.shape[:2]).count for f in frames]
    assert counts == [9, 6]
    outs = upscaler.enhance(frames, 100)
    assert seen == [3, 3, 3, 3, 3]  # never more than the group; the second frame's tiles fill runs too
    for frame, out in zip(frames, outs, strict=True):
        np.testing.assert_array_equal(out, frame.repeat(4, 0).repeat(4, 1))


def test_an_fp16_file_is_fed_the_type_it_declares() -> None:
    path = _install("real_esrgan_x2_fp16")
    upscaler = TiledUpscaler("real_esrgan_x2_fp16")
    assert [a.type for a in upscaler.runner.session.get_inputs()] == ["tensor(float16)"]
    frame = _frame(100, 120, 8)
    np.testing.assert_array_equal(upscaler.enhance([frame], 100)[0], frame.repeat(2, 0).repeat(2, 1))
    make_surrogate("real_esrgan_x2_fp16", path, signature=_real(256, 2))  # float32 I/O, as FaceFusion feeds
    again = TiledUpscaler("real_esrgan_x2_fp16")
    np.testing.assert_array_equal(again.enhance([frame], 100)[0], frame.repeat(2, 0).repeat(2, 1))


def test_the_loader_takes_the_real_signature_and_refuses_a_wrong_file(tmp_path: Path) -> None:
    for name, ((side, _, _), scale) in FACTS.items():
        if name == "ultra_sharp_2_x4":
            continue  # a 4096² output: the same code, too large to build here for nothing
        dtype = "float16" if name.endswith("_fp16") else "float32"
        path = make_surrogate(name, tmp_path / f"{name}.onnx", signature=_real(side, scale, dtype))
        sessions.load(path, catalog.get(name))
    nhwc = ([TensorSpec("input", (1, 128, 128, 3))], [TensorSpec("output", (1, 512, 512, 3))])
    wrong = make_surrogate("span_kendata_x4", tmp_path / "nhwc.onnx", signature=nhwc)
    with pytest.raises(ModelMismatch, match="does not look like span_kendata_x4"):
        sessions.load(wrong, catalog.get("span_kendata_x4"))
    x2 = make_surrogate("real_esrgan_x2", tmp_path / "x2.onnx")
    with pytest.raises(ModelMismatch, match="span_kendata_x4"):
        sessions.load(x2, catalog.get("span_kendata_x4"))  # a ×2 file with 256 tiles is not it


# ---------------------------------------------------------------- models check

def test_models_check_passes_the_surrogate_and_flags_swapped_channels() -> None:
    _install("real_web_photo_x4")
    (row,) = modelcheck.check(["real_web_photo_x4"])
    assert row.verdict == "PASS", row
    _install("real_web_photo_x4", swap_channels=True)
    (row,) = modelcheck.check(["real_web_photo_x4"])
    assert row.verdict == "FAIL" and "colour cast" in row.reason, row


# ---------------------------------------------------------------- stills, preview, renders, jobs

def test_a_still_keeps_its_alpha_at_the_new_size(tmp_path: Path) -> None:
    _install("real_esrgan_x2")
    rgba = np.zeros((90, 120, 4), np.uint8)
    rgba[..., :3] = _frame(90, 120, 9)
    rgba[..., 3] = np.linspace(0, 255, 120, dtype=np.uint8)[None, :]
    rgba[30:60, 40:80, 3] = 0
    target = tmp_path / "t.png"
    Image.fromarray(rgba, "RGBA").save(target)
    out = tmp_path / "o.png"
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                 "--output", str(out), "--set", "processors.order=frame_enhancer",
                 "--set", "frame_enhancer.model=real_esrgan_x2", "--set", "frame_enhancer.blend=100"])
    assert code == 0
    with Image.open(out) as img:
        assert img.mode == "RGBA" and img.size == (240, 180)
        got = np.asarray(img)
    np.testing.assert_array_equal(got[..., :3], rgba[..., :3].repeat(2, 0).repeat(2, 1))
    expected_alpha = cv2.resize(rgba[..., 3], (240, 180), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_array_equal(got[..., 3], expected_alpha)
    # write_image on its own: the picture's alpha follows the frame it is given
    picture = Picture(bgr=rgba[..., :3], mode="RGBA", format="PNG", alpha=rgba[..., 3])
    write_image(tmp_path / "w.png", picture, np.zeros((45, 60, 3), np.uint8), "tag")
    with Image.open(tmp_path / "w.png") as img:
        assert img.size == (60, 45) and img.mode == "RGBA"


def test_a_face_swap_then_the_frame_enhancer_on_a_still_and_in_the_preview(tmp_path: Path) -> None:
    from pipeline import preview

    _install("real_esrgan_x2")
    settings = _settings("processors.order=frame_enhancer,face_swapper", X2)
    target = photos.astronaut_path(tmp_path)
    shown = preview.preview(settings, [photos.grace_hopper_path()], target)
    assert shown.shape == (1024, 1024, 3)  # the 512 px astronaut ×2, the face swapped on the larger frame
    assert ModelPlan.from_settings(settings).scale == 2
    out = tmp_path / "o.jpg"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target), "--output",
                 str(out), "--set", "processors.order=face_swapper,frame_enhancer",
                 "--set", "frame_enhancer.model=real_esrgan_x2"]) == 0
    with Image.open(out) as img:
        assert img.size == (1024, 1024)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "fe.mp4", seconds=1.0, size=(160, 120),
                     face_image=photos.astronaut())


def _video_size(path: Path) -> tuple[int, int]:
    video = next(s for s in stream_info(path)["streams"] if s["codec_type"] == "video")
    return int(video["width"]), int(video["height"])


def test_a_render_comes_out_at_scale_times_the_size_with_every_frame(
        clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _install("real_esrgan_x2")
    out = tmp_path / "out.mp4"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip), "--output",
                 str(out), "--json", "--set", "selector.mode=one",
                 "--set", "processors.order=face_swapper,frame_enhancer",
                 "--set", "frame_enhancer.model=real_esrgan_x2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert _video_size(out) == (320, 240)
    assert count_frames(out) == count_frames(clip) == 30 == summary["frames"]
    assert summary["stage_s"]["frame_enhance"] > 0
    assert {s["codec_type"] for s in stream_info(out)["streams"]} == {"video", "audio"}


def test_a_queued_job_in_segments_comes_out_at_scale_times_the_size(clip: Path, tmp_path: Path) -> None:
    _install("real_esrgan_x2")
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "job.mkv"
    settings = _settings("processors.order=frame_enhancer,face_swapper", X2)
    job = store.add([photos.grace_hopper_path()], clip, out, settings)
    assert run(store, "w1", once=True, pace=segments.Pace.frames(10)) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert _video_size(out) == (320, 240) and count_frames(out) == 30
    assert done.resume is not None and [s["start"] for s in done.resume["segments"]] == [0, 10, 20]


def test_a_stopped_job_resumes_its_scaled_segments(clip: Path, tmp_path: Path) -> None:
    """Held after its first segment (10 frames: a pace counted in frames), stopped there, run again: the kept
    segment is at the scaled size and the rest joins it frame-exact."""
    _install("real_esrgan_x2")
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "job.mkv"
    settings = _settings("processors.order=face_swapper,frame_enhancer", X2)
    job = store.add([photos.grace_hopper_path()], clip, out, settings)
    gate = Gate(after=1)
    handle = start_in_thread(store, "w1", pace=segments.Pace.frames(10), hold=gate)
    assert gate.reached.wait(scaled(120)) and handle.alive, store.get(job.id).log
    assert handle.stop(timeout=scaled(20))
    kept = store.get(job.id)
    assert kept.state == "queued" and kept.kept_frames == 10
    assert run(store, "w1", once=True, pace=segments.Pace.frames(10)) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert "resuming at frame 10" in done.log, done.log
    assert _video_size(out) == (320, 240) and count_frames(out) == 30


# ---------------------------------------------------------------- the pre-check

def test_an_output_larger_than_the_encoder_takes_is_refused_in_one_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]
                                                                       ) -> None:
    _install("real_esrgan_x8")
    wide = make_clip(tmp_path / "wide.mp4", seconds=0.2, size=(2064, 64), audio=False)
    settings = _settings("processors.order=frame_enhancer", "frame_enhancer.model=real_esrgan_x8",
                         "output.encoder=libx264")
    with pytest.raises(UserError, match=r"16512×512: larger than libx264 takes \(16384 px a side\); choose "
                                        r"an x2 model"):
        checks.check_output_size(settings, wide)
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(wide), "--output",
                 str(tmp_path / "o.mp4"), "--set", "processors.order=frame_enhancer",
                 "--set", "frame_enhancer.model=real_esrgan_x8", "--set", "output.encoder=libx264"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "wide.mp4 (2064×64) ×8 would be 16512×512" in err
    assert not (tmp_path / "o.mp4").exists()
    assert main(["queue", "add", "--source", str(photos.grace_hopper_path()), "--target", str(wide),
                 "--output", str(tmp_path / "q.mp4"), "--set", "processors.order=frame_enhancer",
                 "--set", "frame_enhancer.model=real_esrgan_x8", "--set", "output.encoder=libx264"]) == 2
    assert "larger than libx264 takes" in capsys.readouterr().err
    assert JobStore().list() == []  # nothing queued
    fits = make_clip(tmp_path / "ok.mp4", seconds=0.2, size=(2048, 64), audio=False)  # 16384: taken
    checks.check_output_size(settings, fits)


def test_a_still_beyond_the_pixel_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install("real_esrgan_x2")
    target = tmp_path / "t.png"
    Image.fromarray(_frame(100, 100)).save(target)
    monkeypatch.setenv("FACESTATION_MAX_PIXELS", "20000")
    settings = _settings("processors.order=frame_enhancer", X2)
    with pytest.raises(UserError, match=r"200×200: more than the 20,000 pixels a still may have; use a "):
        checks.check_output_size(settings, target)
    checks.check_output_size(_settings(), target)  # no frame enhancer: nothing to check


@pytest.mark.slow
def test_the_farm_renders_the_scaled_segments(clip: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's local runtime, two slots, segments of 10 frames: each task's sink opens at the scaled size and
    the join is the whole clip at ×2."""
    local_farm(monkeypatch, 10 / 30)
    _install("real_esrgan_x2")
    store = JobStore()
    out = tmp_path / "farm.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out,
                    _settings("processors.order=face_swapper,frame_enhancer", X2))
    done = render_on_farm(store, job)
    assert _video_size(out) == (320, 240) and count_frames(out) == 30
    assert done.resume is not None and [s["start"] for s in done.resume["segments"]] == [0, 10, 20]
