"""Cost twins (scripts/make_twins.py): catalog I/O, cost read off the graph, the streaming writer, the cache.

The fast tests build every twin's graph at full size without drawing a weight (cost and size targets) and
write a narrow version of each (same layers, fewer channels) that onnxruntime loads and runs. The slow test
writes the full 554 MB inswapper twin into a persistent cache and runs it through the swapper.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import onnxruntime as ort
import platformdirs
import pytest
from onnx import numpy_helper

from pipeline.models import catalog
from pipeline.models.validate import check_io, session_io

REPO = Path(__file__).resolve().parent.parent

# The real files' tensor names (the catalog leaves some open; the twins take them from the real files).
REAL_IO = {
    "inswapper_128": (["target", "source"], ["output"]),
    "arcface_w600k_r50": (["input.1"], ["683"]),
    "gfpgan_1.4": (["input"], ["output"]),
    "scrfd_10g": (["input.1"], ["448", "471", "494", "451", "474", "497", "454", "477", "500"]),
}


def _load_script() -> ModuleType:
    if "make_twins" in sys.modules:
        return sys.modules["make_twins"]
    spec = importlib.util.spec_from_file_location("make_twins", REPO / "scripts" / "make_twins.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_twins"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


mt = _load_script()
NAMES = list(mt.TWINS)


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def test_every_twin_is_named_and_maps_to_a_catalog_entry() -> None:
    assert set(NAMES) == set(REAL_IO)
    for twin in mt.TWINS.values():
        assert catalog.get(twin.entry).file.endswith(".onnx")
    assert [t.name for t in mt.resolve(["retinaface", "inswapper_128"])] == ["scrfd_10g", "inswapper_128"]


@pytest.mark.parametrize("name", NAMES)
def test_full_size_graph_meets_its_targets(name: str) -> None:
    """Parameters, exact file size and cost of the full-size graph, without drawing a weight."""
    twin = mt.TWINS[name]
    net, size, gmac = mt.measure(twin)
    size_tol, flops_tol = twin.tolerance
    assert net.params == pytest.approx(twin.target_params, rel=size_tol)
    assert size == pytest.approx(twin.real_size, rel=size_tol)
    assert gmac[twin.target_label] == pytest.approx(twin.target_gmac, rel=flops_tol)


def test_inswapper_cost_is_the_issue_layer_list() -> None:
    """The graph counter agrees with the issue's layer list counted by hand (≈ 350 GFLOP at 2 × MAC)."""
    convs = [  # (C_in, C_out, k, output side)
        (3, 128, 7, 128), (128, 256, 3, 128), (256, 512, 3, 64), (512, 1024, 3, 32),
        *[(1024, 1024, 3, 32)] * 12,
        (1024, 512, 3, 64), (512, 256, 3, 128), (256, 128, 3, 128), (128, 3, 7, 128),
    ]
    macs = sum(cin * cout * k * k * side * side for cin, cout, k, side in convs)
    macs += 12 * 2 * 512 * 1024  # AdaIN scale and shift Gemms
    net, _, gmac = mt.measure(mt.TWINS["inswapper_128"])
    assert gmac["1×128² face"] * 1e9 == pytest.approx(macs, rel=1e-12)
    assert 2 * macs / 1e9 == pytest.approx(350, rel=0.01)


def test_gfpgan_reference_count_agrees_with_the_graph() -> None:
    _, _, gmac = mt.measure(mt.TWINS["gfpgan_1.4"])
    assert gmac["1×512² face"] == pytest.approx(mt.gfpgan_reference_gmac(), rel=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_narrow_twin_has_the_catalog_io_and_runs(name: str, tmp_path: Path) -> None:
    twin = mt.TWINS[name]
    entry = catalog.get(twin.entry)
    result = mt.build_twin(twin, tmp_path, width=twin.test_width)
    assert result.built and result.path == tmp_path / entry.file
    net, size, _ = mt.measure(twin, twin.test_width)
    assert result.size == size == result.path.stat().st_size  # the streamed file is the predicted one

    model = onnx.load(str(result.path))
    onnx.checker.check_model(model)
    floats = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    assert sum(math.prod(i.dims) for i in floats) >= result.params == net.params

    session = _session(result.path)
    inputs, outputs = session_io(session)
    check_io(entry, inputs, outputs, result.path)
    assert ([a.name for a in inputs], [a.name for a in outputs]) == REAL_IO[name]
    assert all(a.dtype == "float32" for a in [*inputs, *outputs])
    rng = np.random.default_rng(0)
    feeds = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in twin.run_dims.items()}
    results = session.run(None, feeds)
    for spec, value in zip(entry.outputs, results, strict=False):
        assert value.ndim == len(spec.shape) and np.isfinite(value).all()
        fixed = [(d, v) for d, v in zip(spec.shape, value.shape, strict=True) if isinstance(d, int)]
        assert all(d == v for d, v in fixed)
    assert mt.check_twin(twin, result.path) > 0


