"""pipeline.env: every FACESTATION_* variable declared once, parsed by one rule, listed in the README."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from pipeline import env, paths
from pipeline.jobs import farm, segments
from pipeline.jobs.store import JobStore
from tests import photos

ROOT = Path(__file__).resolve().parents[1]
TESTS_PART = "| **for tests and setup** | | | |"


def _refused(monkeypatch: pytest.MonkeyPatch, var: env.Var[Any], raw: str) -> str:
    monkeypatch.setenv(var.name, raw)
    with pytest.raises(env.BadEnvironment) as caught:
        var.get()
    return str(caught.value)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Every declared variable unset for the test but the test's own folders (conftest.isolated_dirs)."""
    for var in env.DECLARED:
        if var not in (env.MODELS, env.DATA, env.CACHE):
            monkeypatch.delenv(var.name, raising=False)
    return monkeypatch


def test_unset_or_empty_is_the_default(clean: pytest.MonkeyPatch) -> None:
    assert env.QUEUE_MAX_ATTEMPTS.get() == 3 and env.FARM_SHIP.get() is False and env.PRESETS.get() is None
    for raw in ("", "   "):
        clean.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", raw)
        clean.setenv("FACESTATION_FARM_SHIP", raw)
        assert env.QUEUE_MAX_ATTEMPTS.get() == 3 and env.FARM_SHIP.get() is False


def test_a_bad_whole_number_names_the_variable_what_it_takes_and_got(clean: pytest.MonkeyPatch) -> None:
    assert _refused(clean, env.QUEUE_MAX_ATTEMPTS, "abc") == \
        "FACESTATION_QUEUE_MAX_ATTEMPTS must be a whole number ≥ 1 (got 'abc')"
    for raw in ("0", "-2", "2.5"):
        assert _refused(clean, env.QUEUE_MAX_ATTEMPTS, raw).endswith(f"(got {raw!r})")
    clean.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", " 7 ")
    assert env.QUEUE_MAX_ATTEMPTS.get() == 7


def test_flags_take_yes_and_no_words_and_refuse_anything_else(clean: pytest.MonkeyPatch) -> None:
    for raw in ("0", "false", "No", "OFF"):  # "0" used to mean on: bool(os.environ.get(...))
        clean.setenv("FACESTATION_FARM_SHIP", raw)
        assert env.FARM_SHIP.get() is False, raw
    for raw in ("1", "TRUE", "yes", "On"):
        clean.setenv("FACESTATION_FARM_SHIP", raw)
        assert env.FARM_SHIP.get() is True, raw
    assert _refused(clean, env.FARM_SHIP, "maybe") == \
        "FACESTATION_FARM_SHIP must be 1/true/yes/on or 0/false/no/off (got 'maybe')"


def test_seconds_are_finite_and_positive(clean: pytest.MonkeyPatch) -> None:
    for raw in ("soon", "0", "-1", "nan", "inf"):
        assert _refused(clean, env.QUEUE_CHECKPOINT_SECONDS, raw) == \
            f"FACESTATION_QUEUE_CHECKPOINT_SECONDS must be a number of seconds > 0 (got {raw!r})"
    clean.setenv("FACESTATION_QUEUE_CHECKPOINT_SECONDS", "7.5")
    assert env.QUEUE_CHECKPOINT_SECONDS.get() == 7.5


def test_stale_after_below_a_few_heartbeats_is_refused(clean: pytest.MonkeyPatch) -> None:
    """Live workers send a heartbeat every quarter of it: a value below the minimum would let two of them
    take each other's jobs (issue 21, point 4)."""
    for raw in ("0", "0.001", "1", "4.9"):
        assert _refused(clean, env.QUEUE_STALE_AFTER, raw) == \
            f"FACESTATION_QUEUE_STALE_AFTER must be a number of seconds ≥ 5 (got {raw!r})"
    clean.setenv("FACESTATION_QUEUE_STALE_AFTER", "5")
    assert env.QUEUE_STALE_AFTER.get() == 5.0


