"""The one place where onnxruntime sessions are made, and the lazy base of every class that wraps one.

Providers are chosen once from what the installed onnxruntime offers (TensorRT -> CUDA -> CPU by
default, overridable); sessions are cached by (model file, providers, threads, spinning), validated
against the catalog at load, and released on request. ``session.get_providers()`` is what a session really
got: the GPU package lists CUDA even on a machine without a GPU and silently falls back to CPU.

``CatalogSession`` is the base of the detectors, recognisers, swappers and image models: its session
loads on first use, batch-aware where the class asks (``load_batched``: an export that fixes its
batch to 1 is rewritten by models.batching where that checks out).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.errors import UserError
from pipeline.models import batching, catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.models.runtime import ort
from pipeline.models.validate import Binding, bind, check_io, session_io
from pipeline.paths import cache_dir
from pipeline.types import Provider

log = logging.getLogger(__name__)

ORT_NAMES: dict[Provider, str] = {
    "tensorrt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "cpu": "CPUExecutionProvider",
}

_lock = threading.Lock()
_Key = tuple[str, tuple[str, ...], int, bool]
_cache: OrderedDict[_Key, Any] = OrderedDict()  # least recently used first
_sizes: dict[_Key, int] = {}  # bytes each session is reckoned to hold (its file's size)
_names: dict[_Key, str] = {}  # the catalog name of each session's model (its file may be a sha256-named copy)
_holders: dict[_Key, weakref.WeakSet[Any]] = {}  # the CatalogSessions holding each cached session
Budget = int | str  # execution.model_memory: MB, or "auto"


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


def provider_options(name: str) -> dict[str, Any]:
    if name == "TensorrtExecutionProvider":
        engines = cache_dir() / "tensorrt"
        engines.mkdir(parents=True, exist_ok=True)
        return {"trt_engine_cache_enable": True, "trt_engine_cache_path": str(engines),
                "trt_fp16_enable": True}
    if name == "CUDAExecutionProvider":
        return {"cudnn_conv_algo_search": "HEURISTIC"}
    return {}


def _key(path: Path | str, names: Sequence[str], threads: int, spin: bool = True) -> _Key:
    return (str(Path(path).resolve()), tuple(names), threads, spin)


def load(path: Path, entry: ModelEntry | None, providers: Sequence[Provider] = ("cpu",),
         threads: int = 0, memory: Budget = "auto", spin: bool = True) -> Any:
    """A cached, validated session for the model file at ``path``.

    Before a new session is made, the least recently used ones are dropped until the model memory
    budget of whoever asks (``memory``: their ``execution.model_memory``, see :func:`memory_budget`) has room
    for this file. ``spin`` False: onnxruntime's idle intra-op threads sleep rather than spin while they
    wait for work (a live run, one small frame at a time on cores it shares: spinning there doubled the
    CPU each frame took and slowed it, BENCHMARKS.md "Live mode").
    """
    names = resolve_providers(providers)
    key = _key(path, names, threads, spin)
    with _lock:
        session = _cache.get(key)
        if session is not None:
            _cache.move_to_end(key)
            return session
    size = Path(path).stat().st_size
    _make_room(size, names[0], memory)
    rt = ort()
    options = rt.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = rt.InferenceSession(
            str(path), sess_options=options, providers=[(n, provider_options(n)) for n in names]
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
        _sizes[key] = size
        if entry is not None:  # a batched or built-in copy is named by its sha256: say the catalog's name
            _names[key] = entry.name
    return session


def _forget(key: _Key) -> None:
    """Take ``key`` out of the cache and out of every object holding its session (call with _lock)."""
    _cache.pop(key, None)
    _sizes.pop(key, None)
    _names.pop(key, None)
    for holder in list(_holders.pop(key, ())):
        holder._session = None


def return_freed_memory() -> None:
    """Hand the memory of dropped sessions back to the system (glibc keeps freed blocks for reuse).

    Measured with the inswapper + GFPGAN twins: dropping both sessions took the process from 2.17 to
    1.02 GB resident, and this from 1.02 to 0.35 GB; without it the plan's re-made sessions came on top.
    A no-op where the C library has no ``malloc_trim``.
    """
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)


def memory_budget(provider: str = "CPUExecutionProvider", value: Budget = "auto") -> int:
    """Bytes the loaded sessions may hold together under ``value`` (``execution.model_memory``): that many MB,
    or ("auto") 3/4 of what they hold now plus the memory still free (RAM on CPU, the free GPU memory where a
    session runs on CUDA or TensorRT and nvidia-smi can tell)."""
    if value != "auto":
        return int(value) * 1024 * 1024
    import psutil

    with _lock:
        held = sum(_sizes.get(k, 0) for k in _cache if (k[1][:1] == (provider,)))
    free = float(psutil.virtual_memory().available)
    if provider != "CPUExecutionProvider":
        gpu_free = device_free_mb()
        free = gpu_free * 1024 * 1024 if gpu_free is not None else free
    return int(0.75 * (held + free))


def _make_room(size: int, provider: str, memory: Budget) -> None:
    """Drop least recently used sessions of ``provider``'s memory until ``size`` more bytes fit ``memory``."""
    budget = memory_budget(provider, memory)
    dropped = False
    with _lock:
        same = [k for k in _cache if k[1][:1] == (provider,)]
        held = sum(_sizes.get(k, 0) for k in same)
        for key in same:  # oldest first
            if held + size <= budget:
                break
            log.info("model memory budget: dropping %s (least recently used)", Path(key[0]).name)
            held -= _sizes.get(key, 0)
            _forget(key)
            dropped = True
    if dropped:
        return_freed_memory()


