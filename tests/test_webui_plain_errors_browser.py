"""Ordinary actions never put up Gradio's raw errors (issue 36, point 3), in chromium at 1280×800; and
Render now.

A frame typed past the scrubber's end is its last frame; a video target replaced by an image while the
scrubber stands there (its range narrowing under its value) is taken in stride; Delete on a built-in
preset is answered in the presets' message line. A watcher installed before the page loads records
every element with Gradio's error class (the red "Error" badge, an error toast) that appears at any time
of the run: there must be none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import pytest

from tests.browser.helpers import chromium, open_tab, running_app, screenshot, upload
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}
FPS = 25

# every element that ever carries Gradio's error class, by its text (the badge, a toast)
WATCH_ERRORS = """
window.fsErrors = [];
new MutationObserver(() => {
  for (const e of document.querySelectorAll('.error')) {
    if (!e.dataset.fsSeen) { e.dataset.fsSeen = '1'; window.fsErrors.push(e.innerText || e.className); }
  }
}).observe(document, {childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
"""


def _errors(page: Any) -> list[str]:
    return list(page.evaluate("() => window.fsErrors"))


def watched_page(browser: Any, url: str, target: Path, viewport: dict[str, int] = VIEWPORT) -> Any:
    """A page (at 1280×800 unless ``viewport``) whose Gradio errors are recorded from its first load
    (``window.fsErrors``), with the test photo as the source and ``target`` uploaded."""
    context = browser.new_context(viewport=viewport)
    context.add_init_script(WATCH_ERRORS)
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#sources")
    upload(page, "sources", grace_hopper_path())
    upload(page, "target", target)
    return page


def _frame(page: Any) -> tuple[str, str]:
    """The scrubber's end and its value, as the page shows them."""
    box = page.locator("#frame input[type=range]").first
    return box.get_attribute("max"), box.input_value()


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


def test_out_of_range_frames_a_narrowed_scrubber_and_a_built_in_delete_raise_no_error(tmp_path: Path) -> None:
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "street.mp4", seconds=4.0, size=(320, 180), fps=FPS, audio=False)
    image = tmp_path / "still.png"
    cv2.imwrite(str(image), astronaut())
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = watched_page(browser, url, clip)
        wait_until(lambda: page.locator("#frame").is_visible() and _frame(page)[0] == "99", 60,
                   what="the scrubber over the clip's 100 frames")

        # a frame typed past the scrubber's end is its last frame (never Gradio's raw "Value 250 is greater
        # than maximum value 99")
        typed = page.locator("#frame input[type=number]").first
        typed.fill("250")
        typed.press("Tab")  # the box left: the page shows the nearest end, as the server takes it
        wait_until(lambda: _frame(page)[1] == "99", 30, what="the scrubber at its last frame")
        wait_until(lambda: "Preview of frame 99" in _status(page), 120, what="the preview of the last frame")
        screenshot(page, "plain-errors-1-last-frame")
        assert _errors(page) == [], "the last frame"

        # the video replaced by an image while the scrubber stands at 99: its range narrows to one frame
        upload(page, "target", image)
        wait_until(lambda: "still.png" in page.inner_text("#target-info"), 60, what="the image described")
        wait_until(lambda: "Preview" in _status(page) and "frame 99" not in _status(page), 120,
                   what="the image's preview")
        assert _errors(page) == [], "the video replaced by an image"

        # Delete on a built-in preset: said in the message line, the list stays a list
        open_tab(page, "Presets")
        page.locator("#preset-list input").first.click()
        page.get_by_role("option", name="balanced-1080p (built-in)", exact=True).first.click()
        page.click("#preset-delete")
        wait_until(lambda: "built-in" in page.inner_text("#preset-message"), 30, what="the refusal's line")
        assert "cannot be deleted" in page.inner_text("#preset-message")
        assert page.locator("#preset-list input").first.is_visible()
        screenshot(page, "plain-errors-2-built-in-delete")
        assert _errors(page) == [], "Delete on a built-in preset"


def test_render_now_queues_first_and_opens_the_queue_on_it(tmp_path: Path) -> None:
    """Beside Add to queue, Render now: the job goes before every queued one and the Queue tab opens on
    it (selected)."""
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(worker=False) as (url, app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", target)
        wait_until(lambda: "ms" in _status(page), 120, what="the preview")
        page.click("#add-job")
        wait_until(lambda: len(app.ctx.store.list()) == 1, 60, what="the first job queued")
        page.click("#render-now")
        wait_until(lambda: len(app.ctx.store.list()) == 2, 60, what="the second job queued")
        first, second = sorted(app.ctx.store.list(), key=lambda j: j.id)
        tab = page.get_by_role("tab", name="Queue", exact=True)
        wait_until(lambda: tab.get_attribute("aria-selected") == "true", 30, what="the Queue tab opened")
        claimed = app.ctx.store.claim_next("w")
        assert claimed is not None and claimed.id == second.id != first.id  # it runs next, before the first
        wait_until(lambda: page.locator(f'tr[data-job="{second.id}"].fs-selected').count() == 1, 30,
                   what="its row selected")
        screenshot(page, "queue-render-now")
