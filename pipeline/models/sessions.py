"""The one place where onnxruntime sessions are made, and the lazy base of every class that wraps one.

Providers are chosen once from what the installed onnxruntime offers (TensorRT -> CUDA -> CPU by
default, overridable); sessions are cached by (model file, providers, threads), validated against
the catalog at load, and released on request. ``session.get_providers()`` is what a session really
got: the GPU package lists CUDA even on a machine without a GPU and silently falls back to CPU.

``CatalogSession`` is the base of the detectors, recognisers, swappers and image models: its session
loads on first use, batch-aware where the class asks (``load_batched``: an export that fixes its
batch to 1 is rewritten by models.batching where that checks out).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.errors import UserError
from pipeline.models import batching, catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.models.runtime import ort
from pipeline.models.validate import check_io, session_io
from pipeline.paths import cache_dir
from pipeline.types import Provider

log = logging.getLogger(__name__)

ORT_NAMES: dict[Provider, str] = {
    "tensorrt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}

_lock = threading.Lock()
_cache: dict[tuple[str, tuple[str, ...], int], Any] = {}


def available_providers() -> list[str]:
    return list(ort().get_available_providers())


def resolve_providers(requested: Sequence[Provider]) -> list[str]:
    """onnxruntime provider names to ask for, in order, from those requested and those built in."""
    available = set(available_providers())
    chosen = [ORT_NAMES[p] for p in requested if ORT_NAMES[p] in available]
    if not chosen:
        log.warning("none of the requested providers %s is available; using CPU", list(requested))
        chosen = ["CPUExecutionProvider"]
    return chosen


def _provider_options(name: str) -> dict[str, Any]:
    if name == "TensorrtExecutionProvider":
        engines = cache_dir() / "tensorrt"
        engines.mkdir(parents=True, exist_ok=True)
        return {"trt_engine_cache_enable": True, "trt_engine_cache_path": str(engines),
                "trt_fp16_enable": True}
    if name == "CUDAExecutionProvider":
        return {"cudnn_conv_algo_search": "HEURISTIC"}
    return {}


def load(path: Path, entry: ModelEntry | None, providers: Sequence[Provider] = ("cpu",),
         threads: int = 0) -> Any:
    """A cached, validated session for the model file at ``path``."""
    names = resolve_providers(providers)
    key = (str(Path(path).resolve()), tuple(names), threads)
    with _lock:
        session = _cache.get(key)
        if session is not None:
            return session
    rt = ort()
    options = rt.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    try:
        session = rt.InferenceSession(
            str(path), sess_options=options, providers=[(n, _provider_options(n)) for n in names]
        )
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise UserError(f"cannot load model {Path(path).name}: {str(exc).splitlines()[0]}") from exc
    if entry is not None:
        inputs, outputs = session_io(session)
        check_io(entry, inputs, outputs, path)
    got = session.get_providers()
    if got[0] != names[0]:
        log.warning("%s asked for %s but got %s", Path(path).name, names[0], got[0])
    with _lock:
        _cache[key] = session
    return session


def get_session(name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> Any:
    """A cached, validated session for catalog model ``name``."""
    entry = catalog.get(name)
    return load(store.model_path(entry), entry, providers, threads)


def _fixed_batches(session: Any) -> set[int]:
    """The batch sizes (dim 0) that the session's non-scalar inputs fix; empty where all are dynamic."""
    return {a.shape[0] for a in session.get_inputs() if len(a.shape) > 0 and isinstance(a.shape[0], int)}


def load_batched(entry: ModelEntry, providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> tuple[Any, int | None]:
    """A validated session for ``entry`` and how many items it takes per run (None: any number).

    An export that fixes its batch axis to 1 is rewritten to a dynamic batch where that checks out
    (models.batching); otherwise the fixed size is returned and callers run items in chunks of it.
    """
    path = store.model_path(entry)
    session = load(path, entry, providers, threads)
    fixed = _fixed_batches(session)
    if not fixed:
        return session, None
    if fixed == {1}:
        batched = batching.batched_path(path)
        if batched is not None:
            log.info("%s runs with a dynamic batch", entry.name)
            return load(batched, entry, providers, threads), None
    log.info("%s runs one item at a time (its batch axis is fixed)", entry.name)
    return session, min(fixed)


class CatalogSession:
    """Base of the classes that wrap one catalog model: its session is loaded (validated) on first use.

    A subclass with ``batched = True`` gets the batch-aware loader (``load_batched``); the others load
    the file as it is. Either way ``batch`` is how many items one run takes (None: any number).
    """

    batched: bool = False

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        self.name = name
        self.entry: ModelEntry = catalog.get(name)
        self.providers = tuple(providers)
        self.threads = int(threads)
        self._session: Any = None
        self._batch: int | None = None

    @property
    def session(self) -> Any:
        if self._session is None:
            if self.batched:
                self._session, self._batch = load_batched(self.entry, self.providers, self.threads)
            else:
                session = load(store.model_path(self.entry), self.entry, self.providers, self.threads)
                fixed = _fixed_batches(session)
                self._session, self._batch = session, min(fixed) if fixed else None
        return self._session

    @property
    def batch(self) -> int | None:
        """Items per run: None = all at once (dynamic batch axis)."""
        _ = self.session
        return self._batch


def release(path: Path | None = None) -> int:
    """Drop cached sessions (all, or those of one file) so their memory can be freed. Returns how many."""
    with _lock:
        keys = [k for k in _cache if path is None or k[0] == str(Path(path).resolve())]
        for k in keys:
            del _cache[k]
    return len(keys)


def loaded() -> list[dict[str, Any]]:
    """What is loaded now and on which providers it really runs."""
    with _lock:
        return [{"model": Path(k[0]).name, "requested": list(k[1]), "providers": s.get_providers()}
                for k, s in _cache.items()]


_gpu_memory: tuple[float, float | None] = (0.0, None)  # (monotonic time read, MB)


def device_memory_mb(max_age_s: float = 2.0) -> float | None:
    """Memory used on the first NVIDIA GPU (MB), from nvidia-smi; None where it cannot be read.

    Progress reports ask twice a second from the encode stage: the answer is reused for ``max_age_s``
    so that a render does not start a process per report.
    """
    import shutil
    import subprocess
    import time

    global _gpu_memory
    read_at, value = _gpu_memory
    if time.monotonic() - read_at < max_age_s:
        return value
    exe = shutil.which("nvidia-smi")
    value = None
    if exe:
        try:
            out = subprocess.run([exe, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=2, check=True).stdout
            value = float(out.split()[0])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            value = None
    _gpu_memory = (time.monotonic(), value)
    return value
