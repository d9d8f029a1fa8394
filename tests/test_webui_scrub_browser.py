"""Scrubbing coalesces, in chromium at 1280×800: five fast steps of the frame scrubber settle on the last
frame, rendered once; a step while a preview is rendering waits, and only the newest waiting one runs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import chromium, running_app, screenshot, upload
from tests.photos import grace_hopper_path
from tests.timing import scaled, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


def test_five_fast_scrubs_settle_on_the_last_frame_with_one_render_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import api
    from tests.videos import make_clip

    rendered: list[int] = []
    real = api.preview
    hold = threading.Event()  # the first step's preview held until all five steps are made (no race)
    hold.set()

    def counted(settings: Any, sources: Any, target: Any, frame: int, *args: Any, **kwargs: Any) -> Any:
        rendered.append(int(frame))
        hold.wait(scaled(120))
        return real(settings, sources, target, frame, *args, **kwargs)

    monkeypatch.setattr(api, "preview", counted)  # the app runs in this process: every preview it renders
    clip = make_clip(tmp_path / "clip.mp4", seconds=1.0, size=(320, 240), fps=30, audio=False)
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: "Preview of frame 0" in _status(page), 120, what="the preview of frame 0")
        slider = page.locator("#frame input[type=range]").first
        wait_until(lambda: slider.is_enabled() and slider.get_attribute("max") == "29", 60,
                   what="the scrubber over the clip's 30 frames")
        before = len(rendered)
        hold.clear()
        slider.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        wait_until(lambda: len(rendered) > before, 60, what="the first step's preview (held)")
        hold.set()
        wait_until(lambda: "Preview of frame 5" in _status(page), 120, what="the preview of frame 5")
        scrubbed = rendered[before:]
        assert scrubbed.count(5) == 1 and scrubbed[-1] == 5, scrubbed  # the last frame, rendered once, last
        # the steps made while the first was held were coalesced: fewer renders than steps (the page may
        # send one more before it sees the first pending: [1, 2, 5] here)
        assert len(scrubbed) <= 3, scrubbed
        screenshot(page, "scrub-settled")
