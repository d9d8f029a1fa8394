"""The render plan: cores shared by measured cost, a time-boxed batch probe, sessions re-made."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pipeline import renderplan as render
from pipeline.models import sessions
from pipeline.process import FaceProcessor
from pipeline.settings import Settings, apply_overrides
from tests import photos, steps
from tests.surrogates import install_surrogate


def test_heavy_stages_are_the_model_stages_that_cost_more_than_decode_and_encode() -> None:
    models = {"detect": [object()], "swap": [object()], "enhance": [object()], "blend": []}
    # inswapper-like: the swap costs seconds of CPU a frame, decode + encode tens of ms
    assert render.heavy_stages({"detect": 40, "swap": 3200, "enhance": 0, "blend": 20},
                               ["detect", "swap", "enhance"], 52, models) == ["swap"]  # type: ignore[arg-type]
    # yunet + classic at 1080p: nothing heavy, every model stage one thread (decode/encode cost more)
    assert render.heavy_stages({"detect": 40, "swap": 12, "blend": 22}, ["detect"], 52,
                               models) == []  # type: ignore[arg-type]
    # the seed's chain: both face models
    assert render.heavy_stages({"detect": 40, "swap": 3200, "enhance": 6900}, ["detect", "swap", "enhance"],
                               52, models) == ["swap", "enhance"]  # type: ignore[arg-type]
    # a busy machine makes the detector cost more than decoding and encoding: still light beside the swapper
    assert render.heavy_stages({"detect": 90, "swap": 7400, "enhance": 11000}, ["detect", "swap", "enhance"],
                               52, models) == ["swap", "enhance"]  # type: ignore[arg-type]
    # a stage with no model of its own to place
    assert render.heavy_stages({"swap": 3200}, ["swap"], 52, {"swap": []}) == []


def _fake_probe(monkeypatch: pytest.MonkeyPatch, per_frame: float, gain: float = 1.0) -> list[int]:
    """Probe runs that take ``per_frame`` s per frame at batch 1, ``gain`` × less per doubling."""
    runs: list[int] = []

    def run(processor: Any, frame: Any, faces: Any, b: int) -> float:
        runs.append(b)
        return per_frame * b * gain ** math.log2(b)

    monkeypatch.setattr(render, "_probe_run", run)
    return runs


# a chain, as the probe sees it
PROC = type("C", (), {"processor": type("P", (), {"settings": Settings(), "scale": 1})()})()

FRAME = np.zeros((8, 8, 3), np.uint8)


def test_the_probe_stays_within_its_time_box(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _fake_probe(monkeypatch, 1.6)
    # 30 frames: 5 % of the render is 1.5 frames' time; the first run already took 1: nothing more is tried
    assert render.choose_batch_size(PROC, FRAME, "auto", faces=[], first_s=1.6, frames=30) == 1
    assert runs == []
    # 300 frames (10 s): 1 again and 2 fit; 2 is no better, so the probe stops there
    assert render.choose_batch_size(PROC, FRAME, "auto", faces=[], first_s=1.6, frames=300) == 1
    assert runs == [1, 2]
    assert render.choose_batch_size(PROC, FRAME, 4, faces=[], first_s=1.0) == 4


def test_the_probe_grows_the_batch_while_it_pays_and_the_box_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _fake_probe(monkeypatch, 0.01, gain=0.5)  # batching halves the time per frame
    assert render.choose_batch_size(PROC, FRAME, "auto", faces=[], first_s=0.01, frames=110) == 4
    # 110 frames at batch 1 = 1.1 s; 5 % = 0.055 s: the first run, 1 again, 2 and 4 took 0.01 each; 8 is
    # reckoned at 8 × the best time per frame so far (0.02 more): 0.06 would be over the box
    assert runs == [1, 2, 4]
    runs.clear()
    assert render.choose_batch_size(PROC, FRAME, "auto", faces=[], first_s=0.01, frames=3000) == 16
    assert runs == [1, 2, 4, 8, 16]  # a long clip: up to the limit


def _measured(monkeypatch: pytest.MonkeyPatch, *curves: dict[str, dict[int, float]]) -> list[list[str]]:
    """Plans whose heavy stages are those of each of ``curves`` in turn, measured as given."""
    pending = iter(curves)
    heavy: list[list[str]] = []

    def measure(models: Any, reruns: Any, took: Any, stages: Any, n: int, budget: float,
                spin: bool, size: tuple[int, int] = (0, 0)) -> dict[str, dict[int, float]]:
        assert set(stages) <= set(reruns)  # each heavy stage can be run again on the first frame
        return current

    def heavy_stages(cpu: Any, stages: Any, io: float, models: Any) -> list[str]:
        nonlocal current
        current = next(pending)
        heavy.append(list(current))
        return list(current)

    current: dict[str, dict[int, float]] = {}
    monkeypatch.setattr(render, "heavy_stages", heavy_stages)
    monkeypatch.setattr(render, "measure", measure)
    monkeypatch.setattr(render, "free_cores", lambda n, before, after: float(n))
    return heavy


def test_plan_reloads_the_sessions_on_the_threads_it_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    # the swap's second thread pays (taken: every core), then it does not (one thread)
    _measured(monkeypatch, {"swap": {2: 1.6, 1: 3.1}}, {"swap": {2: 3.0, 1: 2.9}})
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    # the source was prepared: the swapper is loaded, on the default threads
    loaded = steps.swapper(proc).swapper.session
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert plan.threads == {"detect": 1, "swap": 2} and plan.placement == "swap on 2 threads"
    # every core for the swapper: its loaded session (onnxruntime's default, every core) is kept, not re-made
    assert steps.swapper(proc).swapper.threads == 0 and steps.swapper(proc).swapper.session is loaded
    assert proc.detector.threads == 1
    assert plan.batch >= 1 and plan.load_s >= 0 and set(plan.cost_ms) >= {"detect", "swap", "blend"}
    assert plan.limit_s == 1.6 and plan.curves == {"swap": {2: 1.6, 1: 3.1}}
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)  # now one thread for the swapper
    assert steps.swapper(proc).swapper.threads == 1 and steps.swapper(proc).swapper.session is not loaded
    assert plan.summary()["curves"] == {"swap": {"2": 3.0, "1": 2.9}}  # as JSON has them


def test_a_measured_curve_is_kept_and_the_next_render_reads_it_instead_of_measuring() -> None:
    """Measuring a heavy stage at fewer threads re-runs the first frame and re-makes its sessions twice:
    the curve is kept (pipeline/plancache.py) for the same model files, frame size, cores and sharing, and
    scaled to the next render's own first frame."""
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one"])
    models = render.planned(render.stage_models(FaceProcessor(settings, [photos.grace_hopper_path()])))
    ran: list[str] = []
    reruns = {"swap": lambda: ran.append("swap")}

    def measure(first_s: float, size: tuple[int, int] = (640, 480), spin: bool = True) -> dict[int, float]:
        return render.measure(models, reruns, {"swap": first_s}, ["swap"], 2, 100.0, spin, size)["swap"]

    measured = measure(1.6)
    assert ran == ["swap"] and set(measured) == {1, 2} and measured[2] == 1.6
    kept = measure(3.2)  # a frame with two faces: the same curve, scaled to its first run
    assert ran == ["swap"] and kept == {2: 3.2, 1: round(3.2 * round(measured[1] / 1.6, 4), 4)}
    measure(1.6, size=(1280, 720))  # another frame size: measured again
    measure(1.6, spin=False)  # a shared machine: measured again
    assert ran == ["swap"] * 3
    measure(1.6)
    assert ran == ["swap"] * 3