def test_a_folder_is_expanded_and_a_file_is_refused(tmp_path: Path, clean: pytest.MonkeyPatch) -> None:
    clean.setenv("HOME", str(tmp_path))
    clean.setenv("FACESTATION_DATA", "~/data")
    assert env.DATA.get() == tmp_path / "data"
    assert paths.data_dir() == tmp_path / "data" and (tmp_path / "data").is_dir()  # made where it is used
    (tmp_path / "file").write_text("x")
    clean.setenv("FACESTATION_DATA", str(tmp_path / "file"))
    line = f"FACESTATION_DATA must be a folder (got '{tmp_path / 'file'}': that is a file)"
    with pytest.raises(env.BadEnvironment, match=re.escape(line)):
        paths.data_dir()


def test_models_go_to_the_data_folder_unless_the_checkout_already_holds_some(
        tmp_path: Path, clean: pytest.MonkeyPatch) -> None:
    """Issue 36 point 7: weights live in the user's data folder; a checkout whose models/ holds weights
    (an install from before) keeps using it; FACESTATION_MODELS wins over both."""
    clean.delenv("FACESTATION_MODELS")
    clean.setenv("FACESTATION_DATA", str(tmp_path / "data"))
    checkout = tmp_path / "checkout" / "models"
    checkout.mkdir(parents=True)
    (checkout / "README.md").write_text("weights land here")
    clean.setattr(paths, "CHECKOUT_MODELS", checkout)
    assert paths.models_dir() == tmp_path / "data" / "models" and (tmp_path / "data" / "models").is_dir()
    (checkout / "inswapper_128.onnx").write_bytes(b"weights")
    assert paths.models_dir() == checkout
    clean.setenv("FACESTATION_MODELS", str(tmp_path / "mine"))
    assert paths.models_dir() == tmp_path / "mine"


def test_an_executable_a_port_range_and_a_choice(tmp_path: Path, clean: pytest.MonkeyPatch) -> None:
    clean.setenv("PATH", str(tmp_path))
    program = tmp_path / "tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    for raw in ("tool", str(program)):
        clean.setenv("FACESTATION_FFMPEG", raw)
        assert env.FFMPEG.get() == str(program)
    (tmp_path / "plain").write_text("")
    for raw in ("nope", str(tmp_path / "plain"), str(tmp_path)):
        assert _refused(clean, env.FFMPEG, raw).startswith("FACESTATION_FFMPEG must be an executable")
    for raw, want in (("7900-7949", (7900, 7949)), ("8000", (8000, 8000))):
        clean.setenv("FACESTATION_TEST_PORTS", raw)
        assert env.TEST_PORTS.get() == want
    for raw in ("x-y", "9-1", "0-70000"):
        assert _refused(clean, env.TEST_PORTS, raw).startswith("FACESTATION_TEST_PORTS must be a port or")
    assert _refused(clean, env.EXTRA, "tpu") == "FACESTATION_EXTRA must be cpu or gpu (got 'tpu')"


def test_set_to_restores_what_was_there(clean: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with env.PRESETS.set_to(tmp_path):
        assert env.PRESETS.get() == tmp_path and paths.user_presets_dir() == tmp_path
    assert env.PRESETS.name not in os.environ
    clean.setenv("FACESTATION_PRESETS", "/before")
    with pytest.raises(KeyError), env.PRESETS.set_to(tmp_path):
        raise KeyError  # restored on the way out of an error too
    assert os.environ["FACESTATION_PRESETS"] == "/before"


def test_check_names_the_first_bad_product_variable_only(clean: pytest.MonkeyPatch) -> None:
    env.check()
    clean.setenv("FACESTATION_GPU_TESTS", "maybe")  # a test-only variable is not the product's start-up
    env.check()
    clean.setenv("FACESTATION_FARM_LOGS", "loud")
    with pytest.raises(env.BadEnvironment, match="^FACESTATION_FARM_LOGS must be"):
        env.check()


def test_defaults_agree_with_the_code_that_uses_them() -> None:
    store = inspect.signature(JobStore).parameters
    assert store["stale_after"].default == env.QUEUE_STALE_AFTER.default
    assert store["max_attempts"].default == env.QUEUE_MAX_ATTEMPTS.default
    assert env.QUEUE_CHECKPOINT_SECONDS.default == segments.DEFAULT_CHECKPOINT_SECONDS
    assert env.FARM_SEGMENT_SECONDS.default == farm.DEFAULT_SEGMENT_SECONDS


def test_every_facestation_name_in_the_repository_is_declared() -> None:
    declared = {var.name for var in env.DECLARED}
    assert len(declared) == len(env.DECLARED)
    files = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *ROOT.glob("*.sh"), *(ROOT / "scripts").glob("*"),
             *(p for d in ("pipeline", "webui", "cli", "tests") for p in (ROOT / d).rglob("*.py"))]
    named = {(name, f.relative_to(ROOT).as_posix()) for f in files if f.is_file()
             for name in re.findall(r"FACESTATION_[A-Z0-9_]*[A-Z0-9]", f.read_text(encoding="utf-8"))}
    unknown = sorted(f"{where}: {name}" for name, where in named if name not in declared)
    assert not unknown, "not declared in pipeline/env.py:\n" + "\n".join(unknown)


