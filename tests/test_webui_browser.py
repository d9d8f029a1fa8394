"""The web UI in a real browser (Playwright driving Debian's chromium), against a server on 127.0.0.1.

Screenshots of every tab go to test-artifacts/screenshots/ for a reviewer to look at.
Parts that need the background render worker (pipeline/jobs/worker.py) skip while it is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import preview as engine
from tests.browser.helpers import (
    chromium,
    open_tab,
    preview_said,
    running_app,
    screenshot,
    upload,
    wait_restored,
)
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TABS = ("Swap", "Queue", "Presets", "Models", "System")
VIEWPORT = {"width": 1920, "height": 1080}
HAS_WORKER = importlib.util.find_spec("pipeline.jobs.worker") is not None
NO_WORKER = "pipeline/jobs/worker.py (background render worker) does not exist yet"


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    from tests.videos import make_clip

    return make_clip(tmp_path / "face clip.mp4", seconds=1.0, size=(320, 240), face_image=astronaut())


@pytest.fixture()
def hd_image(tmp_path: Path) -> Path:
    frame = np.full((1080, 1920, 3), 90, np.uint8)
    frame[90:990, 510:1410] = cv2.resize(astronaut(), (900, 900))
    path = tmp_path / "hd.png"
    cv2.imwrite(str(path), frame)
    return path


def _preview_pixels(page: Any) -> np.ndarray:
    src = page.locator("#preview img").first.get_attribute("src")
    body = page.request.get(src).body() if not src.startswith("data:") else None
    if body is None:
        import base64

        body = base64.b64decode(src.split(",", 1)[1])
    image = cv2.imdecode(np.frombuffer(body, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def _preview_src(page: Any) -> str:
    img = page.locator("#preview img")
    return str(img.first.get_attribute("src")) if img.count() else ""


def _wait_preview(page: Any, after: str = "") -> str:
    """Wait until the preview shows a finished image other than ``after`` (a previous src); return its src."""
    def ready() -> str | None:
        text = page.inner_text("#preview-status")
        src = _preview_src(page)
        return src if "ms" in text and "processing" not in text and src and src != after else None

    return str(wait_until(ready, 120, every=0.02, what="the preview"))


def _job_rows(page: Any) -> list[tuple[str, str, str]]:
    return page.eval_on_selector_all(
        "#jobs tr[data-job]",
        "rows => rows.map(r => [r.dataset.job, r.dataset.state, r.querySelector('.fs-pct').innerText])",
    )


def test_swap_preview_queue_and_download(clip: Path, hd_image: Path, tmp_path: Path) -> None:
    with running_app() as (url, app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", clip)
        wait_until(lambda: page.locator("#faces img").count() == 1, 60, what="one face in the gallery")
        assert "30 frames" in page.inner_text("#target-info")
        _wait_preview(page)

        shown = _preview_pixels(page).astype(int)
        original = engine.read_frame(clip, 0).astype(int)
        assert shown.shape == original.shape
        x1, y1, x2, y2 = engine.faces_in(clip, 0)[0].box
        diff = np.abs(shown - original).sum(axis=2)
        outside = np.ones(diff.shape, bool)
        pad = (x2 - x1) // 2
        outside[max(0, y1 - pad):y2 + pad, max(0, x1 - pad):x2 + pad] = False
        assert diff[y1:y2, x1:x2].mean() > 3 * diff[outside].mean() + 10  # swapped face vs JPEG noise
        assert diff[outside].mean() < 12  # JPEG: ~2 levels per channel

        for tab in TABS:
            open_tab(page, tab)
            screenshot(page, f"tab-{tab.split()[0].lower()}")
        open_tab(page, "Swap")

        page.click("#add-job")
        open_tab(page, "Queue")
        wait_until(lambda: len(_job_rows(page)) == 1, 20, what="the job row")
        job = app.ctx.store.list()[0]
        assert Path(job.output).parent.parent == app.ctx.outputs

        # a warm 1080p preview: the overlay toggled on and off, each new image shown in turn (the round
        # trip is measured in BENCHMARKS.md, not asserted)
        open_tab(page, "Swap")
        upload(page, "target", hd_image)
        # the clip's preview is still showing until the 1080p one arrives: wait for that one, so each toggle
        # below is the only event in flight and its image is the next one shown
        width_js = "() => document.querySelector('#preview img')?.naturalWidth"
        wait_until(lambda: page.evaluate(width_js) == 1920, 60, what="the 1080p preview")
        src = _wait_preview(page)
        shown = [_preview_pixels(page)]  # overlay off, on, off, on
        for _ in range(3):
            page.click("#overlay input")
            src = _wait_preview(page, after=src)
            shown.append(_preview_pixels(page))
            if len(shown) == 2:
                screenshot(page, "preview-1080p-overlay")
        assert all(image.shape == (1080, 1920, 3) for image in shown)
        plain, overlay = shown[0].astype(int), shown[1].astype(int)
        assert np.abs(overlay - plain).sum(axis=2).max() > 200  # the face debugger draws on the face
        assert np.abs(shown[2].astype(int) - plain).max() <= 12  # off again: the plain preview (JPEG noise)
        assert np.abs(shown[3].astype(int) - overlay).max() <= 12

        if not HAS_WORKER:
            pytest.skip(f"queue progress and download: {NO_WORKER}")
        open_tab(page, "Queue")
        wait_until(lambda: _job_rows(page) and _job_rows(page)[0][1] in ("done", "failed"), 120,
                   what="job end")
        assert _job_rows(page)[0][1:] == ["done", "100%"], app.ctx.store.get(job.id).error
        page.locator(f"#jobs tr[data-job='{job.id}']").first.click()  # select the job: its file appears
        wait_until(lambda: page.locator("#job-file a[href]").count() > 0, 30, what="the download link")
        href = page.locator("#job-file a[href]").first.get_attribute("href")
        assert href and str(app.ctx.outputs) not in href  # a private copy, never the outputs folder
        data = page.request.get(href if href.startswith("http") else url + href)
        assert data.status == 200
        out = tmp_path / "downloaded.mp4"
        out.write_bytes(data.body())
        from tests.videos import count_frames

        assert count_frames(out) == 30
        screenshot(page, "queue-done")


def _open_detector(page: Any) -> None:
    """The detector settings: Swap tab → Advanced settings → Detector (accordions opened once)."""
    open_tab(page, "Swap")
    if not page.locator("#set-detector-score").is_visible():
        if not page.locator("#adv-detector").is_visible():
            page.locator("#advanced button").first.click()
        page.locator("#adv-detector button").first.click()
        page.locator("#set-detector-score").wait_for(state="visible")


def _set_number(page: Any, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} input[type=number]").first
    box.fill(value)
    box.press("Enter")


def _number(page: Any, elem_id: str) -> float:
    return float(page.locator(f"#{elem_id} input[type=number]").first.input_value())


def _wait_number(page: Any, elem_id: str, value: float) -> None:
    """Wait until the number box of ``elem_id`` shows ``value``; else fail saying what it showed."""
    seen: list[float] = []

    def shown() -> bool:
        seen.append(_number(page, elem_id))
        return seen[-1] == pytest.approx(value)

    try:
        wait_until(shown, 10, f"{elem_id} at {value}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it showed {sorted(set(seen))}\n{preview_said(page)}") from None


def test_preset_save_change_load_restores_controls() -> None:
    from pipeline import presets

    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        wait_restored(page)
        _open_detector(page)
        _set_number(page, "set-detector-score", "0.73")
        _wait_number(page, "set-detector-score", 0.73)
        # a control just drawn (its accordion opened) gets its value from the page a frame or more later:
        # the value read after that is the one Save sends (a Save racing the change itself:
        # test_a_value_changed_just_before_save_is_the_value_saved)
        page.evaluate(FRAMES, 60)
        assert _number(page, "set-detector-score") == pytest.approx(0.73)
        open_tab(page, "Presets")
        page.fill("#preset-name textarea, #preset-name input", "browser test")
        page.click("#preset-save")
        wait_until(lambda: "saved" in page.inner_text("#preset-message"), 20, what="preset saved")
        assert presets.load("browser test").detector.score == pytest.approx(0.73)
        _open_detector(page)
        _set_number(page, "set-detector-score", "0.2")
        _wait_number(page, "set-detector-score", 0.2)
        open_tab(page, "Presets")
        page.click("#preset-load")
        wait_until(lambda: "loaded" in page.inner_text("#preset-message"), 20, what="preset loaded")
        _open_detector(page)
        assert _number(page, "set-detector-score") == pytest.approx(0.73)
        open_tab(page, "Presets")
        screenshot(page, "presets-loaded")


# opens Advanced settings → Detector and types into the score the moment it is drawn (one script, no wait)
TYPE_AT_ONCE = """async (value) => {
  const drawn = (sel) => new Promise((done) => {  // the moment it is in the page (before the next frame)
    const found = document.querySelector(sel);
    if (found) { done(found); return; }
    const watch = new MutationObserver(() => {
      const e = document.querySelector(sel);
      if (e) { watch.disconnect(); done(e); }
    });
    watch.observe(document.body, {childList: true, subtree: true});
  });
  document.querySelector('#advanced button').click();
  (await drawn('#adv-detector button')).click();
  const box = await drawn('#set-detector-score input[type=number]');
  box.value = value;
  box.dispatchEvent(new Event('input', {bubbles: true}));
}"""


FRAMES = """(n) => new Promise((done) => {
  const step = (k) => k ? requestAnimationFrame(() => step(k - 1)) : done();
  step(n);
})"""


def test_a_value_typed_the_moment_its_accordion_opens_is_kept_and_saved() -> None:
    """Gradio draws a closed accordion's controls when it opens and sets their values a frame or more
    later: a value typed in between must not be overwritten, nor lost by a Save just after."""
    from pipeline import presets

    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#advanced")
        wait_restored(page)  # what this test is about is Gradio's own setting of the control just drawn
        page.evaluate(TYPE_AT_ONCE, "0.73")
        # Gradio sets a newly drawn control's value after a few ticks and a frame: 60 frames later it has
        page.evaluate(FRAMES, 60)
        assert _number(page, "set-detector-score") == pytest.approx(0.73)
        open_tab(page, "Presets")
        page.fill("#preset-name textarea, #preset-name input", "typed at once")
        page.click("#preset-save")
        wait_until(lambda: "saved" in page.inner_text("#preset-message"), 20, what="preset saved")
        assert presets.load("typed at once").detector.score == pytest.approx(0.73)


# types into the score and, in the same task (before the page has sent or heard of the change), opens the
# Presets tab and presses Save the moment its button is drawn
TYPE_THEN_SAVE = """async (value) => {
  const box = document.querySelector('#set-detector-score input[type=number]');
  box.value = value;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  [...document.querySelectorAll('[role=tab]')].find((t) => t.innerText.trim() === 'Presets').click();
  const save = () => document.querySelector('#preset-save');
  while (!save() || !save().offsetParent) await new Promise((r) => requestAnimationFrame(r));
  save().click();
}"""


def test_a_value_changed_just_before_save_is_the_value_saved() -> None:
    """Issue 36 point 8: Save reads the controls as they are when it is pressed; a change whose own events
    (the page's change, the slider's release) have not been answered yet, or not even sent, is not lost."""
    from pipeline import presets

    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        wait_restored(page)
        for name, value in (("at once 1", "0.73"), ("at once 2", "0.31")):  # the second: an open accordion
            open_tab(page, "Presets")
            page.fill("#preset-name textarea, #preset-name input", name)
            _open_detector(page)
            # what this test is about is Save racing a change; Gradio's own setting of a control just drawn
            # (its accordion opened) is test_a_value_typed_the_moment_its_accordion_opens_is_kept_and_saved's:
            # a full run once lost the first value, typed and its tab left within a frame of the drawing
            page.evaluate(FRAMES, 60)
            page.evaluate(TYPE_THEN_SAVE, value)
            wait_until(lambda name=name: f"saved preset {name}" in page.inner_text("#preset-message"), 20,
                       what=f"the preset {name} saved")
            saved = presets.load(name).detector.score
            assert saved == pytest.approx(float(value)), (
                f"saved {saved}; the box shows {_number(page, 'set-detector-score')}\n{preview_said(page)}")


def test_three_sessions_queue_three_jobs_each(tmp_path: Path) -> None:
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(worker=HAS_WORKER) as (url, app), chromium() as browser:
        pages = []
        for _ in range(3):
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.goto(url)
            page.wait_for_selector("#sources")
            upload(page, "sources", grace_hopper_path())
            upload(page, "target", target)
            pages.append(page)
        for page in pages:
            _wait_preview(page)
        for _ in range(3):  # interleaved: every session clicks before any waits
            for page in pages:
                page.click("#add-job")
        wait_until(lambda: len(app.ctx.store.list()) == 9, 180, what="nine queued jobs")
        assert len({j.output for j in app.ctx.store.list()}) == 9
        if not HAS_WORKER:
            pytest.skip(f"running the nine jobs: {NO_WORKER}")
        wait_until(lambda: all(j.finished for j in app.ctx.store.list()), 300, every=1,
                   what="nine jobs to finish")
        jobs = app.ctx.store.list()
        assert [j.state for j in jobs] == ["done"] * 9, [j.error for j in jobs]
        for job in jobs:
            out = engine.read_frame(job.output)
            assert out.shape == astronaut().shape and np.abs(out.astype(int) - astronaut()).mean() > 0.5
        open_tab(pages[0], "Queue")
        wait_until(lambda: [r[1] for r in _job_rows(pages[0])] == ["done"] * 9, 20, what="nine done rows")
