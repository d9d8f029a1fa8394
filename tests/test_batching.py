"""Rewriting a fixed batch-1 export to a dynamic batch, verified and cached."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pipeline.models import batching
from tests.surrogates import make_surrogate


def _run(path: Path, target: np.ndarray, source: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"target": target, "source": source})[0])


def _inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    source = rng.standard_normal((n, 512)).astype(np.float32)
    target = rng.uniform(0, 1, (n, 3, 128, 128)).astype(np.float32)
    return target, source / np.linalg.norm(source, axis=1, keepdims=True)


def test_dynamic_batch_rewrites_and_matches_batch_one_runs(tmp_path: Path) -> None:
    src = make_surrogate("inswapper_128", tmp_path / "in.onnx")
    dst = tmp_path / "out.onnx"
    assert batching.dynamic_batch(src, dst)
    graph = onnx.load(str(dst)).graph
    for vi in [*graph.input, *graph.output]:
        assert vi.type.tensor_type.shape.dim[0].dim_param == batching.BATCH_DIM
    target, source = _inputs(5)
    batched = _run(dst, target, source)
    singles = np.concatenate([_run(src, target[i:i + 1], source[i:i + 1]) for i in range(5)])
    assert batched.shape == (5, 3, 128, 128)
    np.testing.assert_allclose(batched, singles, atol=1e-5, rtol=0)
    with pytest.raises(Exception, match="(?i)dimension|shape|index"):
        _run(src, target, source)  # the original really was fixed to 1


def test_a_hard_coded_batch_of_one_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    src = make_surrogate("hyperswap_1a_256", tmp_path / "work" / "in.onnx", hardcode_batch=True)
    dst = src.with_name("out.onnx")
    assert not batching.dynamic_batch(src, dst)
    assert not dst.exists() and list(src.parent.iterdir()) == [src]  # no partial file either


def test_an_already_dynamic_model_is_left_alone(tmp_path: Path) -> None:
    src = make_surrogate("arcface_w600k_r50", tmp_path / "in.onnx")  # batch axis N already
    assert not batching.dynamic_batch(src, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_half_precision_models_batch_too(tmp_path: Path) -> None:
    src = make_surrogate("inswapper_128_fp16", tmp_path / "in.onnx")
    assert batching.dynamic_batch(src, tmp_path / "out.onnx")


def test_batched_path_is_cached_by_content(isolated_dirs: dict[str, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    src = make_surrogate("ghost_1_256", tmp_path / "g.onnx", seed=11)
    first = batching.batched_path(src)
    assert first is not None and first.parent == isolated_dirs["cache"] / "batched"
    copy = tmp_path / "elsewhere.onnx"
    copy.write_bytes(src.read_bytes())

    def boom(*_: object) -> bool:
        raise AssertionError("should have come from the cache")

    monkeypatch.setattr(batching, "dynamic_batch", boom)
    assert batching.batched_path(src) == first
    assert batching.batched_path(copy) is not None  # same sha256 -> same cached file, no second rewrite


def test_batched_path_remembers_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = make_surrogate("simswap_256", tmp_path / "s.onnx", hardcode_batch=True, seed=12)
    assert batching.batched_path(src) is None
    calls = []
    monkeypatch.setattr(batching, "_memo", {})
    monkeypatch.setattr(batching, "dynamic_batch", lambda *a: calls.append(a) or True)
    assert batching.batched_path(src) is None and calls == []  # the .failed marker is honoured
