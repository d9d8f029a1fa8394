"""End-to-end image swaps through the CLI, on real photos, offline, with the built-in models."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from cli.main import main
from pipeline.faces import align
from pipeline.faces.recognise import cosine, embed_faces
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yunet import YuNetDetector
from pipeline.image import read_image, read_provenance
from pipeline.processors.face_swapper.classic import ClassicSwapper
from tests import photos


def _embedding(img: np.ndarray) -> np.ndarray:
    faces = YuNetDetector().detect([img])[0]
    assert faces, "no face found"
    face = max(faces, key=lambda f: f.area)
    return embed_faces(SFaceRecogniser(), img, [face])[0]


def _footprint(img: np.ndarray, faces: list) -> np.ndarray:
    """Pixels covered by the swapper's aligned crops of ``faces`` (the face area)."""
    swapper = ClassicSwapper()  # what face_swapper.model=auto gives with no neural swapper installed
    area = np.zeros(img.shape[:2], np.uint8)
    n = swapper.crop_size
    for face in faces:
        m = align.estimate(face.landmarks, swapper.template, n)
        square = np.array([[[0, 0], [n, 0], [n, n], [0, n]]], np.float64)
        corners = cv2.transform(square, cv2.invertAffineTransform(m))
        cv2.fillConvexPoly(area, np.round(corners[0]).astype(np.int32), 1)
    return area.astype(bool)


def test_offline_swap_grace_hopper_onto_astronaut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = photos.astronaut_path(tmp_path)
    out = tmp_path / "out.png"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                 "--output", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["faces_swapped"] == 1 and summary["models"] == ["yunet", "classic"]
    assert "classic swapper" in captured.err  # the lower-quality notice is visible

    before, after = read_image(target).bgr, read_image(out).bgr
    assert after.shape == before.shape
    src = _embedding(photos.grace_hopper())
    gain = cosine(src, _embedding(after)) - cosine(src, _embedding(before))
    assert gain >= 0.3, gain
    outside = ~_footprint(before, YuNetDetector().detect([before])[0])
    assert np.array_equal(after[outside], before[outside])
    assert "synthetic" in (read_provenance(out) or "").lower()


@pytest.mark.parametrize("suffix", [".jpg", ".webp"])
def test_output_format_follows_the_output_name(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"out{suffix}"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target",
                 str(photos.astronaut_path(tmp_path)), "--output", str(out)]) == 0
    with Image.open(out) as img:
        assert img.format == {".jpg": "JPEG", ".webp": "WEBP"}[suffix] and img.size == (512, 512)


def _changed_faces(before: np.ndarray, after: np.ndarray, faces: list) -> list[bool]:
    changed = []
    for f in faces:
        x1, y1, x2, y2 = (int(v) for v in f.box)
        cx1, cy1 = x1 + (x2 - x1) // 4, y1 + (y2 - y1) // 4
        cx2, cy2 = x2 - (x2 - x1) // 4, y2 - (y2 - y1) // 4
        diff = np.abs(after[cy1:cy2, cx1:cx2].astype(int) - before[cy1:cy2, cx1:cx2]).mean()
        changed.append(bool(diff > 3.0))
    return changed


@pytest.mark.parametrize("mode", ["many", "one", "reference"])
def test_selector_modes_on_six_faces(tmp_path: Path, mode: str) -> None:
    t1 = photos.t1_path()
    before = read_image(t1).bgr
    faces = YuNetDetector().detect([before])[0]
    assert len(faces) == 6
    args = ["swap", "--source", str(photos.grace_hopper_path()), "--target", str(t1),
            "--output", str(tmp_path / "o.png"), "--set", f"selector.mode={mode}"]
    pick = 0
    if mode == "reference":
        pick = 2 if max(range(6), key=lambda i: faces[i].area) != 2 else 3
        x1, y1, x2, y2 = (int(v) for v in faces[pick].box)
        w, h = x2 - x1, y2 - y1
        crop = before[max(0, y1 - h // 2):y2 + h // 2, max(0, x1 - w // 2):x2 + w // 2]
        cv2.imwrite(str(tmp_path / "ref.png"), crop)
        args += ["--set", f"selector.reference={tmp_path / 'ref.png'}"]
    assert main(args) == 0
    changed = _changed_faces(before, read_image(tmp_path / "o.png").bgr, faces)
    if mode == "many":
        assert changed == [True] * 6
    elif mode == "one":
        largest = max(range(6), key=lambda i: faces[i].area)
        assert changed == [i == largest for i in range(6)]
    else:
        assert changed == [i == pick for i in range(6)]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gh = str(photos.grace_hopper_path())
    target = str(photos.astronaut_path(tmp_path))
    out = str(tmp_path / "o.png")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((300, 300, 3), 200, np.uint8))
    full = tmp_path / "full.jpg"
    cv2.imwrite(str(full), photos.grace_hopper())
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    cases = {
        "source image not found": ["--source", str(tmp_path / "missing.jpg"), "--target", target],
        "empty": ["--source", str(empty), "--target", target],
        "not an image": ["--source", gh, "--target", str(text)],
        "truncated": ["--source", str(cut), "--target", target],
        "no face found in the source": ["--source", str(blank), "--target", target],
        "no face to replace": ["--source", gh, "--target", str(blank)],
        "unknown settings key": ["--source", gh, "--target", target, "--set", "detector.bogus=1"],
        "not installed: inswapper": ["--source", gh, "--target", target,
                                     "--set", "face_swapper.model=inswapper_128"],
    }
    for expected, args in cases.items():
        code, err = _run(["swap", *args, "--output", out], capsys)
        assert code == 2, (expected, err)
        assert expected in err and len(err.splitlines()) == 1 and "Traceback" not in err, (expected, err)
    assert not Path(out).exists()


def test_source_with_several_faces_says_which_is_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = photos.astronaut_path(tmp_path)
    code, err = _run(["swap", "--source", str(photos.t1_path()), "--target", str(target),
                      "--output", str(tmp_path / "o.png")], capsys)
    assert code == 0
    assert "has 6 faces; using the largest" in err


def test_refuses_to_overwrite_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = photos.astronaut_path(tmp_path)
    data = target.read_bytes()
    code, err = _run(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target),
                      "--output", str(target)], capsys)
    assert code == 2 and "one of the inputs" in err
    assert target.read_bytes() == data
