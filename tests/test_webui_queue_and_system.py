"""The Queue and System tabs as several people share one UI, without a browser: job numbers per user, a
finished job's render time, rate and folder, who renders the queue, the System tab's words, Publish for admins
only, the swap resolution in words, no share button on the running frame."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

gr = pytest.importorskip("gradio")

from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.progress import Progress  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.photos import grace_hopper_path  # noqa: E402
from webui import app as app_mod  # noqa: E402
from webui import controls, queue_tab, system_tab, workers  # noqa: E402
from webui.common import Ctx, UiConfig  # noqa: E402

USERS = (("alice", "pa"), ("bob", "pb"), ("carol", "pc"))


def as_user(name: str) -> Any:
    return SimpleNamespace(username=name, cookies={})


@pytest.fixture()
def shared(tmp_path: Path) -> Ctx:
    config = UiConfig(users=USERS, admins=frozenset({"carol"}), worker=False)
    return Ctx(config, tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))


def _fns(blocks: gr.Blocks, component: Any, trigger: str) -> list[Any]:
    return [f for f in blocks.fns.values() if (component._id, trigger) in f.targets]


def test_a_colleagues_first_job_is_their_number_1(shared: Ctx) -> None:
    photo = str(grace_hopper_path())
    for _ in range(4):
        queue_tab.submit(shared, Settings(), [photo], photo, as_user("alice"))
    bobs = queue_tab.submit(shared, Settings(), [photo], photo, as_user("bob"))
    assert (bobs.id, bobs.label) == (5, 1)  # the queue's id stays internal
    shown = queue_tab.table(shared, queue_tab.visible_jobs(shared, as_user("bob")), "", as_user("bob"))
    assert "<td>1</td>" in shown and "<td>5</td>" not in shown
    assert f'data-job="{bobs.id}"' in shown  # the row still carries the id the actions use
    selected, _, _ = queue_tab.show_job(shared, bobs.id, as_user("bob"))
    assert selected.startswith("**Job #1**")
    assert queue_tab.job_action(shared, "cancel", bobs.id, as_user("bob")) == "job #1: cancel done"
    # the admin sees whose it is, by the owner's own numbers
    admin = queue_tab.table(shared, queue_tab.visible_jobs(shared, as_user("carol")), "", as_user("carol"))
    assert admin.count("<td>1</td>") == 2 and "<td>bob</td>" in admin


def test_a_done_job_shows_its_render_time_average_fps_and_folder(shared: Ctx, tmp_path: Path) -> None:
    out = shared.outputs / "bob" / "clip-swap.mp4"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"result")
    job = shared.store.add([str(grace_hopper_path())], str(tmp_path / "clip.mp4"), str(out), Settings(),
                           owner="bob")
    lease = shared.store.claim_next("w")
    assert lease is not None
    lease.progress(Progress(120, 300, 9.5, 19.0))
    running = queue_tab.table(shared, [shared.store.get(job.id)], "", as_user("bob"))
    assert "<td>9.5</td><td>0:19</td>" in running and "in outputs/bob" in running
    lease.finish("done", render_s=39.4, fps=7.6)
    done = shared.store.get(job.id)
    assert (done.render_s, done.progress.fps) == (39.4, 7.6)
    shown = queue_tab.table(shared, [done], "", as_user("bob"))
    assert "<td>7.6 avg</td><td>took 0:39</td>" in shown
    assert str(shared.outputs) not in shown  # a shared UI never shows the server's paths
    local = queue_tab.render_jobs([done], outputs=shared.outputs, full_paths=True)
    assert f"in {out.parent}" in local  # this machine's own UI: the whole folder


def test_the_workers_line_names_only_your_own_job(shared: Ctx) -> None:
    job = shared.store.add([str(grace_hopper_path())], "/t.mp4", "/o.mp4", Settings(), owner="alice")
    shared.store.workers.register("gpu-box/cuda0", host="gpu-box", pid=77)
    shared.store.workers.register("gpu-box/cuda1", host="gpu-box", pid=78)
    lease = shared.store.claim_next("gpu-box/cuda0")
    assert lease is not None and lease.id == job.id
    lease.progress(Progress(30, 120))
    alice = workers.summary(shared, as_user("alice"))
    assert "2 render workers serve this queue" in alice
    assert "`gpu-box/cuda0` on gpu-box (pid 77): rendering your job #1, 25%" in alice
    assert "`gpu-box/cuda1` on gpu-box (pid 78): idle" in alice
    assert "rendering another user's job" in workers.summary(shared, as_user("bob"))
    assert "rendering alice's job #1, 25%" in workers.summary(shared, as_user("carol"))


def test_the_system_tab_shows_the_models_loaded_now_once_each_in_plain_words() -> None:
    loaded = [{"model": "yunet.onnx", "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
              {"model": "yunet.onnx", "providers": ["CPUExecutionProvider"]},
              {"model": "inswapper_128.onnx",
               "providers": ["AzureExecutionProvider", "CPUExecutionProvider"]}]
    lines = system_tab.loaded_lines(loaded)
    assert lines == ["- loaded: `yunet.onnx` on CUDA GPU, CPU", "- loaded: `inswapper_128.onnx` on CPU"]
    assert system_tab.plain_providers(["TensorrtExecutionProvider", "AzureExecutionProvider"]) == "TensorRT"
    marks = system_tab.encoder_marks({"libx264", "av1_nvenc", "h264_nvenc"},
                                     ["auto", "libx264", "h264_nvenc"],
                                     {"av1_nvenc": "No capable devices found"})
    failed = "av1_nvenc ✗ (in this ffmpeg, but its one-frame trial encode failed: No capable devices found)"
    assert failed in marks and "h264_nvenc ✓ (a one-frame trial encode worked)" in marks
    assert "libx265 ✗ (not in this ffmpeg)" in marks
    assert "Execution" not in system_tab.report()


def test_the_system_tab_is_read_again_when_opened(tmp_path: Path) -> None:
    from pipeline.models import sessions

    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    opened = _fns(built.blocks, built.components["tabs"]["System"], "select")
    assert opened, "opening the System tab rewrites its report"
    sessions.get_session("yunet")  # a preview loaded a model after the page was built
    try:
        report, who = opened[0].fn(None)
        assert "- loaded: `yunet` on" in report and "no model loaded" not in report  # its catalog name
        assert "only queues jobs" in who
    finally:
        sessions.release()


def test_publish_is_shown_to_admins_only(tmp_path: Path) -> None:
    built = app_mod.build(UiConfig(users=USERS, admins=frozenset({"carol"}), outputs=tmp_path / "out",
                                   data=tmp_path, worker=False))
    presets = built.components["presets"]
    assert presets["publish"].visible is False  # until the page knows who is asking
    refresh = _fns(built.blocks, built.components["tabs"]["Presets"], "select")[0].fn
    assert refresh(as_user("bob"))[1]["visible"] is False
    assert refresh(as_user("carol"))[1]["visible"] is True


def test_the_swap_resolution_says_auto_and_the_running_frame_has_no_share_button(tmp_path: Path) -> None:
    pairs = controls.choice_pairs("face_swapper.pixel_boost", [0, 128, 256])
    assert pairs[0] == ("auto (the model's own size)", 0) and pairs[1] == ("128", 128)
    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    assert built.components["queue"]["thumb"].buttons == ["fullscreen"]
    assert built.components["preview"]["image"].buttons == ["fullscreen"]


def test_the_system_tab_names_a_loaded_model_by_its_catalog_name() -> None:
    """A batched copy's file is named by its sha256: the catalog name is what the tab says."""
    loaded = [{"model": "3f9a" + "0" * 60 + ".onnx", "name": "inswapper_128",
               "providers": ["CPUExecutionProvider"]}]
    assert system_tab.loaded_lines(loaded) == ["- loaded: `inswapper_128` on CPU"]
