"""`facestation queue`: validation before queuing, list/cancel/retry/move/delete, run --once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from pipeline.jobs.service import open_store
from tests import photos


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {"source": photos.grace_hopper_path(), "target": photos.astronaut_path(tmp_path), "dir": tmp_path}


def _add(files: dict[str, Path], output: str, *extra: str) -> list[str]:
    return ["queue", "add", "--source", str(files["source"]), "--target", str(files["target"]),
            "--output", str(files["dir"] / output), *extra]


@pytest.mark.parametrize("change, message", [
    ({"source": Path("/nowhere/me.jpg")}, "source image not found"),
    ({"target": Path("/nowhere/t.png")}, "target not found"),
    ({"output": "out.txt"}, "cannot write"),
    ({"extra": ("--set", "swapper.nope=1")}, "unknown settings key"),
    ({"extra": ("--set", "output.quality=500")}, "output.quality"),
])
def test_bad_input_exits_2_with_one_line_and_queues_nothing(
    files: dict[str, Path], change: dict, message: str, capsys: pytest.CaptureFixture[str],
) -> None:
    f = {**files, **{k: v for k, v in change.items() if k in files}}
    argv = _add(f, change.get("output", "out.png"), *change.get("extra", ()))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert open_store().list() == []


def test_add_list_move_cancel_retry_delete_run(files: dict[str, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ids = []
    for name in ("a.png", "b.png", "c.png"):
        assert main(_add(files, name, "--set", "selector.mode=one")) == 0
        ids.append(int(capsys.readouterr().out.strip()))
    assert len(set(ids)) == 3
    assert main(["queue", "move", str(ids[2]), "up"]) == 0
    assert main(["queue", "cancel", str(ids[0])]) == 0
    capsys.readouterr()
    assert main(["queue", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [ids[0], ids[2], ids[1]]
    assert [r["state"] for r in rows] == ["cancelled", "queued", "queued"]
    assert main(["queue", "cancel", str(ids[0])]) == 2  # already ended
    assert main(["queue", "retry", str(ids[0])]) == 0
    assert main(["queue", "delete", str(ids[1])]) == 0
    assert main(["queue", "delete", "999"]) == 2
    assert main(["queue", "run", "--once"]) == 0
    capsys.readouterr()
    assert main(["queue", "list"]) == 0
    table = capsys.readouterr().out
    lines = table.strip().splitlines()[1:]
    assert len(lines) == 2 and all(" done " in line for line in lines), table
    store = open_store()
    assert {j.id for j in store.list(states=["done"])} == {ids[0], ids[2]}
    assert all(Path(j.output).stat().st_size > 0 for j in store.list())


def test_one_output_per_job(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_add(files, "same.png")) == 0
    first = int(capsys.readouterr().out)
    # the same file, spelled another way
    other = _add(files, "same.png")
    other[other.index("--output") + 1] = str(files["dir"] / "." / "same.png")
    assert main(other) == 2
    err = capsys.readouterr().err
    assert f"job {first} (queued) already writes {files['dir'] / 'same.png'}" in err and err.count("\n") == 1
    assert len(open_store().list()) == 1


def test_failed_jobs_show_their_reason_and_run_once_exits_1(files: dict[str, Path],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = files["dir"] / "later"
    folder.mkdir()
    assert main(_add(files, "later/out.png")) == 0
    assert main(_add(files, "ok.png", "--set", "selector.mode=one")) == 0
    folder.rmdir()  # gone by the time the job runs
    capsys.readouterr()
    assert main(["queue", "run", "--once"]) == 1
    assert "1 job(s) done, 1 failed" in capsys.readouterr().out
    assert main(["queue", "list"]) == 0
    failed, done = capsys.readouterr().out.strip().splitlines()[1:]
    assert " failed " in failed and "%" not in failed and "[failed: the folder of --output" in failed
    assert " done " in done and "100.0% 1/1" in done
    assert main(["queue", "run", "--once"]) == 0  # nothing left to run: nothing failed


def test_a_job_whose_worker_died_is_cancelled_and_deleted_at_once(files: dict[str, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.jobs.runner import work_dir

    ids = []
    for name in ("a.png", "b.png"):
        assert main(_add(files, name)) == 0
        ids.append(int(capsys.readouterr().out))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store = open_store()
    for job_id in ids:
        store.claim_next(f"killed-{job_id}", pid=dead.pid)  # as if its worker had been killed with -9
    work_dir(ids[0]).mkdir(parents=True)
    assert main(["queue", "list"]) == 0
    assert "is gone" in capsys.readouterr().out
    assert main(["queue", "cancel", str(ids[0])]) == 0
    assert capsys.readouterr().out.strip() == f"job {ids[0]}: cancelled"
    assert store.get(ids[0]).state == "cancelled" and not work_dir(ids[0]).exists()
    assert main(["queue", "delete", str(ids[1])]) == 0
    assert [j.id for j in store.list()] == [ids[0]]


def test_a_batch_queues_one_job_per_target_named_by_the_pattern(files: dict[str, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    folder = files["dir"] / "shots"
    folder.mkdir()
    for name in ("b-shot.png", "a-shot.jpg", "notes.txt"):  # not an image or a video: not a target
        shutil.copyfile(files["target"], folder / name)
    out = files["dir"] / "out"
    out.mkdir()
    argv = ["queue", "add", "--source", str(files["source"]), "--target", str(files["target"]),
            "--target", str(folder), "--output", str(out), "--name", "{target}-{source}",
            "--set", "selector.mode=one"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    jobs = open_store().list()
    assert len(lines) == len(jobs) == 3
    source = files["source"].stem
    assert [Path(j.output).name for j in jobs] == [f"{files['target'].stem}-{source}.png",
                                                   f"a-shot-{source}.jpg", f"b-shot-{source}.png"]
    assert {j.settings.selector.mode for j in jobs} == {"one"}
    assert all(Path(j.output).parent == out for j in jobs)


def test_a_batch_says_per_job_which_were_refused_and_queues_the_rest(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    other = files["dir"] / "other"
    other.mkdir()
    twin = shutil.copyfile(files["target"], other / files["target"].name)  # the same name in another folder
    out = files["dir"] / "out"
    out.mkdir()
    argv = ["queue", "add", "--source", str(files["source"]), "--target", str(files["target"]),
            "--target", str(twin), "--target", "/nowhere/gone.png", "--output", str(out)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 1 == len(open_store().list())
    err = captured.err.strip().splitlines()
    assert len(err) == 3 and "1 job(s) queued, 2 refused" in err[-1]
    assert f"{twin}: not queued: its output {files['target'].stem}-swap.png is also the output of" in err[0]
    assert "/nowhere/gone.png: not queued: target not found" in err[1]


@pytest.mark.parametrize("pattern, message", [
    ("{who}", "unknown field {who} (valid: {target}, {source}, {n})"),
    ("x/{target}", "is a file name, not a path"),
    ("{target", "the name pattern '{target'"),
])
def test_a_bad_name_pattern_is_refused_in_one_line(files: dict[str, Path], pattern: str, message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*_add(files, ".", "--name", pattern)]
    argv[argv.index("--output") + 1] = str(files["dir"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert open_store().list() == []


def test_queue_list_names_an_upload_as_its_user_did(files: dict[str, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A job queued from the web UI refers to its stashed upload (a content hash before the name): `queue
    list` and the Queue tab show the name the user gave, not the hash."""
    import shutil

    from pipeline import api
    from webui import queue_tab

    mine = shutil.copyfile(files["target"], tmp_path / "my-party.png")
    stashed = api.stash(mine)
    assert stashed.name != "my-party.png"
    job = open_store().add([files["source"]], stashed, tmp_path / "o.png", api.Settings())
    assert main(["queue", "list"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert " my-party.png -> " in line and stashed.name not in line
    assert "my-party.png" in queue_tab.render_jobs([open_store().get(job.id)])
