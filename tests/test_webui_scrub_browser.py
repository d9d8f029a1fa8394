"""Scrubbing coalesces, in chromium at 1280×800: five fast steps of the frame scrubber settle on the last
frame, rendered once at full size; a step while a preview is rendering waits, and only the newest waiting one
runs. While the slider moves the steps are fast previews (a reduced size); the frame it is let go on (a key
let up, a pointer let go) is then rendered at the chosen size."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import (
    SERVER_TRACE,
    chromium,
    preview_said,
    running_app,
    screenshot,
    steady_box,
    upload,
    wait_for_preview,
)
from tests.photos import grace_hopper_path
from tests.timing import scaled, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}


def _status(page: Any) -> str:
    return str(page.inner_text("#preview-status"))


class Counted:
    """Every preview the app renders (it runs in this process), by frame: at full size, and the fast ones
    made while the slider moves; ``hold`` cleared, each waits until it is set again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from pipeline import api

        self.full: list[int] = []
        self.fast: list[int] = []
        self.hold = threading.Event()
        self.hold.set()
        real = api.preview

        def counted(settings: Any, sources: Any, target: Any, frame: int, *args: Any, **kwargs: Any) -> Any:
            (self.fast if kwargs.get("max_side") else self.full).append(int(frame))
            self.hold.wait(scaled(120))
            return real(settings, sources, target, frame, *args, **kwargs)

        monkeypatch.setattr(api, "preview", counted)


@contextlib.contextmanager
def _scrubber(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(page, the frame slider) over a 640×360 clip of 30 frames, its frame 0 previewed."""
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "clip.mp4", seconds=1.0, size=(640, 360), fps=30, audio=False)
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: "Preview of frame 0" in _status(page), 120, what="the preview of frame 0")
        wait_until(lambda: page.locator("#preview-status .pending, #preview-status .generating").count() == 0,
                   60, what="the uploads' previews to be over")
        slider = page.locator("#frame input[type=range]").first
        wait_until(lambda: slider.is_enabled() and slider.get_attribute("max") == "29", 60,
                   what="the scrubber over the clip's 30 frames")
        yield page, slider


def _rendering(page: Any, seen: Counted, before: int, what: str) -> None:
    """Wait until a preview is being rendered (fast, or at full size past the ``before`` first); if none
    comes, fail with what the page and the server did."""
    try:
        wait_until(lambda: seen.fast or len(seen.full) > before, 60, what=what)
    except AssertionError as exc:
        seen.hold.set()
        raise AssertionError(f"{exc}\n{preview_said(page)}") from None


def _under_the_pointer(page: Any) -> dict[str, float]:
    """The slider's box once the page has stopped moving and the slider itself is what a press at its left
    end hits (the frame strip's pictures and the faces gallery load after the preview and move it down: a
    run once pressed where it had been, and the drag moved nothing)."""
    def hit() -> dict[str, float] | None:
        box = steady_box(page, "#frame input[type=range]")
        at = [box["x"] + 2, box["y"] + box["height"] / 2]
        on = page.evaluate("([x, y]) => { const e = document.elementFromPoint(x, y); "
                           "return !!(e && e.matches('#frame input[type=range]')); }", at)
        return box if on else None

    return wait_until(hit, 30, what="the frame slider under the pointer")


def _settled(page: Any, frame: int, seen: Counted) -> None:
    """Wait for the preview of ``frame`` at full size (the clip's 640 px)."""
    try:
        wait_for_preview(page, f"Preview of frame {frame}:", 120)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nrendered so far: full {seen.full}, fast {seen.fast}") from None
    img = page.locator("#preview img").first
    wait_until(lambda: img.evaluate("i => i.naturalWidth") == 640, 30, what="the full-size image")


def test_five_fast_scrubs_settle_on_the_last_frame_with_one_render_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = Counted(monkeypatch)
    with _scrubber(tmp_path) as (page, slider):
        before = len(seen.full)
        seen.hold.clear()
        slider.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        # the first step's fast preview, or its release's (a key let up: sent beside it, either may come
        # first) at full size
        _rendering(page, seen, before, "the first step's preview (held)")
        seen.hold.set()
        _settled(page, 5, seen)
        full, fast = seen.full[before:], seen.fast  # at full size: the frame it settled on, once, last
        assert full.count(5) == 1 and full[-1] == 5, full
        # the steps made while the first was held were coalesced: fewer previews than steps of each size (a
        # step is fast only if a key is still down as it is sent: a key let up is a release, at full size; an
        # upload's change still pending may come with the slider's value then), a fast 5 at most once, and
        # never after the full one
        assert len(full) <= 4 and len(fast) <= 3 and fast.count(5) <= 1, (full, fast)
        assert 5 not in fast or fast[-1] == 5, fast
        screenshot(page, "scrub-settled")
        _rests(page)


def _rests(page: Any) -> None:
    """Once settled the page asks for nothing more: no preview request for 2 s (two always_last listeners of
    the slider once asked again and again, every ~0.35 s, for ever: tests/test_webui_events.py)."""
    last = [len(SERVER_TRACE), time.monotonic()]

    def quiet() -> bool:
        if len(SERVER_TRACE) != last[0]:
            last[:] = [len(SERVER_TRACE), time.monotonic()]
        return time.monotonic() - last[1] >= 2.0

    try:
        wait_until(quiet, 30, what="the page to rest (no preview asked for 2 s)")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{preview_said(page)}") from None


def test_a_drag_shows_fast_steps_and_the_frame_let_go_on_at_full_size_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mouse drag along the slider, its first step's preview held until the mouse is let go: the steps
    made meanwhile wait (only the newest), the frame let go on is rendered at full size once and stays on
    screen (the drag's last fast step, coming after, is not shown over it)."""
    seen = Counted(monkeypatch)
    with _scrubber(tmp_path) as (page, slider):
        before = len(seen.full)
        seen.hold.clear()
        _drag_along(page, slider, seen, before)
        # the first step's fast preview, or an upload's change still pending when the drag began (held)
        _rendering(page, seen, before, "the first preview (held)")
        page.mouse.up()
        frame = int(slider.input_value())
        assert 5 < frame < 29, frame
        seen.hold.set()
        _settled(page, frame, seen)
        full = seen.full[before:]  # the frame let go on, once at full size, last; at most one other: an
        # upload's change still pending when the drag began is sent with the slider's value then
        assert full.count(frame) == 1 and full[-1] == frame and len(full) <= 2, full
        assert len(seen.fast) <= 3, seen.fast  # the steps coalesced
        screenshot(page, "scrub-dragged")


def _drag_along(page: Any, slider: Any, seen: Counted, before: int) -> None:
    """Press the slider at its left end and move right in ten steps, the mouse kept down. A press the page
    moved away from between the measuring and the press (a picture loading above it on a busy machine: a
    run beside two CPU burners once dragged nothing, the slider stayed at 0 and no preview was asked) is
    let go and tried again, measured again, at most three times; a drag that moved the slider is not."""
    for _ in range(3):
        box = _under_the_pointer(page)
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + 2, y)
        page.mouse.down()
        for part in range(1, 11):
            page.mouse.move(box["x"] + box["width"] * 0.06 * part, y, steps=2)
        if int(slider.input_value()) > 0 or seen.fast or len(seen.full) > before:
            return
        page.mouse.up()  # nothing moved and nothing was asked: the press missed
    raise AssertionError(f"three drags along the slider moved nothing\n{preview_said(page)}")
