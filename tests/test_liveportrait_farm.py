"""The LivePortrait processors on the render farm (a local Ray runtime with two task slots, CPU): a queued job
with the expression restorer and face editor after the swap renders frame-exact in 1 s segments.

Skipped where Ray (the ``farm`` extra) is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.liveportrait.network import model_name  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from tests import photos  # noqa: E402
from tests.farmkit import local_farm, render_on_farm  # noqa: E402
from tests.surrogates import default_motion, install_live_portrait  # noqa: E402
from tests.videos import count_frames, make_clip  # noqa: E402


@pytest.mark.slow
def test_a_farm_job_renders_the_liveportrait_processors(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    local_farm(monkeypatch, 1)
    install_live_portrait(motions=[default_motion(1), default_motion(2)])
    clip = make_clip(tmp_path / "face.mp4", seconds=2, size=(320, 240), face_image=photos.astronaut())
    settings = apply_overrides(Settings(), [
        "selector.mode=one", "execution.batch_size=1", "detector.size=320",
        'processors.order=["face_swapper","expression_restorer","face_editor"]',
        "face_editor.mouth_smile=0.5"])
    store = JobStore()
    out = tmp_path / "out.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, settings)
    done = render_on_farm(store, job)
    assert count_frames(out) == count_frames(clip) == 60
    record = done.resume  # what the farm rendered, segment by segment, and with which models
    assert [seg["start"] for seg in record["segments"]] == [0, 30]
    assert len({seg["pid"] for seg in record["segments"]}) == 2  # on both task slots
    assert {model_name(p) for p in ("feature_extractor", "motion_extractor", "generator", "stitcher")} <= set(
        record["models"])
