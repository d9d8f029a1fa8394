"""Issue 12 without a browser: one check before preview and queue, models marked, messages for a browser
user, labels and ranges, a layout with every tab visible, the queue acting on a selected row, presets
listed on every load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

gr = pytest.importorskip("gradio")

from pipeline import api  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from tests.photos import grace_hopper_path  # noqa: E402
from webui import controls, faces, models_tab, presets_tab, preview_panel, queue_tab, system_tab  # noqa: E402
from webui.common import Ctx, UiConfig, browser_message  # noqa: E402


@pytest.fixture()
def ctx(tmp_path: Path) -> Ctx:
    return Ctx(UiConfig(), tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))


@pytest.fixture()
def faceless(tmp_path: Path) -> Path:
    path = tmp_path / "wall.png"
    cv2.imwrite(str(path), np.full((300, 300, 3), 128, np.uint8))
    return path


def _balanced() -> Settings:
    return api.load_preset("balanced-1080p")


# ---------------------------------------------------------------- problem 4: one check, no doomed job


def test_add_to_queue_refuses_a_source_without_a_face_and_creates_no_job(ctx: Ctx, faceless: Path) -> None:
    target = str(grace_hopper_path())
    with pytest.raises(api.UserError, match="no face found in the source photo wall.png"):
        queue_tab.submit(ctx, Settings(), [str(faceless)], target, None)
    assert ctx.store.list() == []
    image, status, *_ = preview_panel.render(Settings(), [str(faceless)], target, 0, False)
    assert image is None and "no face found in the source photo" in status


def test_add_to_queue_refuses_missing_models_in_one_message(ctx: Ctx) -> None:
    photo = str(grace_hopper_path())
    with pytest.raises(api.ModelsMissing) as info:
        queue_tab.submit(ctx, _balanced(), [photo], photo, None)
    assert ctx.store.list() == []
    message = str(info.value)
    assert set(info.value.names) == {"retinaface", "gfpgan_1.4", "xseg"}
    assert "; run: facestation models fetch" in message  # the CLI's words
    shown = browser_message(message)  # what the page shows: no command, no path
    assert shown.count("retinaface") == 1 and "facestation" not in shown and "/" not in shown
    image, status, _, fetch, missing = preview_panel.render(_balanced(), [photo], photo, 0, False)
    assert image is None and status.count("not installed") == 1
    assert fetch["visible"] is True and set(missing) == set(info.value.names)


def test_add_to_queue_refuses_an_unwritable_output_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ctx = Ctx(UiConfig(), blocker / "out", JobStore(tmp_path / "q.sqlite3"))
    photo = str(grace_hopper_path())
    with pytest.raises(api.UserError, match="output folder"):
        queue_tab.submit(ctx, Settings(), [photo], photo, None)
    assert ctx.store.list() == []


def test_a_good_swap_is_queued_and_says_the_classic_swapper_is_in_use(ctx: Ctx) -> None:
    photo = str(grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    assert [j.id for j in ctx.store.list()] == [job.id]
    image, status, notice, *_ = preview_panel.render(Settings(), [photo], photo, 0, False)
    assert image is not None and "ms" in status and "classic swapper is in use" in notice


# ---------------------------------------------------------------- problem 3/5: messages for a browser user


def test_messages_for_a_browser_user_have_no_shell_commands_or_server_paths() -> None:
    raw = ("model 'retinaface' is not installed (det_10g.onnx not in /home/u/.local/share/models); "
           "run: facestation models fetch retinaface")
    shown = browser_message(raw)
    assert "facestation" not in shown and "/home" not in shown and "det_10g.onnx" in shown




def test_a_preset_that_needs_seven_missing_things_gives_one_message_not_seven() -> None:
    photo = str(grace_hopper_path())
    outs = [preview_panel.render(_balanced(), [photo], photo, 0, False) for _ in range(7)]
    assert all(o[0] is None for o in outs)  # the invalid state clears the preview
    assert len({o[1] for o in outs}) == 1 and outs[0][1].count("⚠") == 1


# ---------------------------------------------------------------- problem 3: models marked, sizes known


def _made(keys: tuple[str, ...]) -> dict[str, Any]:
    fields = api.settings_keys()
    with gr.Blocks():
        return {k: controls.make_control(k, fields[k], getattr(getattr(Settings(), k.split(".")[0]),
                                                               k.split(".")[1])) for k in keys}


def test_model_choices_are_marked_installed_or_missing_with_their_size() -> None:
    made = _made(("face_swapper.model", "face_enhancer.model", "detector.model"))
    labels = dict((v, label) for label, v in made["face_swapper.model"].choices)
    assert labels["inswapper_128"] == "inswapper_128 (not installed, 554 MB)"
    assert labels["classic"] == "classic" and labels["auto"] == "auto"
    assert dict((v, label) for label, v in made["detector.model"].choices)["yunet"] == "yunet"
    enhancers = dict((v, label) for label, v in made["face_enhancer.model"].choices)
    assert "not installed" in enhancers["codeformer"]


def test_the_catalog_knows_a_download_size_for_the_models_it_can_say() -> None:
    from pipeline.models import catalog

    known = {e.name for e in catalog.CATALOG.values() if catalog.download_size(e)}
    assert {"yunet", "sface", "retinaface", "inswapper_128", "hyperswap_1a_256", "xseg", "2dfan4",
            "gfpgan_1.4"} <= known
    rows = {r[0]: r for r in models_tab.rows()}
    assert rows["inswapper_128"][2] == "missing" and rows["inswapper_128"][3] == 554.0


# ---------------------------------------------------------------- problem 6: labels, ranges, what works here


def test_every_control_has_a_plain_label_and_one_line_help() -> None:
    for key, info in api.settings_keys().items():
        assert info.title and info.title[0].isupper(), key
        assert info.description and "\n" not in info.description, key
    made = _made(("tracker.min_cutoff", "execution.batch_size", "output.preset", "execution.providers",
                  "output.encoder", "detector.nms"))
    assert made["tracker.min_cutoff"].maximum <= 5 and made["tracker.min_cutoff"].label == "Steadiness (Hz)"
    assert isinstance(made["execution.batch_size"], gr.Dropdown)
    assert [v for _, v in made["execution.batch_size"].choices] == ["auto", "1", "2", "4", "8", "16"]
    assert made["output.preset"].label == "Encoding speed"
    assert made["detector.nms"].label != "nms"
    providers = [v for _, v in made["execution.providers"].choices]
    assert providers == list(api.usable_providers())
    assert set(made["execution.providers"].value) <= set(providers)
    encoders = [v for _, v in made["output.encoder"].choices]
    assert encoders == list(api.usable_encoders())


def test_without_a_gpu_neither_tensorrt_nor_cuda_nor_nvenc_is_offered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import machine

    monkeypatch.setattr(machine, "cuda_devices", lambda: 0)
    machine.usable_providers.cache_clear()
    try:
        assert machine.usable_providers() == ("cpu",)
    finally:
        machine.usable_providers.cache_clear()
    monkeypatch.setattr("pipeline.video.encoders.trial_encode", lambda exe, name: (False, "no libcuda"))
    machine.usable_encoders.cache_clear()
    try:
        assert not any(e.endswith("_nvenc") for e in machine.usable_encoders())
        machine.encoder_failures.cache_clear()
        shown = system_tab.report()
        assert "trial encode failed: no libcuda" in shown or "h264_nvenc ✗ (not in this ffmpeg)" in shown
        assert "NVENC confirmed" not in shown
    finally:
        machine.usable_encoders.cache_clear()
        machine.encoder_failures.cache_clear()


def test_a_still_image_has_no_frame_slider_and_a_video_has_one(tmp_path: Path) -> None:
    from tests.videos import make_clip

    _, still = faces.describe_target(str(grace_hopper_path()))
    assert still["visible"] is False
    clip = make_clip(tmp_path / "c.mp4", seconds=0.5, size=(160, 120))
    _, slider = faces.describe_target(str(clip))
    assert slider["visible"] is True and slider["maximum"] > 1


# ---------------------------------------------------------------- problems 1 and 2: presets, layout, queue


def test_presets_are_listed_on_every_page_load_and_overwrite_asks(tmp_path: Path) -> None:
    from webui import app as app_mod

    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    tabs = built.components["tabs"]
    names = ("Swap", "Live", "Queue", "Presets", "Models", "System")
    assert [(name, tab.label) for name, tab in tabs.items()] == [(n, n) for n in names]
    assert not any(isinstance(v, gr.Number) for v in built.components["queue"].values())
    ctx = built.ctx
    presets_tab.save(ctx, None, "mine", "my look", Settings())
    lists = built.components["presets"]["list"]
    loads = [f for f in built.blocks.fns.values() if (built.blocks._id, "load") in f.targets
             and lists in f.outputs]
    assert loads  # every page load fetches the list again ...
    assert "mine" in [v for _, v in loads[0].fn(None)[0]["choices"]]  # ... with the preset just saved
    _, message, pending = presets_tab.save(ctx, None, "mine", "changed", Settings())
    assert "exists" in message and pending == "mine"
    assert api.list_presets()[[p.name for p in api.list_presets()].index("mine")].description == "my look"
    _, message, pending = presets_tab.save(ctx, None, "mine", "changed", Settings(), pending)
    assert "saved" in message and pending == ""
    assert presets_tab.describe("mine") == ("mine", "changed")
    # the same name in another case is the same preset: asked about, then replaced (not a second file)
    _, message, pending = presets_tab.save(ctx, None, "Mine", "cased", Settings())
    assert "**mine** exists" in message and pending == "Mine"
    _, message, pending = presets_tab.save(ctx, None, "Mine", "cased", Settings(), pending)
    assert "saved" in message and [p.name for p in api.list_presets() if p.name.lower() == "mine"] == ["Mine"]
    assert presets_tab.describe("Mine") == ("Mine", "cased")
    assert presets_tab.describe("balanced-1080p")[0] == ""  # a built-in name is not one to save under


def test_queue_row_selection_plays_a_done_job_and_shows_why_one_failed(ctx: Ctx, tmp_path: Path) -> None:
    photo = str(grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    html = queue_tab.render_jobs(ctx.store.list(), selected=job.id)
    assert f'<tr data-job="{job.id}" data-state="queued" class="fs-selected">' in html
    assert queue_tab.show_job(ctx, None, None)[0] == "No job selected."
    assert "queued, to write" in queue_tab.show_job(ctx, job.id, None)[0]
    left = apply_overrides(Settings(), ["video.start=1", "video.end=2"])  # a trim left from a clip before
    still = queue_tab.submit(ctx, left, [photo], photo, None)
    assert queue_tab.trim_of(still) == "" and "trimmed" not in queue_tab.show_job(ctx, still.id, None)[0]
    api.delete_job(ctx.store, still.id)
    cancelled = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    api.cancel_job(ctx.store, cancelled.id)  # says so, never "cancelled, writing to …"
    said = queue_tab.show_job(ctx, cancelled.id, None)[0]
    assert "cancelled: nothing more is written (Retry renders it)" in said and "writing to" not in said
    api.delete_job(ctx.store, cancelled.id)
    claimed = ctx.store.claim_next("w")
    assert claimed is not None
    claimed.fail("BadMedia: the target could not be decoded")
    shown = queue_tab.show_job(ctx, job.id, None)
    assert "failed: BadMedia: the target could not be decoded" in shown[0]
    job2 = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    claimed = ctx.store.claim_next("w")
    assert claimed is not None and claimed.id == job2.id
    cv2.imwrite(str(job2.output), cv2.imread(photo))
    claimed.finish("done")
    text, player, file = queue_tab.show_job(ctx, job2.id, None)
    assert "done" in text and str(ctx.outputs) not in player + file
    # before and after play in the page from private links: the target and the output, shown inline
    panes = re.findall(r'id="job-(before|after)".*?<img src="([^"]+)"', player)
    assert [p for p, _ in panes] == ["before", "after"]
    shown = [ctx.links.resolve(href.split("/")[-2], "", "") for _, href in panes]
    assert [(link.path, link.inline) for link in shown if link] == [(Path(job2.target), True),
                                                                    (Path(job2.output), True)]
    download = ctx.links.resolve(re.search(r'href="([^"]+)"', file).group(1).split("/")[-2], "", "")
    assert download is not None and download.path == Path(job2.output) and not download.inline


def test_a_running_job_shows_the_last_frame_of_its_newest_finished_segment(ctx: Ctx) -> None:
    from pipeline.jobs.runner import work_dir
    from tests.videos import make_clip

    photo = str(grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    assert queue_tab.thumbnail(ctx.store.list(), job.id, "x")[0]["visible"] is False  # queued: nothing yet
    assert queue_tab.thumbnail(ctx.store.list(), job.id, "") == (gr.skip(), "")  # ... and already hidden
    lease = ctx.store.claim_next("w")
    assert lease is not None
    assert api.latest_frame(ctx.store.get(job.id)) is None
    work = work_dir(job.id)
    make_clip(work / "seg-00000000.mp4", seconds=0.5, size=(160, 120))
    (work / "seg-00000015.mp4").write_bytes(b"\x00" * 100)  # the segment being written: not readable yet
    lease.save_resume({"segments": [{"file": "seg-00000000.mp4", "start": 0, "frames": 15}]})  # as the runner
    # records it once a segment is finished
    shown, key = queue_tab.thumbnail(ctx.store.list(), job.id, "")
    assert shown["visible"] is True and shown["value"].shape == (120, 160, 3)  # small: not scaled up
    assert key and queue_tab.thumbnail(ctx.store.list(), job.id, key) == (gr.skip(), key)  # unchanged
    assert queue_tab.thumbnail(ctx.store.list(), None, key)[0]["visible"] is False  # nothing selected


def _fns(blocks: Any, component: Any, trigger: str) -> list[Any]:
    return [f for f in blocks.fns.values() if (component._id, trigger) in f.targets]


def test_the_queue_polls_once_per_tick_and_sends_a_running_frame_once_and_small(tmp_path: Path) -> None:
    from pipeline.jobs.runner import work_dir
    from tests.videos import make_clip
    from webui import app as app_mod

    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    ctx, q = built.ctx, built.components["queue"]
    ticks = _fns(built.blocks, q["timer"], "tick")
    assert len(ticks) == 1  # the table and the thumbnail in one handler
    photo = str(grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    lease = ctx.store.claim_next("w")
    assert lease is not None
    make_clip(work_dir(job.id) / "seg-00000000.mp4", seconds=0.5, size=(640, 480))
    lease.save_resume({"segments": [{"file": "seg-00000000.mp4", "start": 0, "frames": 15}]})
    reads: list[str] = []
    def counting(name: str) -> Any:
        real = getattr(ctx.store, name)

        def counted(*a: Any, **k: Any) -> Any:
            reads.append(name)
            return real(*a, **k)

        return counted

    for name in ("list", "get"):
        setattr(ctx.store, name, counting(name))
    shown_panel = queue_tab.panel_key(ctx.store.list()[0])
    reads.clear()
    table, _workers, thumb, key, *panel = ticks[0].fn(str(job.id), "", shown_panel, None)
    assert reads == ["list"] and f'data-job="{job.id}"' in table  # one jobs read per tick
    assert panel == [gr.skip()] * 4 + [shown_panel]  # the panel shows this job as it is: not redrawn
    assert thumb["visible"] is True and thumb["value"].shape == (240, 320, 3)  # the size shown, not 480p
    again = ticks[0].fn(str(job.id), key, shown_panel, None)
    assert again[2] == gr.skip() and again[3] == key  # the same frame is not encoded and sent again


def test_the_detail_panel_follows_its_job_and_a_deleted_job_clears_it_with_one_line(tmp_path: Path) -> None:
    """A panel drawn while the job ran is drawn again once it is done (not "running" beside a done row);
    a job deleted from another session clears the panel and its selection, saying so once."""
    from webui import app as app_mod

    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    ctx, q = built.ctx, built.components["queue"]
    tick = _fns(built.blocks, q["timer"], "tick")[0].fn
    photo = str(grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    drawn = queue_tab.panel_key(ctx.store.get(job.id))  # as the row click drew it: queued
    lease = ctx.store.claim_next("w")
    assert lease is not None
    lease.fail("boom")
    _, _, _, _, job_id, selected, player, file, key = tick(str(job.id), "", drawn, None)
    assert job_id == gr.skip() and "failed" in selected and key != drawn  # redrawn: the job changed
    again = tick(str(job.id), "", key, None)
    assert again[4:8] == (gr.skip(),) * 4  # then left as it is
    api.delete_job(ctx.store, job.id)  # from another browser session
    _, _, _, _, job_id, selected, player, file, key = tick(str(job.id), "", key, None)
    assert (job_id, player, file, key) == ("", "", "", "")  # the selection and the panel cleared
    assert selected == "The selected job is no longer in your queue (deleted)."
    after = tick("", "", "", None)  # nothing selected any more: nothing more is said
    assert after[4:8] == (gr.skip(),) * 4


def test_a_row_click_selects_once_and_the_faces_follow_the_frame_as_the_preview_does(tmp_path: Path) -> None:
    from webui import app as app_mod

    built = app_mod.build(UiConfig(outputs=tmp_path / "out", data=tmp_path, worker=False))
    q, f, p = (built.components[k] for k in ("queue", "faces", "preview"))
    assert len(_fns(built.blocks, q["job_id"], "submit")) == 1  # submit covers a click on the same row
    assert _fns(built.blocks, q["job_id"], "change") == []  # no second run (and links) per click
    assert "'change'" not in queue_tab.SELECT_ROW_JS
    # the gallery follows the frame let go on (a pointer let go, a key let up: KEY_RELEASE_JS), as the preview
    # at the chosen size does; through its relay (common.beside): the preview is the event's one always_last
    assert "pointerup" in preview_panel.KEY_RELEASE_JS and "keyup" in preview_panel.KEY_RELEASE_JS
    assert not [fn for fn in _fns(built.blocks, f["frame"], "input") if f["faces"] in fn.outputs]
    relays = [fn.outputs[0] for fn in _fns(built.blocks, f["frame"], "release") if fn.fn is None and fn.js]
    gallery = [fn for relay in relays for fn in _fns(built.blocks, relay, "change")
               if f["faces"] in fn.outputs]
    assert len(gallery) == 1 and gallery[0].trigger_mode == "always_last"
    # the preview: one listener for the steps ("input", at the fast size while a pointer or key is held on the
    # slider: SLIDING_JS sets its first input) and the frame let go on ("release", at the chosen size), so
    # the page shows its replies in the order they were made
    scrub = [fn for fn in _fns(built.blocks, f["frame"], "input") if p["image"] in fn.outputs]
    settle = [fn for fn in _fns(built.blocks, f["frame"], "release") if p["image"] in fn.outputs]
    assert len(scrub) == 1 and scrub == settle and f["faces"] not in settle[0].outputs
    assert scrub[0].trigger_mode == "always_last" and scrub[0].inputs[0] is p["fast"]
    assert scrub[0].js == preview_panel.SLIDING_JS and "fsSliding" in preview_panel.KEY_RELEASE_JS
    # the preview sets the import button itself (no second round trip), and every preview run is one at a time
    # in one queue: three listeners (the settings' and the slider's, and the preview again after a fetch and
    # after an import)
    previews = [fn for fn in built.blocks.fns.values() if p["image"] in fn.outputs]
    assert len(previews) == 3 and all(p["import"] in fn.outputs for fn in previews)
    assert all((fn.concurrency_id, fn.concurrency_limit) == ("preview", 1) for fn in previews)
    assert not [fn for fn in built.blocks.fns.values() if fn.outputs == [p["import"]]]
