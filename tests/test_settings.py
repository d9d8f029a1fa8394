from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from pipeline import settings as s
from pipeline.errors import SettingsError
from pipeline.models import catalog
from pipeline.types import DetectorName, EnhancerName, SwapperName

REQUIRED_KEYS = [
    "detector.model", "detector.score", "selector.mode", "face_swapper.model", "face_enhancer.model",
    "color.method",
    "mask.blur", "output.encoder", "output.quality", "execution.providers", "execution.batch_size",
]


def test_required_keys_exist() -> None:
    keys = s.keys()
    for key in REQUIRED_KEYS:
        assert key in keys


def test_overrides_parse_types() -> None:
    out = s.apply_overrides(s.Settings(), [
        "detector.score=0.7", "execution.providers=cpu", "execution.batch_size=4", "mask.types=box,region",
        "video.start=1.5", "mask.padding=0,10,0,10", "face_swapper.poisson=true", "selector.reference=none",
        "face_enhancer.model=none",
    ])
    assert out.detector.score == 0.7
    assert out.execution.providers == ("cpu",)
    assert out.execution.batch_size == 4
    assert out.mask.types == ("box", "region")
    assert out.video.start == 1.5
    assert out.mask.padding == (0, 10, 0, 10)
    assert out.face_swapper.poisson is True
    assert out.selector.reference is None
    assert out.face_enhancer.model == "none"
    assert s.apply_overrides(out, ["execution.batch_size=auto"]).execution.batch_size == "auto"


def test_original_is_not_mutated() -> None:
    base = s.Settings()
    s.apply_overrides(base, ["detector.score=0.9"])
    assert base.detector.score == 0.5
    with pytest.raises(ValidationError):
        base.detector.score = 0.1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("detector.score=3", "detector.score"),
        ("detector.scor=0.3", "detector.scor"),
        ("nosection=1", "nosection"),
        ("selector.mode=everyone", "selector.mode"),
        ("execution.batch_size=abc", "execution.batch_size"),
        ("execution.batch_size=0", "execution.batch_size"),
        ("detector.size=333", "detector.size"),
        ("mask.padding=0,200,0,0", "mask.padding"),
        ("execution.providers=gpu", "execution.providers"),
        ("output.quality=101", "output.quality"),
    ],
)
def test_bad_values_name_the_key(override: str, named: str) -> None:
    with pytest.raises(SettingsError) as err:
        s.apply_overrides(s.Settings(), [override])
    assert named in str(err.value)


def test_malformed_override() -> None:
    with pytest.raises(SettingsError, match="section.key=value"):
        s.apply_overrides(s.Settings(), ["detector.score"])


def test_validate_rejects_unknown_top_level_and_nested_keys() -> None:
    with pytest.raises(SettingsError, match="unknown settings key 'colour'"):
        s.validate({"colour": {}})
    with pytest.raises(SettingsError, match="detector.fast"):
        s.validate({"detector": {"fast": True}})


def test_json_round_trip() -> None:
    a = s.apply_overrides(s.Settings(), ["color.method=mkl", "mask.types=box,occlusion"])
    b = s.Settings.model_validate_json(s.to_json(a))
    assert a == b


@pytest.mark.parametrize("literal", [DetectorName, SwapperName, EnhancerName])
def test_every_model_choice_is_in_the_catalog(literal: object) -> None:
    for name in typing.get_args(literal):
        if name in ("auto", "classic", "none"):
            continue
        assert catalog.get(name).name == name


@pytest.mark.parametrize(("override", "said"), [
    ("detector.interval=0",
     "detector.interval: Input should be greater than or equal to 1, or 'auto' (got '0')"),
    ("execution.batch_size=abc",
     "execution.batch_size: Input should be a valid integer, unable to parse string as an integer, "
     "or 'auto' (got 'abc')"),
])
def test_auto_or_a_number_is_refused_in_one_message(override: str, said: str) -> None:
    with pytest.raises(SettingsError) as err:
        s.apply_overrides(s.Settings(), [override])
    assert str(err.value) == said


def test_each_processor_section_is_its_processors_and_named_after_it() -> None:
    """``processors.order`` takes the names of the ProcessorSection subclasses: each is the field of its
    section in Settings and a processor the registry finds (whose ``section`` it is)."""
    from pipeline.processors import PROCESSORS

    sections = {c.processor: c for c in s.ProcessorSection.__subclasses__()}
    for name, section in sections.items():
        assert s.Settings.model_fields[name].annotation is section and PROCESSORS[name].section == name
    assert set(sections) == set(PROCESSORS)
    order = typing.get_args(s.ProcessorSettings.model_fields["order"].annotation)[0]
    assert set(typing.get_args(order)) == set(PROCESSORS)



def test_a_set_that_changes_a_processor_puts_it_in_the_order_unless_the_order_is_set_too() -> None:
    """The enhancer is not in the default order (its model is none until one is chosen): ``--set
    face_enhancer.model=gfpgan_1.4`` alone enhances after the swap, as ticking it in the UI does; each
    processor so changed joins at the end, in the order given; the order set too is kept as given; a value
    set to its default (a model of none) leaves the order as it was."""
    base = s.Settings()
    assert base.processors.order == ("face_swapper",)
    joined = s.apply_overrides(base, ["face_enhancer.model=gfpgan_1.4"])
    assert joined.processors.order == ("face_swapper", "face_enhancer")
    both = s.apply_overrides(base, ["age_modifier.direction=20", "frame_enhancer.model=real_esrgan_x2"])
    assert both.processors.order == ("face_swapper", "age_modifier", "frame_enhancer")
    kept = s.apply_overrides(base, ["enhancer.model=gfpgan_1.4", "processors.order=face_swapper"])
    assert kept.processors.order == ("face_swapper",)  # said by the check instead (test_request.py)
    assert s.apply_overrides(base, ["face_enhancer.model=none"]).processors.order == ("face_swapper",)
    assert s.apply_overrides(joined, ["face_enhancer.blend=30"]).processors.order == joined.processors.order
