"""The swap request's one check (pipeline/request.py): every entry point that starts a swap refuses a bad
request before any work, in the same words, and creates nothing (no job, no output): the command's
``swap``, ``queue add`` (one target and a batch) and ``live``; the web UI's preview, Add to queue, batch and
Live tab. The web's Add to queue builds the model plan once."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli.main import main
from pipeline import api
from pipeline.checks import unused_settings
from pipeline.jobs.service import open_store
from pipeline.jobs.store import JobStore
from pipeline.live.webrtc import LiveRuns
from pipeline.plan import ModelPlan
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.videos import make_clip

gr = pytest.importorskip("gradio")

from webui import preview_panel, queue_tab  # noqa: E402
from webui.common import Ctx, UiConfig, browser_message  # noqa: E402

Refusal = Callable[[list[str], str, Settings, list[str]], str]  # (sources, target, settings, --set) -> line


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    wall = tmp_path / "in" / "wall.png"  # a source photo without a face
    wall.parent.mkdir()
    cv2.imwrite(str(wall), np.full((300, 300, 3), 128, np.uint8))
    return {"wall": wall, "face": photos.grace_hopper_path(), "still": photos.astronaut_path(tmp_path / "in"),
            "clip": make_clip(tmp_path / "in" / "clip.mp4", seconds=1.0, size=(160, 120), fps=30),
            "out": tmp_path / "out"}


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The command's one error line (exit 2), without its prefix."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("facestation: error: "), err
    return lines[0].removeprefix("facestation: error: ")


def entry_points(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> dict[str, Refusal]:
    """Each entry point, asked to swap ``sources`` into ``target``: the line it refuses with."""
    out = files["out"]
    out.mkdir(exist_ok=True)
    ctx = Ctx(UiConfig(worker=False), out / "web", JobStore(out / "web.sqlite3"))

    def swap(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        src = [a for s in sources for a in ("--source", s)]
        return _cli(["swap", *src, "--target", target, "--output", str(out / f"o{Path(target).suffix}"),
                     *sets], capsys)

    def queue_add(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        src = [a for s in sources for a in ("--source", s)]
        output = out / f"q{Path(target).suffix}"
        return _cli(["queue", "add", *src, "--target", target, "--output", str(output), *sets], capsys)

    def queue_batch(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        src = [a for s in sources for a in ("--source", s)]
        assert main(["queue", "add", *src, "--target", target, "--output", str(out), "--name", "b-{target}",
                     *sets]) == 2
        line = capsys.readouterr().err.splitlines()[0]
        return re.sub(r"^facestation: error: .*?: not queued: ", "", line)

    def live(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        src = [a for s in sources for a in ("--source", s)]
        return _cli(["live", *src, "--camera", target, "--output", str(out / "live.mp4"), *sets], capsys)

    def web_preview(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        image, status, *_ = preview_panel.render(settings, sources, target, 0, False)
        assert image is None
        return re.sub(r"<[^>]+>|⚠ ", "", status).strip()

    def web_add(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        with pytest.raises(api.UserError) as refused:
            queue_tab.submit(ctx, settings, sources, target, None)
        return browser_message(str(refused.value))

    def web_batch(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        items = queue_tab.submit_batch(ctx, settings, sources, [target], "", "{target}", None)
        assert items[0].job is None and items[0].error
        return browser_message(items[0].error)

    def live_tab(sources: list[str], target: str, settings: Settings, sets: list[str]) -> str:
        with pytest.raises(api.UserError) as refused:
            LiveRuns().start("", "s", settings, sources)
        return browser_message(str(refused.value))

    return {"swap": swap, "queue add": queue_add, "queue add (batch)": queue_batch, "live": live,
            "web preview": web_preview, "web Add to queue": web_add, "web batch": web_batch,
            "Live tab": live_tab}


def _nothing_made(files: dict[str, Path], web: Path) -> None:
    made = [p.name for p in files["out"].rglob("*") if p.is_file() and not p.name.startswith("web.sqlite3")]
    assert made == [], made
    assert open_store().list() == [] and JobStore(web).list() == []


def test_every_entry_point_refuses_a_source_without_a_face_in_the_same_words(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`queue add` used to queue it (it failed when run); live said it in other words once its models were
    loaded."""
    said = "no face found in the source photo wall.png: use a photo where the face is clearly visible"
    for name, refuse in entry_points(files, capsys).items():
        target = files["clip"] if name in ("live", "Live tab") else files["still"]
        assert refuse([str(files["wall"])], str(target), Settings(), []) == said, name
    _nothing_made(files, files["out"] / "web.sqlite3")


