"""Issue 35, point 2, in chromium at 1280×800: a finished job's quality report is drawn under the before /
after players, its flagged stretch shaded, and a click on the plot seeks both players to that frame (the
playhead follows).

The job is held at a known point: queued, claimed and finished by the test (no worker), its output a
generated clip with a report written beside it (frames 12–17 flagged), as a render leaves them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pipeline.quality.report import FrameRecord, QualityReport, write_report
from pipeline.settings import Settings
from tests.browser.helpers import chromium, open_tab, running_app, screenshot
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until
from webui import quality_plot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}
FPS, FRAMES = 25, 40
FLAGGED = range(12, 18)  # the face missed here


def _report(output: Path) -> None:
    frames = [FrameRecord(i, found=1, swapped=0 if i in FLAGGED else 1, missed=int(i in FLAGGED),
                          identity=[] if i in FLAGGED else [0.62], before=[] if i in FLAGGED else [0.1],
                          jitter=0.01, flags=["missed"] if i in FLAGGED else [])
              for i in range(FRAMES)]
    write_report(QualityReport(output.name, FPS, True, {"identity_min": 0.3, "jitter_max": 0.1,
                                                        "identity_every": 1}, frames, []), output)


def _head(page: Any) -> float:
    """The playhead's x on the plot (SVG units)."""
    return float(page.locator("#job-player .fs-q-head").first.get_attribute("x1") or 0)


def _video(page: Any, which: str) -> Any:
    return page.locator(f"#job-{which} video").first.element_handle()


def _time(page: Any, which: str) -> float:
    return float(page.evaluate("(v) => v.currentTime", _video(page, which)))


def _ready(page: Any, which: str) -> bool:
    return bool(page.evaluate("(v) => v.readyState >= 1", _video(page, which)))


def test_a_done_jobs_plot_is_drawn_shaded_and_a_click_seeks_both_players(tmp_path: Path) -> None:
    from tests.videos import make_clip

    target = make_clip(tmp_path / "target.mp4", seconds=FRAMES / FPS, size=(160, 120), fps=FPS, audio=False,
                       face_image=astronaut())
    output = tmp_path / "out" / "result.mp4"
    output.parent.mkdir()
    with running_app(worker=False) as (url, app), chromium() as browser:
        store = app.ctx.store
        job = store.add([grace_hopper_path()], target, output, Settings())
        lease = store.claim_next("test-worker")
        assert lease is not None and lease.id == job.id
        shutil.copy(target, output)  # what the render wrote, and its report beside it
        _report(output)
        lease.finish("done", render_s=1.0, fps=FPS)

        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        open_tab(page, "Queue")
        wait_until(lambda: page.locator("#jobs tr[data-state=done]").count() == 1, 30, what="the done row")
        page.locator("#jobs tr[data-job]").first.click()
        wait_until(lambda: page.locator("#job-player svg.fs-quality-plot").count() == 1, 30, what="the plot")
        plot = page.locator("#job-player svg.fs-quality-plot").first
        assert "34/40 frames swapped" in page.inner_text("#job-player .fs-quality")
        shaded = page.locator("#job-player rect.fs-stretch")
        assert shaded.count() == 1  # the one flagged stretch, shaded
        assert (shaded.get_attribute("data-start"), shaded.get_attribute("data-end")) == ("12", "17")
        plot.scroll_into_view_if_needed()  # below the players: a click lands in the window
        box, band = plot.bounding_box(), shaded.bounding_box()
        assert box is not None and band is not None and band["width"] > 0
        assert page.locator("#job-player polyline.fs-q-after").count() == 2  # broken by the stretch
        wait_until(lambda: _ready(page, "before") and _ready(page, "after"), 30, what="both videos to load")
        screenshot(page, "quality-plot")

        # a click on frame 14's column (inside the shaded stretch), then on frame 33's: both players go there
        data = plot.evaluate("(s) => ({left: +s.dataset.left, step: +s.dataset.step})")
        for frame in (14, 33):
            x = box["x"] + (data["left"] + (frame + 0.5) * data["step"]) / quality_plot.WIDTH * box["width"]
            if frame == 14:
                assert band["x"] < x < band["x"] + band["width"]
            page.mouse.click(x, band["y"] + band["height"] / 2)
            at = frame / FPS
            wait_until(lambda at=at: abs(_time(page, "after") - at) <= 1 / FPS
                       and abs(_time(page, "before") - at) <= 1 / FPS, 30,
                       what=f"both players at frame {frame}'s time")
            middle = data["left"] + (frame + 0.5) * data["step"]
            wait_until(lambda middle=middle: abs(_head(page) - middle) <= data["step"], 30,
                       what=f"the playhead on frame {frame}")
        screenshot(page, "quality-plot-clicked")