def get_session(name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> Any:
    """A cached, validated session for catalog model ``name``."""
    entry = catalog.get(name)
    return load(store.model_path(entry), entry, providers, threads)


def _fixed_batches(session: Any) -> set[int]:
    """The batch sizes (dim 0) that the session's batch-carrying inputs (rank ≥ 2: images, embeddings) fix;
    empty where all are dynamic. A parameter such as CodeFormer's ``w`` [1] carries no batch."""
    return {a.shape[0] for a in session.get_inputs() if len(a.shape) >= 2 and isinstance(a.shape[0], int)}


def load_batched(entry: ModelEntry, providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0, memory: Budget = "auto", spin: bool = True
                 ) -> tuple[Any, int | None, Path]:
    """A validated session for ``entry``, how many items it takes per run (None: any number) and the
    file it was loaded from.

    An export that fixes its batch axis to 1 is rewritten to a dynamic batch where that checks out
    (models.batching); otherwise the fixed size is returned and callers run items in chunks of it.
    Only one session of the model is ever held: a rewrite already on disk is loaded directly, and the
    original's session is dropped before a first rewrite (which loads the file itself).
    """
    path = store.model_path(entry)
    known, batched = batching.lookup(path)
    if known and batched is not None:
        log.info("%s runs with a dynamic batch", entry.name)
        return load(batched, entry, providers, threads, memory, spin), None, batched
    session = load(path, entry, providers, threads, memory, spin)
    fixed = _fixed_batches(session)
    if not fixed:
        return session, None, path
    if fixed == {1} and not known:
        del session
        release(path)
        batched = batching.batched_path(path)
        if batched is not None:
            log.info("%s runs with a dynamic batch", entry.name)
            return load(batched, entry, providers, threads, memory, spin), None, batched
        session = load(path, entry, providers, threads, memory, spin)
    log.info("%s runs one item at a time (its batch axis is fixed)", entry.name)
    return session, min(fixed), path


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
        self.planned = not self.threads  # its threads are a render's to give (pipeline/renderplan.py)
        self.spin = True  # onnxruntime's idle threads spin (False: they sleep; see load)
        self._path: Path | None = None  # the file its session was loaded from (None: not loaded yet)
        self._session: Any = None  # dropped (set to None) when the memory budget evicts it
        self._key: _Key | None = None  # its key in the session cache, once loaded
        self._batch: int | None = None
        self.memory: Budget = "auto"  # its owner's model memory budget (execution.model_memory)
        self._binding: Binding | None = None

    @property
    def session(self) -> Any:
        """The session, loaded on first use and again after the memory budget dropped it."""
        session = self._session  # read once: an eviction in another thread may set it to None meanwhile
        if session is not None:
            _touch(self._key)  # mark it as just used
            return session
        if self.batched:
            session, self._batch, self._path = load_batched(self.entry, self.providers, self.threads,
                                                            self.memory, self.spin)
        else:
            path = store.model_path(self.entry)
            session = load(path, self.entry, self.providers, self.threads, self.memory, self.spin)
            fixed = _fixed_batches(session)
            self._path, self._batch = path, min(fixed) if fixed else None
        self._binding = bind(self.entry, *session_io(session), self._path)
        if self._binding.by_structure:
            log.info("%s is another export of %s: %s", self._path.name, self.name, self._binding.describe())
        key = _key(self._path, resolve_providers(self.providers), self.threads, self.spin)
        with _lock:
            _holders.setdefault(key, weakref.WeakSet()).add(self)
        self._key, self._session = key, session
        return session

    @property
    def binding(self) -> Binding:
        """How the file's tensors are the catalog entry's (by name, or by structure for another export of
        the same network: models.validate.bind, the one rule)."""
        session = self.session  # loading it binds the names (``_binding``)
        if self._binding is None:  # loaded by a subclass of its own
            self._binding = bind(self.entry, *session_io(session), self._path or self.entry.file)
        return self._binding

    @property
    def io(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The graph's names of the catalog entry's inputs and outputs, in the entry's order: feed and
        read tensors by these names (a file's own order is never assumed where its names say more; a
        file whose names differ is bound by structure, see :attr:`binding`)."""
        return self.binding.names

    @property
    def loaded(self) -> bool:
        return self._session is not None

    @property
    def file(self) -> Path | None:
        """The file its session was loaded from (a dynamic-batch rewrite, where one is used); None before
        the first load."""
        return self._path

    def kept(self, threads: int, spin: bool) -> bool:
        """Whether a session of this model at ``threads`` (and ``spin``) is loaded here or still in the
        cache (another object of the same model loaded it): one asked for at those threads is not made."""
        if self.loaded and self.threads == threads and self.spin == spin:
            return True
        names = tuple(resolve_providers(self.providers))
        with _lock:
            return any(_names.get(k) == self.name and k[1:] == (names, threads, spin) for k in _cache)

    @property
    def on_cpu(self) -> bool:
        """Whether it runs on onnxruntime's CPU provider (the first one of those asked for that is there)."""
        return resolve_providers(self.providers)[0] == "CPUExecutionProvider"

    @property
    def batch(self) -> int | None:
        """Items per run: None = all at once (dynamic batch axis)."""
        _ = self.session
        return self._batch

    def unload(self) -> None:
        """Drop the session (it loads again on next use): for a model that a render no longer needs."""
        if self.loaded and self._key is not None:
            _drop(self._key)
        self._session = None

    def set_threads(self, threads: int) -> bool:
        """Use ``threads`` onnxruntime intra-op threads from now on (0: onnxruntime's default). A loaded
        session is dropped first (its memory freed before the next load); True where it was loaded."""
        if threads == self.threads:
            return False
        was_loaded = self.loaded
        self.unload()
        self.threads = int(threads)
        return was_loaded

    def set_spinning(self, spin: bool) -> None:
        """Whether onnxruntime's idle threads spin from the next load on (a loaded session is dropped)."""
        if spin != self.spin:
            self.unload()
            self.spin = spin


def drop(path: Path | str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> bool:
    """Drop the one cached session of ``path`` with these providers and threads; whether there was one."""
    return _drop(_key(path, resolve_providers(providers), threads))


def _drop(key: _Key) -> bool:
    with _lock:
        found = key in _cache
        _forget(key)
    if found:
        return_freed_memory()
    return found


def _touch(key: _Key | None) -> None:
    """Mark a loaded session as just used (the memory budget drops the least recently used first)."""
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)  # type: ignore[arg-type]


def release(path: Path | None = None) -> int:
    """Drop cached sessions (all, or those of one file) so their memory can be freed. Returns how many."""
    with _lock:
        keys = [k for k in _cache if path is None or k[0] == str(Path(path).resolve())]
        for k in keys:
            _forget(k)
    if keys:
        return_freed_memory()
    return len(keys)


def loaded_files() -> set[Path]:
    """The files that have a cached session now (to release, afterwards, what a piece of work loaded)."""
    with _lock:
        return {Path(k[0]) for k in _cache}


def loaded() -> list[dict[str, Any]]:
    """What is loaded now and on which providers it really runs: each session's file (``model``) and its
    catalog name (``name``; the file's name for a file loaded without its entry)."""
    with _lock:
        return [{"model": Path(k[0]).name, "name": _names.get(k, Path(k[0]).name), "requested": list(k[1]),
                 "providers": s.get_providers(),
                 "threads": k[2], "spinning": k[3], "mb": round(_sizes.get(k, 0) / 1e6, 1)}
                for k, s in _cache.items()]


def ran_on(files: set[Path] | None = None) -> dict[str, str]:
    """Each loaded model file (all, or those of ``files``) -> the provider its session really runs on (the
    first of ``session.get_providers()``: what onnxruntime gave, not what was asked for)."""
    with _lock:
        return {Path(k[0]).name: s.get_providers()[0] for k, s in _cache.items()
                if files is None or Path(k[0]) in files}


_gpu_memory: dict[str, tuple[float, float | None]] = {}  # query field -> (monotonic time read, MB)


def device_memory_mb(max_age_s: float = 2.0) -> float | None:
    """Memory used on the first NVIDIA GPU (MB), from nvidia-smi; None where it cannot be read.

    Progress reports ask twice a second from the encode stage: the answer is reused for ``max_age_s``
    so that a render does not start a process per report.
    """
    return _nvidia_smi_mb("memory.used", max_age_s)


def device_free_mb(max_age_s: float = 2.0) -> float | None:
    """Memory free on the first NVIDIA GPU (MB), from nvidia-smi; None where it cannot be read."""
    return _nvidia_smi_mb("memory.free", max_age_s)


def _nvidia_smi_mb(query: str, max_age_s: float) -> float | None:
    import shutil
    import subprocess
    import time

    read_at, value = _gpu_memory.get(query, (-1e9, None))
    if time.monotonic() - read_at < max_age_s:
        return value
    exe = shutil.which("nvidia-smi")
    value = None
    if exe:
        try:
            out = subprocess.run([exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=2, check=True).stdout
            value = float(out.split()[0])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            value = None
    _gpu_memory[query] = (time.monotonic(), value)
    return value
