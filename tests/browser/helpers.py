"""Browser-test helpers: run the app on a free loopback port in this process, drive Debian's chromium.

Never ``playwright install``: the browser is /usr/bin/chromium (apt). Tests skip with a reason when
Playwright or chromium is missing.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline import env

CHROMIUM = str(env.CHROMIUM.get())
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def free_port() -> int:
    """A free loopback port: from FACESTATION_TEST_PORTS (e.g. ``7900-7949``) when set, else any."""
    first, last = env.TEST_PORTS.get()
    for port in range(first, last + 1):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError(f"no free port in FACESTATION_TEST_PORTS={first}-{last}")


@contextlib.contextmanager
def running_app(**config: Any) -> Iterator[tuple[str, Any]]:
    """Serve the UI on 127.0.0.1:<free port>; yields (base url, App). Stops server and worker after."""
    from webui.app import serve, stop
    from webui.common import UiConfig

    cfg = UiConfig(host="127.0.0.1", port=free_port(), **config)
    app, handle = serve(cfg, block=False)
    try:
        yield f"http://127.0.0.1:{cfg.port}", app
    finally:
        stop(app, handle)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install playwright (no browser download needed)")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def upload(page: Any, elem_id: str, *files: Path) -> None:
    """Put files into a gr.File; a file already there is cleared first (its input only exists when empty)."""
    field = page.locator(f"#{elem_id} input[type=file]")
    if field.count() == 0:
        page.locator(f"#{elem_id} button[aria-label=Clear], #{elem_id} button[title=Clear]").first.click()
        field.wait_for(state="attached", timeout=10_000)
    field.set_input_files([str(f) for f in files])


def wait_until(predicate: Any, timeout: float = 30.0, every: float = 0.2, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
