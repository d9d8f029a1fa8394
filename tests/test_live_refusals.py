"""What ``swap`` refuses before any work, ``live`` refuses too, from the command line and the Live tab: a
transparent background (live frames are opaque: it used to record the background and exit 0) and a frame
enhancer whose frames are larger than the encoder takes (it failed minutes in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from pipeline.live.webrtc import LiveRuns
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.surrogates import install_surrogate
from tests.videos import make_clip

TRANSPARENT = ["processors.order=face_swapper,background_remover", "background_remover.fill=transparent"]


def _live(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["live", "--source", str(photos.grace_hopper_path()), *args])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("facestation: note")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    return lines[0].removeprefix("facestation: error: ")


@pytest.mark.parametrize("output", ["rec.mp4", "rec.webm", "udp://127.0.0.1:5999"])
def test_a_transparent_background_is_refused_live_as_swap_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str) -> None:
    install_surrogate("modnet")
    clip = make_clip(tmp_path / "cam.mp4", seconds=0.5, size=(160, 120), fps=30)
    said = ("background_remover makes the frames transparent, which live frames cannot keep (a recording, a "
            "stream and the browser's picture are opaque); choose a fill colour in its settings, or turn "
            "transparency off")
    target = output if "://" in output else str(tmp_path / output)
    sets = [a for s in TRANSPARENT for a in ("--set", s)]
    assert _live(["--camera", str(clip), "--output", target, *sets], capsys) == said
    with pytest.raises(Exception) as refused:
        LiveRuns().start("", "s", apply_overrides(Settings(), TRANSPARENT), [photos.grace_hopper_path()],
                         record_to=tmp_path / "tab.mp4")
    assert str(refused.value) == said
    assert not list(tmp_path.glob("rec*")) and not list(tmp_path.glob("tab*"))


def test_frames_larger_than_the_encoder_takes_are_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("span_kendata_x4")
    clip = make_clip(tmp_path / "cam.mp4", seconds=0.5, size=(160, 120), fps=30)
    said = _live(["--camera", str(clip), "--size", "4800x2700", "--output", str(tmp_path / "rec.mp4"),
                  "--set", "processors.order=face_swapper,frame_enhancer"], capsys)
    assert said.startswith("cam.mp4 (4800×2700) ×4 would be 19200×10800: larger than libx264 takes "
                           "(16384 px a side)"), said
    assert not list(tmp_path.glob("rec*"))
