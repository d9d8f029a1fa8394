"""Every tab at both window sizes a creator uses (1280×800 and 1440×900), after an ordinary session: a
source and a video target dropped, the preview shown, one job rendered with Render now. On every tab: no
element ever carried Gradio's error class, and nothing runs off the window's right edge (no sideways
scrolling). A screenshot of each tab at each size goes to test-artifacts/screenshots/tab-<Name>-<width>.png
(the whole page) for a person to look at; the README's "Using the web UI" describes what they show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import chromium, open_tab, running_app, screenshot
from tests.photos import astronaut
from tests.test_webui_plain_errors_browser import watched_page
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SIZES = ({"width": 1280, "height": 800}, {"width": 1440, "height": 900})
TABS = ("Swap", "Live", "Queue", "Presets", "Models", "System")

# how far the page reaches past the window's right edge, in CSS pixels (0: no sideways scrolling)
OVERFLOW = "() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth)"


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


def _every_tab(browser: Any, url: str, app: Any, clip: Path, viewport: dict[str, int], render: bool) -> None:
    width = viewport["width"]
    page = watched_page(browser, url, clip, viewport)
    wait_until(lambda: "Preview of frame" in _status(page), 180, what="the preview")
    if render:
        page.click("#render-now")  # the Queue tab opens on the job
        wait_until(lambda: [j.state for j in app.ctx.store.list()] == ["done"], 300, what="the job rendered")
    for name in TABS:
        open_tab(page, name)
        page.wait_for_timeout(500)  # the tab's refresh (models, queue rows) drawn before its picture
        screenshot(page, f"tab-{name}-{width}")
        assert page.evaluate(OVERFLOW) <= 1, f"the {name} tab at {width} runs off the window's edge"
    assert page.evaluate("() => window.fsErrors") == [], f"Gradio errors at {width}"
    page.context.close()


def test_every_tab_at_both_sizes_shows_no_error_and_fits_the_window(tmp_path: Path) -> None:
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "street clip.mp4", seconds=0.5, size=(160, 120), face_image=astronaut())
    with running_app(worker=True) as (url, app), chromium() as browser:
        for viewport in SIZES:
            _every_tab(browser, url, app, clip, viewport, render=viewport is SIZES[0])
