"""Every number is finite and in range, by one rule at the settings layer, wherever it is given: ``--set``
of ``swap`` and ``queue add``, a preset file, ``live``'s own ``--seconds`` / ``--fps``; an unknown key is
answered with the closest keys, not the list of all of them (1,668 characters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from tests import photos
from tests.videos import make_clip

FLOATS = ["mask.blur", "detector.score", "color.strength", "tracker.beta", "lip_syncer.weight"]


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mp4", seconds=0.5, size=(160, 120), fps=30)


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    return lines[0].removeprefix("facestation: error: ")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_a_number_that_is_not_finite_is_refused_in_one_line_everywhere(
        clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    face = str(photos.grace_hopper_path())
    for key in FLOATS:
        said = f"{key}: Input should be a finite number (got '{value}')"
        swap = ["swap", "--source", face, "--target", str(clip), "--output", str(tmp_path / "o.mp4")]
        queue = ["queue", "add", "--source", face, "--target", str(clip), "--output", str(tmp_path / "q.mp4")]
        for argv in (swap, queue, ["presets", "save", "mine", "--set"]):
            argv = [*argv, f"{key}={value}"] if argv[0] == "presets" else [*argv, "--set", f"{key}={value}"]
            assert _one_line(argv, capsys) == said, argv
    preset = tmp_path / "p.json"  # JSON has no inf; Python's reader takes Infinity and NaN
    preset.write_text(json.dumps({"schema": 1, "name": "p", "settings": {"mask": {"blur": float(value)}}}))
    got = _one_line(["swap", "--source", face, "--target", str(clip), "--output", str(tmp_path / "o.mp4"),
                     "--preset", str(preset)], capsys)
    assert "mask.blur: Input should be a finite number" in got, got
    assert not list(tmp_path.glob("o.*")) and not list(tmp_path.glob("q.*"))


@pytest.mark.parametrize("arg", ["--seconds", "--fps"])
@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_live_numbers_are_finite_and_positive(clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              arg: str, value: str) -> None:
    """``live --seconds inf`` and ``--fps inf`` were exit 1 with an internal error."""
    said = _one_line(["live", "--source", str(photos.grace_hopper_path()), "--camera", str(clip), "--output",
                      str(tmp_path / "r.mp4"), arg, value], capsys)
    assert said == f"facestation live: argument {arg}: '{value}' is not a positive number", said
    assert not (tmp_path / "r.mp4").exists()


@pytest.mark.parametrize(("key", "said"), [
    ("nosuch.key", "a key is section.key, in one of processors, detector,"),
    ("mask.blurr", "did you mean mask.blur or"),
    ("colour.method", "did you mean color.method or color.strength?"),
    ("face_swaper.model", "did you mean face_swapper.model or"),
    ("blend", "did you mean face_enhancer.blend or"),
])
def test_an_unknown_key_is_answered_with_the_closest_ones(clip: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str], key: str,
                                                          said: str) -> None:
    swap = ["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip), "--output",
            str(tmp_path / "o.mp4"), "--set", f"{key}=1"]
    for argv in (swap, ["presets", "save", "mine", "--set", f"{key}=1"]):
        got = _one_line(argv, capsys)
        # a few names, never every key (the whole list was 1,668 characters; the sections alone are ~330)
        assert got.startswith(f"unknown settings key '{key}': {said}") and len(got) < 400, got
