"""Issue 20 in chromium at 1280×800 and 1440×900: the preview stays in view (a sticky column) while a setting
far down the page changes; the compare modes (side by side, wipe, hold for the original) show the original
frame and the swapped one, on a still and on a scrubbed video frame; the Queue tab's before and after
players play, pause and seek together. Screenshots go to test-artifacts/screenshots/preview-*.png."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import preview as engine
from tests.browser.helpers import (
    SCREENSHOTS,
    chromium,
    open_tab,
    running_app,
    screenshot,
    upload,
    wait_for_preview,
)
from tests.photos import astronaut, astronaut_path, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SIZES = ({"width": 1280, "height": 800}, {"width": 1440, "height": 900})


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    from tests.videos import make_clip

    return make_clip(tmp_path / "face clip.mp4", seconds=1.0, size=(320, 240), face_image=astronaut())


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


def _srcs(page: Any, where: str) -> list[str]:
    return [str(img.get_attribute("src") or "") for img in page.locator(f"{where} img").all()]


def _src(page: Any, where: str = "#preview") -> str:
    shown = _srcs(page, where)
    return shown[0] if shown else ""


def _pixels(page: Any, src: str) -> np.ndarray:
    """The image at ``src``, decoded (BGR)."""
    image = cv2.imdecode(np.frombuffer(page.request.get(src).body(), np.uint8), cv2.IMREAD_COLOR)
    assert image is not None, src
    return image


def _viewport_shot(page: Any, name: str) -> None:
    """What the window shows now (helpers.screenshot takes the whole page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _in_view(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None, f"{selector} is not shown"
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], (selector, box, size)
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], (selector, box, size)
    return dict(box)


def _shown_width(page: Any) -> float:
    """The width of the picture drawn in the preview box (scaled to fit it, its proportions kept)."""
    return float(page.evaluate("""() => {
      const i = document.querySelector('#preview img');
      const r = i.getBoundingClientRect();
      return Math.min(r.width / i.naturalWidth, r.height / i.naturalHeight) * i.naturalWidth;
    }"""))


def _open(page: Any, elem_id: str, title: str) -> None:
    page.locator(f"#{elem_id}").get_by_text(title, exact=True).first.click()


def _change_far_setting(page: Any, elem_id: str, key: str) -> None:
    """Scroll to the slider ``elem_id`` and move it to an end with the keyboard (``key``: Home or End); the
    preview is then re-rendered: its image changes, and stays in view."""
    old = _src(page)
    slider = page.locator(f"#{elem_id} input[type=range]").first
    slider.scroll_into_view_if_needed()
    slider.focus()
    page.keyboard.press(key)
    wait_until(lambda: _src(page) not in ("", old) and "ms" in _status(page), 120, every=0.05,
               what=f"the preview after {elem_id} changed")
    assert page.evaluate("window.scrollY") > 1000  # far down the page …
    _in_view(page, "#preview img")  # … and the preview in view


def test_the_preview_stays_in_view_while_a_far_setting_changes(clip: Path) -> None:
    with running_app() as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=SIZES[0])
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: "ms" in _status(page) and _src(page), 120, what="the preview")
        # the Processors area is open from the start (the swapper's and the enhancer's settings are there)
        for elem_id, title in (("advanced", "Advanced settings"), ("adv-mask", "Mask & Colour")):
            _open(page, elem_id, title)
        page.locator("#set-color-strength").wait_for()
        assert page.evaluate("document.documentElement.scrollHeight") > 2 * SIZES[0]["height"]
        # big: the preview column is half the page, and the 320×240 clip is drawn larger than the 480 px of
        # the first layout
        assert _shown_width(page) > 480
        _change_far_setting(page, "set-color-strength", "Home")  # colour matching strength 1 → 0
        _viewport_shot(page, "preview-1-sticky-1280")
        screenshot(page, "preview-1-sticky-1280-page")

        page.set_viewport_size(SIZES[1])
        page.evaluate("window.scrollTo(0, 0)")
        _change_far_setting(page, "set-mask-blur", "End")  # the mask's edge softness 0.3 → 1
        assert _shown_width(page) > 560
        _viewport_shot(page, "preview-2-sticky-1440")


def _off(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(int) - b.astype(int)).mean())


