"""One answer to "which models does this setting need?": for every swapper family × enhancer × mask ×
selector combination, the model plan's models = the sessions a preview actually loads = the pre-check's
required list; and for each swapper with each enhancer, the sessions a still and a render load = the
plan's = the provenance tag's."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline import checks, preview
from pipeline.image import read_provenance
from pipeline.models import catalog, sessions
from pipeline.plan import ModelPlan
from pipeline.processors.face_swapper.auto import CLASSIC_NOTICE
from pipeline.render import Render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from tests import photos
from tests.surrogates import install_surrogate
from tests.videos import make_clip

SWAPPERS = ["auto", "classic", "inswapper_128", "hyperswap_1a_256", "simswap_256", "ghost_2_256"]
ENHANCERS = ["none", "gfpgan_1.4", "codeformer"]
MASKS = [["mask.types=box"], ["mask.types=box,occlusion", "mask.occluder=occluder"],
         ["mask.types=box,occlusion,region,mouth", "mask.occluder=xseg"]]
SELECTORS = ["many", "reference", "mapping"]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The catalog name of every session loaded (or handed out from the cache) from here on."""
    seen: list[str] = []
    real = sessions.load

    def load(path: Path, entry: Any, *args: Any, **kwargs: Any) -> Any:
        if entry is not None:
            seen.append(entry.name)
        return real(path, entry, *args, **kwargs)

    monkeypatch.setattr(sessions, "load", load)
    return seen


def _settings(swapper: str, enhancer: str, masks: list[str], selector: str, person: Path) -> Settings:
    """``person``: who to replace (reference and mapping selection)."""
    sets = [f"face_swapper.model={swapper}", f"face_enhancer.model={enhancer}", *masks]
    face = str(person)
    if selector == "reference":
        sets += ["selector.mode=reference", f"selector.reference={face}"]
    elif selector == "mapping":
        sets += [f"selector.mapping={face}"]
    return apply_overrides(Settings(), sets)


def _combinations() -> Iterator[tuple[str, str, list[str], str]]:
    yield from itertools.product(SWAPPERS, ENHANCERS, MASKS, SELECTORS)


def _fresh(loads: list[str]) -> None:
    """A fresh processor for the next run (the sessions stay cached: each is still asked of the loader)."""
    preview.clear()
    loads.clear()


@pytest.fixture
def scene(tmp_path: Path) -> dict[str, Path]:
    for name in catalog.CATALOG:
        if not catalog.get(name).builtin:
            install_surrogate(name)
    target = photos.astronaut_path(tmp_path)
    clip = make_clip(tmp_path / "clip.mp4", seconds=0.1, size=(256, 256), fps=30, audio=False,
                     face_image=photos.astronaut())
    return {"target": target, "clip": clip, "source": photos.grace_hopper_path(), "tmp": tmp_path}


@pytest.mark.slow
def test_the_plan_is_what_every_combination_checks_and_previews(loads: list[str],
                                                                scene: dict[str, Path]) -> None:
    """Every combination: the pre-check's list and the preview's loads are the plan's models."""
    checked = 0
    for swapper, enhancer, masks, selector in _combinations():
        what = f"{swapper} × {enhancer} × {masks[0]} × {selector}"
        settings = _settings(swapper, enhancer, masks, selector, scene["target"])
        plan = ModelPlan.from_settings(settings)
        assert [e.name for e in checks.required_models(settings)] == list(plan.models), what
        _fresh(loads)
        preview.preview(settings, [scene["source"]], scene["target"])
        assert set(loads) == set(plan.models), f"{what}: the preview loaded {sorted(set(loads))}"
        checked += 1
    assert checked == len(SWAPPERS) * len(ENHANCERS) * len(MASKS) * len(SELECTORS)


@pytest.mark.slow
@pytest.mark.parametrize("swapper", SWAPPERS)
def test_a_still_and_a_render_load_the_plan_and_tag_it(swapper: str, loads: list[str],
                                                       scene: dict[str, Path]) -> None:
    """Each swapper with each enhancer (masks and selector taking turns): a still and a render load exactly
    the plan's models (and the quality report's judge, which the plan names apart) and name the plan's list in
    their summary and provenance tag."""
    for n, enhancer in enumerate(ENHANCERS):
        masks, selector = MASKS[(n + SWAPPERS.index(swapper)) % len(MASKS)], SELECTORS[n % len(SELECTORS)]
        what = f"{swapper} × {enhancer} × {masks[0]} × {selector}"
        settings = _settings(swapper, enhancer, masks, selector, scene["target"])
        plan = ModelPlan.from_settings(settings)
        _fresh(loads)
        out = scene["tmp"] / f"still-{n}.png"
        summary = swap_image(settings, [scene["source"]], scene["target"], out)
        assert plan.judge == "sface"  # the defaults judge identity
        assert set(loads) == {*plan.models, plan.judge} and summary["models"] == plan.names, what
        assert "models: " + ", ".join(plan.names) in (read_provenance(out) or ""), what
        _fresh(loads)
        result = Render(settings, [scene["source"]], scene["clip"], scene["tmp"] / f"render-{n}.mp4").run()
        assert set(loads) == {*plan.models, plan.judge}, f"{what}: the render loaded {sorted(set(loads))}"
        assert result.models == plan.names, what


def test_the_plan_resolves_auto_and_leaves_out_what_does_nothing() -> None:
    plan = ModelPlan.from_settings(Settings())
    # none installed
    assert plan.models_of("face_swapper") == ("classic",) and plan.planned == (CLASSIC_NOTICE,)
    assert plan.names == ["yunet", "classic"] and plan.models == ("yunet",)
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    blend_0 = apply_overrides(Settings(), ["face_enhancer.model=gfpgan_1.4", "face_enhancer.blend=0"])
    plan = ModelPlan.from_settings(blend_0)
    assert plan.models_of("face_swapper") == ("inswapper_128", "arcface_w600k_r50") and not plan.planned
    assert plan.models == ("yunet", "inswapper_128", "arcface_w600k_r50")  # a blend of 0 runs no enhancer
    only = apply_overrides(Settings(), ["processors.order=face_enhancer", "face_enhancer.model=gfpgan_1.4"])
    plan = ModelPlan.from_settings(only)
    assert plan.models == ("yunet", "gfpgan_1.4") and plan.models_of("face_swapper") is None
    assert [e.name for e in plan.missing()] == ["gfpgan_1.4"]
