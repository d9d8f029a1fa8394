"""age_modifier through the whole engine: a still, the preview, a video render and a queued job (and the Ray
farm, slow), with ``processors.order`` naming it after the swapper (surrogates for fran, FairFace and
styleganex_age)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pipeline import preview
from pipeline.image import read_image
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from tests import photos
from tests.farmkit import local_farm, render_on_farm
from tests.surrogates import install_surrogate
from tests.videos import count_frames, make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=2", "detector.size=320"])
ORDER = 'processors.order=["face_swapper","age_modifier"]'
GAN = "age_modifier.model=styleganex_age"


@pytest.fixture(autouse=True)
def _models() -> None:
    for name in ("fran", "fairface", "styleganex_age"):
        install_surrogate(name)


def _settings(*overrides: str) -> Settings:
    return apply_overrides(FAST, [ORDER, *overrides])


@pytest.mark.parametrize("model", ["fran", "styleganex_age"])
def test_a_still_is_aged_around_the_face_and_direction_0_leaves_it_untouched(tmp_path: Path,
                                                                              model: str) -> None:
    target = photos.astronaut_path(tmp_path)
    sources = [photos.grace_hopper_path()]
    outs = {}
    for key, overrides in {"swap": ['processors.order=["face_swapper"]'],
                           "zero": [f"age_modifier.model={model}"],
                           "aged": [f"age_modifier.model={model}", "age_modifier.direction=60"]}.items():
        summary = swap_image(apply_overrides(FAST, [ORDER, *overrides]), sources, target,
                             tmp_path / f"{key}.png")
        outs[key] = read_image(Path(summary["output"])).bgr
    assert model in summary["models"]
    assert np.array_equal(outs["zero"], outs["swap"])  # direction 0: the processor is left out
    changed = np.any(outs["aged"] != outs["swap"], axis=2)
    assert changed.sum() > 3000
    if model == "fran":  # its surrogate brightens by the age change (styleganex's colour is matched back)
        assert outs["aged"][changed].astype(int).sum() > outs["swap"][changed].astype(int).sum()
    # the image's far corners are untouched
    assert not changed[470:, :40].any() and not changed[470:, 470:].any()


def test_the_preview_shows_it(tmp_path: Path) -> None:
    target = photos.astronaut_path(tmp_path)
    sources = [photos.grace_hopper_path()]
    plain = preview.preview(_settings(), sources, target)
    aged = preview.preview(_settings("age_modifier.direction=50"), sources, target)
    assert plain.shape == aged.shape and np.any(plain != aged)
    preview.clear()


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=0.5, size=(320, 240),
                     face_image=photos.astronaut())


@pytest.mark.parametrize("model", ["fran", "styleganex_age"])
def test_a_video_render_runs_it_as_its_own_stage(clip: Path, tmp_path: Path, model: str) -> None:
    out = tmp_path / "out.mp4"
    result = render(_settings(f"age_modifier.model={model}", "age_modifier.direction=-40"),
                    [photos.grace_hopper_path()], clip, out)
    assert result.frames == 15 == count_frames(out)
    assert result.stage_s["age"] > 0 and model in result.models


def test_a_queued_job_renders_it_and_keeps_the_section(clip: Path, tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "queued.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, _settings(GAN, "age_modifier.direction=30"))
    assert run(store, "w", once=True) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert count_frames(out) == 15
    assert json.loads(done.settings_json)["age_modifier"] == {"model": "styleganex_age", "direction": 30}


def test_a_missing_fairface_stops_a_swap_with_one_line_naming_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main
    from pipeline.models import catalog
    from pipeline.paths import models_dir

    (models_dir() / catalog.get("fairface").file).unlink()
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target",
                 str(photos.astronaut_path(tmp_path)), "--output", str(tmp_path / "out.png"),
                 "--set", ORDER, "--set", "age_modifier.direction=20"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "fairface" in err and "styleganex" not in err


def test_a_preset_keeps_the_section() -> None:
    from pipeline import presets

    settings = _settings(GAN, "age_modifier.direction=-35")
    presets.save("aged", settings)
    back = presets.load("aged")
    assert back.age_modifier.model == "styleganex_age" and back.age_modifier.direction == -35
    assert back == settings


@pytest.mark.slow
def test_a_farm_job_renders_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local_farm(monkeypatch, 1)
    clip = make_clip(tmp_path / "face.mp4", seconds=2, size=(320, 240), face_image=photos.astronaut())
    settings = apply_overrides(FAST, [ORDER, "execution.batch_size=1", "age_modifier.direction=40"])
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, settings)
    done = render_on_farm(store, job)
    assert count_frames(out) == count_frames(clip) == 60
    record = done.resume
    assert [seg["start"] for seg in record["segments"]] == [0, 30]
    assert {"fran", "fairface"} <= set(record["models"])
