"""``facestation models check``: right surrogates pass, deliberately wrong ones (each keeping the real file's
I/O signature) are flagged, and the verdicts reach the CLI (table, --json, exit codes) and the Models tab."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli.main import main
from pipeline import families, modelcheck, processors
from pipeline.checking import photos
from pipeline.checking.judging import aligned
from pipeline.errors import ModelMissing
from pipeline.faces import align
from pipeline.faces.landmark68 import box_matrix, five_from_68
from pipeline.faces.yunet import YuNetDetector
from pipeline.models.catalog import IMAGENET_MEAN, IMAGENET_STD
from pipeline.settings import Settings
from tests.surrogates import default_landmarks68, install_surrogate

pytest.importorskip("matplotlib")
pytest.importorskip("skimage")

MEAN, STD = np.asarray(IMAGENET_MEAN), np.asarray(IMAGENET_STD)


@pytest.fixture
def shots() -> photos.Photos:
    return photos.load(YuNetDetector())


# --- right surrogates: each behaves as the real file does, on these photos ---------------------------------

def detector(name: str, shots: photos.Photos, scale: float = 1.0) -> None:
    """A detector emitting the face where YuNet finds it in grace_hopper (letterboxed top-left into 640);
    ``scale`` ≠ 1 places it as a file decoded at the wrong input size would."""
    face, frame = shots.person.face, shots.person.frame
    s = 640 / max(frame.shape[:2]) * scale
    faces = [(*(face.box * s), face.landmarks * s)]
    install_surrogate(name, faces=faces, **({} if name == "yolo_face" else {"size": 640}))


def swapper(name: str, shots: photos.Photos, **options: Any) -> None:
    """A swapper that carries identity: it pastes the aligned face whose source vector it is given."""
    install_surrogate(name, **options)
    model = families.build(name, Settings(), "swapper", processors.families())
    bank = []
    for shot in (shots.person, shots.other):
        assert shot is not None
        key = model.prepare_source([(shot.frame, shot.face)]).latent
        crop, _ = aligned(shot, model.template, model.crop_size)
        bank.append((key, crop[..., ::-1].transpose(2, 0, 1) / 255.0))
    install_surrogate(name, bank=bank, **options)


def landmarker(shots: photos.Photos, scale: float = 1.0) -> None:
    """2DFAN4 whose 68 points sit on grace_hopper's face (fitted to YuNet's five points); ``scale`` 4: a file
    giving its points in input pixels where heatmap cells are read."""
    face = shots.person.face
    crop_five = align.transform_points(face.landmarks, box_matrix(face.box, 256))
    points = default_landmarks68(256)
    placed = align.transform_points(points, align.similarity(five_from_68(points), crop_five))
    install_surrogate("2dfan4", landmarks=placed * scale)


def right_models(shots: photos.Photos) -> list[str]:
    for name in ("arcface_w600k_r50", "arcface_simswap", "gfpgan_1.4", "codeformer", "xseg", "occluder",
                 "bisenet_resnet34"):
        install_surrogate(name)
    detector("retinaface", shots)
    detector("yolo_face", shots)
    swapper("inswapper_128", shots, alpha=0.8)
    swapper("simswap_256", shots, alpha=0.8)
    landmarker(shots)
    return ["arcface_w600k_r50", "arcface_simswap", "gfpgan_1.4", "codeformer", "xseg", "occluder",
            "bisenet_resnet34", "retinaface", "yolo_face", "inswapper_128", "simswap_256", "2dfan4"]


def test_the_right_surrogates_pass(shots: photos.Photos) -> None:
    installed = right_models(shots)
    rows = {r.model: r for r in modelcheck.check()}
    for name in [*installed, "yunet", "sface"]:
        assert rows[name].verdict == "PASS", (name, rows[name])
    assert rows["sface"].figures["gap"] > 0.5  # the built-in recogniser on the real photos
    skipped = {n for n, r in rows.items() if r.verdict == "SKIP"}
    assert skipped == set(rows) - {*installed, "yunet", "sface"}
    assert all("not installed (run facestation models " in rows[n].reason for n in skipped)


# --- wrong surrogates: the real I/O signature, a wrong behaviour ------------------------------------------

def _denormalised(shots: photos.Photos) -> None:  # issue 18 point 1: [0, 1] output de-normalised w/ ImageNet
    install_surrogate("arcface_simswap")
    swapper("simswap_256", shots, alpha=0.8, output_norm=(-MEAN / STD, 1 / STD))


def _unnormalised(shots: photos.Photos) -> None:  # the converse: ImageNet-normalised output read as [0, 1]
    install_surrogate("arcface_simswap")
    swapper("simswap_256", shots, alpha=0.8, output_norm=(MEAN, STD))


def _identity_ignored(shots: photos.Photos) -> None:
    install_surrogate("arcface_w600k_r50")
    install_surrogate("inswapper_128", identity=True)


WRONG: dict[str, tuple[str, Callable[[photos.Photos], None], str]] = {
    "de-normalised output": ("simswap_256", _denormalised, "flat"),
    "unnormalised output": ("simswap_256", _unnormalised, "harsh: the face's contrast"),
    "swapped channels": ("gfpgan_1.4", lambda s: install_surrogate("gfpgan_1.4", swap_channels=True),
                         "colour cast"),
    "constant embedding": ("arcface_w600k_r50",
                           lambda s: install_surrogate("arcface_w600k_r50", constant=True),
                           "is not above different people"),
    "constant image": ("gpen_bfr_512", lambda s: install_surrogate("gpen_bfr_512", constant=0.0),
                       "structure lost"),
    "NHWC-read input": ("codeformer", lambda s: install_surrogate("codeformer", nhwc=True), "structure lost"),
    "identity ignored": ("inswapper_128", _identity_ignored, "not nearer the source's identity"),
    "inverted mask": ("xseg", lambda s: install_surrogate("xseg", invert=True), "face centre is 0% covered"),
    "inverted occluder logits": ("occluder", lambda s: install_surrogate("occluder", invert=True),
                                 "corners are 100% covered"),
    "boxes at the wrong scale": ("retinaface", lambda s: detector("retinaface", s, scale=0.5), "IoU"),
    "68 points in input pixels": ("2dfan4", lambda s: landmarker(s, scale=4.0), "of the 68 points inside"),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_each_wrong_surrogate_is_flagged(case: str, shots: photos.Photos) -> None:
    name, install, reason = WRONG[case]
    install(shots)
    (row,) = modelcheck.check([name])
    assert row.verdict == "FAIL" and reason in row.reason, row


def test_without_a_second_person_the_two_person_checks_skip_and_say_why(
        shots: photos.Photos, monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("arcface_w600k_r50")
    install_surrogate("inswapper_128")
    monkeypatch.setattr(photos, "second_person", lambda: None)
    rows = {r.model: r for r in modelcheck.check(["arcface_w600k_r50", "inswapper_128", "sface"])}
    assert {r.verdict for r in rows.values()} == {"SKIP"}
    assert all("scikit-image" in r.reason for r in rows.values())


def test_a_swapper_without_its_recogniser_is_skipped_with_the_fetch_line() -> None:
    install_surrogate("inswapper_128")
    (row,) = modelcheck.check(["inswapper_128"])
    assert row.verdict == "SKIP" and "facestation models fetch arcface_w600k_r50" in row.reason


def test_a_file_refused_at_load_fails_with_its_message() -> None:
    install_surrogate("gfpgan_1.4")
    from pipeline.models import catalog, store

    store.installed_path(catalog.get("gfpgan_1.4")).write_bytes(b"not an onnx file")
    from pipeline.models import sessions

    sessions.release()
    (row,) = modelcheck.check(["gfpgan_1.4"])
    assert row.verdict == "FAIL" and row.reason and "\n" not in row.reason


# --- the command and the Models tab ------------------------------------------------------------------------

def test_cli_table_json_and_exit_codes(shots: photos.Photos, capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("xseg")
    assert main(["models", "check"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["model", "role", "verdict", "ran", "on", "figures", "reason"]
    # the provider onnxruntime really gave the model's session (the CPU here), never what was asked for
    assert any(line.split()[:4] == ["xseg", "occluder", "PASS", "CPUExecutionProvider"]
               for line in out.splitlines())
    assert any(line.split()[:4] == ["gfpgan_1.4", "enhancer", "SKIP", "-"] for line in out.splitlines())
    install_surrogate("xseg", invert=True)
    assert main(["models", "check", "--json"]) == 1
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["xseg"]["verdict"] == "FAIL" and rows["xseg"]["figures"]["centre"] == 0.0
    assert rows["gfpgan_1.4"]["verdict"] == "SKIP"
    assert rows["xseg"]["ran_on"] == "CPUExecutionProvider" and rows["gfpgan_1.4"]["ran_on"] == ""


def test_cli_named_model_missing_says_how_to_fetch_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "check", "gfpgan_1.4"]) == 2
    err = capsys.readouterr().err
    assert "gfpgan_1.4" in err and "facestation models fetch gfpgan_1.4" in err and "Traceback" not in err
    with pytest.raises(ModelMissing):
        modelcheck.check(["gfpgan_1.4"])
    assert main(["models", "check", "no_such_model"]) == 2
    assert "unknown model 'no_such_model'" in capsys.readouterr().err


def test_models_tab_check_shows_the_verdicts(tmp_path: Path) -> None:
    gr = pytest.importorskip("gradio")
    from pipeline.jobs.store import JobStore
    from webui import models_tab
    from webui.common import Ctx, UiConfig

    with gr.Blocks() as blocks:
        c = models_tab.create()
        models_tab.wire(Ctx(UiConfig(), tmp_path / "out", JobStore(tmp_path / "q.sqlite3")), c, [blocks.load])
    assert c["check"].elem_id == "model-check" and c["check_table"].headers == models_tab.CHECK_COLUMNS

    install_surrogate("xseg", invert=True)
    table, summary = models_tab.check()
    rows = {r[0]: r for r in table}
    assert rows["xseg"][2] == "FAIL" and "centre=0" in rows["xseg"][3]
    assert rows["yunet"][2] == "PASS" and "xseg" in summary and "failed" in summary


def test_the_check_releases_the_sessions_it_loaded_and_keeps_the_others() -> None:
    from pipeline.models import sessions

    install_surrogate("xseg")
    install_surrogate("gfpgan_1.4")
    sessions.release()
    families.build("xseg", Settings(), "occluder").masks(np.zeros((1, 256, 256, 3), np.uint8))
    before = sessions.loaded_files()
    assert len(before) == 1
    rows = {r.model: r.verdict for r in modelcheck.check()}
    assert rows["xseg"] == rows["gfpgan_1.4"] == "PASS"
    assert sessions.loaded_files() == before


def test_without_the_photo_the_check_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.errors import UserError

    def no_photo() -> None:
        raise UserError("bench needs a face")

    monkeypatch.setattr(photos, "default_face", no_photo)
    assert main(["models", "check"]) == 2
    assert "pip install matplotlib" in capsys.readouterr().err


def test_the_models_tab_lists_skipped_models_after_the_verdicts_and_the_cli_aligns_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    from webui import models_tab

    results = [modelcheck.ModelCheck("gfpgan_1.4", "enhancer", "SKIP", "not installed"),
               modelcheck.ModelCheck("yunet", "detector", "PASS", "ok", {"faces": 1.0}),
               modelcheck.ModelCheck("frame_enhancer_x", "frame_enhancer", "SKIP", "no judge"),
               modelcheck.ModelCheck("xseg", "occluder", "FAIL", "inverted", {"centre": 0.0})]
    assert [r[0] for r in models_tab.check_rows(results)] == ["yunet", "xseg", "gfpgan_1.4",
                                                              "frame_enhancer_x"]


def test_cli_check_columns_follow_the_longest_cell(shots: photos.Photos,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    install_surrogate("xseg")
    assert main(["models", "check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict_at, reason_at = lines[0].index("verdict"), lines[0].index("reason")
    for line in lines[1:]:
        assert line[verdict_at:].split()[0] in ("PASS", "FAIL", "SKIP"), line
        assert line[reason_at - 2:reason_at] == "  ", line
