"""Issue 20's timeline in chromium at 1280×800 and 1440×900: a video target shows its first frame and a strip
of thumbnails; dragging the in- and out-handles with the mouse (and moving one with the keys) sets
video.start / video.end, the frame scrubber and the preview keep to the range, a typed value outside the
clip gets one line, and the queued job says the range and stores it.
Screenshots go to test-artifacts/screenshots/timeline-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from tests.browser.helpers import chromium, drag_handle, open_tab, running_app, screenshot, upload
from tests.photos import grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FPS = 25
SECONDS = 4.0
THUMBS = 10


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    from tests.videos import make_clip

    return make_clip(tmp_path / "street.mp4", seconds=SECONDS, size=(320, 180), fps=FPS, audio=False)


def _value(page: Any, key: str) -> str:
    return str(page.locator(f"#set-video-{key} textarea, #set-video-{key} input").first.input_value())




def _wait_value(page: Any, key: str, want: str, what: str) -> None:
    """Wait for the video.``key`` control to read ``want``; a failure says what it and the handles read."""
    try:
        wait_until(lambda: _value(page, key) == want, 30, what)
    except AssertionError as exc:
        handles = page.evaluate("() => { const d = document.querySelector('#timeline .fs-strip').dataset;"
                                " return [d.start, d.end]; }")
        raise AssertionError(f"{exc}; video.{key} read {_value(page, key)!r}, the handles {handles}"
                             ) from None


def _slider(page: Any) -> tuple[str, str, str]:
    box = page.locator("#frame input[type=range]").first
    return box.get_attribute("min"), box.get_attribute("max"), box.input_value()


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


# every text the preview's status line shows, in order (a button's answer may be replaced a moment later
# by the answer of a preview that was still on its way: the test waits for the answer it caused, not for
# what the line says last)
STATUS_HISTORY = """
window.fsSaid = [];
new MutationObserver(() => {
  const line = document.querySelector('#preview-status');
  const text = line ? line.innerText : '';
  if (text && window.fsSaid[window.fsSaid.length - 1] !== text) window.fsSaid.push(text);
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


def _said(page: Any) -> list[str]:
    return list(page.evaluate("() => window.fsSaid"))


def _wait_status(page: Any, text: str, seconds: float, what: str) -> None:
    """Wait for the preview's status line to say ``text``; a failure says what it said last."""
    seen = [""]

    def says() -> bool:
        seen[0] = _status(page)
        return text in seen[0]

    try:
        wait_until(says, seconds, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the status said {seen[0]!r}") from None


@pytest.mark.parametrize("size", [(1280, 800), (1440, 900)], ids=["1280", "1440"])
def test_trim_by_dragging_the_in_and_out_points(clip: Path, size: tuple[int, int]) -> None:
    width, height = size
    with running_app(worker=False) as (url, app), chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        page.add_init_script(STATUS_HISTORY)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        # the target's first frame beside its name, and the strip of thumbnails across the clip
        wait_until(lambda: page.locator("#target-info img").count() == 1, 60, what="the target's picture")
        assert "street.mp4" in page.inner_text("#target-info")
        wait_until(lambda: page.locator("#timeline .fs-track img").count() == THUMBS, 60, what="the strip")
        _wait_status(page, "Preview of frame 0", 120, "the first preview")
        assert page.inner_text("#timeline .fs-range-text").startswith("Kept: 0:00.00 – 0:04.00")
        screenshot(page, f"timeline-1-strip-{width}")

        # the in-point dragged to a quarter, the out-point to three quarters: 1 s and 3 s (the settings
        # controls are in the closed Advanced settings: not in the page yet)
        drag_handle(page, "in", 0.25)
        wait_until(lambda: _slider(page)[0] == "25", 30, what="the scrubber starting at the in-point")
        drag_handle(page, "out", 0.75)
        # the scrubber keeps to frames 25..74, the preview jumped to the first kept frame
        wait_until(lambda: _slider(page) == ("25", "74", "25"), 30, what="the scrubber limited to the trim")
        assert "within frames 25–74 (1.00–3.00 s)" in page.inner_text("#frame")  # the scrubber's label
        _wait_status(page, "Preview of frame 25", 60, "the preview of the in-point")
        assert page.inner_text("#timeline .fs-range-text").startswith("Kept: 0:01.00 – 0:03.00 (2.00 s")
        screenshot(page, f"timeline-2-trimmed-{width}")
        page.click("#advanced > .label-wrap")  # the controls the handles set: video.start / video.end
        page.click("#adv-output > .label-wrap")
        wait_until(lambda: (_value(page, "start"), _value(page, "end")) == ("1", "3"), 30,
                   what="video.start and video.end set by the handles")

        # the in-point cannot pass the out-point: dragged beyond it, it stops one frame before
        drag_handle(page, "in", 0.95)
        _wait_value(page, "start", "2.96", "the in-point stopped before the out")
        # the keys move a handle one frame (Shift: one second)
        page.locator("#timeline .fs-in").focus()
        page.keyboard.press("Shift+ArrowLeft")
        page.keyboard.press("ArrowLeft")
        _wait_value(page, "start", "1.92", "the in-point moved by the keys")
        drag_handle(page, "in", 0.25)
        _wait_value(page, "start", "1", "the in-point back at 1 s")

        # typed values move the handles; one outside the clip gets one line
        start_box = page.locator("#set-video-start textarea, #set-video-start input").first
        start_box.fill("2")
        wait_until(lambda: page.locator("#timeline .fs-in").get_attribute("style") == "left: 50%;", 30,
                   what="the in-handle moved by the typed start")
        wait_until(lambda: _slider(page)[:2] == ("50", "74"), 30, what="the scrubber follows the typed start")
        start_box.fill("12")
        problem = page.locator("#timeline-note .fs-problem")
        wait_until(lambda: problem.count() and "past the end of the clip (4.00 s)" in problem.inner_text(),
                   30, what="the line for a start outside the clip")
        assert problem.inner_text().count("\n") == 0
        screenshot(page, f"timeline-3-outside-{width}")
        # the preview of that start says the same line first; the add button's answer is written after it
        # (a preview still running when the button answers would otherwise overwrite the button's line)
        _wait_status(page, "video.start 12 s is past the end of street.mp4", 60, "the preview's line")
        before = len(_said(page))
        page.click("#add-job")  # such a trim is no job: refused in one line
        refusal = "not queued: video.start 12 s is past the end of street.mp4 (4.00 s)"
        try:
            wait_until(lambda: any(refusal in t for t in _said(page)[before:]), 60, what="the job refused")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the status line said {_said(page)[before:]!r}") from None
        assert app.ctx.store.list() == []
        start_box.fill("1")
        wait_until(lambda: problem.count() == 0, 30, what="the line gone")
        wait_until(lambda: _slider(page)[:2] == ("25", "74"), 60, what="the scrubber back at the trim")

        # queued: the row says the range and the job stores it
        page.click("#add-job")
        # (read from the store: a preview still on its way may write the status line after the button)
        jobs = wait_until(lambda: app.ctx.store.list(), 60, what="the job queued")
        assert len(jobs) == 1
        assert (jobs[0].settings.video.start, jobs[0].settings.video.end) == (1.0, 3.0)
        open_tab(page, "Queue")
        wait_until(lambda: "trimmed 0:01.00 – 0:03.00" in page.inner_text("#jobs tr[data-job]"), 30,
                   what="the range in the queue row")
        page.locator("#jobs tr[data-job]").first.click()
        wait_until(lambda: "trimmed 0:01.00 – 0:03.00" in page.inner_text("#job-selected"), 30,
                   what="the range in the job's panel")
        screenshot(page, f"timeline-4-queued-{width}")

        # two-way: a preset keeps the trim, and loading it moves the handles back
        open_tab(page, "Presets")
        page.fill("#preset-name textarea, #preset-name input", "seconds 1 to 3")
        page.click("#preset-save")
        wait_until(lambda: "saved" in page.inner_text("#preset-message"), 20, what="the preset saved")
        open_tab(page, "Swap")
        drag_handle(page, "in", 0.0)
        _wait_value(page, "start", "", "the in-point back at the clip's start")
        open_tab(page, "Presets")
        page.click("#preset-load")
        wait_until(lambda: "loaded" in page.inner_text("#preset-message"), 20, what="the preset loaded")
        open_tab(page, "Swap")
        wait_until(lambda: page.locator("#timeline .fs-in").get_attribute("style") == "left: 25%;", 30,
                   what="the in-handle moved by the preset")
        assert float(_value(page, "start")) == 1.0 and _slider(page)[:2] == ("25", "74")

        # a still image: its picture beside its name, no strip, no scrubber
        still = clip.with_name("still.png")
        cv2.imwrite(str(still), np.full((180, 320, 3), 200, np.uint8))
        upload(page, "target", still)
        wait_until(lambda: "still.png" in page.inner_text("#target-info"), 60, what="the still's line")
        assert page.locator("#target-info img").count() == 1
        wait_until(lambda: page.locator("#timeline .fs-strip").count() == 0, 30, what="the strip gone")
        assert not page.locator("#frame").is_visible()
        screenshot(page, f"timeline-5-still-{width}")



def test_a_reload_keeps_the_scrubber_on_its_frame_not_the_in_point(clip: Path) -> None:
    """Issue 36 point 7: a reload brings the target back at the frame the scrubber stood on (inside the
    trim), with the preview of that frame, not at the in-point."""
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: page.locator("#timeline .fs-track img").count() == THUMBS, 60, what="the strip")
        drag_handle(page, "in", 0.25)
        wait_until(lambda: _slider(page)[0] == "25", 30, what="the scrubber starting at the in-point")
        typed = page.locator("#frame input[type=number]").first
        typed.fill("60")
        typed.press("Tab")
        _wait_status(page, "Preview of frame 60", 120, "the preview of frame 60")
        page.reload()
        page.wait_for_selector("#sources")
        wait_until(lambda: "street.mp4" in page.inner_text("#target-info"), 60, what="the target back")
        wait_until(lambda: _slider(page) == ("25", "99", "60"), 60, what="the scrubber back on frame 60")
        _wait_status(page, "Preview of frame 60", 120, "the preview of frame 60 after the reload")
