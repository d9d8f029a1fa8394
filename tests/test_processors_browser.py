"""The Processors area in a real browser: ticking a processor and moving it in the order changes the preview,
and a job queued with them renders them (surrogate colouriser: a warm tint a test can measure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import preview as engine
from tests.browser.helpers import chromium, open_tab, running_app, screenshot, upload
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


def _choose(page: Any, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


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
        page.locator("#processors").get_by_text("Processors", exact=True).first.click()
        _choose(page, "set-processors-order", "frame_colorizer")
        tinted = _next_preview(page, shown)
        screenshot(page, "processors-1-colouriser-ticked")
        assert _warmth(tinted) > _warmth(plain) + 5  # the colouriser's warm tint is in the preview
        before = _src(page)
        _choose(page, "processor-move", "frame_colorizer")
        page.click("#processor-up")
        page.click("#processor-up")
        first = _next_preview(page, before)
        chips = page.inner_text("#set-processors-order")
        assert chips.index("frame_colorizer") < chips.index("face_swapper"), chips
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


def test_an_enhancer_chosen_but_left_out_of_the_order_is_said_beside_the_preview(tmp_path: Path) -> None:
    """The main settings' face enhancer does nothing when face_enhancer is not in the order: the preview
    says so (it was silently ignored), and stops saying it once face_enhancer is back."""
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", target)
        _next_preview(page, "")
        page.locator("#set-face_enhancer-model input").first.click()
        page.get_by_role("option", name="gfpgan_1.4", exact=False).first.click()
        page.keyboard.press("Escape")
        page.locator("#processors").get_by_text("Processors", exact=True).first.click()
        order = page.locator("#set-processors-order")
        order.locator(".token", has_text="face_enhancer").locator(".token-remove").first.click()
        said = "face enhancer gfpgan_1.4 is not used"
        wait_until(lambda: said in page.inner_text("#preview-notice"), 120, what="the preview saying so")
        screenshot(page, "processors-enhancer-not-in-order")
        _choose(page, "set-processors-order", "face_enhancer")
        # back in the order, the enhancer runs: its model is the one thing missing now, and said so
        wait_until(lambda: "gfpgan_1.4" in page.inner_text("#preview-status"), 120,
                   what="the preview asking for the enhancer's model")
        assert said not in page.inner_text("#preview-notice")