def test_inswapper_emap_is_the_last_initializer(tmp_path: Path) -> None:
    from pipeline.swap.neural import read_emap

    twin = mt.TWINS["inswapper_128"]
    result = mt.build_twin(twin, tmp_path, width=twin.test_width)
    model = onnx.load(str(result.path))
    last = model.graph.initializer[-1]
    assert last.name == "emap" and list(last.dims) == [512, 512]
    emap = read_emap(result.path)
    np.testing.assert_array_equal(emap, numpy_helper.to_array(last))
    assert 0.5 < float(np.linalg.norm(emap, axis=0).mean()) < 2.0  # columns of about unit length


def test_cache_skips_an_identical_twin_and_rebuilds_a_changed_one(tmp_path: Path) -> None:
    twin = mt.TWINS["scrfd_10g"]
    first = mt.build_twin(twin, tmp_path, width=0.125)
    assert first.built
    assert not mt.build_twin(twin, tmp_path, width=0.125).built
    assert mt.build_twin(twin, tmp_path, width=0.125, force=True).built
    with open(first.path, "r+b") as fh:  # same size, one byte different
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 0xFF]))
    assert mt.build_twin(twin, tmp_path, width=0.125).built
    assert mt.build_twin(twin, tmp_path, width=0.25).built  # another graph: another spec


def test_twins_are_reproducible(tmp_path: Path) -> None:
    twin = mt.TWINS["arcface_w600k_r50"]
    a = mt.build_twin(twin, tmp_path / "a", width=0.125)
    b = mt.build_twin(twin, tmp_path / "b", width=0.125)
    assert a.path.read_bytes() == b.path.read_bytes()


def test_script_prints_sizes_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mt.main([str(tmp_path), "--only", "det_10g"]) == 0  # the full-size detector twin is 17 MB
    out = capsys.readouterr().out
    assert "GFLOP = 2 × GMAC" in out and "I/O matches catalog 'retinaface'" in out
    assert "4.23 M" in out and "640×480 (VGA)" in out and "OUT" not in out
    assert mt.main([str(tmp_path), "--only", "scrfd_10g"]) == 0
    assert "cached" in capsys.readouterr().out


def _twin_cache() -> Path:
    root = os.environ.get("FACESTATION_TWINS") or Path(platformdirs.user_cache_dir("facestation")) / "twins"
    return Path(root)


@pytest.mark.slow
def test_full_inswapper_twin_runs_in_the_swapper(isolated_dirs: dict[str, Path]) -> None:
    """554 MB, ≈ 350 GFLOP; the swapper loads it (catalog check, dynamic-batch rewrite) and swaps one face."""
    from pipeline.swap.neural import NeuralSwapper, SourceIdentity, read_emap

    twin = mt.TWINS["inswapper_128"]
    result = mt.build_twin(twin, _twin_cache())  # cached across runs: FACESTATION_TWINS or the user cache
    size_tol, flops_tol = twin.tolerance
    assert result.size == pytest.approx(554e6, rel=size_tol)
    assert 2 * result.gmac[twin.target_label] == pytest.approx(350, rel=flops_tol)

    installed = isolated_dirs["models"] / catalog.get("inswapper_128").file
    installed.symlink_to(result.path)
    swapper = NeuralSwapper("inswapper_128")
    emap = read_emap(installed)
    assert emap.shape == (512, 512)
    rng = np.random.default_rng(3)
    embedding = rng.standard_normal(512).astype(np.float32)
    embedding /= np.linalg.norm(embedding)
    latent = embedding @ emap
    identity = SourceIdentity("inswapper_128", latent / np.linalg.norm(latent), embedding, 1)
    crops = rng.integers(0, 256, (1, 128, 128, 3), dtype=np.uint8)
    swapped = swapper.swap(crops, identity)
    assert swapped.shape == crops.shape and swapped.dtype == np.uint8
    assert swapper.batch is None  # the twin, like the real export, takes the dynamic-batch rewrite


@pytest.mark.slow
def test_full_inswapper_twin_batched_equals_batch_1_and_its_rewrite_is_cached(
        isolated_dirs: dict[str, Path]) -> None:
    """The dynamic-batch rewrite at full size: held once in memory, on disk for the next start, and a
    batch of 2 gives what two batch-1 runs give."""
    import resource

    from pipeline.models import batching, sessions
    from pipeline.models.runner import ModelRunner

    result = mt.build_twin(mt.TWINS["inswapper_128"], _twin_cache())
    installed = isolated_dirs["models"] / catalog.get("inswapper_128").file
    installed.symlink_to(result.path)
    sessions.release()
    runner = ModelRunner("inswapper_128", "swapper")
    assert runner.batch is None
    assert len(sessions.loaded()) == 1  # the rewrite only, not beside the batch-1 original
    known, rewritten = batching.lookup(installed)
    assert known and rewritten is not None and rewritten.is_file()  # a second start loads it directly
    rng = np.random.default_rng(5)
    target = rng.uniform(0, 1, (2, 3, 128, 128)).astype(np.float32)
    source = rng.standard_normal((2, 512)).astype(np.float32)
    together = runner.run_feeds({"target": target, "source": source})[0]
    singles = np.concatenate([runner.run_feeds({"target": target[i:i + 1], "source": source[i:i + 1]})[0]
                              for i in range(2)])
    np.testing.assert_allclose(together, singles, atol=1e-4)
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak RSS of the test process {peak_gb:.2f} GB")  # noqa: T201 - recorded in BENCHMARKS.md
