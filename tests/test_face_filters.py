"""The face selector's filters (``selector.gender``, ``selector.race``, ``selector.age_min``/``age_max``):
each face found is read by FairFace (the catalog's classifier, the age modifier's loader) and a face a
filter turns away is left alone, and counted. FairFace is a surrogate with its real I/O that reads every face
as the ids it is given (race, gender, age bucket)."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.faces.classify import RACES, FairFace, Traits
from pipeline.image import read_image
from pipeline.models import catalog
from pipeline.plan import ModelPlan
from pipeline.settings import Settings, SettingsError, apply_overrides
from pipeline.types import SelectorRace
from tests import photos
from tests.surrogates import install_surrogate
from tests.videos import make_clip


def _filtered(*overrides: str) -> Settings:
    return apply_overrides(Settings(), list(overrides))


def test_a_face_passes_when_every_filter_admits_it() -> None:
    woman_24 = Traits("east_asian", "female", 24.0, (20, 29))
    assert woman_24.passes("any", "any", 0, 100)
    assert woman_24.passes("female", "east_asian", 25, 40)  # the bracket 20-29 overlaps 25-40
    assert not woman_24.passes("male", "any", 0, 100)
    assert not woman_24.passes("any", "white", 0, 100)
    assert not woman_24.passes("any", "any", 30, 100)  # too young
    assert not woman_24.passes("any", "any", 0, 19)  # too old


def test_the_settings_offer_fairfaces_classes_and_a_valid_age_range() -> None:
    assert typing.get_args(SelectorRace) == ("any", *RACES)
    assert not Settings().selector.filters  # nothing read, nothing loaded at the defaults
    assert _filtered("selector.gender=female").selector.filters
    assert _filtered("selector.age_max=30").selector.filters
    with pytest.raises(SettingsError, match="age_min 50 is above selector.age_max 30"):
        _filtered("selector.age_min=50", "selector.age_max=30")
    with pytest.raises(SettingsError):
        _filtered("selector.gender=other")


def test_the_plan_loads_the_classifier_only_while_a_filter_is_set() -> None:
    assert "fairface" not in ModelPlan.from_settings(Settings()).models
    plan = ModelPlan.from_settings(_filtered("selector.race=indian"))
    assert plan.classifier == "fairface" and "fairface" in plan.models
    assert catalog.get("fairface") in plan.missing()  # fetched like any model: said missing until it is


def test_fairface_reads_race_gender_and_age_by_its_outputs_ids() -> None:
    install_surrogate("fairface", race=3, gender=1, age=6)
    crops = np.zeros((2, 224, 224, 3), np.uint8)
    assert FairFace("fairface").traits(crops) == [Traits("east_asian", "female", 54.0, (50, 59))] * 2
    install_surrogate("fairface", age=2, logits=True)  # the age as 9 scores: the highest one's bucket
    assert FairFace("fairface").ages(crops) == [14.0, 14.0]


def test_a_face_the_filter_turns_away_is_left_alone(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A still at the defaults but the filter: FairFace reads the astronaut as a woman of 20-29; the filter
    for men leaves her alone (the swap is refused: nothing would change, and says why), the filter for women
    swaps her."""
    install_surrogate("fairface", race=0, gender=1, age=3)
    target = photos.astronaut_path(tmp_path)
    refused = tmp_path / "refused.png"
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target), "--output",
                 str(refused), "--set", "selector.gender=male"])
    err = capsys.readouterr().err
    assert code == 2 and "the selector's filters left 1 alone" in err and not refused.exists()
    out = tmp_path / "out.png"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(target), "--output",
                 str(out), "--json", "--set", "selector.gender=female", "--set", "selector.age_max=25"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["faces_swapped"] == 1 and summary["faces_left_alone"] == 0
    assert "fairface" in summary["models"]
    assert not np.array_equal(read_image(out).bgr, read_image(target).bgr)


def test_a_render_leaves_the_filtered_face_alone_on_every_frame(tmp_path: Path) -> None:
    """A video at the defaults but the filter (selector.age_min=30: FairFace reads the face as 20-29): no
    face swapped, the faces turned away counted, every frame as the target's (up to the encoder)."""
    from pipeline.render import Render

    install_surrogate("fairface", age=3)
    clip = make_clip(tmp_path / "clip.mp4", seconds=0.4, size=(320, 240), face_image=photos.astronaut())
    settings = _filtered("selector.age_min=30")
    result = Render(settings, [photos.grace_hopper_path()], clip, tmp_path / "out.mp4").run()
    assert result.faces_swapped == 0 and result.faces_left_alone >= 1
    kept = Render(Settings(), [photos.grace_hopper_path()], clip, tmp_path / "swapped.mp4").run()
    assert kept.faces_swapped == result.frames and kept.faces_left_alone == 0


def test_the_filter_controls_are_the_settings_and_its_model_menu_says_when_it_is_missing() -> None:
    """The Faces area shows the filters with the other selector settings; the classifier's menu says
    "(not installed, size)" until it is fetched, as every model menu does."""
    gr = pytest.importorskip("gradio")
    from webui import controls

    with gr.Blocks():
        made = controls.create_section("selector", Settings())
    assert {"selector.gender", "selector.race", "selector.age_min", "selector.age_max",
            "selector.classifier"} <= set(made)
    assert "selector.classifier" in controls.MODEL_KEYS
    races = dict(controls.choice_pairs("selector.race", typing.get_args(SelectorRace)))
    assert races["Latino / Hispanic"] == "latino_hispanic" and races["any"] == "any"  # in words, values kept
    [(label, value)] = controls.choice_pairs("selector.classifier", ["fairface"])
    assert value == "fairface" and "not installed" in label
    install_surrogate("fairface")
    [(label, _)] = controls.choice_pairs("selector.classifier", ["fairface"])
    assert "not installed" not in label
