"""The Processors area in a real browser: ticking a processor and moving it in the order changes the preview,
and a job queued with them renders them (surrogate colouriser: a warm tint a test can measure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import preview as engine
from pipeline.image import read_provenance
from tests.browser.helpers import chromium, kept_in_browser, open_tab, running_app, screenshot, upload
from tests.photos import astronaut, grace_hopper_path
from tests.surrogates import install_surrogate
from tests.timing import wait_until
from tests.videos import make_clip

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1280, "height": 800}


def _src(page: Any) -> str:
    img = page.locator("#preview img")
    return str(img.first.get_attribute("src")) if img.count() else ""


def _next_preview(page: Any, after: str) -> np.ndarray:
    def ready() -> str | None:
        text, src = page.inner_text("#preview-status"), _src(page)
        return src if "ms" in text and "processing" not in text and src and src != after else None

    src = str(wait_until(ready, 120, every=0.05, what="a new preview"))
    body = page.request.get(src).body()
    image = cv2.imdecode(np.frombuffer(body, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def _warmth(image: np.ndarray) -> float:
    """Mean Lab b (yellow +, blue −) of a BGR image, 8-bit Lab centred on 0."""
    return float(cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 2].astype(float).mean() - 128)


def _rows_top_down(page: Any) -> list[str]:
    """The processors' rows as drawn, top down: (the ticked ones first, in the order)."""
    rows = page.locator("#processor-list .fs-proc")
    tops = [(rows.nth(i).bounding_box()["y"], str(rows.nth(i).get_attribute("id")))
            for i in range(rows.count())]
    return [name for _, name in sorted(tops)]


def test_ticking_and_ordering_processors_changes_the_preview_and_the_job(tmp_path: Path) -> None:
    install_surrogate("ddcolor")
    clip = make_clip(tmp_path / "clip.mp4", seconds=0.5, size=(320, 240), face_image=astronaut())
    with running_app() as (url, app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        plain = _next_preview(page, "")
        shown = _src(page)
        page.click("#proc-frame-colorizer-on input")
        tinted = _next_preview(page, shown)
        screenshot(page, "processors-1-colouriser-ticked")
        assert _warmth(tinted) > _warmth(plain) + 5  # the colouriser's warm tint is in the preview
        before = _src(page)
        page.click("#proc-frame-colorizer-up")
        page.click("#proc-frame-colorizer-up")
        first = _next_preview(page, before)
        drawn = _rows_top_down(page)
        assert drawn.index("proc-frame-colorizer") < drawn.index("proc-face-swapper"), drawn
        x1, y1, x2, y2 = engine.faces_in(clip, 0)[0].box  # colour first, then the swap: the face differs
        assert np.abs(first[y1:y2, x1:x2].astype(int) - tinted[y1:y2, x1:x2].astype(int)).mean() > 1.0
        screenshot(page, "processors-2-colouriser-first")
        page.click("#add-job")
        open_tab(page, "Queue")
        store = app.ctx.store
        wait_until(lambda: store.list() and store.list()[0].state in ("done", "failed"), 180,
                   what="the job to finish")
        job = store.list()[0]
        assert job.state == "done", job.error
        assert job.settings.processors.order[:2] == ("frame_colorizer", "face_swapper")
        cap = cv2.VideoCapture(job.output)
        ok, frame = cap.read()
        cap.release()
        assert ok and _warmth(frame) > _warmth(plain) + 5  # the render ran the colouriser too


def test_the_enhancer_ticked_shows_its_settings_moves_up_and_is_in_the_job(tmp_path: Path) -> None:
    """The face enhancer is a labelled tick box: its settings are beside it only while it is ticked (never a
    control that is set and ignored); moved up, it runs first in the job, and the output's provenance tag
    names its model."""
    install_surrogate("gfpgan_1.4")
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app() as (url, app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", target)
        _next_preview(page, "")
        settings = page.locator("#set-face_enhancer-model")
        assert page.locator("#proc-face-enhancer-on").inner_text().strip() == "Face enhancer"
        assert not settings.is_visible()  # not ticked by default (its model is none until one is chosen)
        page.click("#proc-face-enhancer-on input")
        wait_until(settings.is_visible, 30, what="the enhancer's settings beside it")
        idle = "face enhancer is ticked but changes nothing"
        wait_until(lambda: idle in page.inner_text("#preview-notice"), 60,
                   what="the notice that the enhancer with no model changes nothing")
        page.locator("#set-face_enhancer-model input").first.click()
        page.get_by_role("option", name="gfpgan_1.4", exact=False).first.click()
        page.keyboard.press("Escape")
        page.click("#proc-face-enhancer-up")
        wait_until(lambda: _rows_top_down(page)[0] == "proc-face-enhancer", 30,
                   what="the enhancer drawn first")
        screenshot(page, "processors-enhancer-ticked-first")
        page.click("#add-job")
        store = app.ctx.store
        wait_until(lambda: store.list() and store.list()[0].state in ("done", "failed"), 180,
                   what="the job to finish")
        job = store.list()[0]
        assert job.state == "done", job.error
        assert job.settings.processors.order == ("face_enhancer", "face_swapper")
        assert job.settings.face_enhancer.model == "gfpgan_1.4"
        assert "gfpgan_1.4" in (read_provenance(Path(job.output)) or "")


def test_a_reload_brings_back_the_ticks_the_order_and_the_settings_shown() -> None:
    """``processors.order`` is the one value kept (the page's kept settings, as a preset or a job holds it):
    after a reload the rows follow it again, ticks, order on screen and settings shown."""
    with running_app(worker=False) as (url, app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        page.click("#proc-frame-sharpener-on input")
        page.click("#proc-frame-sharpener-up")
        page.click("#proc-frame-sharpener-up")
        wait_until(lambda: _rows_top_down(page)[0] == "proc-frame-sharpener", 30, what="the sharpener first")
        assert not page.locator("#set-face_enhancer-model").is_visible()  # left out by default
        def kept() -> Any:
            return (kept_in_browser(page, app).get("settings") or {}).get("processors.order")

        wait_until(lambda: kept() == ["frame_sharpener", "face_swapper"], 60, what="the order kept")
        page.reload()
        page.wait_for_selector("#sources")
        wait_until(lambda: _rows_top_down(page)[:2] == ["proc-frame-sharpener", "proc-face-swapper"], 60,
                   what="the order back on screen")
        assert page.locator("#proc-frame-sharpener-on input").is_checked()
        assert not page.locator("#proc-face-enhancer-on input").is_checked()
        assert page.locator("#set-frame_sharpener-amount").is_visible()
        assert not page.locator("#set-face_enhancer-model").is_visible()
        screenshot(page, "processors-after-reload")
