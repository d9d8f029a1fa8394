"""The LivePortrait processors through the whole engine: a still, the preview, a video render and a queued
job, with ``processors.order`` naming them after the swapper (surrogates for the six files)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pipeline import preview
from pipeline.image import read_image
from pipeline.jobs.store import JobStore
from pipeline.jobs.worker import run
from pipeline.liveportrait.network import PARTS, model_name
from pipeline.plan import ModelPlan
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from tests import photos
from tests.surrogates import default_motion, install_live_portrait
from tests.videos import count_frames, make_clip

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=2", "detector.size=320"])
BOTH = '["face_swapper","expression_restorer","face_editor"]'
EDIT = ["face_editor.mouth_smile=0.5", "face_editor.head_yaw=0.3"]


@pytest.fixture(autouse=True)
def _live_portrait() -> None:
    dark, bright = default_motion(1), default_motion(2)  # target and swapped crops get different motions
    install_live_portrait(motions=[dark, bright])


def _settings(*overrides: str) -> Settings:
    return apply_overrides(FAST, list(overrides))


def test_plan_asks_for_the_parts_each_processor_runs() -> None:
    plan = ModelPlan.from_settings(_settings(f"processors.order={BOTH}", *EDIT))
    assert [p.name for p in plan.processors] == ["face_swapper", "expression_restorer", "face_editor"]
    editor = dict((p.name, p.models) for p in plan.processors)["face_editor"]
    assert model_name("eye_retargeter") not in editor and model_name("stitcher") in editor
    off = ModelPlan.from_settings(_settings(f"processors.order={BOTH}"))  # every slider at 0
    assert [p.name for p in off.processors] == ["face_swapper", "expression_restorer"]
    assert all(model_name(p) in ModelPlan.from_settings(_settings(
        f"processors.order={BOTH}", "face_editor.eye_open_ratio=0.5",
        "face_editor.lip_open_ratio=-0.5")).models for p in PARTS)


def test_a_still_is_restored_and_edited_and_an_all_zero_editor_leaves_it_untouched(tmp_path: Path) -> None:
    target = photos.astronaut_path(tmp_path)
    sources = [photos.grace_hopper_path()]
    outs = {}
    for key, overrides in {"swap": ['processors.order=["face_swapper"]'],
                           "zero": [f"processors.order={BOTH}", "expression_restorer.factor=0"],
                           "both": [f"processors.order={BOTH}", *EDIT]}.items():
        summary = swap_image(_settings(*overrides), sources, target, tmp_path / f"{key}.png")
        outs[key] = read_image(Path(summary["output"])).bgr
    assert np.array_equal(outs["zero"], outs["swap"])  # nothing active beyond the swap: the same pixels
    changed = np.any(outs["both"] != outs["swap"], axis=2)
    assert changed.sum() > 5000  # the face re-rendered
    # the astronaut's face is in the top middle: below it and to its sides, untouched
    assert not changed[300:].any() and not changed[:, :60].any() and not changed[:, 420:].any()


def test_the_preview_shows_the_editor(tmp_path: Path) -> None:
    target = photos.astronaut_path(tmp_path)
    sources = [photos.grace_hopper_path()]
    plain = preview.preview(_settings('processors.order=["face_swapper","face_editor"]'), sources, target)
    edited = preview.preview(_settings('processors.order=["face_swapper","face_editor"]', *EDIT), sources,
                             target)
    assert plain.shape == edited.shape and np.any(plain != edited)
    preview.clear()


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=0.5, size=(320, 240),
                     face_image=photos.astronaut())


def test_a_video_render_runs_both_as_their_own_stages(clip: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mp4"
    result = render(_settings(f"processors.order={BOTH}", *EDIT), [photos.grace_hopper_path()], clip, out)
    assert result.frames == 15 == count_frames(out)
    assert result.stage_s["restore"] > 0 and result.stage_s["edit"] > 0
    assert model_name("generator") in result.models


def test_a_queued_job_renders_them(clip: Path, tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "queued.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, _settings(f"processors.order={BOTH}", *EDIT))
    assert run(store, "w", once=True) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert count_frames(out) == 15
    assert json.loads(done.settings_json)["face_editor"]["mouth_smile"] == 0.5  # the job keeps the section
    assert done.settings.face_editor.mouth_smile == 0.5
