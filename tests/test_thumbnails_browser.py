"""Issue 20, thumbnails, in chromium at 1280×800 and 1440×900: source photos show with the face found
boxed (and say when there is none), the chosen person shows as a face and a mapping as numbered
source -> face pairs (no server path anywhere in the page), a done job's Queue row shows its frame by a
link for its owner only. Screenshots: test-artifacts/screenshots/thumbs-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline import api
from tests.browser.helpers import chromium, open_tab, running_app, screenshot, sign_in, upload
from tests.photos import astronaut, astronaut_path, grace_hopper, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SMALL = {"width": 1280, "height": 800}
LARGE = {"width": 1440, "height": 900}
GREEN = (0, 200, 0)  # BGR: the box of the face a source photo gives (pipeline.thumbnails.USED)
# what a server path to a saved face, an upload or the data folder would look like in the page
PATH_MARKS = ("/ref-", "references", "/tmp/", "facestation/", ".local/share", "gradio/")
USERS = (("alice", "alice-pw"), ("bob", "bob-pw"))


def _absolute(url: str, src: str) -> str:
    return src if src.startswith("http") else url + src


def _pixels(page: Any, url: str, src: str) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(page.request.get(_absolute(url, src)).body(), np.uint8),
                         cv2.IMREAD_COLOR)
    assert image is not None, src
    return image


def _captions(page: Any, elem_id: str) -> list[str]:
    return [t.strip() for t in page.locator(f"#{elem_id} .caption-label").all_inner_texts()]


def _images(page: Any, elem_id: str) -> list[str]:
    return [str(i.get_attribute("src")) for i in page.locator(f"#{elem_id} img").all()]


def _settled(page: Any, elem_id: str) -> None:
    """Wait until ``elem_id``'s event status shows nothing pending."""
    busy = f"#{elem_id} [data-testid=status-tracker]:not(.hide)"
    wait_until(lambda: page.locator(busy).count() == 0, 30, what=f"{elem_id}'s event to end")


def _shown_text(page: Any) -> str:
    """Everything the page shows as text, and every visible input's value."""
    values = page.evaluate("""() => [...document.querySelectorAll('input, textarea')]
        .filter((e) => e.offsetParent !== null).map((e) => e.value).join('\\n')""")
    return str(page.inner_text("body")) + "\n" + str(values)


def _new_sources(page: Any, *photos: Path) -> None:
    """Replace the source photos (a multi-file box adds to what it has: cleared first)."""
    page.locator("#sources button[aria-label=Clear], #sources button[title=Clear]").first.click()
    wait_until(lambda: not page.locator("#source-thumbs").is_visible(), 30, what="the sources cleared")
    upload(page, "sources", *photos)


def _two_faces(tmp_path: Path) -> Path:
    """One picture with two people side by side: Grace Hopper left, the astronaut right."""
    left, right = grace_hopper(), astronaut()
    right = cv2.resize(right, (round(right.shape[1] * left.shape[0] / right.shape[0]), left.shape[0]))
    path = tmp_path / "two people.png"
    cv2.imwrite(str(path), np.hstack([left, right]))
    return path


