"""Web UI without a browser: controls derived from the settings model, the `ui` command's guards, the
server's security settings over HTTP, and the preview engine (pixels, warm caches)."""

from __future__ import annotations

import time
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gr = pytest.importorskip("gradio")
httpx = pytest.importorskip("httpx")

from cli.main import main  # noqa: E402
from pipeline import api, media, workspace  # noqa: E402
from pipeline import preview as engine  # noqa: E402
from pipeline import settings as settings_mod  # noqa: E402
from pipeline.errors import BadMedia, UserError  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.browser.helpers import running_app  # noqa: E402
from tests.photos import astronaut, grace_hopper_path  # noqa: E402
from tests.timing import scaled  # noqa: E402
from webui import controls  # noqa: E402

# ---------------------------------------------------------------- controls


def _all_controls() -> dict[str, object]:
    out: dict[str, object] = {}
    with gr.Blocks():
        for section in controls.SECTION_TABS:
            made = controls.create_section(section, Settings())
            assert not set(made) & set(out)
            out |= made
    return out


def test_every_settings_key_has_exactly_one_control() -> None:
    made = _all_controls()
    assert set(made) == set(settings_mod.keys())
    assert set(controls.SECTION_TABS) == {k.split(".")[0] for k in settings_mod.keys()}  # noqa: SIM118 - keys() is the settings API, not dict.keys


def test_every_processor_is_a_labelled_tick_box_with_its_settings_beside_it() -> None:
    """The Processors area: one row per processor of the registry, labelled with its own title, holding
    its whole settings section (the enhancer's too: no processor's setting is on the main screen, where it
    could be set while the processor is left out)."""
    from webui import processors_area

    with gr.Blocks():
        shown, parts = processors_area.create(Settings())
    titles = {p.name: p.title for p in api.processors()}
    assert list(parts["rows"]) == list(titles)
    assert {n: r["on"].label for n, r in parts["rows"].items()} == titles
    assert titles["face_enhancer"] == "Face enhancer" and titles["lip_syncer"] == "Lip syncer"
    assert {"face_enhancer.model", "face_enhancer.blend", "face_swapper.model"} <= set(shown)
    assert not {k for k in controls.MAIN_KEYS if k.split(".")[0] in {p.section for p in api.processors()}}
    ticked = {n for n, r in parts["rows"].items() if r["on"].value}
    assert ticked == set(Settings().processors.order)
    assert {n for n, r in parts["rows"].items() if r["box"].visible} == ticked  # settings only when on


def test_ticking_and_moving_write_processors_order() -> None:
    from webui.processors_area import move, style, tick

    order = ["face_swapper", "face_enhancer"]
    assert tick(order, "lip_syncer", True) == ["face_swapper", "face_enhancer", "lip_syncer"]
    assert tick(order, "face_enhancer", False) == ["face_swapper"]
    assert tick(["face_swapper"], "face_swapper", False) == ["face_swapper"]  # one is needed: stays
    assert move(order, "face_enhancer", -1) == ["face_enhancer", "face_swapper"]
    assert move(order, "face_enhancer", 1) == order  # already last
    assert move(order, "frame_colorizer", -1) == order  # not in the order: nothing moves
    drawn = style(["face_enhancer", "face_swapper"])
    assert drawn.index("#proc-face-enhancer { order: 0; }") < drawn.index("#proc-face-swapper { order: 1; }")
    assert "#proc-frame-colorizer { order: 2; }" in drawn  # the ones left out after, in the registry's order


def test_choices_and_ranges_come_from_the_settings_model() -> None:
    made = _all_controls()
    fields = settings_mod.keys()
    for key, control in made.items():
        annotation = fields[key].annotation
        if typing.get_origin(annotation) is typing.Literal:
            shown = [v for _, v in control.choices]  # type: ignore[attr-defined]
            wanted = [controls.NONE_VALUE if v == "none" else v for v in typing.get_args(annotation)]
            if key == "output.encoder":  # only the encoders that open on this machine are offered
                wanted = [v for v in wanted if v in api.usable_encoders()]
            assert shown == wanted, key
    assert [v for _, v in made["mask.types"].choices] == list(typing.get_args(typing.get_args(  # type: ignore[attr-defined]
        fields["mask.types"].annotation)[0]))
    size = made["detector.size"]
    assert (size.minimum, size.maximum, size.step) == (160, 1280, 32)  # type: ignore[attr-defined]
    assert (made["face_enhancer.blend"].minimum, made["face_enhancer.blend"].maximum) == (0, 100)  # type: ignore[attr-defined]


