"""The Queue tab's first view in chromium at 1280×800: a job that started while the Swap tab was shown is
"running" with its progress the moment the Queue tab opens, never the "queued 0 %" of when it was added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import pytest

from pipeline.progress import Progress
from tests.browser.helpers import chromium, running_app, screenshot, upload, wait_for_preview
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}


def test_a_running_job_is_running_on_the_first_view_of_the_queue(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(worker=False) as (url, app), chromium() as browser:
        store = app.ctx.store
        reads: list[int] = []
        listed = store.list

        def counted(*args: Any, **kwargs: Any) -> Any:  # every read of the queue the page's ticks make
            reads.append(1)
            return listed(*args, **kwargs)

        monkeypatch.setattr(store, "list", counted)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", target)
        # the preview first, as a creator sees it before adding: its line would replace the "queued job" one
        # if it came after (a full run beside two burners: the preview asked at the upload shown after the
        # add)
        wait_for_preview(page, "Preview of frame 0", 120)
        page.click("#add-job")
        wait_until(lambda: store.list() and "queued job" in page.inner_text("#preview-status"), 60,
                   what="the job queued")
        lease = store.claim_next("test-worker")  # a worker takes it while the Swap tab is shown
        assert lease is not None
        lease.progress(Progress(30, 100, 5.0, 14.0))
        seen = len(reads)
        wait_until(lambda: len(reads) >= seen + 2, 60, what="the page to read the queue since")
        page.get_by_role("tab", name="Queue").click()
        first = page.locator("#jobs").inner_text()  # read at once: what the tab shows when it opens
        screenshot(page, "queue-first-view-running")
        assert "running" in first and "queued" not in first, first
        assert "30%" in first, first
