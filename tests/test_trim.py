"""The trim as one value (pipeline/video/trim.py): the frames ``video.start`` / ``video.end`` keep, the one
line for a trim that keeps none, the decoder giving exactly those frames however the times were rounded,
and the command refusing a bad trim the same way at ``swap`` and ``queue add``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.errors import UserError
from pipeline.jobs.service import open_store
from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from pipeline.video.trim import Trim
from tests import photos
from tests.videos import count_frames, grey_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1 s at 30 fps: frames 0..29 (frame i grey 5·i), frame 29 shown from 0.967 s."""
    return grey_clip(tmp_path_factory.mktemp("trim") / "clip.mp4", frames=30, size=(64, 48), fps=30)


def test_the_frames_a_trim_keeps() -> None:
    assert Trim().whole and Trim().frames(30, 30) == range(30)
    assert Trim(0.5, 0.8).frames(30, 30) == range(15, 24)  # shown from 0.5 until 0.8
    assert Trim(0.51).frames(30, 30) == range(16, 30)  # frame 15 is shown before 0.51
    assert Trim(0.9667).frames(30, 30) == range(29, 30)  # a rounded time names its frame
    assert Trim(0.9667).describe(30, 30) == "frames 29–29 (0.97–1.00 s)"
    assert Trim(None, 5.0).frames(30, 30) == range(30)  # an end after the clip's: to its end
    assert Trim(0.5, 0.8).times(30, 30) == pytest.approx((0.5, 0.8))  # the sound is cut with the frames
    assert Trim(0.51).times(30, 30) == (pytest.approx(16 / 30), None)
    for trim, said in (
        (Trim(5.0), "video.start 5 s is past the end of clip.mp4 (1.00 s)"),
        (Trim(5.0, 3.0), "video.start 5 s is past the end of clip.mp4 (1.00 s)"),  # the first thing to fix
        (Trim(0.8, 0.2), "video.end 0.2 s is not after video.start (0.8 s): nothing to render"),
        (Trim(0.98), "video.start 0.98 s is after the last frame of clip.mp4 (frame 29, shown from 0.967 s): "
                     "nothing to render; start at 0.967 s or before"),
        (Trim(0.51, 0.52), "video.start 0.51 s – video.end 0.52 s keeps no frame of clip.mp4 (one every "
                           "0.033 s): widen the trim"),
    ):
        assert trim.problem(30, 30, "clip.mp4") == said
    with pytest.raises(ValueError):
        Trim(float("inf"))


def test_the_decoder_gives_exactly_the_frames_the_trim_keeps(clip: Path) -> None:
    """Times a hair before or after a frame's (rounded for a text box, 0.9667 for 29/30), and between two."""
    info = probe(clip)
    whole = list(read_frames(clip, info=info))
    assert len(whole) == 30
    cases = [Trim(round(k / 30 + d, 4)) for k in (1, 14, 29) for d in (-0.0004, 0.0, 0.0004, 0.01)]
    cases += [Trim(0.51), Trim(0.2, 0.6), Trim(None, 0.5), Trim(0.5, 0.5334), Trim(1 / 3, 2 / 3)]
    for trim in cases:
        kept = trim.frames(30, 30)
        if not kept:  # 0.9767: after the last frame
            with pytest.raises(UserError, match="after the last frame"):
                read_frames(clip, info=info, trim=trim)
            continue
        got = list(read_frames(clip, info=info, trim=trim))
        assert len(got) == len(kept), trim
        assert all(np.array_equal(a, whole[i]) for a, i in zip(got, kept, strict=True)), trim


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("sets", "said"), [
    (["video.start=inf"], "video.start: Input should be a finite number (got 'inf')"),
    (["video.start=nan"], "video.start: Input should be a finite number (got 'nan')"),
    (["video.end=inf"], "video.end: Input should be a finite number (got 'inf')"),
    (["video.start=5"], "video.start 5 s is past the end of clip.mp4 (1.00 s)"),
    (["video.start=0.8", "video.end=0.2"], "video.end 0.2 s is not after video.start (0.8 s): nothing"),
    (["video.start=0.98"], "video.start 0.98 s is after the last frame of clip.mp4 (frame 29, shown from "
                           "0.967 s): nothing to render; start at 0.967 s or before"),
    (["video.start=0.51", "video.end=0.52"], "keeps no frame of clip.mp4 (one every 0.033 s): widen"),
])
def test_a_bad_trim_is_one_line_at_swap_and_at_queue_add(
        clip: Path, tmp_path: Path, sets: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`video.start=inf` was stored as null by `queue add` (the whole clip rendered "done") and was an
    internal error at `swap`; a trim past the end or keeping no frame was queued and failed only when run."""
    files = ["--source", str(photos.grace_hopper_path()), "--target", str(clip)]
    overrides = [a for s in sets for a in ("--set", s)]
    for command in (["swap"], ["queue", "add"]):
        line = _refused([*command, *files, "--output", str(tmp_path / "o.mp4"), *overrides], capsys)
        assert line.startswith("facestation: error: ") and said in line, (command, line)
    assert open_store().list() == [] and not (tmp_path / "o.mp4").exists()


def test_a_trim_starting_on_the_last_frame_renders_that_frame(clip: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """0.9667 s (frame 29 at 30 fps, as a box rounds it): one frame, the last; it said "no frames could be
    decoded"."""
    out = tmp_path / "o.mp4"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                 "--output", str(out), "--set", "video.start=0.9667"]) == 0, capsys.readouterr().err
    assert count_frames(out) == 1
    grey = float(next(iter(read_frames(out))).mean())
    source = [float(frame.mean()) for frame in read_frames(clip)]  # frame i's grey (5·i, as decoded)
    assert abs(grey - source[29]) < abs(grey - source[28]), (grey, source[28:])
