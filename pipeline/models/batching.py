"""Give a batch-1 export a dynamic batch axis, where the graph allows it.

Many exports fix dim 0 of their inputs and outputs to 1 although no node depends on it. Rewriting
that dim to a symbolic one lets a single run take N crops. Whether it is safe cannot be read off
the graph in general (a Reshape to a literal ``[1, …]`` breaks it), so every rewrite is checked:
one batch-2 run must equal two batch-1 runs. Rewritten files are cached under
``cache_dir()/batched/`` keyed by the source file's sha256; a failed check is remembered as well.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.models.runtime import ort, random_feeds
from pipeline.models.store import sha256_of
from pipeline.paths import cache_dir

log = logging.getLogger(__name__)

BATCH_DIM = "batch"
_lock = threading.Lock()
_memo: dict[tuple[str, int, int], Path | None] = {}


def _unbatch(value_infos: Any, min_rank: int = 1) -> int:
    """Set dim 0 of each tensor type of rank ≥ ``min_rank`` whose dim 0 is fixed to 1 to the symbolic batch
    dim; how many changed."""
    changed = 0
    for vi in value_infos:
        tensor = vi.type.tensor_type
        if not tensor.HasField("shape") or len(tensor.shape.dim) < max(min_rank, 1):
            continue
        first = tensor.shape.dim[0]
        if first.HasField("dim_value") and first.dim_value == 1:
            first.ClearField("dim_value")
            first.dim_param = BATCH_DIM
            changed += 1
    return changed


def _verify(path: Path) -> None:
    """Raise unless one batch-2 run of ``path`` equals two batch-1 runs."""
    rt = ort()
    options = rt.SessionOptions()
    options.log_severity_level = 4  # a failing run is an expected answer here, not an error to log
    session = rt.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = random_feeds(session, rng, batch=2, free=64)
    both = session.run(None, feeds)
    singles = [session.run(None, {k: v[i:i + 1] if v.ndim >= 2 else v for k, v in feeds.items()})
               for i in range(2)]
    for index, out in enumerate(both):
        joined = np.concatenate([s[index] for s in singles])
        tol = 1e-2 if out.dtype == np.float16 else 1e-4
        if out.shape != joined.shape or not np.allclose(out, joined, rtol=tol, atol=tol):
            raise ValueError(f"output {index}: batch-2 run differs from two batch-1 runs")


def dynamic_batch(src: Path, dst: Path) -> bool:
    """Write ``src`` with a symbolic batch axis to ``dst`` if the result checks out.

    False (and no ``dst``) where there is nothing to rewrite or the rewrite fails its check.
    """
    import onnx

    src, dst = Path(src), Path(dst)
    model = onnx.load(str(src))
    graph = model.graph
    initialisers = {i.name for i in graph.initializer}
    real_inputs = [i for i in graph.input if i.name not in initialisers]
    if _unbatch(real_inputs, min_rank=2) == 0:  # parameters (CodeFormer's w [1]) carry no batch
        log.info("%s: no input has a fixed batch of 1; nothing to rewrite", src.name)
        return False
    _unbatch(graph.output)
    _unbatch(graph.value_info)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + f".part-{os.getpid()}")
    try:
        onnx.save(model, str(tmp))
        del model, graph, real_inputs  # the protobuf holds every weight: free it before the check
        _verify(tmp)
    except Exception as exc:  # onnxruntime's load/run errors have their own types
        tmp.unlink(missing_ok=True)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.info("%s keeps batch 1: %s", src.name, reason)
        return False
    os.replace(tmp, dst)
    log.info("%s: batch axis made dynamic (%s)", src.name, dst)
    return True


def file_digest(path: Path, stat: os.stat_result | None = None) -> str:
    """sha256 of ``path``, remembered on disk by (path, size, mtime) so that a warm start of a 554 MB
    model does not read it all again (also the key of the render plan's measured threads:
    pipeline/plancache.py)."""
    stat = stat or path.stat()
    index = cache_dir() / "batched" / "digests.json"
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        known: dict[str, str] = json.loads(index.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    digest = sha256_of(path)
    known[key] = digest
    index.parent.mkdir(parents=True, exist_ok=True)
    tmp = index.with_name(f"digests.json.part-{os.getpid()}")
    tmp.write_text(json.dumps(known, indent=0))
    os.replace(tmp, index)
    return digest


def _key(path: Path) -> tuple[tuple[str, int, int], os.stat_result]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns), stat


def _files(path: Path, stat: os.stat_result) -> tuple[Path, Path]:
    digest = file_digest(path, stat)
    folder = cache_dir() / "batched"
    return folder / f"{digest}.onnx", folder / f"{digest}.failed"


def lookup(path: Path) -> tuple[bool, Path | None]:
    """(known, result) without rewriting anything: whether ``path``'s rewrite was already decided (in
    this process or on disk), and its dynamic-batch file (None where batching it failed or is unknown)."""
    path = Path(path)
    with _lock:
        key, stat = _key(path)
        if key in _memo:  # decided in this process: no digest index read, no hashing
            return True, _memo[key]
        dst, failed = _files(path, stat)
        if dst.is_file():
            _memo[key] = dst
            return True, dst
        if failed.is_file():
            _memo[key] = None
            return True, None
    return False, None


def batched_path(path: Path) -> Path | None:
    """A dynamic-batch version of the model at ``path`` (cached), or None where batching it fails."""
    path = Path(path)
    known, result = lookup(path)
    if known:
        return result
    with _lock:
        key, stat = _key(path)
        if key in _memo:
            return _memo[key]
        dst, failed = _files(path, stat)
        if dynamic_batch(path, dst):
            result = dst
        else:
            failed.parent.mkdir(parents=True, exist_ok=True)
            failed.touch()
            result = None
        _memo[key] = result
        return result