def test_source_thumbnails_chosen_person_and_mapping_pairs(tmp_path: Path) -> None:
    wall = tmp_path / "wall.png"
    cv2.imwrite(str(wall), np.full((300, 400, 3), 128, np.uint8))
    target = _two_faces(tmp_path)
    with running_app(worker=False, data=tmp_path / "data") as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=SMALL)
        page.goto(url)
        page.wait_for_selector("#sources")
        upload(page, "sources", grace_hopper_path(), astronaut_path(tmp_path))
        wait_until(lambda: len(_images(page, "source-thumbs")) == 2, 60, what="two source thumbnails")
        found = ["grace_hopper.jpg: face found", "astronaut.png: face found"]
        assert _captions(page, "source-thumbs") == found
        for src in _images(page, "source-thumbs"):  # each has its face boxed in green
            thumb = _pixels(page, url, src)
            assert (np.abs(thumb.astype(int) - GREEN).max(axis=2) <= 40).sum() > 100, src
        screenshot(page, "thumbs-1-sources")

        # a photo with no face says so, in words, under its thumbnail
        _new_sources(page, grace_hopper_path(), wall)
        wait_until(lambda: _captions(page, "source-thumbs") == ["grace_hopper.jpg: face found",
                                                               "wall.png: no face found in this photo"],
                   60, what="the no-face caption")
        screenshot(page, "thumbs-2-no-face")

        # pick one person: the chosen person shows as a face, never as a path
        _new_sources(page, grace_hopper_path(), astronaut_path(tmp_path))
        upload(page, "target", target)
        wait_until(lambda: page.locator("#faces img").count() == 2, 60, what="two faces in the gallery")
        assert not page.locator("#chosen").is_visible()  # nobody chosen yet: nothing shown
        page.locator("#faces img").nth(1).click()
        wait_until(lambda: _captions(page, "chosen") == ["chosen person: only this face is replaced"], 60,
                   what="the chosen person")
        assert len(list(api.references_dir().glob("ref-*.png"))) == 1  # the settings hold its path ...
        shown = _shown_text(page)
        assert not [m for m in PATH_MARKS if m in shown], shown  # ... the page never shows it
        face = _pixels(page, url, _images(page, "chosen")[0])
        assert min(face.shape[:2]) > 40
        screenshot(page, "thumbs-3-chosen")

        # forget, then map source 1 -> the right face, source 2 -> the left face: two pairs, in order
        page.locator("#which-faces").get_by_text("Which faces to replace").click()
        page.locator("#clear-reference").click()
        wait_until(lambda: not page.locator("#chosen").is_visible(), 30, what="the chosen people cleared")
        page.get_by_label("map the next source photo to this person").check()
        page.locator("#faces img").nth(1).click()
        wait_until(lambda: _captions(page, "chosen") == ["1: grace_hopper.jpg → this face"], 60,
                   what="the first pair")
        _settled(page, "faces")  # the click's event is over: a click while it is pending would be dropped
        page.locator("#faces img").nth(0).click()
        wait_until(lambda: _captions(page, "chosen") == ["1: grace_hopper.jpg → this face",
                                                        "2: astronaut.png → this face"], 60,
                   what="the second pair")
        shown = _shown_text(page)
        assert not [m for m in PATH_MARKS if m in shown], shown
        pairs = [_pixels(page, url, src) for src in _images(page, "chosen")]
        assert all(p.shape[1] > 1.5 * p.shape[0] for p in pairs)  # photo, arrow, face: wide
        page.locator("#chosen").scroll_into_view_if_needed()
        screenshot(page, "thumbs-4-pairs")
        page.set_viewport_size(LARGE)
        page.locator("#chosen").scroll_into_view_if_needed()
        screenshot(page, "thumbs-4-pairs-1440")




def test_a_done_jobs_row_shows_its_frame_to_its_owner_only(tmp_path: Path) -> None:
    target = astronaut_path(tmp_path)
    with running_app(users=USERS, data=tmp_path / "data", outputs=tmp_path / "outputs") as (url, app), \
            chromium() as browser:
        alice = sign_in(browser, url, *USERS[0], LARGE)
        bob = sign_in(browser, url, *USERS[1], SMALL)
        upload(alice, "sources", grace_hopper_path())
        upload(alice, "target", target)
        wait_until(lambda: alice.locator("#preview img").count()
                   and "ms" in alice.inner_text("#preview-status"), 120, what="alice's preview")
        wait_until(lambda: len(_images(alice, "source-thumbs")) == 1, 60, what="alice's source thumbnail")
        source_thumb = _absolute(url, _images(alice, "source-thumbs")[0])
        assert alice.request.get(source_thumb).status == 200
        assert bob.request.get(source_thumb).status == 403  # Gradio's file, handed to alice only (the gate)
        alice.click("#add-job")
        open_tab(alice, "Queue")
        row = alice.locator("#jobs tr[data-job]")
        wait_until(lambda: row.count() == 1, 30, what="the job row")
        wait_until(lambda: alice.locator("#jobs tr[data-state=done]").count() == 1, 180, what="the render")
        thumb = alice.locator("#jobs tr[data-state=done] img.fs-row-thumb")
        wait_until(lambda: thumb.count() == 1, 30, what="the row's thumbnail")
        wait_until(lambda: alice.evaluate("(i) => i.naturalWidth", thumb.first.element_handle()) > 0, 30,
                   what="the thumbnail loaded")
        src = str(thumb.first.get_attribute("src"))
        assert "/gradio_api/file=" not in src and str(tmp_path) not in src
        frame = _pixels(alice, url, src)
        assert frame.shape[0] == 80  # the output's frame, small
        answer = alice.request.get(_absolute(url, src))
        assert answer.status == 200 and "max-age" in answer.headers.get("cache-control", "")
        # the 1-s poll keeps the same link (the browser keeps the picture)
        wait_until(lambda: alice.inner_text("#jobs .fs-updated") != "", 10, what="the table")
        before = alice.inner_text("#jobs .fs-updated")
        wait_until(lambda: alice.inner_text("#jobs .fs-updated") != before, 30, what="a later tick")
        assert str(thumb.first.get_attribute("src")) == src
        screenshot(alice, "thumbs-5-queue-1440")
        alice.set_viewport_size(SMALL)
        screenshot(alice, "thumbs-5-queue")

        # bob: not in his queue, and alice's link answers him nothing
        open_tab(bob, "Queue")
        wait_until(lambda: "No jobs yet" in bob.inner_text("#jobs"), 30, what="bob's empty queue")
        assert bob.request.get(_absolute(url, src)).status == 404
        assert browser.new_context().request.get(_absolute(url, src)).status == 401
