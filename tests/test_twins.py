"""Cost twins (the ``twins`` package): catalog I/O, cost read off the graph, the streaming writer, the cache.

The fast tests build every twin's graph at full size without drawing a weight (cost and size targets) and
write a narrow version of each (same layers, fewer channels) that onnxruntime loads and runs; the fp16
converter (pipeline.models.fp16) is checked on a small graph of its own and on a narrow inswapper twin. The
slow tests write the full 554 MB inswapper twin and its 277 MB fp16 conversion into a persistent cache and run
them through the swapper.
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

from pipeline import env
from pipeline.models import catalog
from pipeline.models.validate import check_io, session_io
from twins import build, faces
from twins import processors as processor_twins
from twins.graph import Net, count_macs

REPO = Path(__file__).resolve().parent.parent

# The real files' tensor names (the catalog leaves some open; the twins take them from the real files).
REAL_IO = {
    "inswapper_128": (["target", "source"], ["output"]),
    "inswapper_128_fp16": (["target", "source"], ["output"]),
    "arcface_w600k_r50": (["input.1"], ["683"]),
    "gfpgan_1.4": (["input"], ["output"]),
    "scrfd_10g": (["input.1"], ["448", "471", "494", "451", "474", "497", "454", "477", "500"]),
    "real_esrgan_x4": (["input"], ["output"]),  # FaceFusion reads the output by position: any name
    "real_esrgan_x2": (["input"], ["output"]),
    "wav2lip_gan_96": (["source", "target"], ["output"]),
}


NAMES = list(build.TWINS)
FP32_NAMES = [n for n, t in build.TWINS.items() if t.half_of is None]


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def test_every_twin_is_named_and_maps_to_a_catalog_entry() -> None:
    assert set(NAMES) == set(REAL_IO)
    for twin in build.TWINS.values():
        assert catalog.get(twin.entry).file.endswith(".onnx")
    assert [t.name for t in build.resolve(["retinaface", "inswapper_128"])] == ["scrfd_10g", "inswapper_128"]
    assert [t.name for t in build.resolve(["inswapper_128_fp16", "inswapper_128"])] == [  # its base first
        "inswapper_128", "inswapper_128_fp16"]


@pytest.mark.parametrize("name", NAMES)
def test_full_size_graph_meets_its_targets(name: str) -> None:
    """Parameters, exact file size and cost of the full-size graph, without drawing a weight."""
    twin = build.TWINS[name]
    net, size, gmac = build.measure(twin)
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
    net, _, gmac = build.measure(build.TWINS["inswapper_128"])
    assert gmac["1×128² face"] * 1e9 == pytest.approx(macs, rel=1e-12)
    assert 2 * macs / 1e9 == pytest.approx(350, rel=0.01)


def test_gfpgan_reference_count_agrees_with_the_graph() -> None:
    _, _, gmac = build.measure(build.TWINS["gfpgan_1.4"])
    assert gmac["1×512² face"] == pytest.approx(faces.gfpgan_reference_gmac(), rel=1e-9)


@pytest.mark.parametrize(("name", "scale"), [("real_esrgan_x4", 4), ("real_esrgan_x2", 2)])
def test_rrdbnet_twins_are_the_published_layer_table(name: str, scale: int) -> None:
    """The graph's parameters and cost equal RRDBNet's layer table counted in closed form; x4plus has the
    16,697,987 parameters of RealESRGAN_x4plus, x2plus 5,184 more (conv_first takes 12 channels)."""
    twin = build.TWINS[name]
    net, _, gmac = build.measure(twin)
    params, macs = processor_twins.rrdbnet_reference(scale, 256)
    assert net.params == params == {4: 16_697_987, 2: 16_697_987 + 9 * 9 * 64}[scale]
    assert gmac["256² tile"] * 1e9 == pytest.approx(macs, rel=1e-12)
    entry = catalog.get(name)
    assert entry.tile is not None and entry.tile[0] == 256 and entry.scale == scale
    out = net.outputs[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in out] == [1, 3, 256 * scale, 256 * scale]


def test_wav2lip_twin_is_the_published_layer_table() -> None:
    net, _, gmac = build.measure(build.TWINS["wav2lip_gan_96"])
    params, macs = processor_twins.wav2lip_reference()
    assert net.params == params and params == pytest.approx(36e6, rel=0.01)
    assert gmac["1×96² face"] * 1e9 == pytest.approx(macs, rel=1e-12)
    kinds = [n.op_type for n in net.nodes]
    assert kinds.count("ConvTranspose") == 6 and kinds.count("Concat") == 7 and kinds[-2] == "Sigmoid"


def test_transposed_convs_are_counted_per_input_element() -> None:
    """A 3×3 stride-2 ConvTranspose 4 -> 2 channels on 5×5 (to 10×10): 25 × 4 inputs × 2 × 9 MACs."""
    net = Net("ct", seed=0)
    x = net.input("x", [1, 4, 5, 5])
    y = net.op("ConvTranspose", x, net.weight((4, 2, 3, 3), 0.1), kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], output_padding=[1, 1])
    net.output(y, "y", [1, 2, 10, 10])
    assert count_macs(net, {"x": (1, 4, 5, 5)}) == 25 * 4 * 2 * 9


@pytest.mark.parametrize("name", FP32_NAMES)
def test_narrow_twin_has_the_catalog_io_and_runs(name: str, tmp_path: Path) -> None:
    twin = build.TWINS[name]
    entry = catalog.get(twin.entry)
    result = build.build_twin(twin, tmp_path, width=twin.test_width)
    assert result.built and result.path == tmp_path / entry.file
    net, size, _ = build.measure(twin, twin.test_width)
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
    assert build.check_twin(twin, result.path) > 0


def test_inswapper_emap_is_the_last_initializer(tmp_path: Path) -> None:
    from pipeline.processors.face_swapper.neural import read_emap

    twin = build.TWINS["inswapper_128"]
    result = build.build_twin(twin, tmp_path, width=twin.test_width)
    model = onnx.load(str(result.path))
    last = model.graph.initializer[-1]
    assert last.name == "emap" and list(last.dims) == [512, 512]
    emap = read_emap(result.path)
    np.testing.assert_array_equal(emap, numpy_helper.to_array(last))
    assert 0.5 < float(np.linalg.norm(emap, axis=0).mean()) < 2.0  # columns of about unit length


def test_cache_skips_an_identical_twin_and_rebuilds_a_changed_one(tmp_path: Path) -> None:
    twin = build.TWINS["scrfd_10g"]
    first = build.build_twin(twin, tmp_path, width=0.125)
    assert first.built
    assert not build.build_twin(twin, tmp_path, width=0.125).built
    assert build.build_twin(twin, tmp_path, width=0.125, force=True).built
    with open(first.path, "r+b") as fh:  # same size, one byte different
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 0xFF]))
    assert build.build_twin(twin, tmp_path, width=0.125).built
    assert build.build_twin(twin, tmp_path, width=0.25).built  # another graph: another spec


def test_twins_are_reproducible(tmp_path: Path) -> None:
    twin = build.TWINS["arcface_w600k_r50"]
    a = build.build_twin(twin, tmp_path / "a", width=0.125)
    b = build.build_twin(twin, tmp_path / "b", width=0.125)
    assert a.path.read_bytes() == b.path.read_bytes()


def test_script_prints_sizes_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert build.main([str(tmp_path), "--only", "det_10g"]) == 0  # the full-size detector twin is 17 MB
    out = capsys.readouterr().out
    assert "GFLOP = 2 × GMAC" in out and "I/O matches catalog 'retinaface'" in out
    assert "4.23 M" in out and "640×480 (VGA)" in out and "OUT" not in out
    assert build.main([str(tmp_path), "--only", "scrfd_10g"]) == 0
    assert "cached" in capsys.readouterr().out


# --- fp16 ---------------------------------------------------------------------------------------------

def _small_graph(path: Path) -> None:
    """Conv → Resize (roi and scales initializers) → InstanceNormalization → Resize whose scales are computed
    (a float Add of two initializers) → × a Constant; float32 throughout."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)

    def init(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value, np.float32), name)

    inits = [init("w", rng.standard_normal((4, 3, 3, 3)) * 0.3), init("b", rng.standard_normal(4)),
             init("roi", [0, 0, 0, 0, 1, 1, 1, 1]), init("scales", [1, 1, 2, 2]),
             init("gamma", rng.uniform(0.5, 1.5, 4)), init("beta", rng.standard_normal(4)),
             init("s_one", [1, 1, 1, 1]), init("s_add", [0, 0, 0.5, 0.5])]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["c", "roi", "scales"], ["r"], mode="linear"),
        helper.make_node("InstanceNormalization", ["r", "gamma", "beta"], ["n"], epsilon=1e-5),
        helper.make_node("Add", ["s_one", "s_add"], ["s2"]),
        helper.make_node("Resize", ["n", "", "s2"], ["r2"], mode="nearest"),
        helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.float32(0.5))),
        helper.make_node("Mul", ["r2", "half"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 24, 24])
    graph = helper.make_graph(nodes, "small", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.mark.parametrize("keep_io", [True, False])
def test_fp16_conversion_of_a_small_graph(tmp_path: Path, keep_io: bool) -> None:
    from pipeline.models import fp16

    src, dst = tmp_path / "fp32.onnx", tmp_path / "fp16.onnx"
    _small_graph(src)
    size, sha = fp16.convert_file(src, dst, keep_io=keep_io)
    assert size == dst.stat().st_size and len(sha) == 64
    model = onnx.load(str(dst))
    onnx.checker.check_model(model, full_check=True)  # types agree across every node (strict inference)
    types = {i.name: i.data_type for i in model.graph.initializer}
    half, single = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    assert types == {"w": half, "b": half, "gamma": half, "beta": half, "s_one": half, "s_add": half,
                     "roi": single, "scales": single}  # Resize's roi and scales stay float32
    nodes = list(model.graph.node)
    resizes = [n for n in nodes if n.op_type == "Resize"]
    assert resizes[0].input[2] == "scales"
    cast = next(n for n in nodes if n.output[0] == resizes[1].input[2])  # the computed scales, cast back
    assert cast.op_type == "Cast" and cast.input[0] == "s2"
    assert next(a.i for a in cast.attribute if a.name == "to") == single
    constant = next(n for n in nodes if n.op_type == "Constant")
    assert constant.attribute[0].t.data_type == half

    io_type = np.float32 if keep_io else np.float16
    session = _session(dst)
    assert [a.type for a in [*session.get_inputs(), *session.get_outputs()]] == (
        ["tensor(float)"] * 2 if keep_io else ["tensor(float16)"] * 2)
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = _session(src).run(None, {"x": x})[0]
    got = session.run(None, {"x": x.astype(io_type)})[0]
    assert got.dtype == io_type and got.shape == want.shape == (1, 4, 24, 24)
    np.testing.assert_allclose(got.astype(np.float32), want, atol=1e-2)
    assert float(np.abs(want).max()) > 0.5  # not a trivially small output


def test_fp16_conversion_refuses_a_subgraph(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    from pipeline.models import fp16

    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "b", [],
                               [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(graph), str(tmp_path / "if.onnx"))
    with pytest.raises(ValueError, match="subgraph"):
        fp16.convert_file(tmp_path / "if.onnx", tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_narrow_fp16_twin_is_converted_from_its_base_and_cached(tmp_path: Path) -> None:
    from pipeline.processors.face_swapper.neural import read_emap

    twin = build.TWINS["inswapper_128_fp16"]
    result = build.build_twin(twin, tmp_path, width=twin.test_width)
    base = tmp_path / catalog.get("inswapper_128").file
    assert result.built and result.path == tmp_path / "inswapper_128.fp16.onnx" and base.is_file()
    manifest = build.read_manifest(tmp_path)
    record = manifest[result.path.name]
    assert record["from"] == base.name and record["size"] == result.size
    assert result.size == pytest.approx(base.stat().st_size / 2, rel=0.01)
    assert result.size == pytest.approx(build.measure(twin, twin.test_width)[1], abs=2048)  # the estimate
    mtime = result.path.stat().st_mtime_ns
    again = build.build_twin(twin, tmp_path, width=twin.test_width)
    assert not again.built and result.path.stat().st_mtime_ns == mtime

    model = onnx.load(str(result.path))
    onnx.checker.check_model(model, full_check=True)
    resize_scales = {n.input[2] for n in model.graph.node if n.op_type == "Resize"}
    kept = {i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT}
    assert kept == resize_scales and len(kept) == 2
    halves = [i.name for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT16]
    fp32 = onnx.load(str(base), load_external_data=False).graph.initializer
    assert [i.name for i in model.graph.initializer] == [i.name for i in fp32]  # order kept
    assert halves == [i.name for i in fp32 if i.data_type == onnx.TensorProto.FLOAT and i.name not in kept]
    assert model.graph.initializer[-1].name == "emap"
    emap16 = read_emap(result.path)
    np.testing.assert_allclose(emap16, read_emap(base), atol=1e-3)

    session = _session(result.path)
    inputs, outputs = session_io(session)
    check_io(catalog.get("inswapper_128_fp16"), inputs, outputs, result.path)
    assert ([a.name for a in inputs], [a.name for a in outputs]) == REAL_IO["inswapper_128_fp16"]
    assert all(a.dtype == "float32" for a in [*inputs, *outputs])
    rng = np.random.default_rng(4)
    feeds = {"target": rng.uniform(0, 1, (1, 3, 128, 128)).astype(np.float32),
             "source": (rng.standard_normal((1, 512)) / np.sqrt(512)).astype(np.float32)}
    want, got = _session(base).run(None, feeds)[0], session.run(None, feeds)[0]
    np.testing.assert_allclose(got, want, atol=1e-2)
    assert float(want.std()) > 0.01  # the output depends on the input: the comparison says something


def _twin_cache() -> Path:
    return env.TWINS.get() or Path(platformdirs.user_cache_dir("facestation")) / "twins"


@pytest.mark.slow
def test_full_inswapper_twin_runs_in_the_swapper(isolated_dirs: dict[str, Path]) -> None:
    """554 MB, ≈ 350 GFLOP; the swapper loads it (catalog check, dynamic-batch rewrite) and swaps one face."""
    from pipeline.processors.face_swapper.neural import InswapperSwapper, SourceIdentity, read_emap

    twin = build.TWINS["inswapper_128"]
    result = build.build_twin(twin, _twin_cache())  # cached across runs: FACESTATION_TWINS or the user cache
    size_tol, flops_tol = twin.tolerance
    assert result.size == pytest.approx(554e6, rel=size_tol)
    assert 2 * result.gmac[twin.target_label] == pytest.approx(350, rel=flops_tol)

    installed = isolated_dirs["models"] / catalog.get("inswapper_128").file
    installed.symlink_to(result.path)
    swapper = InswapperSwapper("inswapper_128")
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

    result = build.build_twin(build.TWINS["inswapper_128"], _twin_cache())
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


@pytest.mark.slow
def test_full_fp16_twin_is_made_once_and_runs_batched_in_the_swapper(isolated_dirs: dict[str, Path]) -> None:
    """The 277 MB fp16 conversion of the full twin: a second build is a cache hit; the swapper loads it
    (catalog check, dynamic-batch rewrite kept on disk) and a batch of 2 gives what two batch-1 runs give."""
    from pipeline.models import batching, sessions
    from pipeline.processors.face_swapper.neural import InswapperSwapper, SourceIdentity, read_emap

    twin, cache = build.TWINS["inswapper_128_fp16"], _twin_cache()
    result = build.build_twin(twin, cache)  # converted here unless a previous run left it in the cache
    assert result.size == pytest.approx(277e6, rel=twin.tolerance[0])
    record = build.read_manifest(cache)[result.path.name]
    assert record["from"] == "inswapper_128.onnx" and record["size"] == result.size
    mtime = result.path.stat().st_mtime_ns
    again = build.build_twin(twin, cache)
    assert not again.built and result.path.stat().st_mtime_ns == mtime  # not redone

    installed = isolated_dirs["models"] / catalog.get("inswapper_128_fp16").file
    installed.symlink_to(result.path)
    sessions.release()
    swapper = InswapperSwapper("inswapper_128_fp16")
    assert swapper.batch is None  # the dynamic-batch rewrite checked out on the fp16 graph
    assert len(sessions.loaded()) == 1
    known, rewritten = batching.lookup(installed)
    assert known and rewritten is not None and rewritten.is_file()  # a second start loads it directly
    rng = np.random.default_rng(6)
    target = rng.uniform(0, 1, (2, 3, 128, 128)).astype(np.float32)
    source = rng.standard_normal((2, 512))
    source = (source / np.linalg.norm(source, axis=1, keepdims=True)).astype(np.float32)
    together = swapper.run_feeds({"target": target, "source": source})[0]
    singles = np.concatenate([swapper.run_feeds({"target": target[i:i + 1], "source": source[i:i + 1]})[0]
                              for i in range(2)])
    assert together.dtype == np.float32 and together.shape == (2, 3, 128, 128)
    np.testing.assert_allclose(together, singles, atol=1e-2)
    assert float(np.abs(together[0] - together[1]).max()) > 0.05  # two different faces, two different outputs

    emap = read_emap(installed)
    latent = source[0] @ emap
    identity = SourceIdentity("inswapper_128_fp16", latent / np.linalg.norm(latent), source[0], 1)
    crops = rng.integers(0, 256, (2, 128, 128, 3), dtype=np.uint8)
    swapped = swapper.swap(crops, identity)
    assert swapped.shape == crops.shape and swapped.dtype == np.uint8


def test_an_unchanged_cached_twin_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    twin = build.TWINS["scrfd_10g"]
    assert build.build_twin(twin, tmp_path, width=0.125).built

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"{path.name} was hashed although size and time are as recorded")

    monkeypatch.setattr(build, "sha256_of", no_hashing)
    assert not build.build_twin(twin, tmp_path, width=0.125).built


# --- scripts/processor_costs.py ------------------------------------------------------------------------

def _load_costs() -> ModuleType:
    if "processor_costs" in sys.modules:
        return sys.modules["processor_costs"]
    spec = importlib.util.spec_from_file_location("processor_costs", REPO / "scripts" / "processor_costs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["processor_costs"] = module
    spec.loader.exec_module(module)
    return module


def test_processor_costs_counts_the_tiles_of_a_1080p_frame() -> None:
    pc = _load_costs()
    assert set(pc.PROCESSORS) <= set(build.TWINS)
    assert pc.tiles_per_frame(catalog.get("real_esrgan_x4")) == 45  # (256,16,8): 9×5, docs/processors.md §1.3
    assert pc.tiles_per_frame(catalog.get("real_esrgan_x2")) == 45
    assert pc.tiles_per_frame(catalog.get("span_kendata_x4")) == 170  # (128, 8, 4): 17 × 10


def test_processor_costs_times_the_enhancers_own_work_without_its_model() -> None:
    """The model-free enhancer gives a frame of the scaled size (its cores blended with the resized frame,
    the model's part zeros) and a positive time, with no model file anywhere."""
    pc = _load_costs()
    frame = np.full((90, 160, 3), 200, np.uint8)
    upscaler = pc.ModelFreeUpscaler("real_esrgan_x2")
    out = upscaler.enhance([frame], 80)[0]
    assert out.shape == (180, 320, 3)
    assert abs(int(np.median(out)) - 40) <= 1  # 0.2 × 200 + 0.8 × 0
    assert pc.enhancer_own_ms("real_esrgan_x2", frame, 1) > 0


def test_processor_costs_tone_is_a_wav_of_the_asked_length(tmp_path: Path) -> None:
    import wave

    pc = _load_costs()
    with wave.open(str(pc.tone(tmp_path / "v.wav", 0.5)), "rb") as fh:
        assert (fh.getnchannels(), fh.getframerate(), fh.getnframes()) == (1, 16000, 8000)


def test_narrow_rrdbnet_twin_runs_in_the_frame_enhancer(isolated_dirs: dict[str, Path]) -> None:
    """The loader takes the x2 twin (catalog check; the pixel-unshuffle keeps the batch open, so the
    dynamic-batch rewrite applies) and the enhancer upscales a frame of one tile with it."""
    from pipeline.processors.frame_enhancer.upscaler import TiledUpscaler

    twin = build.TWINS["real_esrgan_x2"]
    result = build.build_twin(twin, isolated_dirs["models"], width=twin.test_width)
    assert result.path.parent == isolated_dirs["models"]
    upscaler = TiledUpscaler("real_esrgan_x2")
    frame = np.random.default_rng(7).integers(0, 256, (90, 160, 3), dtype=np.uint8)
    out = upscaler.enhance([frame, frame], 100)
    assert [o.shape for o in out] == [(180, 320, 3)] * 2
    np.testing.assert_array_equal(out[0], out[1])
    assert upscaler.runner.batch is None  # dynamic batch: both frames' tiles in one run
    assert float(out[0].std()) > 0  # the model's output, not a constant