def test_every_entry_point_refuses_a_trim_past_the_end_in_the_same_words(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A trim that starts after the clip: `swap` refused it, `queue add` queued it (it failed when run)."""
    settings = apply_overrides(Settings(), ["video.start=5"])
    said = "video.start 5 s is past the end of clip.mp4 (1.00 s)"
    for name, refuse in entry_points(files, capsys).items():
        if name in ("live", "Live tab"):
            continue  # a camera has no trim
        got = refuse([str(files["face"])], str(files["clip"]), settings, ["--set", "video.start=5"])
        assert got == said, name
    _nothing_made(files, files["out"] / "web.sqlite3")


def test_add_to_queue_builds_the_model_plan_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One check per "Add to queue", and one plan per check (the checks and the queue's add used to build it
    six times)."""
    built: list[Settings] = []
    plan = ModelPlan.from_settings.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ModelPlan], settings: Settings) -> ModelPlan:
        built.append(settings)
        return plan(cls, settings)

    monkeypatch.setattr(ModelPlan, "from_settings", classmethod(counted))
    ctx = Ctx(UiConfig(worker=False), tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))
    photo = str(photos.grace_hopper_path())
    job = queue_tab.submit(ctx, Settings(), [photo], photo, None)
    assert [j.id for j in ctx.store.list()] == [job.id]
    assert len(built) == 1


def test_a_checked_request_says_what_will_run(files: dict[str, Path]) -> None:
    """What passed: the plan's swapper, the target, the frames the trim keeps, the notices; a job reads the
    uploads' copies (``keep``) while the check named the files the user gave."""
    settings = apply_overrides(Settings(), ["video.start=0.5", "video.end=0.8"])
    checked = api.check_request(api.SwapRequest.of([files["face"]], files["clip"], settings))
    assert checked.plan.models_of("face_swapper") == ("classic",) and checked.frames == range(15, 24)
    assert checked.target is not None and checked.target.kind == "video"
    assert any("classic swapper is in use" in n for n in checked.notices)
    request = api.SwapRequest.of([files["face"]], files["clip"], settings, files["out"] / "o.mp4")
    assert request.trim == api.Trim(0.5, 0.8) and request.inputs == (files["face"], files["clip"])


def test_an_enhancer_chosen_but_not_in_the_order_is_said_not_ignored(files: dict[str, Path]) -> None:
    """The face enhancer's model chosen with face_enhancer left out of the order does nothing: the check
    says so (the preview shows it beside the picture), and says nothing once it is in the order."""
    left_out = apply_overrides(Settings(), ["enhancer.model=gfpgan_1.4", "processors.order=face_swapper"])
    checked = api.check_request(api.SwapRequest.of([files["face"]], files["still"], left_out))
    said = [n for n in checked.notices if "gfpgan_1.4 is not used" in n]
    assert said and "face_enhancer is not in processors.order" in said[0]
    _, _, notice, *_ = preview_panel.render(left_out, [str(files["face"])], str(files["still"]), 0, False)
    assert "gfpgan_1.4 is not used" in notice
    quiet = api.check_request(api.SwapRequest.of([files["face"]], files["still"], Settings()))
    assert not [n for n in quiet.notices if "not used" in n]  # no enhancer chosen (the default): nothing


def test_a_processor_ticked_that_changes_nothing_is_said_and_none_is_at_the_defaults(
        files: dict[str, Path]) -> None:
    """The default order is the swapper alone (the enhancer's model is none until one is chosen): nothing
    ticked does nothing. An enhancer ticked with no model, or an age modifier at 0, changes nothing: the
    check says so (the preview shows it beside the picture)."""
    assert Settings().processors.order == ("face_swapper",)
    assert [p.name for p in api.processors() if p.default] == ["face_swapper"]  # the one row ticked
    quiet = api.check_request(api.SwapRequest.of([files["face"]], files["still"], Settings()))
    assert not [n for n in quiet.notices if "changes nothing" in n]
    idle = apply_overrides(Settings(), ["processors.order=face_swapper,face_enhancer,age_modifier"])
    checked = api.check_request(api.SwapRequest.of([files["face"]], files["still"], idle))
    said = [n for n in checked.notices if "changes nothing" in n]
    assert said == ["face enhancer is ticked but changes nothing as set (face_enhancer.model=none): set it "
                    "in Processors, or untick it",
                    "age modifier is ticked but changes nothing as set: set it in Processors, or untick it"]
    _, _, notice, *_ = preview_panel.render(idle, [str(files["face"])], str(files["still"]), 0, False)
    assert "face enhancer is ticked but changes nothing" in notice
    chosen = apply_overrides(idle, ["face_enhancer.model=gfpgan_1.4", "age_modifier.direction=20"])
    assert not [n for n in unused_settings(chosen) if "changes nothing" in n]  # (models not installed here)
