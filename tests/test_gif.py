"""GIF targets by their content: a one-frame GIF is a still image (it could not be swapped at all); an
animated GIF to an image output is its first frame, with the note the README promises (it was refused as a
video), to a video output a video; the same through the queue."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from cli.main import main
from pipeline.jobs.service import open_store
from tests import photos


def _gif(path: Path, frames: int) -> Path:
    face = cv2.resize(photos.astronaut(), (256, 256))[:, :, ::-1]  # RGB
    pictures = [Image.fromarray(np.ascontiguousarray(np.roll(face, 4 * i, axis=1))) for i in range(frames)]
    pictures[0].save(path, save_all=frames > 1, append_images=pictures[1:], duration=100, loop=0)
    return path


def _swap(target: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target), "--output",
                 str(output), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return dict(json.loads(out.out))


def test_a_one_frame_gif_is_a_still(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = _swap(_gif(tmp_path / "one.gif", 1), tmp_path / "o.png", capsys)
    assert summary["kind"] == "image" and summary["faces_swapped"] == 1
    assert cv2.imread(str(tmp_path / "o.png")).shape[:2] == (256, 256)


def test_an_animated_gif_to_an_image_is_its_first_frame_with_the_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    anim = _gif(tmp_path / "anim.gif", 3)
    summary = _swap(anim, tmp_path / "o.png", capsys)
    assert summary["kind"] == "image" and summary["faces_swapped"] == 1
    assert ("anim.gif has 3 frames (animated): only its first frame is swapped and written; convert it to a "
            "video to swap every frame") in summary["notices"]
    video = _swap(anim, tmp_path / "o.mp4", capsys)  # to a video: every frame
    assert video["frames"] == 3
    assert main(["queue", "add", "--source", str(photos.grace_hopper_path()), "--target", str(anim),
                 "--output", str(tmp_path / "q.png")]) == 0
    main(["queue", "run", "--once"])
    capsys.readouterr()
    job = open_store().get(1)
    assert job.state == "done", job.log
    assert cv2.imread(str(tmp_path / "q.png")).shape[:2] == (256, 256)