def test_threads_fixed_by_the_setting_are_kept_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    _measured(monkeypatch, {})
    fixed = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one",
                                         "execution.threads=3"])
    proc = FaceProcessor(fixed, [photos.grace_hopper_path()])
    loaded = steps.swapper(proc).swapper.session
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert plan.threads == {"detect": 3, "swap": 3}
    swapper = steps.swapper(proc).swapper
    assert swapper.threads == 3 and swapper.session is loaded  # never re-made
    assert render.planned(render.stage_models(proc)) == {"detect": [], "swap": []}


def test_two_heavy_stages_take_turns_and_sleep_on_a_shared_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two heavy stages taking turns on every core. On cores of their own their idle threads spin
    (onnxruntime's default: the loaded swapper is kept); where other processes took part of the cores they
    sleep (re-made so), and the light detector's one thread, which never waits for another, is left alone."""
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    install_surrogate("gfpgan_1.4")
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    on_four = {"swap": {4: 0.8, 3: 1.05, 2: 1.6, 1: 3.1}, "enhance": {4: 1.8, 3: 2.3, 2: 3.45, 1: 5.3}}
    _measured(monkeypatch, {"swap": {2: 1.6, 1: 3.1}, "enhance": {2: 3.45, 1: 5.3}}, on_four)
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128",
                                            "face_enhancer.model=gfpgan_1.4",
                                            "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    loaded = steps.swapper(proc).swapper.session
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert plan.groups == [["swap", "enhance"]] and plan.threads == {"detect": 1, "swap": 2, "enhance": 2}
    assert plan.period_s >= (2 * 1.6 + 2 * 3.45) / 2  # the CPU of both (and the light work) over 2 cores
    side_by_side = "swap on 1 thread ‖ enhance on 1 thread"
    assert {p["placement"] for p in plan.considered} == {plan.placement, side_by_side}
    assert plan.spin and steps.swapper(proc).swapper.session is loaded
    monkeypatch.setattr(render, "cores", lambda: 4)
    monkeypatch.setattr(render, "free_cores", lambda n, before, after: 3.2)  # others took 0.8 of a core
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert plan.groups == [["swap", "enhance"]] and plan.threads == {"detect": 1, "swap": 3, "enhance": 3}
    enhancer = steps.enhancer(proc).enhancer
    assert not plan.spin and not steps.swapper(proc).swapper.spin and not enhancer.runner.spin  # type: ignore
    assert [row["spinning"] for row in sessions.loaded() if row["threads"] == 3] == [False, False]
    assert proc.detector.threads == 1 and proc.detector.spin  # type: ignore[attr-defined]


def test_free_cores_leaves_out_what_other_processes_took(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render.psutil, "cpu_count", lambda logical=True: 2)
    # 10 s: the machine was busy 20 CPU-s, we used 2 of them: others held 1.8 of 2 CPUs -> 1 core left
    assert render.free_cores(2, (0.0, 0.0, 0.0), (10.0, 20.0, 2.0)) == 1.0
    # idle apart from us: every core
    assert render.free_cores(2, (0.0, 0.0, 0.0), (10.0, 19.0, 19.0)) == 2.0
    assert render.free_cores(16, (0.0, 0.0, 0.0), (10.0, 10.0, 0.0)) == 8.0  # others took 1 of 2 logical


def test_plan_unloads_the_swappers_recogniser_once_the_source_is_prepared() -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    recogniser = steps.swapper(proc).swapper.recogniser  # type: ignore[attr-defined]
    assert recogniser.loaded  # it made the source identity
    render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert not recogniser.loaded
    assert "w600k_r50.onnx" not in {row["model"] for row in sessions.loaded()}
    assert steps.swapper(proc).swapper.loaded  # the swapper itself stays


def test_the_recogniser_that_selects_by_reference_is_one_of_the_detect_stages_models(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    _measured(monkeypatch, {})
    settings = apply_overrides(Settings(), ["selector.mode=reference",
                                            f"selector.reference={photos.grace_hopper_path()}"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    assert proc.selects_by_identity
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert proc.face_models.recogniser in render.stage_models(proc)["detect"]
    assert proc.face_models.recogniser.threads == plan.threads["detect"] == 1  # not every core
    assert not FaceProcessor(Settings(), [photos.grace_hopper_path()]).selects_by_identity


def test_the_plan_leaves_gpu_sessions_alone() -> None:
    """Threads are the CPU's business: a CUDA/TensorRT session is not re-made for them (twice a render)."""
    class Model:
        def __init__(self, on_cpu: bool, threads: int = 0) -> None:
            self.on_cpu, self.threads, self.planned, self.spin = on_cpu, threads, not threads, True
            self.calls: list[int] = []

        def set_threads(self, n: int) -> None:
            self.calls.append(n)

        def set_spinning(self, spin: bool) -> None:
            self.spin = spin

    gpu, cpu, fixed = Model(False), Model(True), Model(True, threads=4)
    mine = render.planned({"swap": [gpu], "detect": [cpu, fixed]})  # type: ignore[dict-item]
    assert mine == {"swap": [], "detect": [cpu]}
    render.set_threads(mine, {"swap": 1, "detect": 1}, 8)
    assert gpu.calls == [] and cpu.calls == [1] and fixed.calls == []
