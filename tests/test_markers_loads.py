"""Markers load each model once per model plan (issue 35): a render with markers makes no onnxruntime
session twice (one per model file and thread count: the render plan gives a model its threads, which makes
its session again once, as in a render without markers), however many stretches use it, and a marker that
changes no model makes exactly the sessions the render without it makes. Counted at onnxruntime's
``InferenceSession`` itself, the shared session cache (pipeline/models/sessions.py) emptied first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline import markers
from pipeline.models import sessions
from pipeline.models.runtime import ort
from pipeline.settings import apply_overrides
from tests import test_markers
from tests.surrogates import install_surrogate

NEURAL = apply_overrides(test_markers.FAST, ["swapper.model=inswapper_128"])
Made = Counter[tuple[str, int]]  # (model file, intra-op threads) -> sessions made
clip = test_markers.clip  # the module's fixture: a 50-frame clip with one face


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[Made]:
    """The sessions onnxruntime makes from now on, counted by file and threads (the cache emptied first;
    the models built in memory, the built-in converter's and the batch rewrite's own probes, left out)."""
    for name in ("inswapper_128", "hyperswap_1a_256", "arcface_w600k_r50", "gfpgan_1.4"):
        install_surrogate(name)
    sessions.release()
    count: Made = Counter()
    rt = ort()
    real = rt.InferenceSession

    def counted(model: Any, *args: Any, sess_options: Any = None, **kwargs: Any) -> Any:
        name = Path(model).name if isinstance(model, str | Path) else ""
        if name.endswith(".onnx"):
            count[(name, sess_options.intra_op_num_threads if sess_options else 0)] += 1
        return real(model, *args, sess_options=sess_options, **kwargs)

    monkeypatch.setattr(rt, "InferenceSession", counted)
    yield count
    sessions.release()


def _stretches(tmp_path: Path, clip: Path, settings: Any, made: Made,
               monkeypatch: pytest.MonkeyPatch) -> list[Made]:
    """The sessions made before the first stretch's render (its processors, built up front) and in each
    stretch's render, for a job of ``settings`` run from an empty cache."""
    from pipeline.render import Render

    marks: list[Made] = []
    real = Render.run

    def run(self: Render) -> Any:
        marks.append(Counter(made))
        return real(self)

    monkeypatch.setattr(Render, "run", run)
    sessions.release()
    made.clear()
    test_markers._run_job(tmp_path, clip, settings, "marked.mp4")
    marks.append(Counter(made))
    return [marks[0], *(after - before for before, after in zip(marks, marks[1:], strict=False))]


def test_a_marker_that_changes_no_model_makes_no_session_again(tmp_path: Path, clip: Path, made: Made,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The second stretch renders with the first one's plan and sessions: it makes none (no model loaded
    again, nothing measured again)."""
    marked = markers.with_markers(NEURAL, ["20=color.method=mkl"])
    built, first, second = _stretches(tmp_path, clip, marked, made, monkeypatch)
    assert "w600k_r50.onnx" in {name for name, _ in built} and first  # the sources read, the models loaded
    assert not second, sorted(second.items())


FIXED = apply_overrides(NEURAL, ["execution.threads=1"])  # no thread plan: a session made twice is a reload


@pytest.mark.parametrize("changes", [
    ["20=color.method=mkl"],
    ["15=swapper.model=hyperswap_1a_256,face_enhancer.model=gfpgan_1.4",
     "35=swapper.model=inswapper_128,face_enhancer.model=none"],  # and back: the first model plan again
], ids=["no-model-changed", "models-switched"])
def test_each_model_file_is_loaded_once(tmp_path: Path, clip: Path, made: Made,
                                        monkeypatch: pytest.MonkeyPatch, changes: list[str]) -> None:
    """With the threads fixed (``execution.threads``) the plan makes no session again: every model file
    the stretches use, the sources' recogniser included, is loaded once in the whole job."""
    parts = _stretches(tmp_path, clip, markers.with_markers(FIXED, changes), made, monkeypatch)
    every = sum(parts, Counter())
    assert max(every.values()) == 1, sorted(every.items())
    assert "w600k_r50.onnx" in {name for name, _ in every}
    assert not parts[-1], sorted(parts[-1].items())  # the last stretch: a model plan rendered before


def test_a_model_the_plan_measured_is_not_loaded_again(tmp_path: Path, clip: Path, made: Made,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine the detector can cost enough to be measured at fewer threads and handed every core
    at the end (its default session, dropped while measuring, not in the cache any more): the second
    stretch's detector takes the plan's session, not onnxruntime's default made again (seen once in a
    full run at load). Every model stage counted heavy here, as that load made the detector, and the
    curves measured afresh (none kept from an earlier test)."""
    from pipeline import plancache, renderplan

    monkeypatch.setattr(renderplan, "heavy_stages", lambda cpu_ms, stages, io_ms, models:
                        [s for s in stages if models.get(s)])
    monkeypatch.setattr(plancache, "curve", lambda *args, **kwargs: None)
    marked = markers.with_markers(NEURAL, ["20=color.method=mkl"])
    built, first, second = _stretches(tmp_path, clip, marked, made, monkeypatch)
    assert first  # measured: sessions made at fewer threads in the first stretch
    assert not second, sorted(second.items())