def test_control_values_round_trip_through_settings() -> None:
    changed = settings_mod.apply_overrides(Settings(), {
        "detector.size": 320, "detector.interval": 4, "face_enhancer.model": "codeformer",
        "landmarks.model": "none",
        "mask.types": ["box", "region"], "mask.padding": [1, 2, 3, 4], "execution.batch_size": 8,
        "video.start": 1.5, "color.method": "mkl",
        "face_swapper.pixel_boost": 256, "tracker.enabled": False,
        "selector.mapping": ["/r/a.png", "/r/b.png"],
    })
    keys = list(settings_mod.keys())
    shown = controls.values_of(keys, changed)
    # numbers as the browser sends them
    shown = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in shown]
    assert controls.settings_from(keys, shown) == changed
    assert controls.settings_from(keys, controls.values_of(keys, Settings())) == Settings()


def test_every_model_menu_marks_a_model_that_is_not_installed() -> None:
    """Each processor's model menu as the swapper's: "(not installed…)" beside a missing model, the bare
    name once it is installed."""
    from tests.surrogates import install_surrogate

    for key in ("frame_enhancer.model", "lip_syncer.model", "age_modifier.model", "background_remover.model"):
        assert key in controls.MODEL_KEYS
        update = controls.model_choice_updates()[controls.MODEL_KEYS.index(key)]
        labels = [label for label, _ in update["choices"]]
        assert labels and all("(not installed" in label for label in labels), (key, labels)
    install_surrogate("real_esrgan_x2")
    update = controls.model_choice_updates()[controls.MODEL_KEYS.index("frame_enhancer.model")]
    assert ("real_esrgan_x2", "real_esrgan_x2") in update["choices"]


def test_bad_control_value_names_the_key() -> None:
    with pytest.raises(UserError, match="mask.padding"):
        controls.settings_from(["mask.padding"], ["1, 2, 300, 4"])


# ---------------------------------------------------------------- the `ui` command


