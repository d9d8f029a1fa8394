"""The Output area (issue 36, point 4) in chromium at 1280×800: its codec menu offers only what this
machine's ffmpeg opens, the alpha-capable ones marked; a container and codec that cannot go together get
one plain line under the preview before anything is queued (the request's check, ``video/formats.py``),
and no Gradio error element appears at any time of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import chromium, dropdown_options, running_app, screenshot
from tests.test_webui_plain_errors_browser import watched_page
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PRORES = "ProRes 4444 (.mov, keeps transparency)"


def _choose(page: Any, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def test_an_impossible_container_and_codec_is_said_before_queueing(tmp_path: Path) -> None:
    from pipeline.machine import usable_encoders
    from tests.videos import make_clip

    if "prores_ks" not in usable_encoders():
        pytest.skip("this ffmpeg has no prores_ks encoder")
    clip = make_clip(tmp_path / "street.mp4", seconds=1.0, size=(320, 180), fps=25, audio=False)
    with running_app(worker=False) as (url, app), chromium() as browser:
        page = watched_page(browser, url, clip)
        wait_until(lambda: "Preview of frame" in page.inner_text("#preview-status"), 120, what="the preview")

        page.click("#advanced > .label-wrap")
        page.click("#adv-output > .label-wrap")
        options = dropdown_options(page, "set-output-encoder")
        assert options[0].endswith("auto (H.264, GPU where it works)") and PRORES in options, options
        assert "VP9 (.webm, keeps transparency)" in options
        _choose(page, "set-output-container", ".mp4")
        _choose(page, "set-output-encoder", PRORES)
        line = "ProRes 4444 does not go in a .mp4 file: street.mp4 is encoded as H.264 (name it .mov to keep"
        wait_until(lambda: line in page.inner_text("#preview-notice"), 120, what="the plain line")
        screenshot(page, "output-1-prores-in-mp4")
        assert app.ctx.store.list() == []  # said before anything was queued

        # the codec's own container: nothing to say
        _choose(page, "set-output-container", ".mov")
        wait_until(lambda: "ProRes" not in page.inner_text("#preview-notice"), 120, what="the line gone")
        assert page.evaluate("() => window.fsErrors") == []
