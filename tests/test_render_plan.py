"""The render plan: cores shared by measured cost, a time-boxed batch probe, sessions re-made."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pipeline import renderplan as render
from pipeline.models import sessions
from pipeline.process import FaceProcessor
from pipeline.renderplan import share_threads
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.surrogates import install_surrogate


def test_a_heavy_stage_gets_the_cores_that_decode_and_encode_leave() -> None:
    # inswapper-like: the swap costs seconds per frame, the rest tens of ms: it gets both cores
    assert share_threads({"detect": 40, "swap": 3200, "enhance": 0, "blend": 20}, 52, 2) == \
        {"detect": 1, "swap": 2, "enhance": 1}
    costs = {"detect": 40, "swap": 3200, "enhance": 0, "blend": 20}
    assert share_threads(costs, 52, 16)["swap"] == 15  # 16 / (1 + 112 / 3200), rounded


def test_near_free_models_keep_one_thread_each() -> None:
    # yunet + classic at 1080p: decode/encode cost more than the detector
    assert share_threads({"detect": 40, "swap": 12, "enhance": 0, "blend": 22}, 52, 2) == \
        {"detect": 1, "swap": 1, "enhance": 1}


def test_two_heavy_stages_share_the_cores() -> None:
    plan = share_threads({"detect": 40, "swap": 3200, "enhance": 3600, "blend": 20}, 52, 2)
    assert plan == {"detect": 1, "swap": 1, "enhance": 1}
    assert share_threads({"detect": 40, "swap": 3200, "enhance": 3600, "blend": 20}, 52, 8)["enhance"] == 4


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


def test_plan_reloads_the_sessions_on_the_threads_it_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    plans = iter([{"detect": 1, "swap": 2, "enhance": 1}, {"detect": 1, "swap": 1, "enhance": 1}])
    monkeypatch.setattr(render, "share_threads", lambda cost, io, n, stages=(): next(plans))
    settings = apply_overrides(Settings(), ["swapper.model=inswapper_128", "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    loaded = proc.swapper.session  # the source was prepared: the swapper is loaded, on the default threads
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert plan.threads == {"detect": 1, "swap": 2, "enhance": 1}
    # every core for the swapper: its loaded session (onnxruntime's default, every core) is kept, not re-made
    assert proc.swapper.threads == 0 and proc.swapper.session is loaded
    assert proc.detector.threads == 1
    assert plan.batch >= 1 and plan.load_s >= 0 and set(plan.cost_ms) >= {"detect", "swap", "blend"}
    plan = render.plan_render(proc, photos.grace_hopper(), frames=30)  # now one thread for the swapper
    assert proc.swapper.threads == 1 and proc.swapper.session is not loaded
    fixed = apply_overrides(settings, ["execution.threads=3"])
    proc = FaceProcessor(fixed, [photos.grace_hopper_path()])
    assert render.plan_render(proc, photos.grace_hopper(), frames=30).threads["swap"] == 3


def test_free_cores_leaves_out_what_other_processes_took(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render.psutil, "cpu_count", lambda logical=True: 2)
    # 10 s: the machine was busy 20 CPU-s, we used 2 of them: others held 1.8 of 2 CPUs -> 1 core left
    assert render.free_cores(2, (0.0, 0.0, 0.0), (10.0, 20.0, 2.0)) == 1.0
    # idle apart from us: every core
    assert render.free_cores(2, (0.0, 0.0, 0.0), (10.0, 19.0, 19.0)) == 2.0
    assert render.free_cores(16, (0.0, 0.0, 0.0), (10.0, 10.0, 0.0)) == 8.0  # others took 1 of 2 logical
    # and the share follows: an inswapper-like swap on the one free core gets one thread
    assert share_threads({"detect": 40, "swap": 3200, "enhance": 0, "blend": 20}, 52, 1.0)["swap"] == 1


def test_plan_unloads_the_swappers_recogniser_once_the_source_is_prepared() -> None:
    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    settings = apply_overrides(Settings(), ["swapper.model=inswapper_128", "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    recogniser = proc.swapper.recogniser  # type: ignore[attr-defined]
    assert recogniser.loaded  # it made the source identity
    render.plan_render(proc, photos.grace_hopper(), frames=30)
    assert not recogniser.loaded
    assert "w600k_r50.onnx" not in {row["model"] for row in sessions.loaded()}
    assert proc.swapper.loaded  # the swapper itself stays


def test_the_recogniser_that_selects_by_reference_is_one_of_the_detect_stages_models(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sessions.release()
    monkeypatch.setattr(render, "cores", lambda: 2)
    monkeypatch.setattr(render, "share_threads",
                        lambda cost, io, n, stages=(): {"detect": 1, "swap": 2, "enhance": 1})
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
        def __init__(self, on_cpu: bool) -> None:
            self.on_cpu, self.threads, self.calls = on_cpu, 0, []

        def set_threads(self, n: int) -> None:
            self.calls.append(n)

    gpu, cpu = Model(False), Model(True)
    render.set_threads({"swap": [gpu], "detect": [cpu]}, {"swap": 1, "detect": 1}, 8)  # type: ignore[dict-item]
    assert gpu.calls == [] and cpu.calls == [1]
