from __future__ import annotations

import dataclasses
import hashlib
import http.server
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from pipeline.errors import ModelMismatch, ModelMissing, UserError
from pipeline.models import catalog, store


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    fail_after: dict[str, int] = {}

    def do_GET(self) -> None:  # noqa: N802
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        if rng := self.headers.get("Range"):
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        limit = self.fail_after.pop(self.path, None)
        self.wfile.write(body if limit is None else body[:limit])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> catalog.ModelEntry:
    entry = dataclasses.replace(catalog.get(name), **changes)
    monkeypatch.setitem(catalog.CATALOG, name, entry)
    return entry


def test_missing_model_names_the_fix() -> None:
    with pytest.raises(ModelMissing, match="facestation models fetch inswapper_128"):
        store.model_path(catalog.get("inswapper_128"))


def test_unknown_model_lists_known() -> None:
    with pytest.raises(UserError, match="known: yunet"):
        catalog.get("nonsense")


def test_import_refuses_hash_mismatch_and_installs_nothing(tmp_path: Path,
                                                           isolated_dirs: dict[str, Path]) -> None:
    fake = tmp_path / "GFPGANv1.4.onnx"
    fake.write_bytes(b"not the real weights")
    with pytest.raises(ModelMismatch, match="sha256"):
        store.import_file(fake)
    assert not any(isolated_dirs["models"].iterdir())
    assert main(["models", "import", str(fake)]) == 2


def test_import_accepts_matching_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = b"pretend weights" * 100
    src = tmp_path / "weights.onnx"
    src.write_bytes(blob)
    _patch(monkeypatch, "gfpgan_1.4", sha256=hashlib.sha256(blob).hexdigest(), size=len(blob))
    entry = store.import_file(src, "gfpgan_1.4")
    assert store.installed_path(entry).read_bytes() == blob
    assert store.is_installed(entry)


def test_import_unknown_file_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "random.onnx"
    src.write_bytes(b"x")
    with pytest.raises(UserError, match="not a file of any catalog model"):
        store.import_file(src)


def test_list_shows_state_size_and_licence(capsys: pytest.CaptureFixture[str],
                                           isolated_dirs: dict[str, Path]) -> None:
    (isolated_dirs["models"] / "w600k_r50.onnx").write_bytes(b"0" * 2_500_000)
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "built-in" in lines["yunet"] and "MIT" in lines["yunet"]
    assert "installed" in lines["arcface_w600k_r50"] and "2.5 MB" in lines["arcface_w600k_r50"]
    assert "missing" in lines["inswapper_128"] and "non-commercial" in lines["inswapper_128"]


def test_fetch_verifies_sha256(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = bytes(range(256)) * 4000
    _RangeHandler.files = {"/good.onnx": blob, "/bad.onnx": blob[:-1] + b"!"}
    digest = hashlib.sha256(blob).hexdigest()
    _patch(monkeypatch, "gpen_bfr_256", url=f"{server}/good.onnx", sha256=digest, size=None)
    path = store.fetch("gpen_bfr_256", progress=None)
    assert path.read_bytes() == blob
    _patch(monkeypatch, "gpen_bfr_512", url=f"{server}/bad.onnx", sha256=digest, size=None)
    with pytest.raises(ModelMismatch):
        store.fetch("gpen_bfr_512", progress=None)
    assert not store.installed_path(catalog.get("gpen_bfr_512")).exists()


def test_fetch_resumes_a_partial_download(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = bytes(range(256)) * 8000
    _RangeHandler.files = {"/m.onnx": blob}
    _RangeHandler.fail_after = {"/m.onnx": 500_000}
    digest = hashlib.sha256(blob).hexdigest()
    entry = _patch(monkeypatch, "gpen_bfr_256", url=f"{server}/m.onnx", sha256=digest, size=None)
    with pytest.raises(UserError):
        store.fetch("gpen_bfr_256", progress=None)  # connection cut after 500 kB
    part = store.installed_path(entry).with_name(entry.file + ".part")
    assert part.stat().st_size == 500_000
    seen: list[int] = []
    store.fetch("gpen_bfr_256", progress=lambda done, total: seen.append(done))
    assert store.installed_path(entry).read_bytes() == blob
    assert seen[0] > 500_000  # resumed, not restarted


def test_fetch_verifies_crc32_when_no_sha256(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = b"hyperswap" * 5000
    crc = f"{zlib.crc32(blob) & 0xFFFFFFFF:08x}"
    _RangeHandler.files = {"/h.onnx": blob, "/h.hash": crc.encode(), "/x.hash": b"deadbeef"}
    _patch(monkeypatch, "hyperswap_1a_256", url=f"{server}/h.onnx", crc32_url=f"{server}/h.hash", sha256=None)
    assert store.fetch("hyperswap_1a_256", progress=None).read_bytes() == blob
    _patch(monkeypatch, "hyperswap_1b_256", url=f"{server}/h.onnx", crc32_url=f"{server}/x.hash")
    with pytest.raises(ModelMismatch, match="CRC32"):
        store.fetch("hyperswap_1b_256", progress=None)
    assert not store.installed_path(catalog.get("hyperswap_1b_256")).exists()


def test_fetch_bar_of_unknown_size_stays_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def fetch(name: str, progress: Any = None) -> Path:
        for done in (1_000_000, 2_000_000, 3_000_000):
            progress(done, 0)  # no Content-Length: the total is unknown
        return tmp_path / f"{name}.onnx"

    monkeypatch.setattr(store, "fetch", fetch)
    assert main(["models", "fetch", "gpen_bfr_256"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("3.0 MB \n"), repr(err)  # one bar, redrawn, one line end


def test_list_columns_are_as_wide_as_their_longest_cell(capsys: pytest.CaptureFixture[str],
                                                        isolated_dirs: dict[str, Path]) -> None:
    """Long roles ("frame_enhancer", "expression_restorer") no longer push a row's state out of its column:
    each column starts where its header does, on every line."""
    assert main(["models", "list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line and not line.startswith("?")]
    header = lines[0]
    state_at, licence_at = header.index("state"), header.index("licence")
    for line in lines[1:]:
        assert line[state_at:].split()[0] in ("built-in", "installed", "missing"), line
        assert line[licence_at - 2:licence_at] == "  " and line[licence_at] != " ", line
    assert any(len(line.split()[1]) > 11 for line in lines[1:])  # a role longer than the old fixed 11
