"""Markers on the Swap tab's timeline (issue 35, point 3) in chromium: move to a frame, change a setting,
"Add a marker here", Add to queue: the queued job (read from the store) holds the marker, with the settings
before it unchanged. A preset's markers are listed when it is loaded into every control, saved with a preset
and kept across a page reload. No Gradio error element appears at any time of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import chromium, dropdown_options, open_tab, running_app, screenshot
from tests.photos import astronaut
from tests.test_webui_plain_errors_browser import watched_page
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _choose(page: Any, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def test_a_marker_added_on_the_timeline_is_in_the_queued_job(tmp_path: Path) -> None:
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "face.mp4", seconds=2.0, size=(320, 240), fps=25, face_image=astronaut())
    with running_app(worker=False) as (url, app), chromium() as browser:
        page = watched_page(browser, url, clip)
        wait_until(lambda: page.locator("#add-marker").is_visible(), 60, what="the marker button")
        typed = page.locator("#frame input[type=number]").first
        wait_until(lambda: typed.is_enabled(), 60, what="the scrubber")
        typed.fill("20")
        typed.press("Tab")  # here: frame 20, with the settings as they are
        wait_until(lambda: "frame 20" in page.inner_text("#preview-status"), 120, what="frame 20 previewed")

        page.click("#advanced > .label-wrap")
        page.click("#adv-mask > .label-wrap")
        _choose(page, "set-color-method", "mkl")
        page.click("#add-marker")
        wait_until(lambda: page.locator("#markers").is_visible(), 60, what="the markers list")
        assert dropdown_options(page, "markers") == ["frame 20: color.method=mkl"]
        assert "frame 20: color.method=mkl" in page.inner_text("#markers-help")  # listed under the scrubber
        screenshot(page, "markers-1-added")

        page.click("#add-job")
        wait_until(lambda: len(app.ctx.store.list()) == 1, 60, what="the job queued")
        (job,) = app.ctx.store.list()
        assert [(m.frame, m.changes) for m in job.settings.markers] == [(20, {"color.method": "mkl"})]
        assert job.settings.color.method == "reinhard"  # before the marker: the settings it had

        _choose(page, "markers", "frame 20: color.method=mkl")  # and removed again
        page.click("#remove-marker")
        wait_until(lambda: not page.locator("#markers").is_visible(), 60, what="the marker removed")
        assert "frame 20" not in page.inner_text("#markers-help")
        assert page.evaluate("() => window.fsErrors") == []


def test_a_presets_markers_are_listed_saved_and_kept_across_a_reload(tmp_path: Path) -> None:
    from pipeline import api
    from tests.videos import make_clip

    clip = make_clip(tmp_path / "face.mp4", seconds=2.0, size=(320, 240), fps=25, face_image=astronaut())
    marked = api.Settings.model_validate({"mask": {"blur": 0.5},
                                          "markers": [{"frame": 20, "changes": {"color.method": "mkl"}}]})
    line = "frame 20: color.method=mkl"
    with running_app(worker=False) as (url, _app), chromium() as browser:
        api.save_preset("two looks", marked)
        page = watched_page(browser, url, clip)
        wait_until(lambda: page.locator("#add-marker").is_visible(), 60, what="the marker button")
        open_tab(page, "Presets")
        _choose(page, "preset-list", "two looks")
        page.click("#preset-load")
        wait_until(lambda: "loaded" in page.inner_text("#preset-message"), 60, what="the preset loaded")
        open_tab(page, "Swap")
        wait_until(lambda: page.locator("#markers").is_visible(), 60, what="the preset's markers listed")
        assert dropdown_options(page, "markers") == [line]

        open_tab(page, "Presets")  # saved from the UI: the listed markers with the controls' settings
        page.fill("#preset-name textarea, #preset-name input", "saved again")
        page.click("#preset-save")
        wait_until(lambda: "saved" in page.inner_text("#preset-message"), 60, what="the preset saved")
        saved = api.load_preset("saved again")
        assert [(m.frame, m.changes) for m in saved.markers] == [(20, {"color.method": "mkl"})]
        assert saved.color.method == "reinhard" and saved.mask.blur == 0.5  # the preset's, before the marker

        page.reload()  # the markers come back with their target
        page.wait_for_selector("#sources")
        wait_until(lambda: "face.mp4" in page.inner_text("#target-info"), 60, what="the target back")
        wait_until(lambda: page.locator("#markers").is_visible(), 60, what="the markers back")
        assert dropdown_options(page, "markers") == [line]
        assert line in page.inner_text("#markers-help")
        screenshot(page, "markers-2-reloaded")
        assert page.evaluate("() => window.fsErrors") == []
