"""frame_sharpener, the eleventh processor (added as ARCHITECTURE.md's newcomer's check: its folder, its
settings section and the README's table, nothing else): an unsharp mask on whole frames, with no model.

Each way a processor is used is shown once: the maths, the registry and the UI's controls, a preview, a
render, a queued job, live, and a preset. The other settings are left as a user leaves them."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli.main import main
from pipeline import api, presets
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run
from pipeline.live.step import ChainStep, live_settings
from pipeline.processors import PROCESSORS
from pipeline.processors.frame_sharpener.processor import sharpen
from pipeline.settings import Settings, apply_overrides
from pipeline.video.decode import read_frames
from tests import photos
from tests.videos import count_frames, make_clip

ORDER = "processors.order=face_swapper,face_enhancer,frame_sharpener"  # swap, enhance, then sharpen


def _sharpened(*more: str) -> Settings:
    return apply_overrides(Settings(), [ORDER, *more])


def _detail(frame: np.ndarray) -> float:
    """How much fine detail a frame shows: the variance of its Laplacian."""
    return float(cv2.Laplacian(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), cv2.CV_64F).var())


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "sharpen.mp4", seconds=0.5, size=(160, 120),
                     face_image=photos.astronaut())


def test_the_unsharp_mask_adds_the_detail_back_by_amount() -> None:
    rng = np.random.default_rng(3)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (48, 64, 3), np.uint8), (0, 0), 2.0)
    blurred = cv2.GaussianBlur(frame, (0, 0), 1.5).astype(np.float64)
    expected = np.clip(np.rint(frame + 0.8 * (frame - blurred)), 0, 255)
    got = sharpen(frame, 80, 1.5)
    assert got is not frame and np.abs(got.astype(int) - expected).max() <= 1
    assert np.array_equal(sharpen(frame, 0, 1.5), frame)
    step = np.full((20, 40, 3), 50, np.uint8)
    step[:, 20:] = 200
    edge = sharpen(cv2.GaussianBlur(step, (0, 0), 1.0), 100, 1.0)[10]
    assert edge[:20].min() < 50 and edge[20:].max() > 200  # below, then above the flats at the edge: crisper


def test_the_registry_finds_it_and_the_ui_shows_its_settings_in_the_processors_area() -> None:
    assert PROCESSORS["frame_sharpener"].models(Settings()) == ()  # no model: nothing to fetch
    assert "frame_sharpener" not in Settings().processors.order
    assert not PROCESSORS["frame_sharpener"].active(apply_overrides(Settings(), ["frame_sharpener.amount=0"]))
    info = {p.name: p for p in api.processors()}["frame_sharpener"]
    assert (info.section, info.title, info.default) == ("frame_sharpener", "Frame sharpener", False)
    from webui import controls

    assert controls.SECTION_TABS["frame_sharpener"] == controls.PROCESSORS_TAB
    assert controls.SECTION_TITLES["frame_sharpener"] == "Frame sharpener"


def test_the_preview_shows_the_frame_sharpened_after_the_swap(tmp_path: Path) -> None:
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), photos.astronaut())
    sources = [photos.grace_hopper_path()]
    plain = api.preview(Settings(), sources, target)
    sharp = api.preview(_sharpened(), sources, target)
    want = sharpen(np.ascontiguousarray(plain), 50, 1.0)  # per channel: RGB or BGR alike
    assert np.abs(sharp.astype(int) - want).max() <= 1 and _detail(sharp) > 1.2 * _detail(plain)


def test_a_render_and_a_queued_job_sharpen_every_frame(clip: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    face = str(photos.grace_hopper_path())
    plain, sharp = tmp_path / "plain.mp4", tmp_path / "sharp.mp4"
    assert main(["swap", "--source", face, "--target", str(clip), "--output", str(plain)]) == 0
    capsys.readouterr()
    assert main(["swap", "--source", face, "--target", str(clip), "--output", str(sharp), "--json",
                 "--set", ORDER]) == 0
    assert json.loads(capsys.readouterr().out)["stage_s"]["sharpen"] >= 0
    store = JobStore(tmp_path / "q.sqlite3")
    job = store.add([face], clip, tmp_path / "job.mp4", _sharpened())
    assert run(store, "w1", once=True) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    for out in (sharp, tmp_path / "job.mp4"):
        assert count_frames(out) == count_frames(clip)
        for a, b in zip(read_frames(plain), read_frames(out), strict=True):
            assert _detail(b) > 1.2 * _detail(a)


def test_live_runs_it_on_each_camera_frame(clip: Path) -> None:
    settings, notices = live_settings(_sharpened())
    assert "frame_sharpener" in settings.processors.order and notices == []
    frame = next(iter(read_frames(clip)))
    sources = [photos.grace_hopper_path()]
    plain = ChainStep(Settings(), sources, 30.0)(frame.copy())
    sharp = ChainStep(_sharpened(), sources, 30.0)(frame.copy())
    assert np.abs(sharp.astype(int) - sharpen(plain, 50, 1.0)).max() <= 1


def test_a_preset_keeps_its_settings_and_an_older_preset_takes_its_defaults(tmp_path: Path) -> None:
    settings = _sharpened("frame_sharpener.amount=120", "frame_sharpener.radius=2.5")
    presets.save("crisp", settings)
    loaded = presets.load("crisp")
    assert loaded == settings and (loaded.frame_sharpener.amount, loaded.frame_sharpener.radius) == (120, 2.5)
    older = presets.load("fast-preview")  # written before the sharpener existed
    assert older.frame_sharpener == Settings().frame_sharpener
