"""Issue 36 point 7, in chromium at 1280×800 and 1440×900: the source and target boxes' titles are whole and
their label chips leave every icon free (the upload picture, the upload and clear buttons), before and
after a file is chosen; a dropdown's text ends before its chevron. Measured on the page's own boxes.
Screenshots go to test-artifacts/screenshots/layout-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import pytest

from tests.browser.helpers import chromium, running_app, screenshot, upload
from tests.photos import astronaut, grace_hopper_path
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# what covers what: each file box's chip (cut? over which icon?), each dropdown's text end past its chevron
GEOMETRY = """() => {
  const box = (e) => e.getBoundingClientRect();
  const shown = (e) => { const r = box(e); return r.width > 0 && r.height > 0; };
  const over = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const found = [];
  for (const id of ['sources', 'target']) {
    const block = document.getElementById(id);
    const chip = block.querySelector('label[data-testid="block-label"]');
    if (chip.scrollWidth > chip.clientWidth) found.push(id + ': title cut: ' + chip.innerText);
    for (const icon of block.querySelectorAll('svg')) {
      if (!chip.contains(icon) && shown(icon) && over(box(chip), box(icon)))
        found.push(id + ': chip over an icon of ' + (icon.closest('button')?.getAttribute('aria-label')
                                                    || icon.parentElement.className));
    }
  }
  for (const input of document.querySelectorAll('.wrap-inner > .secondary-wrap > input.border-none')) {
    const chevron = input.parentElement.querySelector('.icon-wrap');
    if (!chevron || !shown(input) || !shown(chevron)) continue;
    const textEnd = box(input).right - parseFloat(getComputedStyle(input).paddingRight);
    if (textEnd > box(chevron).left + 0.5) found.push('dropdown ' + input.getAttribute('aria-label')
                                                       + ': text runs under its chevron');
  }
  return found;
}"""


def _problems(page: Any) -> list[str]:
    return list(page.evaluate(GEOMETRY))


@pytest.mark.parametrize("size", [(1280, 800), (1440, 900)], ids=["1280", "1440"])
def test_titles_are_whole_chips_leave_icons_free_and_dropdown_text_stops_at_its_chevron(
        tmp_path: Path, size: tuple[int, int]) -> None:
    width, height = size
    target = tmp_path / "target.png"
    cv2.imwrite(str(target), astronaut())
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url)
        page.wait_for_selector("#sources")
        wait_until(lambda: page.locator("#set-face_swapper-model input").count() == 1, 30,
                   what="the main settings drawn")
        assert _problems(page) == [], "empty boxes"
        upload(page, "sources", grace_hopper_path())
        upload(page, "target", target)
        wait_until(lambda: "target.png" in page.inner_text("#target-info"), 60, what="the target described")
        screenshot(page, f"layout-swap-{width}")
        assert _problems(page) == [], "with a source and a target"
