"""Browser-test helpers: run the app on a free loopback port in this process, drive Debian's chromium.

Never ``playwright install``: the browser is /usr/bin/chromium (apt). Tests skip with a reason when
Playwright or chromium is missing.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pipeline import env
from tests.timing import scaled, scaled_ms, wait_until

CHROMIUM = str(env.CHROMIUM.get())
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PLAYWRIGHT_DEFAULT_S = 30.0  # Playwright's own default wait for an action or a request
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
# what a page asked the server and showed under its preview, newest last (window.fsTrace): each queue/join
# (the event's function, trigger and third input: the frame, for the preview's), each new preview line with
# the frame slider's value then; read by preview_said() when a wait for a preview gives up
TRACE_JS = r"""
(() => {
  window.fsTrace = [];
  const note = (line) => {
    window.fsTrace.push((performance.now() / 1000).toFixed(2) + ' ' + line);
    if (window.fsTrace.length > 400) window.fsTrace.shift();
  };
  const fetched = window.fetch;
  window.fetch = function (url, init) {
    try {
      if (String(url).includes('queue/join') && init && typeof init.body === 'string') {
        const b = JSON.parse(init.body);
        note('join fn ' + b.fn_index + ' trigger ' + b.trigger_id + ' input 3: ' +
             JSON.stringify((b.data || [])[2]).slice(0, 40));
      }
    } catch (e) { note('join ?'); }
    return fetched.apply(this, arguments);
  };
  let last = null;
  new MutationObserver(() => {
    const status = document.querySelector('#preview-status');
    const box = document.querySelector('#frame input[type=range]');
    const text = status ? status.innerText.trim().slice(0, 70) : '';
    const line = text + ' | slider ' + (box ? box.value : '-');
    if (line !== last) { last = line; note('shown ' + line); }
  }).observe(document, {childList: true, subtree: true, characterData: true});
})();
"""
# the server's side of it: each preview asked, skipped as on screen already, or shown (webui.preview's
# debug lines), each page load's restore (webui.kept's), while running_app() serves
SERVER_TRACE: list[str] = []
TRACED = ("webui.preview", "webui.kept")


class _Noted(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        SERVER_TRACE.append(f"{record.created % 1000:.2f} {record.getMessage()}")


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
    noted, loggers = _Noted(logging.DEBUG), [logging.getLogger(name) for name in TRACED]
    SERVER_TRACE.clear()
    for logger in loggers:
        logger.addHandler(noted)
        logger.setLevel(logging.DEBUG)
    app, handle = serve(cfg, block=False)
    try:
        yield f"http://127.0.0.1:{cfg.port}", app
    finally:
        for logger in loggers:
            logger.removeHandler(noted)
            logger.setLevel(logging.NOTSET)
        server = app.blocks.server
        stop(app, handle)
        # Gradio gives its server thread 5 s to stop, then returns; the thread's shutdown still empties
        # this app's files from Gradio's cache, shared by the next app (same file, same cached path)
        if server is not None:
            server.thread.join(scaled(60))
            assert not server.thread.is_alive(), "the UI server did not stop"


@contextlib.contextmanager
def chromium(extra_args: Sequence[str] = ()) -> Iterator[Any]:
    """Debian's chromium, headless, with ``extra_args`` after the usual ones (a fake camera, say)."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="pip install playwright (no browser download needed)")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
        try:
            yield _Scaled(browser)
        finally:
            browser.close()


