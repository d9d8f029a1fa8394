"""The https port's serving layer (webui/https_port.py) on a bare uvicorn server with a self-signed
certificate: plain http is answered in one line, TLS is uvicorn's own connection (the body, the scheme and
the client's address arrive as without us), and a uvicorn it does not know leaves the port as it was."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from tests.browser.helpers import free_port  # noqa: E402
from tests.timing import scaled, wait_until  # noqa: E402
from webui import tls  # noqa: E402
from webui.https_port import answer_plain_http  # noqa: E402


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that answers what it got: scheme, client address, body size and SHA-256."""
    body = hashlib.sha256()
    size, more = 0, True
    while more:
        message = await receive()
        chunk = message.get("body", b"")
        body.update(chunk)
        size += len(chunk)
        more = message.get("more_body", False)
    text = f"{scope['scheme']} {scope['client'][0]} {size} {body.hexdigest()}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": text})


@contextlib.contextmanager
def tls_server(folder: Path) -> Iterator[tuple[Any, int]]:
    cert, key = tls.self_signed(folder)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(echo, host="127.0.0.1", port=port, ssl_certfile=str(cert),
                                           ssl_keyfile=str(key), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 30, "uvicorn to start")
        yield server, port
    finally:
        server.should_exit = True
        thread.join(scaled(30))
    assert not thread.is_alive(), "the server did not stop"


def test_plain_http_gets_one_line_and_tls_is_uvicorns_own_connection(tmp_path: Path) -> None:
    with tls_server(tmp_path) as (server, port):
        assert answer_plain_http(server)
        told = httpx.get(f"http://127.0.0.1:{port}/upload?to=me", timeout=scaled(30))
        assert told.status_code == 307
        assert told.text == f"This server speaks https: open https://127.0.0.1:{port}/upload?to=me\n"
        payload = bytes(range(256)) * 80_000  # 20 MB, through the handed-over TLS connection
        with httpx.Client(verify=False, timeout=scaled(60)) as client:
            for _ in range(2):  # one connection, kept alive: two requests
                got = client.post(f"https://127.0.0.1:{port}/upload", content=payload)
                assert got.text == f"https 127.0.0.1 {len(payload)} {hashlib.sha256(payload).hexdigest()}"
        posted = httpx.post(f"http://127.0.0.1:{port}/upload", content=payload[:500_000], timeout=scaled(30))
        assert posted.status_code == 307  # the answer read before the connection closes, body or not


def test_a_uvicorn_it_does_not_know_keeps_its_own_listener(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    with tls_server(tmp_path) as (server, port):
        known = server.config.http_protocol_class
        server.config.http_protocol_class = None  # as if a newer uvicorn made its connections otherwise
        with caplog.at_level(logging.WARNING, logger="webui"):
            assert not answer_plain_http(server)
        server.config.http_protocol_class = known
        assert "plain http to this port will not be told to use https" in caplog.text
        with pytest.raises(httpx.TransportError):  # reset, as before
            httpx.get(f"http://127.0.0.1:{port}/", timeout=scaled(30))
        served = httpx.get(f"https://127.0.0.1:{port}/", verify=False, timeout=scaled(30))
        assert served.text.startswith("https 127.0.0.1 0 ")