def test_listen_without_auth_exits_non_zero_with_how_to(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--listen"]) == 2
    err = capsys.readouterr().err
    assert "--auth USER:PASS" in err and "--auth-file" in err


def test_ui_options_become_config(tmp_path: Path) -> None:
    import argparse

    from cli import ui as ui_cli

    def parse(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        ui_cli.register(parser.add_subparsers())
        return parser.parse_args(["ui", *argv])

    cfg = ui_cli.config_from_args(parse("--listen", "--auth", "ann:s3cret:x", "--port", "8000",
                                        "--max-upload", "5mb"))
    assert (cfg.host, cfg.port, cfg.users, cfg.admins, cfg.max_upload) == (
        "0.0.0.0", 8000, (("ann", "s3cret:x"),), frozenset(), "5mb")  # admin only when named
    assert ui_cli.config_from_args(parse()).host == "127.0.0.1"
    logins = tmp_path / "logins.txt"
    logins.write_text("# team\nann:a1\n\nbob:b2\n")
    cfg = ui_cli.config_from_args(parse("--listen", "--auth-file", str(logins), "--admin", "bob"))
    assert cfg.users == (("ann", "a1"), ("bob", "b2")) and cfg.admins == frozenset({"bob"})
    for bad in (("--auth", "nopassword"), ("--auth", "ann:x", "--admin", "eve"), ("--max-upload", "lots")):
        with pytest.raises(UserError):
            ui_cli.config_from_args(parse(*bad))


def _ui_args(*argv: str) -> Any:
    import argparse

    from cli import ui as ui_cli

    parser = argparse.ArgumentParser()
    ui_cli.register(parser.add_subparsers())
    return parser.parse_args(["ui", *argv])


def test_every_auth_is_kept_and_each_user_signs_in() -> None:
    from cli import ui as ui_cli

    cfg = ui_cli.config_from_args(_ui_args("--listen", "--auth", "alice:pw1", "--auth", "bob:pw2"))
    assert cfg.users == (("alice", "pw1"), ("bob", "pw2"))
    with running_app(users=cfg.users, worker=False) as (url, _app):
        for user, password in cfg.users:
            with httpx.Client(base_url=url, timeout=scaled(30)) as client:
                r = client.post("/login", data={"username": user, "password": password})
                assert r.status_code == 200, (user, r.text)
                assert client.get("/gradio_api/info").status_code == 200


def test_a_malformed_or_repeated_auth_is_refused_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, said in ((["--auth", "alice:pw1", "--auth", "alice:pw2"], "user alice is given twice"),
                       (["--auth", "alice:pw1", "--auth", "bob"], "expected USER:PASS"),
                       (["--auth", "alice:pw1", "--auth", "b o b:pw"], "a user name is")):
        assert main(["ui", "--listen", "--no-browser", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err


def test_ui_help_says_auth_may_be_repeated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["ui", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "repeat it for each user" in text


def test_two_uis_on_one_queue_each_have_a_worker_and_both_tabs_say_who_renders(tmp_path: Path) -> None:
    from pipeline.jobs.worker import default_worker_id
    from tests.timing import wait_until
    from webui import workers
    from webui.app import serve

    base = default_worker_id()
    common = {"data": tmp_path / "data", "outputs": tmp_path / "out"}
    with running_app(**common) as (_, first), running_app(**common) as (_, second):
        wait_until(lambda: len(second.ctx.store.workers.live()) == 2, 30, "both workers registered")
        shown = workers.summary(second.ctx, None)
        assert "2 render workers serve this queue" in shown
        assert f"`{base}` on" in shown and f"`{base}-2` on" in shown and shown.count(": idle") == 2
        system = [f for f in second.blocks.fns.values()
                  if (second.components["system"]["refresh"]._id, "click") in f.targets]
        assert system and "2 render workers" in system[0].fn(None)[1]  # the System tab says it too
        with pytest.raises(UserError, match="already running"):  # an id given and taken: one line, no start
            serve(api_config(worker_id=base, **common), block=False)
        with running_app(worker=False, **common) as (_, submitter):
            assert "only queues jobs" in workers.summary(submitter.ctx, None)
    with running_app(worker=False, **common) as (_, alone):
        assert "No render worker serves this queue" in workers.summary(alone.ctx, None)


def api_config(**config: Any) -> Any:
    from tests.browser.helpers import free_port
    from webui.common import UiConfig

    return UiConfig(host="127.0.0.1", port=free_port(), **config)


def test_ui_help_names_the_worker_id(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["ui", "--help"])
    assert "--worker-id NAME" in capsys.readouterr().out


def test_serve_refuses_network_without_login() -> None:
    from webui.app import serve
    from webui.common import UiConfig

    with pytest.raises(UserError, match="--auth"):
        serve(UiConfig(host="0.0.0.0", worker=False), block=False)  # noqa: S104


# ---------------------------------------------------------------- security over HTTP


def test_the_ui_starts_when_its_page_is_slow_to_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine the page can take longer to build than Gradio's one 3 s check of its own server
    at launch (a HEAD of the page, which otherwise refuses to start: "When localhost is not accessible"):
    the start does not depend on how long the page takes."""
    import httpx
    from gradio import route_utils

    real = route_utils.update_root_in_config

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(4)  # longer than the check waits, whatever the machine
        return real(*args, **kwargs)

    monkeypatch.setattr(route_utils, "update_root_in_config", slow)  # a step of building the page
    with running_app(worker=False) as (url, _app):
        page = httpx.get(url, timeout=scaled(60))
    assert page.status_code == 200 and "facestation" in page.text


def test_login_upload_cap_and_file_serving(tmp_path: Path) -> None:
    with running_app(users=(("ann", "pw1"),), admins=frozenset({"ann"}), max_upload="20kb",
                     worker=False) as (url, app):
        outputs = app.ctx.outputs
        served = outputs / "local" / "result.txt"
        served.parent.mkdir(parents=True, exist_ok=True)
        served.write_text("the output")
        with httpx.Client(base_url=url, timeout=scaled(30)) as anon:
            assert anon.get("/gradio_api/info").status_code == 401
            assert anon.get(f"/gradio_api/file={served}").status_code in (401, 403)
        with httpx.Client(base_url=url, timeout=scaled(30)) as bad:
            bad.post("/login", data={"username": "ann", "password": "wrong"})
            assert bad.get("/gradio_api/info").status_code == 401
        with httpx.Client(base_url=url, timeout=scaled(30)) as client:
            assert client.post("/login", data={"username": "ann", "password": "pw1"}).status_code == 200
            assert client.get("/gradio_api/info").status_code == 200
            # outputs are never served by path, not even to their owner: downloads go through an owner check
            assert client.get(f"/gradio_api/file={served}").status_code in (403, 404)
            secret = tmp_path / "secret.txt"
            secret.write_text("not for you")
            for probe in ("../../etc/passwd", "/etc/passwd", str(secret), f"{outputs}/../queue.sqlite3",
                          f"{outputs}/local/../../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd"):
                r = client.get(f"/gradio_api/file={probe}")
                assert r.status_code in (403, 404), (probe, r.status_code)
                assert "root:" not in r.text and "not for you" not in r.text
            small = client.post("/gradio_api/upload", files={"files": ("a.jpg", b"x" * 1000, "image/jpeg")})
            assert small.status_code == 200
            big = client.post("/gradio_api/upload", files={"files": ("b.jpg", b"x" * 60_000, "image/jpeg")})
            assert big.status_code == 413
            assert "maximum allowed size of 20480 bytes" in big.text


# ---------------------------------------------------------------- preview engine


@pytest.fixture()
def hd_target(tmp_path: Path) -> tuple[Path, tuple[int, int, int, int]]:
    """A 1920x1080 PNG with one face (the astronaut) in the middle; returns (path, face region)."""
    import cv2

    face = cv2.resize(astronaut(), (900, 900))
    frame = np.full((1080, 1920, 3), 90, np.uint8)
    frame[90:990, 510:1410] = face
    path = tmp_path / "hd.png"
    cv2.imwrite(str(path), frame)
    return path, (510, 90, 1410, 990)


def test_faces_gallery_and_preview_change_only_the_face(hd_target: tuple[Path, tuple[int, ...]]) -> None:
    path, _ = hd_target
    found = engine.faces_in(path, 0)
    assert len(found) == 1
    x1, y1, x2, y2 = found[0].box
    assert found[0].crop.shape[2] == 3 and found[0].crop.shape[0] > (y2 - y1)
    original = engine.read_frame(path)[:, :, ::-1].astype(int)
    swapped = engine.preview(Settings(), [grace_hopper_path()], path, 0).astype(int)
    diff = np.abs(swapped - original).sum(axis=2)
    inside = diff[y1:y2, x1:x2]
    outside = diff.copy()
    pad = (x2 - x1) // 2
    outside[max(0, y1 - pad):y2 + pad, max(0, x1 - pad):x2 + pad] = 0
    assert inside.mean() > 10
    assert outside.max() == 0
    debug = engine.preview(Settings(), [grace_hopper_path()], path, 0, overlay=True)
    assert np.abs(debug.astype(int) - swapped).sum(axis=2)[y1 - 3:y2 + 3, x1 - 3:x2 + 3].max() > 0


def test_a_fast_preview_is_the_same_swap_at_the_scrubbing_size(
        hd_target: tuple[Path, tuple[int, ...]]) -> None:
    """The frame slider's fast preview: the frame made at most ``max_side`` px on its longer side before it is
    processed, the face still swapped (as the full-size preview, scaled down)."""
    import cv2

    from webui.preview_panel import FAST_SIDE

    path, _ = hd_target
    full = engine.preview(Settings(), [grace_hopper_path()], path, 0)
    fast = engine.preview(Settings(), [grace_hopper_path()], path, 0, max_side=FAST_SIDE)
    assert fast.shape == (270, 480, 3) and full.shape == (1080, 1920, 3)
    shrunk = cv2.resize(full, (480, 270), interpolation=cv2.INTER_AREA).astype(int)
    plain = cv2.resize(engine.read_frame(path)[:, :, ::-1], (480, 270), interpolation=cv2.INTER_AREA)
    assert np.abs(fast.astype(int) - shrunk).mean() < np.abs(fast.astype(int) - plain.astype(int)).mean()
    assert engine.smaller(engine.read_frame(path), 4000).shape == (1080, 1920, 3)  # never made larger


def test_the_preview_size_chosen_and_the_scrubbing_size_say_what_was_rendered(
        hd_target: tuple[Path, tuple[int, ...]]) -> None:
    """The preview size toggle (full, or at most 1280 / 640 px) sets the size a preview is rendered at; a
    scrubbing step is no larger than FAST_SIDE, nor than the size chosen. The status line says which, and the
    compared original is made the preview's size (the wipe's two sides match)."""
    from webui.preview_panel import FAST_SIDE, SIZES, compared, render, shrunk

    assert [side for _, side in SIZES] == [0, 1280, 640]
    assert (shrunk(0, 0), shrunk(640, 0), shrunk(0, FAST_SIDE), shrunk(1280, FAST_SIDE)) == (0, 640, 480, 480)
    assert shrunk(320, FAST_SIDE) == 320
    path, _ = hd_target
    image, status, *_ = render(Settings(), [grace_hopper_path()], str(path), 0, False, None, 640)
    assert image.shape == (360, 640, 3) and status.startswith("Preview of frame 0 (at most 640 px): ")
    fast, said, *_ = render(Settings(), [grace_hopper_path()], str(path), 0, False, None, FAST_SIDE, True)
    assert fast.shape == (270, 480, 3) and said.startswith("Fast preview of frame 0 (at most 480 px): ")
    original, pair = compared("wipe", str(path), 0, fast)
    assert original is None and pair[0].shape == pair[1].shape == (270, 480, 3)
    full, status, *_ = render(Settings(), [grace_hopper_path()], str(path), 0, False)
    assert full.shape == (1080, 1920, 3) and status.startswith("Preview of frame 0: ")


def test_a_warm_preview_loads_builds_and_decodes_nothing_again(hd_target: tuple[Path, tuple[int, ...]],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps the 1080p preview fast (its latency is measured in BENCHMARKS.md, not asserted): after
    the first one, the models, the processor (source faces) and the decoded frame are all reused."""
    import onnxruntime

    import pipeline.image
    import pipeline.process

    path, _ = hd_target
    first = engine.preview(Settings(), [grace_hopper_path()], path, 0)  # warm: models, source face, frame
    made: list[str] = []

    def counted(module: Any, name: str) -> None:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: (made.append(name), real(*a, **k))[1])

    counted(onnxruntime, "InferenceSession")
    counted(pipeline.process, "FaceProcessor")
    counted(pipeline.preview, "read_image")
    counted(pipeline.image, "read_image")
    for _ in range(3):
        assert np.array_equal(engine.preview(Settings(), [grace_hopper_path()], path, 0), first)
    assert made == []
    engine.preview(Settings(), [grace_hopper_path()], path, 0, overlay=True)  # the debug overlay too
    assert made == []
    changed = settings_mod.apply_overrides(Settings(), ["detector.score=0.4"])
    engine.preview(changed, [grace_hopper_path()], path, 0)  # a new setting: a new processor, same frame
    assert made == ["FaceProcessor"]


def test_media_checks_and_safe_names(tmp_path: Path) -> None:
    fake = tmp_path / "clip.mp4"
    fake.write_bytes(b"not a video at all" * 100)
    with pytest.raises(BadMedia):
        media.check_media(fake)
    fake_img = tmp_path / "photo.jpg"
    fake_img.write_bytes(b"<html>hello</html>")
    with pytest.raises(BadMedia):
        workspace.stash(fake_img)
    with pytest.raises(BadMedia):
        media.check_media(grace_hopper_path(), ("video",))
    kept = workspace.stash(grace_hopper_path(), ("image",))
    assert kept.parent.name == "uploads" and kept.read_bytes() == grace_hopper_path().read_bytes()
    assert workspace.safe_stem("../../etc/passwd") == "etc_passwd" and workspace.safe_stem("..") == "file"
    out = workspace.output_path(tmp_path / "outputs", Path("/x/../../evil name.jpg"), owner="../../root")
    assert out.parent == tmp_path / "outputs" / "root" and out.suffix == ".jpg" and "/" not in out.name


def test_submit_queues_stashed_inputs_for_the_owner(tmp_path: Path) -> None:
    from pipeline.jobs.store import JobStore
    from webui import queue_tab
    from webui.common import Ctx, UiConfig

    ctx = Ctx(UiConfig(users=(("ann", "a"), ("bob", "b")), admins=frozenset({"ann"})), tmp_path / "out",
              JobStore(tmp_path / "q.sqlite3"))

    class Req:
        def __init__(self, name: str) -> None:
            self.username = name

    job = queue_tab.submit(ctx, Settings(), [str(grace_hopper_path())], str(grace_hopper_path()), Req("bob"))  # type: ignore[arg-type]
    assert job.owner == "bob" and Path(job.output).parent == tmp_path / "out" / "bob"
    assert Path(job.target).parent.name == "uploads" and Path(job.sources[0]).is_file()
    assert [j.id for j in queue_tab.visible_jobs(ctx, Req("bob"))] == [job.id]  # type: ignore[arg-type]
    assert queue_tab.visible_jobs(ctx, Req("eve")) == []  # type: ignore[arg-type]
    assert [j.id for j in queue_tab.visible_jobs(ctx, Req("ann"))] == [job.id]  # type: ignore[arg-type]
    with pytest.raises(UserError, match=f"no job {job.id} of yours"):
        queue_tab.job_action(ctx, "cancel", job.id, Req("eve"))  # type: ignore[arg-type]
    queue_tab.job_action(ctx, "cancel", job.id, Req("bob"))  # type: ignore[arg-type]
    assert ctx.store.get(job.id).state == "cancelled"
    html = queue_tab.render_jobs(ctx.store.list())
    assert f'data-job="{job.id}"' in html and "cancelled" in html


def test_choice_lists_stay_lists_and_text_lists_become_text() -> None:
    keys = ["mask.regions", "mask.types", "mask.padding", "selector.mapping"]
    shown = controls.values_of(keys, Settings())
    assert isinstance(shown[0], list) and isinstance(shown[1], list)
    assert shown[2] == "0, 0, 0, 0" and shown[3] == ""


def test_queue_table_shows_memory_of_running_jobs() -> None:
    from dataclasses import replace

    from pipeline.jobs.model import Progress
    from pipeline.jobs.store import JobStore
    from webui.queue_tab import render_jobs

    job = JobStore().add([str(grace_hopper_path())], "/tmp/t.mp4", "/tmp/o.mp4", Settings())
    running = replace(job, state="running",
                      progress=Progress(10, 100, 5.0, 18.0, {"rss_mb": 480.2, "device_mb": None}))
    assert "RAM 480 MB" in render_jobs([running])
    gpu = replace(running, progress=Progress(10, 100, 5.0, 18.0, {"rss_mb": 480.2, "device_mb": 3120.0}))
    assert "GPU 3120 MB" in render_jobs([gpu])
    assert "MB" not in render_jobs([job])  # queued: nothing to show
    failed = replace(job, state="failed", error="cannot write /x: the disk is full",
                     progress=Progress(300, 300, 5.0, 0.0, {}))
    shown = render_jobs([failed])
    assert "the disk is full" in shown and "100%" not in shown and "<progress" not in shown


def test_free_model_memory_drops_loaded_sessions() -> None:
    from pipeline.models import sessions
    from webui.system_tab import release_models

    sessions.get_session("yunet")
    assert sessions.loaded()
    text = release_models()
    assert "freed" in text and not sessions.loaded()


def test_download_is_checked_per_user_and_handed_out_as_a_private_link(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from pipeline.jobs.store import JobStore
    from webui.common import Ctx, UiConfig
    from webui.queue_tab import download, link_valid

    store = JobStore()
    out = tmp_path / "outputs" / "ann" / "clip-swap.mp4"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"video bytes")
    job = store.add([str(grace_hopper_path())], str(tmp_path / "t.mp4"), str(out), Settings(), owner="ann")
    ctx = Ctx(UiConfig(users=(("ann", "a"), ("bob", "b"), ("root", "r")), admins=frozenset({"root"})),
              tmp_path / "outputs", store)
    ann, bob, root = (SimpleNamespace(username=u) for u in ("ann", "bob", "root"))
    with pytest.raises(UserError, match="only a done job"):
        download(ctx, job.id, ann)  # type: ignore[arg-type]
    claimed = store.claim_next("w")
    assert claimed is not None and claimed.id == job.id
    claimed.finish("done")
    with pytest.raises(UserError, match="no job .* of yours"):
        download(ctx, job.id, bob)  # type: ignore[arg-type]
    mine = download(ctx, job.id, ann)  # type: ignore[arg-type]
    assert str(out.parent) not in mine and mine.endswith("/clip-swap.mp4")
    token = mine.split("/")[-2]
    link = ctx.links.resolve(token, "ann", "")
    assert link is not None and link.path == out and link_valid(ctx, link)
    assert ctx.links.resolve(token, "bob", "") is None
    assert ctx.links.resolve(token, "ann", "other session") is None
    assert download(ctx, job.id, root) != mine  # type: ignore[arg-type]
    assert download(ctx, job.id, ann) != mine  # a fresh, unguessable token every time  # type: ignore[arg-type]


def test_a_zip_uploaded_as_the_target_is_named_for_what_it_is(tmp_path: Path) -> None:
    """The target's description (the UI's first check of an upload) says what the file is: not "truncated or
    corrupt" for a ZIP named .mp4."""
    import zipfile

    from webui.common import user_errors
    from webui.faces import describe_target

    fake = tmp_path / "holiday.mp4"
    with zipfile.ZipFile(fake, "w") as archive:
        archive.writestr("holiday.mp4", b"\0" * 1000)
    with pytest.raises(gr.Error, match=r"holiday\.mp4 is a ZIP archive, not a video"):
        user_errors(describe_target)(str(fake))
