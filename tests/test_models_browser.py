"""The Models tab in chromium: a fetch that fails offline is one readable line beside its model, and the
model table stays (no red Error in its place). The download goes to a closed port on 127.0.0.1 (the
catalog's URLs are pointed there for this test, in this process, where the app runs): nothing leaves the
machine. Screenshot: test-artifacts/screenshots/models-fetch-failed.png."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.models import catalog
from tests.browser.helpers import chromium, dropdown_options, open_tab, running_app, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]
VIEWPORT = {"width": 1280, "height": 800}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _row_text(page: Any, name: str) -> str:
    """The text of the table row whose first cell is ``name`` (Gradio's table: div rows, virtualised)."""
    first = page.locator('[data-col="0"]', has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    rows = page.locator("#models-table [role=row]").filter(has=first)
    return str(rows.first.inner_text()) if rows.count() else ""


def test_a_fetch_that_fails_offline_is_one_line_beside_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    for name in ("inswapper_128", "arcface_w600k_r50"):
        entry = catalog.get(name)
        monkeypatch.setitem(catalog.CATALOG, name,
                            dataclasses.replace(entry, url=f"http://127.0.0.1:{port}/{entry.file}"))
    with running_app() as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        open_tab(page, "Models")
        page.wait_for_selector("#models-table")
        wait_until(lambda: "needs arcface_w600k_r50" in _row_text(page, "inswapper_128"), 30,
                   what="the swapper's row naming its recogniser")
        page.locator("#model-name input").first.click()
        page.get_by_role("option", name="inswapper_128", exact=True).first.click()
        page.locator("#model-fetch").click()
        reason = f"connection refused by 127.0.0.1:{port}"
        wait_until(lambda: reason in _row_text(page, "inswapper_128"), 60, what="the failure in its row")
        row = _row_text(page, "inswapper_128")
        assert "fetch failed" in row and "arcface_w600k_r50" in row
        assert page.inner_text("body").count(reason) == 1  # one line, beside the model
        assert "inswapper_128 was not fetched" in page.inner_text("#models-message")
        table = page.inner_text("#models-table")
        still = ("yunet", "retinaface", "arcface_w600k_r50", "inswapper_128_fp16")
        assert all(name in table for name in still), "the table is still there"
        assert page.locator("#models-table .error, #models-table [class*=error]").count() == 0
        assert "Error" not in table
        page.locator("#models-table [role=row]").filter(has_text=reason).first.scroll_into_view_if_needed()
        screenshot(page, "models-fetch-failed")


def test_a_model_installed_by_another_process_shows_as_installed_without_a_restart() -> None:
    """The Models tab, its Fetch list and the Swap tab's model menus read what is installed now: a model
    written into the models folder by another process (a CLI fetch, a file copied in) shows as installed
    the next time the tab is shown, with no restart and no reload."""
    name = "gfpgan_1.4"
    with running_app(worker=False) as (url, _app), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.wait_for_selector("#sources")
        page.click("#proc-face-enhancer-on input")  # not ticked by default: its settings shown
        menu = dropdown_options(page, "set-face_enhancer-model")
        assert [o for o in menu if o.startswith(f"{name} (not installed")], menu
        open_tab(page, "Models")
        wait_until(lambda: "missing" in _row_text(page, name), 30, what="the model's row: missing")
        assert name in dropdown_options(page, "model-name")
        # another process installs it (here: writes the file as a fetch would; a real fetch needs the network)
        code = f"from tests.surrogates import install_surrogate; install_surrogate({name!r})"
        subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ),
                       cwd=Path(__file__).resolve().parents[1])
        open_tab(page, "Swap")
        wait_until(lambda: name in dropdown_options(page, "set-face_enhancer-model"), 30,
                   what="the enhancer menu listing the model as installed")
        open_tab(page, "Models")
        wait_until(lambda: "installed" in _row_text(page, name) and "missing" not in _row_text(page, name),
                   30, what="the model's row: installed")
        assert name not in dropdown_options(page, "model-name")
        screenshot(page, "models-installed-elsewhere")