def _same(shown: np.ndarray, truth: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """``shown`` is ``truth`` up to JPEG noise, over the face too (where the swap would differ by ~25)."""
    assert shown.shape == truth.shape
    x1, y1, x2, y2 = box
    off, face = _off(shown, truth), _off(shown[y1:y2, x1:x2], truth[y1:y2, x1:x2])
    assert off < 6 and face < 10, f"{off:.1f} off the original frame, {face:.1f} over the face"


def _swapped(swapped: np.ndarray, original: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """``swapped`` differs from ``original`` over the face, and only there."""
    assert swapped.shape == original.shape
    diff = np.abs(swapped.astype(int) - original.astype(int)).sum(axis=2)
    x1, y1, x2, y2 = box
    mx, my = (x2 - x1) // 2, (y2 - y1) // 2  # the paste's soft edge reaches past the box
    outside = np.ones(diff.shape, bool)
    outside[max(0, y1 - my):y2 + my, max(0, x1 - mx):x2 + mx] = False
    inside, around = float(diff[y1:y2, x1:x2].mean()), float(diff[outside].mean())
    assert inside > 12 and around < 12, f"{inside:.1f} over the face, {around:.1f} elsewhere"


def _mode(page: Any, label: str) -> None:
    page.locator("#compare").get_by_label(label, exact=True).check()


def _check_side(page: Any, truth: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The original shown, checked."""
    _mode(page, "side by side")
    wait_until(lambda: _src(page, "#preview-original"), 60, what="the original beside the preview")
    assert page.locator("#preview-original").is_visible() and page.locator("#preview").is_visible()
    left, right = page.locator("#preview-original").bounding_box(), page.locator("#preview").bounding_box()
    assert left["x"] + left["width"] <= right["x"] + 1  # original | swapped
    original, swapped = _pixels(page, _src(page, "#preview-original")), _pixels(page, _src(page))
    _same(original, truth, box)
    _swapped(swapped, original, box)
    return original


def _check_wipe(page: Any, truth: np.ndarray, box: tuple[int, int, int, int]) -> None:
    _mode(page, "wipe")
    pair = wait_until(lambda: len(_srcs(page, "#preview-wipe")) == 2 and all(_srcs(page, "#preview-wipe"))
                      and _srcs(page, "#preview-wipe"), 60, what="the wipe's two images")
    assert page.locator("#preview-wipe").is_visible() and not page.locator("#preview").is_visible()
    original, swapped = _pixels(page, pair[0]), _pixels(page, pair[1])
    _same(original, truth, box)
    _swapped(swapped, original, box)
    # the swapped image is cut at the line (half way at first), and the line follows a drag
    cut = page.locator("#preview-wipe img").nth(1)

    def line() -> float:
        found = re.search(r"inset\(0px 0px 0px ([\d.]+)%\)", str(cut.get_attribute("style")))
        assert found, cut.get_attribute("style")
        return float(found.group(1))

    area = page.locator("#preview-wipe img").first.bounding_box()
    start = line()
    goal = 75.0 if start < 50 else 25.0
    page.mouse.move(area["x"] + area["width"] * start / 100, area["y"] + area["height"] / 2)
    page.mouse.down()
    page.mouse.move(area["x"] + area["width"] * goal / 100, area["y"] + area["height"] / 2, steps=5)
    page.mouse.up()
    wait_until(lambda: abs(line() - goal) < 5, 10, what=f"the line dragged from {start:.0f} to {goal:.0f} %")


def _check_hold(page: Any, truth: np.ndarray, box: tuple[int, int, int, int], shot: str) -> None:
    _mode(page, "hold for the original")
    wait_until(lambda: _src(page, "#preview-original"), 60, what="the original, held back")
    assert page.locator("#preview").is_visible() and not page.locator("#preview-original").is_visible()
    assert page.locator("#preview-hold").is_visible()  # the hint
    area = page.locator("#preview img").bounding_box()
    page.mouse.move(area["x"] + area["width"] / 2, area["y"] + area["height"] / 2)
    page.mouse.down()
    try:
        wait_until(lambda: page.locator("#preview-original").is_visible(), 10, what="the original, held")
        assert not page.locator("#preview").is_visible()
        _in_view(page, "#preview-original img")
        original = _pixels(page, _src(page, "#preview-original"))
        screenshot(page, shot)
    finally:
        page.mouse.up()
    wait_until(lambda: page.locator("#preview").is_visible(), 10, what="the preview again, let go")
    assert not page.locator("#preview-original").is_visible()
    _same(original, truth, box)
    _swapped(_pixels(page, _src(page)), original, box)


def test_compare_modes_on_a_still_and_on_a_scrubbed_video_frame(clip: Path, tmp_path: Path) -> None:
    still = astronaut_path(tmp_path)
    with running_app() as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=SIZES[0])
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", still)
        wait_until(lambda: "ms" in _status(page) and _src(page), 120, what="the preview of the still")
        assert not page.locator("#preview-original").is_visible()  # compare is off at first
        truth, box = engine.read_frame(still), engine.faces_in(still)[0].box
        _check_side(page, truth, box)
        screenshot(page, "preview-3-side-by-side-1280")
        _check_wipe(page, truth, box)
        screenshot(page, "preview-4-wipe-1280")
        _check_hold(page, truth, box, "preview-4-held-1280")

        # the video, moved to frame 5: the original shown is that frame
        page.set_viewport_size(SIZES[1])
        still_shown = _src(page)
        upload(page, "target", clip)
        wait_until(lambda: _src(page) not in ("", still_shown) and "Preview of frame 0" in _status(page), 120,
                   what="the preview of the video")
        slider = page.locator("#frame input[type=range]").first
        wait_until(lambda: slider.is_enabled() and slider.get_attribute("max") == "29", 60,
                   what="the frame slider of the 30-frame video")
        slider.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        wait_for_preview(page, "Preview of frame 5", 60)
        truth, box = engine.read_frame(clip, 5), engine.faces_in(clip, 5)[0].box
        first = engine.read_frame(clip, 0)
        assert _off(truth, first) > 3  # the face moves: frame 5 is not frame 0
        _check_hold(page, truth, box, "preview-5-held-video-1440")
        _check_wipe(page, truth, box)
        screenshot(page, "preview-5-wipe-video-1440")
        original = _check_side(page, truth, box)
        assert _off(original, truth) < _off(original, first)  # frame 5, not the first one
        screenshot(page, "preview-6-side-by-side-video-1440")
        _mode(page, "off")
        wait_until(lambda: not page.locator("#preview-original").is_visible(), 10, what="compare off")


def _video(page: Any, which: str) -> Any:
    return page.locator(f"#job-{which} video").first.element_handle()


def _state(page: Any, which: str) -> dict[str, Any]:
    return dict(page.evaluate("(v) => ({paused: v.paused, time: v.currentTime, ready: v.readyState})",
                              _video(page, which)))


def test_before_and_after_players_play_pause_and_seek_together(clip: Path) -> None:
    # a page may start a video without a click only with this switch (a person's click on play allows it)
    with running_app() as (url, app), chromium(["--autoplay-policy=no-user-gesture-required"]) as browser:
        page = browser.new_page(viewport=SIZES[0])
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: "ms" in _status(page) and _src(page), 120, what="the preview")
        page.click("#add-job")
        wait_until(lambda: "queued job" in _status(page), 30, what="queued")
        open_tab(page, "Queue")
        wait_until(lambda: page.locator("#jobs tr[data-state=done]").count() == 1, 180, what="the render")
        page.locator("#jobs tr[data-job]").first.click()
        wait_until(lambda: page.locator("#job-after video").count() == 1, 30, what="the players")
        wait_until(lambda: _state(page, "before")["ready"] >= 2 and _state(page, "after")["ready"] >= 2, 30,
                   what="both videos to load")
        assert page.evaluate("(v) => v.muted", _video(page, "before"))  # one sound: the result's

        page.evaluate("(v) => v.play()", _video(page, "before"))
        wait_until(lambda: not _state(page, "after")["paused"], 30, what="the after video to play too")
        page.evaluate("(v) => v.pause()", _video(page, "after"))
        wait_until(lambda: _state(page, "before")["paused"], 30, what="the before video to pause too")

        frame = 1 / 30
        for which, other, at in (("after", "before", 0.5), ("before", "after", 0.2)):
            page.evaluate("([v, t]) => { v.currentTime = t; }", [_video(page, which), at])
            wait_until(lambda other=other, at=at: abs(_state(page, other)["time"] - at) < frame, 30,
                       what=f"the {other} video to follow the seek to {at} s")
            assert abs(_state(page, which)["time"] - at) < frame  # not sent back elsewhere
        screenshot(page, "preview-7-players-1280")
        page.set_viewport_size(SIZES[1])
        screenshot(page, "preview-8-players-1440")
        assert app.ctx.store.list()[0].state == "done"
