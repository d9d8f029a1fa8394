"""The neural path through the CLI, with surrogate model files (exact catalog I/O) placed in models/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.faces.yunet import YuNetDetector
from pipeline.image import read_image
from tests import photos
from tests.surrogates import install_surrogate


def _astronaut_face_in_letterbox(size: int = 640) -> tuple:
    """The astronaut's face (box + 5 points) as det_10g sees it: the 512² image letterboxed top-left."""
    face = YuNetDetector().detect([photos.astronaut()])[0][0]
    s = size / 512
    return (*(face.box * s), face.landmarks * s)


@pytest.fixture
def neural_models() -> None:
    install_surrogate("retinaface", faces=[_astronaut_face_in_letterbox()], size=640)
    for name in ("inswapper_128", "arcface_w600k_r50", "hyperswap_1a_256"):
        install_surrogate(name)


def _swap(tmp_path: Path, source: Path, out: str, *extra: str, capsys: pytest.CaptureFixture[str]) -> dict:
    code = main(["swap", "--source", str(source), "--target", str(photos.astronaut_path(tmp_path)),
                 "--output", str(tmp_path / out), "--json", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return {"summary": json.loads(captured.out), "err": captured.err}


@pytest.mark.parametrize("swapper", ["inswapper_128", "hyperswap_1a_256"])
def test_neural_swap_with_surrogates(tmp_path: Path, neural_models: None, swapper: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    sets = ["--set", "detector.model=retinaface", "--set", f"face_swapper.model={swapper}"]
    a = _swap(tmp_path, photos.grace_hopper_path(), "a.png", *sets, capsys=capsys)
    assert a["summary"]["models"] == ["retinaface", swapper, "arcface_w600k_r50"]  # every model that ran
    assert "classic" not in a["err"]
    _swap(tmp_path, photos.t1_path(), "b.png", *sets, capsys=capsys)  # another person as the source
    target = read_image(photos.astronaut_path(tmp_path)).bgr
    out_a, out_b = read_image(tmp_path / "a.png").bgr, read_image(tmp_path / "b.png").bgr
    changed = np.any(out_a != target, axis=2)
    ys, xs = np.nonzero(changed)
    face = YuNetDetector().detect([target])[0][0]
    x1, y1, x2, y2 = face.box
    assert changed.any() and xs.min() > x1 - (x2 - x1) and xs.max() < x2 + (x2 - x1)  # only around the face
    assert ys.min() > y1 - (y2 - y1) and ys.max() < y2 + (y2 - y1)
    assert np.abs(out_a.astype(int) - out_b).max() > 10  # the source embedding reaches the model


def test_auto_prefers_an_installed_neural_swapper(tmp_path: Path, neural_models: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    r = _swap(tmp_path, photos.grace_hopper_path(), "auto.png", capsys=capsys)
    assert r["summary"]["models"][1] in ("hyperswap_1a_256", "inswapper_128")
    assert "classic swapper" not in r["err"]


def test_wrong_file_under_a_model_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("arcface_w600k_r50")
    # a GFPGAN-shaped graph saved under inswapper's file name
    from pipeline.models import catalog, store
    from tests.surrogates import make_surrogate

    make_surrogate("gfpgan_1.4", store.installed_path(catalog.get("inswapper_128")))
    code = main(["swap", "--source", str(photos.grace_hopper_path()),
                 "--target", str(photos.astronaut_path(tmp_path)),
                 "--output", str(tmp_path / "x.png"), "--set", "face_swapper.model=inswapper_128"])
    err = capsys.readouterr().err
    assert code == 2 and "does not look like inswapper_128" in err and "expected inputs" in err
