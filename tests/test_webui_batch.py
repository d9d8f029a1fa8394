"""Issue 20, batch and output folder without a browser: the Swap tab's batch queues one job per target by
the CLI's batch (outputs named by a pattern), refuses a bad pattern, an empty folder and a server folder
on a shared UI with one line and no job; the output folder is any folder on a local UI and only one inside
the user's own outputs on a shared UI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

gr = pytest.importorskip("gradio")

from pipeline import api  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.photos import grace_hopper_path  # noqa: E402
from webui import queue_tab  # noqa: E402
from webui.common import Ctx, UiConfig  # noqa: E402

USERS = (("alice", "pa"), ("bob", "pb"))


def as_user(name: str) -> Any:
    return SimpleNamespace(username=name, cookies={})


@pytest.fixture()
def local(tmp_path: Path) -> Ctx:
    return Ctx(UiConfig(worker=False), tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))


@pytest.fixture()
def shared(tmp_path: Path) -> Ctx:
    return Ctx(UiConfig(users=USERS, worker=False), tmp_path / "out", JobStore(tmp_path / "q.sqlite3"))


@pytest.fixture()
def photos(tmp_path: Path) -> dict[str, Path]:
    """A source and two targets as uploads arrive (their own names, in a cache folder)."""
    up = tmp_path / "uploads"
    up.mkdir()
    made = {}
    for name in ("me", "beach", "party"):
        made[name] = up / f"{name}.jpg"
        shutil.copyfile(grace_hopper_path(), made[name])
    return made


def test_a_batch_of_two_uploads_queues_two_jobs_named_by_the_pattern(local: Ctx,
                                                                     photos: dict[str, Path]) -> None:
    targets = [str(photos["beach"]), str(photos["party"])]
    source = [str(photos["me"])]
    items = queue_tab.submit_batch(local, Settings(), source, targets, "", "{n}-{target}-{source}", None)
    assert [i.error for i in items] == [None, None]
    jobs = local.store.list()
    assert len(jobs) == 2
    assert [Path(j.output).name for j in jobs] == ["1-beach-me.jpg", "2-party-me.jpg"]
    assert {Path(j.output).parent for j in jobs} == {local.outputs / "local"}  # the user's own by default
    assert all(Path(j.target).parent == api.data_dir() / "uploads" for j in jobs)  # stashed like one job
    report = queue_tab.batch_report(items)
    assert "2 of 2 queued" in report and "beach.jpg → 1-beach-me.jpg" in report


def test_a_batch_from_a_folder_on_this_computer_and_into_a_chosen_folder(local: Ctx, photos: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    chosen = tmp_path / "renders" / "today"  # missing: made
    items = queue_tab.submit_batch(local, Settings(), [str(photos["me"])], [], str(photos["me"].parent),
                                   "{target}-{source}", None, folder=str(chosen))
    assert [i.output.name for i in items if i.output] == ["beach-me.jpg", "me-me.jpg", "party-me.jpg"]
    assert all(i.job is not None and Path(i.job.output).parent == chosen for i in items)


@pytest.mark.parametrize(("pattern", "targets", "folder", "says"), [
    ("{who}-{target}", "uploads", "", "unknown field {who}"),
    ("", "uploads", "", "the name pattern is empty"),
    ("x/{target}", "uploads", "", "is a file name, not a path"),
    ("{target:d}", "uploads", "", "the name pattern '{target:d}'"),
    ("{target}", "none", "", "add the batch's targets first"),
    ("{target}", "none", "empty", "has no image or video in it"),
    ("{target}", "none", "missing", "is not a folder on this computer"),
])
def test_a_bad_batch_is_one_line_and_no_job(local: Ctx, photos: dict[str, Path], tmp_path: Path, pattern: str,
                                            targets: str, folder: str, says: str) -> None:
    given = [str(photos["beach"]), str(photos["party"])] if targets == "uploads" else []
    host = {"": "", "empty": str(tmp_path / "empty"), "missing": str(tmp_path / "nowhere")}[folder]
    (tmp_path / "empty").mkdir()
    with pytest.raises(api.UserError, match=None) as err:
        queue_tab.submit_batch(local, Settings(), [str(photos["me"])], given, host, pattern, None)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert local.store.list() == []


def test_a_shared_ui_refuses_a_folder_on_the_server(shared: Ctx, photos: dict[str, Path]) -> None:
    with pytest.raises(api.UserError, match="not yours to batch from on a shared UI"):
        queue_tab.submit_batch(shared, Settings(), [str(photos["me"])], [], str(photos["me"].parent),
                               "{target}", as_user("alice"))
    assert shared.store.list() == []
    # uploads are fine, into alice's own outputs
    items = queue_tab.submit_batch(shared, Settings(), [str(photos["me"])], [str(photos["beach"])], "",
                                   "{target}", as_user("alice"))
    assert items[0].job is not None and Path(items[0].job.output) == shared.outputs / "alice" / "beach.jpg"


def test_one_refused_target_leaves_the_others_queued(local: Ctx, photos: dict[str, Path]) -> None:
    items = queue_tab.submit_batch(local, Settings(), [str(photos["me"])],
                                   [str(photos["beach"]), str(photos["beach"]), str(photos["party"])], "",
                                   "{target}", None)
    assert [i.job is not None for i in items] == [True, False, True]
    assert "also the output of" in (items[1].error or "")
    assert "2 of 3 queued" in queue_tab.batch_report(items)


# ------------------------------------------------------------------ the output folder


def test_local_output_folder_is_any_folder_made_if_missing(local: Ctx, tmp_path: Path) -> None:
    assert not queue_tab.output_folder(local, "", None, make=False).path.exists()  # named only
    default = queue_tab.output_folder(local, "", None)
    assert default.path == local.outputs / "local" and default.created
    elsewhere = queue_tab.output_folder(local, str(tmp_path / "else" / "where"), None)
    assert elsewhere.path == tmp_path / "else" / "where" and elsewhere.created and elsewhere.path.is_dir()
    assert not queue_tab.output_folder(local, str(tmp_path / "else" / "where"), None).created
    assert queue_tab.output_folder(local, "holiday", None).path == local.outputs / "local" / "holiday"
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(api.UserError, match="is a file, not a folder"):
        queue_tab.output_folder(local, str(tmp_path / "a-file"), None)
    with pytest.raises(api.UserError, match="cannot be made"):
        queue_tab.output_folder(local, str(tmp_path / "a-file" / "sub"), None)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_local_output_folder_must_be_writable(local: Ctx, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(api.UserError, match="is not writable"):
            queue_tab.output_folder(local, str(locked), None)
        with pytest.raises(api.UserError, match="cannot be made"):
            queue_tab.output_folder(local, str(locked / "sub"), None)
    finally:
        locked.chmod(0o700)


def test_shared_output_folder_stays_inside_the_users_own(shared: Ctx, tmp_path: Path) -> None:
    alice = as_user("alice")
    own = shared.outputs / "alice"
    assert queue_tab.output_folder(shared, "", alice).path == own
    assert queue_tab.output_folder(shared, "holiday/day1", alice).path == own / "holiday" / "day1"
    assert queue_tab.output_folder(shared, "outputs/alice/holiday", alice).path == own / "holiday"  # as shown
    assert queue_tab.output_folder(shared, str(own / "abs"), alice).path == own / "abs"
    (own / "out-link").symlink_to(tmp_path)  # a link inside that leads out
    for bad, says in [("../bob", "may not use '..'"), ("holiday/../../bob", "may not use '..'"),
                      (str(shared.outputs / "bob"), "is not yours"), ("/etc", "is not yours"),
                      (str(tmp_path / "elsewhere"), "is not yours"), ("out-link/x", "is not yours")]:
        with pytest.raises(api.UserError, match=None) as err:
            queue_tab.output_folder(shared, bad, alice)
        assert says in str(err.value), bad
    assert not (shared.outputs / "bob").exists() and not (tmp_path / "elsewhere").exists()


def test_a_job_goes_to_the_chosen_folder_and_shows_it(shared: Ctx, photos: dict[str, Path]) -> None:
    photo = str(photos["me"])
    job = queue_tab.submit(shared, Settings(), [photo], photo, as_user("alice"), folder="holiday")
    assert Path(job.output).parent == shared.outputs / "alice" / "holiday"
    shown = queue_tab.table(shared, queue_tab.visible_jobs(shared, as_user("alice")), "", as_user("alice"))
    assert "in outputs/alice/holiday" in shown
    with pytest.raises(api.UserError, match="is not yours"):
        queue_tab.submit(shared, Settings(), [photo], photo, as_user("alice"),
                         folder=str(shared.outputs / "bob"))
    assert len(shared.store.list()) == 1


# ------------------------------------------------------------------ a reload keeps the inputs


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Gradio's upload cache, in the test's folder."""
    folder = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder


