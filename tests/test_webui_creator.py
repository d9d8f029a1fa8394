"""Issue 12 without a browser: one check before preview and queue, models marked, messages for a browser
user, labels and ranges, a layout with every tab visible, the queue acting on a selected row, presets
listed on every load."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

gr = pytest.importorskip("gradio")

from pipeline import api  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.photos import grace_hopper_path  # noqa: E402
from webui import preview_panel, queue_tab  # noqa: E402
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
    assert message.count("retinaface") == 1 and "facestation" not in message and "/" not in message
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


