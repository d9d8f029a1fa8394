"""Provider choice and fallback, faking what this CPU machine lacks (CUDA, TensorRT)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import UserError
from pipeline.models import catalog, runtime, sessions, store
from pipeline.models.runner import ModelRunner
from tests import photos
from tests.surrogates import install_surrogate

REPO = Path(__file__).resolve().parent.parent


class _FakeSession:
    """What onnxruntime-gpu gives on a machine without a GPU: asked for CUDA, it quietly runs on CPU."""

    def __init__(self, real: Any, asked: list[Any]) -> None:
        self._real, self.asked = real, asked

    def get_providers(self) -> list[str]:
        return ["CPUExecutionProvider"]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.fixture
def gpu_package_without_gpu(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    rt = runtime.ort()
    asked: list[Any] = []
    real_session = rt.InferenceSession
    monkeypatch.setattr(rt, "get_available_providers",
                        lambda: ["TensorrtExecutionProvider", "CUDAExecutionProvider",
                                 "CPUExecutionProvider"])

    def fake(path: str, sess_options: Any = None, providers: list[Any] | None = None) -> _FakeSession:
        asked.append(providers)
        session = real_session(path, sess_options=sess_options, providers=["CPUExecutionProvider"])
        return _FakeSession(session, asked)

    monkeypatch.setattr(rt, "InferenceSession", fake)
    sessions.release()
    yield asked
    sessions.release()


def test_resolve_keeps_the_requested_order_of_what_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    rt = runtime.ort()
    monkeypatch.setattr(rt, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    resolved = sessions.resolve_providers(("tensorrt", "cuda", "cpu"))
    assert resolved == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert sessions.resolve_providers(("cpu",)) == ["CPUExecutionProvider"]


def test_nothing_available_falls_back_to_cpu_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    rt = runtime.ort()
    monkeypatch.setattr(rt, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with caplog.at_level(logging.WARNING):
        assert sessions.resolve_providers(("tensorrt", "cuda")) == ["CPUExecutionProvider"]
    assert "none of the requested providers" in caplog.text


def test_gpu_package_on_a_cpu_machine_reports_what_it_really_got(
        gpu_package_without_gpu: list[Any], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        session = sessions.get_session("yunet", ("tensorrt", "cuda", "cpu"))
    # the last session made: ours (not a conversion check)
    asked = [p[0] for p in gpu_package_without_gpu[-1]]
    assert asked == ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    trt_options = gpu_package_without_gpu[-1][0][1]
    assert trt_options["trt_engine_cache_enable"] and Path(trt_options["trt_engine_cache_path"]).is_dir()
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert "asked for TensorrtExecutionProvider but got CPUExecutionProvider" in caplog.text
    (row,) = sessions.loaded()
    assert row["requested"][0] == "TensorrtExecutionProvider" and row["providers"] == ["CPUExecutionProvider"]
    assert row["name"] == "yunet"  # its catalog name, whatever the loaded copy's file is called


def test_sessions_are_cached_per_model_and_providers_and_released() -> None:
    sessions.release()
    a = sessions.get_session("yunet", ("cpu",))
    assert sessions.get_session("yunet", ("cpu",)) is a
    assert sessions.get_session("yunet", ("cpu",), threads=1) is not a
    assert sessions.release(store.model_path(catalog.get("yunet"))) == 2
    assert sessions.loaded() == []


@pytest.mark.parametrize(("smi", "extra"), [("exit 0", "gpu"), ("exit 9", "cpu"), (None, "cpu")])
def test_setup_picks_the_extra_by_whether_a_gpu_answers(tmp_path: Path, smi: str | None, extra: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if smi is not None:
        fake = bin_dir / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\n{smi}\n")
        fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "FACESTATION_EXTRA"}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    out = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh"), "--print-extra"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == extra


def test_auto_prefers_the_fp16_swapper_on_a_gpu_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.processors.face_swapper.auto import resolve_swapper as resolve_name
    from tests.surrogates import install_surrogate

    for name in ("inswapper_128", "inswapper_128_fp16", "arcface_w600k_r50"):
        install_surrogate(name)
    assert resolve_name("auto", ("cpu",)) == "inswapper_128"
    rt = runtime.ort()
    monkeypatch.setattr(rt, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert resolve_name("auto", ("cuda", "cpu")) == "inswapper_128_fp16"
    assert resolve_name("auto", ("cpu",)) == "inswapper_128"  # CPU asked for: full precision
    assert resolve_name("inswapper_128", ("cuda", "cpu")) == "inswapper_128"  # an explicit choice stands


def test_fp16_preference_does_not_jump_ahead_of_better_models(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.processors.face_swapper.auto import resolve_swapper as resolve_name
    from tests.surrogates import install_surrogate

    for name in ("hyperswap_1a_256", "inswapper_128", "inswapper_128_fp16", "arcface_w600k_r50"):
        install_surrogate(name)
    rt = runtime.ort()
    monkeypatch.setattr(rt, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert resolve_name("auto", ("cuda", "cpu")) == "hyperswap_1a_256"


def test_device_memory_is_read_from_nvidia_smi_and_reused(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho x >> {calls}\necho 3120\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(sessions, "_gpu_memory", {})
    assert sessions.device_memory_mb() == 3120.0
    assert sessions.device_memory_mb() == 3120.0  # within max_age: no second process
    assert calls.read_text().count("x") == 1
    assert sessions.device_memory_mb(max_age_s=0.0) == 3120.0 and calls.read_text().count("x") == 2


@pytest.mark.parametrize(("batch", "expected"), [(1, 1), (None, None)])
def test_a_catalog_session_loads_on_first_use_and_reads_its_batch(batch: int | None,
                                                                  expected: int | None) -> None:
    install_surrogate("arcface_w600k_r50", batch=batch)
    sessions.release()
    model = sessions.CatalogSession("arcface_w600k_r50")
    assert sessions.loaded() == []  # constructing it loads nothing
    assert model.batch == expected  # not batch-aware: a fixed batch stays as the file has it
    assert model.session is sessions.get_session("arcface_w600k_r50")
    assert len(sessions.loaded()) == 1


def test_a_model_of_another_role_is_refused_with_the_valid_names() -> None:
    with pytest.raises(UserError, match="not a enhancer model .*gfpgan_1.4"):
        ModelRunner("xseg", "enhancer")


def _sizes() -> dict[str, float]:
    return {row["model"]: row["mb"] for row in sessions.loaded()}


def test_an_explicit_budget_evicts_in_lru_order(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [install_surrogate(n) for n in ("arcface_w600k_r50", "inswapper_128", "gfpgan_1.4")]
    sessions.release()
    sizes = {p.name: p.stat().st_size for p in paths}
    # a budget (bytes) with room for any two of the three files, not for all three
    room = sum(sizes.values()) - min(sizes.values()) // 2
    monkeypatch.setattr(sessions, "memory_budget", lambda provider="CPUExecutionProvider", value="auto": room)
    try:
        models = [sessions.CatalogSession(n) for n in ("arcface_w600k_r50", "inswapper_128", "gfpgan_1.4")]
        _ = models[0].session, models[1].session
        _ = models[0].session  # arcface used last: inswapper is the least recent
        _ = models[2].session
        assert [m.loaded for m in models] == [True, False, True]
        assert set(_sizes()) == {paths[0].name, paths[2].name}
    finally:
        sessions.release()


def test_auto_budget_counts_free_memory_and_what_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("VM", (), {"available": 4 * 2**30})())
    sessions.release()
    assert sessions.memory_budget() == int(0.75 * 4 * 2**30)
    assert sessions.memory_budget(value=512) == 512 * 2**20


def test_a_batch_1_export_is_held_once_as_its_dynamic_batch_rewrite() -> None:
    install_surrogate("inswapper_128")
    sessions.release()
    model = ModelRunner("inswapper_128", "swapper")
    assert model.batch is None  # rewritten to a dynamic batch
    assert len(sessions.loaded()) == 1  # the original's session was dropped, not kept beside it
    sessions.release()
    again = ModelRunner("inswapper_128", "swapper")
    assert again.batch is None and len(sessions.loaded()) == 1  # a warm start loads the rewrite only
    assert sessions.loaded()[0]["model"] != "inswapper_128.onnx"


def test_set_threads_drops_the_loaded_session() -> None:
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    model = sessions.CatalogSession("arcface_w600k_r50", threads=2)
    _ = model.session
    assert model.set_threads(2) is False
    assert model.set_threads(1) is True and sessions.loaded() == []
    _ = model.session
    assert [row["threads"] for row in sessions.loaded()] == [1]


def test_a_session_set_not_to_spin_is_a_session_of_its_own_whose_idle_threads_sleep() -> None:
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    model = sessions.CatalogSession("arcface_w600k_r50")
    def spins(session: Any) -> bool:
        entries = session.get_session_options()
        try:
            return entries.get_session_config_entry("session.intra_op.allow_spinning") != "0"
        except RuntimeError:  # not set: onnxruntime's default, spinning
            return True

    assert spins(model.session)
    model.set_spinning(False)
    assert sessions.loaded() == []  # dropped: the next use loads it anew
    assert not spins(model.session)
    assert [row["spinning"] for row in sessions.loaded()] == [False]
    spinning = sessions.CatalogSession("arcface_w600k_r50")
    _ = spinning.session  # the same file as another owner uses it: a session of its own, spinning
    assert sorted(row["spinning"] for row in sessions.loaded()) == [False, True]
    sessions.release()


def test_unload_drops_the_session_and_gives_the_memory_back(monkeypatch: pytest.MonkeyPatch) -> None:
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    trims: list[int] = []
    monkeypatch.setattr(sessions, "return_freed_memory", lambda: trims.append(1))
    model = sessions.CatalogSession("arcface_w600k_r50")
    first = model.session
    model.unload()
    assert not model.loaded and sessions.loaded() == [] and trims == [1]
    model.unload()  # nothing loaded: nothing to do
    assert trims == [1]
    assert model.session is not first and len(sessions.loaded()) == 1  # loads again on next use
    sessions.release()
    assert trims == [1, 1]



def test_the_model_memory_setting_applies_wherever_models_are_built() -> None:
    """Not only in video renders: a still swap, a preview or an image job builds its models the same way; and
    each owner's budget is its own (a preview's settings do not change a running job's)."""
    from pipeline.process import FaceProcessor
    from pipeline.process.models import FaceModels
    from pipeline.processors.face_enhancer import FaceEnhancerProcessor
    from pipeline.settings import Settings, apply_overrides

    install_surrogate("gfpgan_1.4")
    small = FaceModels.build(apply_overrides(Settings(), ["execution.model_memory=512"]))
    other = FaceModels.build(Settings())
    assert small.detector.memory == 512 and other.detector.memory == "auto"  # type: ignore[attr-defined]
    settings = apply_overrides(Settings(), ["execution.model_memory=640", "face_enhancer.model=gfpgan_1.4"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    enhancer = next(p for p in proc.processors if isinstance(p, FaceEnhancerProcessor))
    assert [s.memory for s in enhancer.sessions()] == [640]
    assert proc.detector.memory == 640 and small.detector.memory == 512  # type: ignore[attr-defined]


def test_a_load_makes_room_within_the_budget_of_whoever_asks() -> None:
    for name in ("arcface_w600k_r50", "gfpgan_1.4"):
        install_surrogate(name)
    sessions.release()
    try:
        roomy = sessions.CatalogSession("arcface_w600k_r50")
        _ = roomy.session
        tight = sessions.CatalogSession("gfpgan_1.4")
        tight.memory = 0  # MB: no room for anything else (the surrogates are far smaller than a MB)
        _ = tight.session
        assert not roomy.loaded and tight.loaded  # the tight owner's budget dropped the other session
        again = sessions.CatalogSession("arcface_w600k_r50")  # "auto": plenty of room, nothing dropped
        _ = again.session
        assert tight.loaded and again.loaded
    finally:
        sessions.release()