def _shown_default(var: env.Var[Any]) -> str:
    if var.shown_default:
        return var.shown_default
    if isinstance(var.default, bool):
        return "on" if var.default else "off"
    return f"`{var.default:g}`" if isinstance(var.default, float) else f"`{var.default}`"


def _expected_table() -> list[str]:
    def row(var: env.Var[Any]) -> str:
        return f"| `{var.name}` | {var.accepts} | {_shown_default(var)} | {var.help} |"

    return ["| variable | accepts | default | what it does |", "|---|---|---|---|",
            *(row(v) for v in env.DECLARED if not v.for_tests), TESTS_PART,
            *(row(v) for v in env.DECLARED if v.for_tests)]


def test_readme_lists_exactly_the_declared_variables() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Environment variables\n", 1)
    assert len(section) == 2, "README.md has no '## Environment variables' section"
    table = [line for line in section[1].split("\n## ", 1)[0].splitlines() if line.startswith("|")]
    expected = _expected_table()
    assert table == expected, "README's table is not pipeline/env.py's; it should be:\n" + "\n".join(expected)


def test_cli_bad_value_exits_2_with_one_line(clean: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    clean.setenv("FACESTATION_QUEUE_MAX_ATTEMPTS", "abc")
    assert main(["queue", "list"]) == 2
    assert capsys.readouterr().err == \
        "facestation: error: FACESTATION_QUEUE_MAX_ATTEMPTS must be a whole number ≥ 1 (got 'abc')\n"
    clean.delenv("FACESTATION_QUEUE_MAX_ATTEMPTS")
    clean.setenv("FACESTATION_DEBUG", "0")  # off, not refused
    assert main(["queue", "list"]) == 0
    clean.setenv("FACESTATION_DEBUG", "maybe")  # read by every command
    assert main(["presets", "list"]) == 2
    assert capsys.readouterr().err == \
        "facestation: error: FACESTATION_DEBUG must be 1/true/yes/on or 0/false/no/off (got 'maybe')\n"


def test_ui_refuses_to_start_with_a_bad_value(clean: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    clean.setenv("FACESTATION_FARM_LOGS", "loud")  # read by nothing else on the way: start-up checks all
    assert main(["ui", "--no-browser", "--no-worker", "--port", "1"]) == 2
    assert capsys.readouterr().err == \
        "facestation: error: FACESTATION_FARM_LOGS must be 1/true/yes/on or 0/false/no/off (got 'loud')\n"


def test_a_value_once_read_at_import_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """FACESTATION_MAX_PIXELS was parsed when pipeline.image was imported: a traceback before main() ran."""
    run = subprocess.run(
        [sys.executable, "-m", "cli", "swap", "--source", str(photos.grace_hopper_path()),
         "--target", str(photos.astronaut_path(tmp_path)), "--output", str(tmp_path / "out.png")],
        env={**os.environ, "FACESTATION_MAX_PIXELS": "lots", "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300, check=False)
    assert (run.returncode, run.stderr) == \
        (2, "facestation: error: FACESTATION_MAX_PIXELS must be a whole number ≥ 1 (got 'lots')\n")


def test_serving_the_ui_checks_the_environment_first(clean: pytest.MonkeyPatch) -> None:
    from webui.app import serve
    from webui.common import UiConfig

    clean.setenv("FACESTATION_QUEUE_STALE_AFTER", "soon")
    with pytest.raises(env.BadEnvironment, match="^FACESTATION_QUEUE_STALE_AFTER must be a number of"):
        serve(UiConfig(port=1, worker=False), block=False)  # refused before anything is built or bound