class _Scaled:
    """The browser, whose new contexts and pages wait ``scaled`` times Playwright's 30 s by default."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def new_context(self, **kwargs: Any) -> Any:
        context = self._browser.new_context(**kwargs)
        context.set_default_timeout(scaled_ms(PLAYWRIGHT_DEFAULT_S))
        context.add_init_script(TRACE_JS)
        return context

    def new_page(self, **kwargs: Any) -> Any:
        page = self._browser.new_page(**kwargs)
        page.set_default_timeout(scaled_ms(PLAYWRIGHT_DEFAULT_S))
        page.add_init_script(TRACE_JS)
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


def preview_said(page: Any) -> str:
    """What the page shows under its preview now, the frame slider's value, and the trace of both sides
    (TRACE_JS, SERVER_TRACE): said when a wait for a preview gives up."""
    status = page.locator("#preview-status").inner_text() if page.locator("#preview-status").count() else ""
    box = page.locator("#frame input[type=range]")
    value = box.first.input_value() if box.count() else "-"
    trace = page.evaluate("() => window.fsTrace || []")
    return (f"the preview line: {status.strip()!r}, the frame slider at {value}\n"
            "the page (s since it opened):\n  " + "\n  ".join(trace[-60:]) +
            "\nthe server (s):\n  " + "\n  ".join(SERVER_TRACE[-60:]))


def wait_restored(page: Any) -> None:
    """Wait until the page load's restore (webui/kept_inputs.py: it writes the sources, the target and every
    setting) has been answered and shown: the server made its reply, and the sources box no longer shows the
    progress bar the page put on it when it sent the request (one page per app: the first restore counts).

    Type into a control only after this: Gradio puts a control drawn that very moment (an accordion just
    opened) back to its old value when a reply that lists it lands within a frame of the typing, even a
    reply that leaves it alone (a full run once saw the score typed as 0.73 go back to 0.5)."""
    wait_until(lambda: any("brought back" in line for line in SERVER_TRACE), 30, "the page load's restore")
    page.locator("#sources").wait_for(state="attached")
    wait_until(lambda: page.locator("#sources .eta-bar").count() == 0, 30, "the restore shown on the page")


def wait_for_preview(page: Any, line: str, seconds: float) -> None:
    """Wait until the line under the preview says ``line`` ("Preview of frame 5"); if it never does, fail
    with what the page and the server did (preview_said)."""
    try:
        wait_until(lambda: line in page.locator("#preview-status").inner_text(), seconds,
                   what=f"{line!r} under the preview")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{preview_said(page)}") from None


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_tab(page: Any, name: str) -> None:
    """Click a tab and wait until it is the one shown."""
    tab = page.get_by_role("tab", name=name, exact=True)
    tab.click()
    wait_until(lambda: tab.get_attribute("aria-selected") == "true", 10, f"the {name} tab to show")


def dropdown_options(page: Any, elem_id: str) -> list[str]:
    """The options a gr.Dropdown offers now: opened from unfocused (so that it surely opens), read, closed."""
    box = page.locator(f"#{elem_id} input").first
    box.blur()
    box.click()
    wait_until(lambda: box.get_attribute("aria-expanded") == "true", 10, f"the {elem_id} list to open")
    options = page.locator("ul.options li, [role=listbox] [role=option]").all_inner_texts()
    page.keyboard.press("Escape")
    box.blur()
    return [o.strip() for o in options]


def upload(page: Any, elem_id: str, *files: Path) -> None:
    """Put files into a gr.File; a file already there is cleared first (its input only exists when empty)."""
    field = page.locator(f"#{elem_id} input[type=file]")
    if field.count() == 0:
        page.locator(f"#{elem_id} button[aria-label=Clear], #{elem_id} button[title=Clear]").first.click()
        field.wait_for(state="attached", timeout=scaled_ms(10))
    field.set_input_files([str(f) for f in files])


def sign_in(browser: Any, url: str, user: str, password: str, viewport: dict[str, int] | None = None,
            https: bool = False) -> Any:
    """A page of ``user``'s own (a context of its own), signed in through the login page; ``https``: the
    app's certificate is self-signed."""
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 800},
                                  ignore_https_errors=https)
    page = context.new_page()
    page.goto(url)
    page.fill("input[data-testid=textbox]", user)
    page.fill("input[type=password]", password)
    page.get_by_role("button", name="Login").click()
    page.wait_for_selector("#sources", timeout=scaled_ms(60))
    return page


def steady_box(page: Any, selector: str) -> dict[str, float]:
    """``selector``'s bounding box once it has stayed put over two rendering steps (a tab just shown, or
    pictures loading above it, still move it: a press where it was would miss it)."""
    last: list[Any] = [None]

    def settled() -> bool:
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
        box = page.locator(selector).first.bounding_box()
        steady, last[0] = box is not None and box == last[0], box
        return steady

    wait_until(settled, 10, what=f"{selector} to stay put")
    return dict(last[0])


def drag_handle(page: Any, which: str, fraction: float) -> None:
    """Drag the timeline's ``which`` handle ("in" or "out") with the mouse to ``fraction`` of the strip."""
    page.locator("#timeline .fs-track").scroll_into_view_if_needed()
    track = steady_box(page, "#timeline .fs-track")
    handle = steady_box(page, f"#timeline .fs-{which}")
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] * fraction, track["y"] + track["height"] / 2, steps=8)
    page.mouse.up()


def kept_in_browser(page: Any, app: Any) -> dict[str, Any]:
    """What the page keeps in localStorage for the Swap tab, decrypted as Gradio's BrowserState does
    (CryptoJS AES with the passphrase SHA-256(secret): OpenSSL's salted MD5 key derivation)."""
    import base64
    import hashlib
    import json

    import gradio as gr
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from webui.kept_inputs import STORAGE_KEY

    stored = page.evaluate(f"localStorage.getItem('{STORAGE_KEY}')")
    if not stored:
        return {}
    state = next(b for b in app.blocks.blocks.values()
                 if isinstance(b, gr.BrowserState) and b.storage_key == STORAGE_KEY)
    raw = base64.b64decode(stored.split(":", 1)[1])
    assert raw[:8] == b"Salted__"
    salt, body = raw[8:16], raw[16:]
    passphrase = hashlib.sha256(state.secret.encode()).hexdigest().encode()
    derived, block = b"", b""
    while len(derived) < 48:
        block = hashlib.md5(block + passphrase + salt).digest()
        derived += block
    decryptor = Cipher(algorithms.AES(derived[:32]), modes.CBC(derived[32:48])).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    plain = unpadder.update(decryptor.update(body) + decryptor.finalize()) + unpadder.finalize()
    return dict(json.loads(plain))