def _upload(cache: Path, name: str) -> str:
    path = cache / name.split(".")[0] / name
    path.parent.mkdir(parents=True)
    shutil.copyfile(grace_hopper_path(), path)
    return str(path)


def test_a_reload_brings_back_only_the_same_users_uploads(cache: Path, tmp_path: Path) -> None:
    from webui import app as app_mod
    from webui import kept_inputs
    from webui.controls import SettingsForm

    app = app_mod.build(UiConfig(users=USERS, worker=False, outputs=tmp_path / "out", data=tmp_path / "d"))
    ctx, form = app.ctx, SettingsForm(app.components["settings"])
    mine, theirs = _upload(cache, "me.jpg"), _upload(cache, "bob.jpg")
    ctx.guard.ledger.record("alice", [mine])
    ctx.guard.ledger.record("bob", [theirs])
    outside = str(grace_hopper_path())  # a file on the server, not an upload
    kept = {"sources": [mine, theirs, outside], "target": theirs, "frame": 42,
            "settings": {"detector.score": 0.71, "no.such": 1}}
    got = kept_inputs.restore(ctx, form, kept, as_user("alice"))
    assert got[0] == [mine]  # bob's upload and the server's file stay out
    assert got[1] == gr.skip() and got[2] == gr.skip()  # no target back: no frame either
    assert got[3 + form.keys.index("detector.score")] == 0.71
    assert kept_inputs.restore(ctx, form, kept, as_user("bob"))[:3] == [[theirs], theirs, 42]  # its frame
    # settings that do not validate are left alone as a whole; a value that is not a dict brings nothing
    bad = kept_inputs.restore(ctx, form, {"settings": {"detector.score": 7}}, as_user("alice"))
    assert bad[3:] == [gr.skip()] * len(form.keys)
    assert kept_inputs.restore(ctx, form, "garbage", as_user("alice")) == [gr.skip()] * (3 + len(form.keys))
