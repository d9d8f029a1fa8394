"""Fetch and import as a user meets them: a swapper comes with its recogniser, a failed fetch says why in
one line (offline, DNS, refused, HTTP status, hash mismatch, disk full), a wrong file is named.

Every download goes to a server on 127.0.0.1 or to a closed local port; nothing leaves the machine.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import http.server
import socket
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from pipeline.errors import FetchFailed, ModelMismatch
from pipeline.models import catalog, download_errors, store


class Files(http.server.BaseHTTPRequestHandler):
    served: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802
        data = self.served.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): a connection there is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> catalog.ModelEntry:
    entry = dataclasses.replace(catalog.get(name), **changes)
    monkeypatch.setitem(catalog.CATALOG, name, entry)
    return entry


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


# ---------------------------------------------------------------- a swapper comes with its recogniser


def test_fetching_a_swapper_fetches_its_recogniser_first(server: str, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    swapper, arcface = b"surrogate inswapper" * 300, b"surrogate arcface" * 200
    Files.served = {"/inswapper_128.onnx": swapper, "/w600k_r50.onnx": arcface}
    _patch(monkeypatch, "inswapper_128", url=f"{server}/inswapper_128.onnx", sha256=_sha(swapper))
    _patch(monkeypatch, "arcface_w600k_r50", url=f"{server}/w600k_r50.onnx", sha256=_sha(arcface))
    assert store.fetch_order("inswapper_128") == ["arcface_w600k_r50", "inswapper_128"]
    assert main(["models", "fetch", "inswapper_128", "--json"]) == 0
    out = capsys.readouterr().out
    assert "installed arcface_w600k_r50" in out and "(needed by inswapper_128)" in out
    assert all(store.is_installed(catalog.get(n)) for n in ("arcface_w600k_r50", "inswapper_128"))
    assert store.fetch_order("inswapper_128") == ["inswapper_128"]  # installed now: nothing more to bring


def test_list_says_what_a_swapper_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "needs arcface_w600k_r50" in lines["inswapper_128"]
    assert "needs arcface_ghost" in lines["ghost_2_256"]
    assert "needs" not in lines["gfpgan_1.4"]
    # no published size found for the occluder: said, not invented, and said once under the table
    assert lines["occluder"].split()[3] == "?" and "MB" not in lines["occluder"]
    assert out.count("size unknown") == 1 and out.splitlines()[-1].startswith("?: size unknown (")
    assert "4.6 MB" in lines["u2netp"]  # the size of a real file of the network (rembg's export)


# ---------------------------------------------------------------- a failed fetch says why


def test_a_refused_connection_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    port = closed_port()
    _patch(monkeypatch, "gfpgan_1.4", url=f"http://127.0.0.1:{port}/GFPGANv1.4.onnx")
    with pytest.raises(FetchFailed) as info:
        store.fetch("gfpgan_1.4")
    assert info.value.reason == f"connection refused by 127.0.0.1:{port}"
    assert f"http://127.0.0.1:{port}/GFPGANv1.4.onnx" in str(info.value)  # the whole URL, not a broken join


def test_an_http_status_is_named(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    Files.served = {}
    _patch(monkeypatch, "gfpgan_1.4", url=f"{server}/v1.0.0/GFPGANv1.4.onnx")
    with pytest.raises(FetchFailed, match="HTTP 404 Not Found from 127.0.0.1"):
        store.fetch("gfpgan_1.4")


def test_the_hash_file_of_a_crc_only_model_failing_is_a_fetch_failure(monkeypatch: pytest.MonkeyPatch,
                                                                       ) -> None:
    port = closed_port()
    _patch(monkeypatch, "hyperswap_1b_256", url=f"http://127.0.0.1:{port}/h.onnx",
           crc32_url=f"http://127.0.0.1:{port}/h.hash")
    with pytest.raises(FetchFailed) as info:
        store.fetch("hyperswap_1b_256")
    assert info.value.url.endswith("/h.hash") and "connection refused" in info.value.reason


def test_offline_and_dns_failures_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(*_args: Any, **_kw: Any) -> None:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # the lookup is of github.com itself
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)  # as it is with no network at all (unshare -n)
    with pytest.raises(FetchFailed) as info:
        store.fetch("gfpgan_1.4")
    assert info.value.reason == "offline: could not look up github.com (no network or no DNS server)"
    unknown = urllib.error.URLError(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    assert download_errors.reason(unknown, "https://example.invalid/x.onnx") == (
        "DNS failure: example.invalid is not a known host name")
    unreachable = urllib.error.URLError(OSError(errno.ENETUNREACH, "Network is unreachable"))
    assert download_errors.reason(unreachable, "https://github.com/x") == "offline: no route to github.com"


def test_a_full_disk_is_named() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    assert download_errors.reason(full, "https://github.com/x") == (
        "disk full: free some space in the models folder")


def test_a_hash_mismatch_names_what_was_expected(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    Files.served = {"/g.onnx": b"not the pinned file" * 100}
    entry = _patch(monkeypatch, "gfpgan_1.4", url=f"{server}/g.onnx")
    with pytest.raises(ModelMismatch, match=f"hash mismatch.*{entry.sha256}"):
        store.fetch("gfpgan_1.4")
    assert not store.is_installed(entry)


# ---------------------------------------------------------------- a wrong import is named


def test_importing_another_models_file_names_it_and_where_the_right_one_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = b"surrogate codeformer" * 100
    _patch(monkeypatch, "codeformer", sha256=_sha(blob))
    wrong = tmp_path / "GFPGANv1.4.onnx"  # named as gfpgan's file, but it is codeformer's
    wrong.write_bytes(blob)
    with pytest.raises(ModelMismatch) as info:
        store.import_file(wrong)
    message = str(info.value)
    assert "GFPGANv1.4.onnx is not gfpgan_1.4's file" in message
    assert "it is codeformer's file (codeformer_fp16.onnx): import it as codeformer" in message
    assert f"from {catalog.get('gfpgan_1.4').url}" in message and "about 340 MB" in message
    assert not store.is_installed(catalog.get("gfpgan_1.4"))


def test_importing_a_file_no_model_has_says_so(tmp_path: Path) -> None:
    wrong = tmp_path / "w600k_r50.onnx"
    wrong.write_bytes(b"half a download")
    with pytest.raises(ModelMismatch, match="no file the catalog knows.*w600k_r50.onnx, about 174 MB from"):
        store.import_file(wrong)
