"""The no-face note is said from one notion of what a run changed (pipeline.chain.frame_changers): "the
output is an unchanged copy" only when nothing changed it; a frame processor alone changes every frame (it
used to be called an unchanged copy); a still with no face and a frame processor is made, with the note."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from cli.main import main
from tests import photos
from tests.surrogates import install_surrogate
from tests.videos import grey_clip

NOTE = "no face to replace was found in any frame of"


@pytest.fixture()
def models() -> None:
    install_surrogate("span_kendata_x4")
    install_surrogate("modnet")


def _notices(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return [n for n in json.loads(out.out)["notices"] if NOTE in n]


@pytest.mark.parametrize(("order", "said"), [
    ("frame_enhancer", None),
    ("background_remover", None),
    ("face_swapper,frame_enhancer", "; only frame_enhancer changed it"),
    ("face_swapper,background_remover", "; only background_remover changed it"),
    ("face_swapper", "; the output is an unchanged copy"),
])
def test_the_no_face_note_says_what_changed_the_frames(models: None, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str], order: str,
                                                       said: str | None) -> None:
    clip = grey_clip(tmp_path / "grey.mp4", frames=6, size=(64, 48))
    face = str(photos.grace_hopper_path())
    notices = _notices(["swap", "--source", face, "--target", str(clip), "--output", str(tmp_path / "o.mp4"),
                        "--set", f"processors.order={order}"], capsys)
    assert notices == ([] if said is None else [f"{NOTE} grey.mp4 (selector.mode=many){said}"]), notices


def test_a_faceless_still_with_a_frame_processor_is_made_with_the_note(
        models: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wall = tmp_path / "wall.png"
    cv2.imwrite(str(wall), np.full((48, 64, 3), 128, np.uint8))
    face = str(photos.grace_hopper_path())
    notices = _notices(["swap", "--source", face, "--target", str(wall), "--output", str(tmp_path / "o.png"),
                        "--set", "processors.order=face_swapper,frame_enhancer"], capsys)
    assert notices == [f"{NOTE} wall.png (selector.mode=many); only frame_enhancer changed it"]
    assert cv2.imread(str(tmp_path / "o.png")).shape[:2] == (192, 256)
