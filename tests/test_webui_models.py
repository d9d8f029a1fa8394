"""The Models tab without a browser: a failed fetch is one line in its model's row and the table stays; a
swapper's row says what it needs and a Fetch brings it; a wrong import is named; only the host or an admin
may adopt a folder."""

from __future__ import annotations

import dataclasses
import hashlib
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

gr = pytest.importorskip("gradio")

from pipeline import api  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.models import catalog  # noqa: E402
from webui import models_tab  # noqa: E402
from webui.common import Ctx, UiConfig  # noqa: E402


def _patch(monkeypatch: pytest.MonkeyPatch, name: str, **changes: object) -> None:
    monkeypatch.setitem(catalog.CATALOG, name, dataclasses.replace(catalog.get(name), **changes))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _row(table: list[list[Any]], name: str) -> dict[str, Any]:
    return dict(zip(models_tab.COLUMNS, next(r for r in table if r[0] == name), strict=True))


def no_progress(*_args: Any, **_kw: Any) -> None:
    pass


def test_a_failed_fetch_is_one_line_in_its_row_and_the_table_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    _patch(monkeypatch, "arcface_w600k_r50", url=f"http://127.0.0.1:{port}/w600k_r50.onnx")
    table, _, message, notes = models_tab.fetch("inswapper_128", {}, progress=no_progress)
    row = _row(table, "inswapper_128")
    assert row["state"] == "missing"
    assert row["notes"].startswith(f"fetch failed: connection refused by 127.0.0.1:{port} "
                                   "(fetching arcface_w600k_r50, which it needs)")
    assert "\n" not in row["notes"] and len(table) == len(catalog.CATALOG)  # every model still listed
    assert "its row" in message and "inswapper_128" in notes
    # another try that works clears the line
    _patch(monkeypatch, "arcface_w600k_r50", builtin=True)  # stands in for "nothing left to fetch"
    monkeypatch.setattr(api, "fetch_model", lambda name, progress=None: Path(name))
    table, _, message, notes = models_tab.fetch("inswapper_128", notes, progress=no_progress)
    assert "fetch failed" not in _row(table, "inswapper_128")["notes"] and notes == {}
    assert message == "installed **inswapper_128**"


def test_a_swappers_row_says_its_recogniser_is_fetched_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fetched: list[str] = []
    monkeypatch.setattr(api, "fetch_model", lambda name, progress=None: fetched.append(name) or Path(name))
    row = _row(models_tab.rows(), "inswapper_128")
    assert row["notes"] == "needs arcface_w600k_r50 (174 MB, fetched with it)"
    _, _, message, _ = models_tab.fetch("inswapper_128", {}, progress=no_progress)
    assert fetched == ["arcface_w600k_r50", "inswapper_128"]
    assert message == "installed **inswapper_128** with arcface_w600k_r50"


def test_a_wrong_import_names_the_model_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = b"surrogate codeformer" * 50
    _patch(monkeypatch, "codeformer", sha256=hashlib.sha256(blob).hexdigest())
    wrong = tmp_path / "GFPGANv1.4.onnx"
    wrong.write_bytes(blob)
    table, _, message = models_tab.import_(str(wrong), "")
    assert message.startswith("not imported: GFPGANv1.4.onnx is not gfpgan_1.4's file")
    assert "import it as codeformer" in message and catalog.get("gfpgan_1.4").url in message
    assert "facestation" not in message and _row(table, "gfpgan_1.4")["state"] == "missing"


def test_only_the_host_or_an_admin_may_adopt(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "q.sqlite3")
    users = (("ann", "pw1"), ("bob", "pw2"))
    studio = Ctx(UiConfig(users=users, admins=frozenset({"ann"})), tmp_path / "out", store)
    folder = tmp_path / "models"  # empty
    with pytest.raises(api.UserError, match="only the host or an admin"):
        models_tab.adopt(str(folder), studio, SimpleNamespace(username="bob"))
    assert models_tab.adopt(str(folder), studio, SimpleNamespace(username="ann"))[2] == "0 adopted, 0 skipped"
    host = Ctx(UiConfig(), tmp_path / "out", store)  # no logins: localhost only, the host
    assert models_tab.adopt(str(folder), host, None)[2] == "0 adopted, 0 skipped"


def test_a_model_not_yet_checked_against_its_real_file_says_so() -> None:
    unsure = next(e for e in catalog.CATALOG.values() if e.unverified)
    notes = _row(models_tab.rows(), unsure.name)["notes"]
    assert "not yet checked against the real file: " + unsure.unverified in notes
    sure = next(e for e in catalog.CATALOG.values()
                if not e.unverified and not e.recogniser and not e.builtin)
    assert "not yet checked" not in _row(models_tab.rows(), sure.name)["notes"]
