"""The render farm: one video job's segments rendered in parallel on every GPU of a machine or a studio,
through Ray (the optional ``farm`` extra).

The SQLite queue stays on the host that owns it and the worker there becomes the Ray driver: it claims a
job as usual, plans the job's segments (the plan of :mod:`pipeline.jobs.segments`: ``segment_frames``
frames each, aligned on multiples of it), submits one Ray task per unfinished segment
(:func:`pipeline.jobs.farm_task.render_segment`, one GPU each where the cluster has GPUs), records each
finished segment in the job's resume record as it arrives (with the node, the worker process and the
time it took), then joins them without re-encoding and muxes the audio. A driver that dies resumes as
a local worker does: the recorded segments are kept, only the others are rendered again.

    farm = Farm.connect("local", slots=2)            # or "auto", or "HOST:PORT"
    worker.run(store, "host/ray", execute=farm.execute)
    farm.close()

The driver resolves the swapper once (``auto`` becomes the installed swapper it would use), gives every task
the settings with that name, and ships the models those settings need to nodes that lack them: every segment
is rendered by the same models. The notices of every segment (the classic swapper, a damaged input, an odd
size) come back with it and are reported once each; so do their quality reports (frames numbered in the
output), joined into the job's one report beside its output (``NAME.quality.json``) as a local job writes it.

Ray retries a task whose worker process or node died (``MAX_RETRIES`` times); a segment that fails for
the job's own reason (no face in the source, bad media) fails the job with that reason.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import env, paths
from pipeline.errors import Cancelled, FacestationError, UserError
from pipeline.image import is_image_path
from pipeline.jobs import runner, segments
from pipeline.jobs.farm_task import TOKEN_FILE, FileServer, SegmentDone, SegmentTask, render_segment
from pipeline.jobs.hold import FolderGate
from pipeline.jobs.model import Job
from pipeline.jobs.resume import ResumeRecord, fingerprint
from pipeline.progress import Progress
from pipeline.quality import QualityReport
from pipeline.quality.report import joined
from pipeline.settings import Settings

log = logging.getLogger(__name__)

INSTALL = 'pip install "facestation[farm]"'
CORES_PER_RENDER = 2  # a CPU render keeps about two cores busy (decode/encode threads + onnxruntime)
MAX_RETRIES = 3  # a task whose worker process or node died runs again, at most this many times
SEGMENT_VAR = env.FARM_SEGMENT_SECONDS.name
DEFAULT_SEGMENT_SECONDS = env.FARM_SEGMENT_SECONDS.default  # long against a task's set-up, short vs a crash
STATUS_FILE = "farm.json"
_ADDRESS = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


class FarmUnavailable(UserError):
    """Ray is not installed, or the cluster cannot be reached."""


class FarmError(FacestationError):
    """A segment could not be rendered by the farm for a reason outside the job (workers kept dying)."""


def ray_module() -> Any:
    """The ``ray`` package, or FarmUnavailable with the command that installs it."""
    try:
        import ray
    except ImportError:
        raise FarmUnavailable(f"--ray needs Ray, which is not installed; run: {INSTALL}") from None
    return ray


def default_segment_seconds() -> float:
    """Seconds of video per farm task: ``$FACESTATION_FARM_SEGMENT_SECONDS`` or 3."""
    return max(0.05, env.FARM_SEGMENT_SECONDS.get())


def parse_address(text: str) -> str | None:
    """``local`` -> None (start a runtime here), ``auto`` -> ``auto``, ``HOST:PORT`` -> itself."""
    value = text.strip()
    if value == "local":
        return None
    if value == "auto" or _ADDRESS.match(value):
        return value
    raise UserError(f"--ray takes local, auto or HOST:PORT, got {text!r}")


def plan(total: int, segment_frames: int) -> list[tuple[int, int | None]]:
    """(start, frames) of every segment of a ``total``-frame render; the last runs to the clip's end."""
    starts = list(range(0, max(total, 1), segment_frames))
    return [(s, segment_frames) for s in starts[:-1]] + [(starts[-1], None)]


@dataclass
class Farm:
    """A connection to a Ray runtime and how tasks ask for its resources."""

    address: str | None
    slots: int  # segments running at once
    task_resources: dict[str, float]  # num_gpus / num_cpus per task
    started_here: bool = False
    server: Any = None  # the FileServer actor on the driver's node
    segment_seconds: float = DEFAULT_SEGMENT_SECONDS  # of video per task
    running: dict[int, int] = field(default_factory=dict)  # job id -> segments running now
    gpu_free_mb: dict[str, float] = field(default_factory=dict)  # node id -> free GPU memory, last seen
    _status_at: float = 0.0

    @classmethod
    def connect(cls, address: str, slots: int | None = None, object_store_mb: int | None = None,
                segment_seconds: float | None = None) -> Farm:
        """Start (``local``) or join (``auto``, ``HOST:PORT``) a Ray runtime. ``segment_seconds``: of video
        per task (default :func:`default_segment_seconds`)."""
        ray = ray_module()
        where = parse_address(address)
        if slots is not None and slots < 1:
            raise UserError(f"--slots must be at least 1, got {slots}")
        store_mb = object_store_mb or env.FARM_OBJECT_STORE_MB.get()
        kwargs: dict[str, Any] = {"log_to_driver": env.FARM_LOGS.get(),
                                  "include_dashboard": False}
        if where not in (None, "auto"):
            _check_reachable(address, where)
        if where is None:
            _export_code_path()
            cores = os.cpu_count() or 1
            kwargs.update(num_cpus=cores, object_store_memory=(store_mb or 1024) << 20)
        try:
            ray.init(address=where or "local", **kwargs)  # "local": a new runtime, even if `ray start` ran
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise FarmUnavailable(f"cannot reach the Ray cluster at {address}: {exc}") from None
        farm = cls(where, *cls._resources(ray, where is None, slots), started_here=where is None,
                   segment_seconds=segment_seconds or default_segment_seconds())
        farm._start_server(ray)
        farm.write_status(force=True)
        log.info("farm: %d slot(s), %s per segment", farm.slots, farm.task_resources)
        return farm

    @staticmethod
    def _resources(ray: Any, local: bool, slots: int | None) -> tuple[int, dict[str, float]]:
        total = ray.cluster_resources()
        gpus, cpus = int(total.get("GPU", 0)), float(total.get("CPU", 1))
        if gpus:
            n = slots or gpus
            return n, {"num_gpus": min(1.0, gpus / n) if local else 1.0, "num_cpus": 1.0}
        if local:
            n = slots or max(1, int(cpus) // CORES_PER_RENDER)
            return n, {"num_cpus": cpus / n}
        smallest = min(float(node["Resources"].get("CPU", 1)) for node in ray.nodes() if node["Alive"])
        per_task = min(float(CORES_PER_RENDER), smallest)
        return slots or max(1, int(cpus // per_task)), {"num_cpus": per_task}

    def _start_server(self, ray: Any) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = ray.get_runtime_context().get_node_id()
        actor = ray.remote(num_cpus=0)(FileServer)
        self.server = actor.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)).remote()

    def execute(self, job: Job, ctx: runner.JobContext) -> dict[str, Any]:
        """The worker's hook: a video job goes to the farm, an image job renders here."""
        if is_image_path(Path(job.target)):
            return runner.execute(job, ctx)
        return FarmVideoJob(self, job, ctx).run()

    def nodes(self) -> list[dict[str, Any]]:
        """The cluster's live nodes: host, Ray node id, CPUs and GPUs (total)."""
        ray = ray_module()
        return [{"node": n["NodeManagerHostname"], "node_id": n["NodeID"][:12],
                 "address": n["NodeManagerAddress"], "cpus": n["Resources"].get("CPU", 0),
                 "gpus": n["Resources"].get("GPU", 0)} for n in ray.nodes() if n["Alive"]]

    def write_status(self, force: bool = False) -> None:
        """Tell the UI (another process) what the farm looks like: :data:`STATUS_FILE` in the data folder,
        rewritten at most once a second."""
        now = time.time()
        if not force and now - self._status_at < 1.0:
            return
        self._status_at = now
        nodes = [{**n, "gpu_free_mb": self.gpu_free_mb.get(n["node_id"])} for n in self.nodes()]
        data = {"updated_at": now, "address": self.address or "local", "slots": self.slots,
                "nodes": nodes, "running": {str(k): v for k, v in self.running.items()}}
        path = status_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}")
        part.write_text(json.dumps(data), encoding="utf-8")
        os.replace(part, path)

    def close(self) -> None:
        status_path().unlink(missing_ok=True)
        ray = ray_module()
        if ray.is_initialized():
            ray.shutdown()


def status_path() -> Path:
    return paths.data_dir() / STATUS_FILE


def read_status(max_age_s: float = 30.0) -> dict[str, Any] | None:
    """What the running farm driver last wrote (nodes, GPUs, segments running), or None if no farm runs."""
    try:
        data: dict[str, Any] = json.loads(status_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if time.time() - float(data.get("updated_at", 0)) <= max_age_s else None


def _check_reachable(text: str, where: str) -> None:
    """Fail at once, not after Ray's minutes of retries, when nothing answers at HOST:PORT."""
    import socket

    host, _, port = where.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise FarmUnavailable(f"cannot reach the Ray head at {text}: {exc.strerror or exc}; "
                              "is `ray start --head` running there?") from None


def _export_code_path() -> None:
    """Ray worker processes of a runtime started here import facestation from where this driver does."""
    root = str(paths.REPO_ROOT)
    current = os.environ.get("PYTHONPATH", "")
    if root not in current.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, current) if p)


class FarmVideoJob(runner.SegmentedJob):
    """One video job rendered by the farm: its planned segments, submitted to Ray and recorded as they
    finish (in any order); the rest is a :class:`~pipeline.jobs.runner.SegmentedJob`'s."""

    def __init__(self, farm: Farm, job: Job, ctx: runner.JobContext) -> None:
        self.farm = farm
        settings, notices = resolved_settings(job.settings)
        super().__init__(job, ctx, settings)
        self.notice(notices)
        self.plan = plan(self.total, self.segment_frames)
        self.reports: list[QualityReport] = []  # the quality reports of the segments this run rendered

    def fixed_segment_frames(self) -> int:
        self.segment_frames = segments.segment_frames_for(self.info.fps, self.farm.segment_seconds)
        return self.segment_frames

    def keep(self, record: ResumeRecord) -> ResumeRecord:
        """Only segments of this plan (aligned on ``segment_frames`` and inside the clip)."""
        starts = {s for s, _ in plan(self.total, self.segment_frames)}
        return record.with_segments(s for s in record.segments if s.start in starts)

    def resuming(self) -> str:
        pending = len(self.plan) - len(self.record.segments)
        return f"resuming: {len(self.record.segments)} of {len(self.plan)} segments kept, {pending} to render"

    def render_rest(self) -> dict[str, Any]:
        done = {s.start for s in self.record.segments}
        pending = [(s, n) for s, n in self.plan if s not in done]
        if pending:
            self._render(pending)
        self.quality = joined(self.reports, Path(self.job.output).name)  # written beside it after the join
        workers = {(s.node_id, s.pid) for s in self.record.segments}
        return {"resumed_at": 0, "farm_workers": len(workers)}

    def _render(self, pending: list[tuple[int, int | None]]) -> None:
        """Submit the pending segments (at most ``slots`` at a time) and collect them as they finish."""
        ray = ray_module()
        task = self._task_factory(ray)
        remote = ray.remote(max_retries=MAX_RETRIES, **self.farm.task_resources)(render_segment)
        waiting = deque(pending)
        running: dict[Any, tuple[int, int | None]] = {}
        try:
            while waiting or running:
                while waiting and len(running) < self.farm.slots:
                    start, frames = waiting.popleft()
                    running[remote.remote(task(start, frames), self.farm.server)] = (start, frames)
                self.farm.running[self.job.id] = len(running)
                ready, _ = ray.wait(list(running), num_returns=1, timeout=0.25)
                if self.ctx.control.cancelled:
                    raise Cancelled("job cancelled")
                for ref in ready:
                    self._finished(running.pop(ref), _result(ray, ref))
                self._progress(len(running))
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
            self.farm.running.pop(self.job.id, None)

    def _task_factory(self, ray: Any) -> Any:
        """Write the token that proves a node sees the work folder, allow the driver's files to be
        served, and return ``task(start, frames) -> SegmentTask``."""
        self.work.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        (self.work / TOKEN_FILE).write_text(token, encoding="utf-8")
        files = [self.job.target, *self.job.sources, *([self.job.audio] if self.job.audio else [])]
        inputs = {f: fingerprint(Path(f)) for f in files}
        models = _shippable_models(self.settings)
        ray.get(self.farm.server.allow.remote(files + [m["path"] for m in models.values()]))
        ship = env.FARM_SHIP.get()
        settings_json = self.settings.model_dump_json()  # the swapper resolved here, not on each node
        hold = str(self.ctx.hold.folder) if isinstance(self.ctx.hold, FolderGate) else None  # tests only

        def task(start: int, frames: int | None) -> SegmentTask:
            return SegmentTask(self.job.id, settings_json, tuple(self.job.sources), self.job.target,
                               inputs, str(self.work), token, start, frames, models, ship, hold,
                               self.job.audio, Path(self.job.output).suffix)

        return task

    def _finished(self, planned: tuple[int, int | None], done: SegmentDone) -> None:
        start, frames = planned
        if frames is not None and done.frames != frames:
            raise FarmError(f"segment at frame {start} came back with {done.frames} frames, not {frames}: "
                            f"{self.target.name} is shorter than it said")
        if done.data is not None:
            part = self.work / f".{done.file}.part"
            part.write_bytes(done.data)
            os.replace(part, self.work / done.file)
        if done.gpu_free_mb is not None:
            self.farm.gpu_free_mb[done.node_id] = done.gpu_free_mb
        self.rendered += done.frames
        self.models = self.models or list(done.models)
        self.notice(done.notices)
        if done.quality is not None:
            self.reports.append(done.quality)
        self.add_segment(done.segment(), models=tuple(self.models), notices=tuple(self.notices))
        log.info("job %d: segment %d done on %s pid %d in %.1f s", self.job.id, start, done.node, done.pid,
                 done.seconds)

    def _progress(self, running: int) -> None:
        """Report progress when the control wants it (twice a second: it is a database write)."""
        self.farm.write_status()
        if not self.ctx.control.due():
            return
        frames = self.record.frames
        elapsed = time.perf_counter() - self.started
        fps = self.rendered / elapsed if self.rendered and elapsed > 0 else None
        eta = (self.total - frames) / fps if fps else None
        self.ctx.control.report(Progress(
            frames, max(self.total, frames), round(fps, 2) if fps else None, eta,
            stage={"step": "farm", "segments": len(self.record.segments), "segments_total": len(self.plan),
                   "running": running}))


def _result(ray: Any, ref: Any) -> SegmentDone:
    """A finished task's result; the task's own exception (the job's reason) as itself."""
    try:
        done: SegmentDone = ray.get(ref)
        return done
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise FarmError(str(exc).strip().splitlines()[-1]) from None
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
            ray.exceptions.ObjectLostError) as exc:
        raise FarmError(f"a segment failed {MAX_RETRIES + 1} times because its Ray worker died: "
                        f"{type(exc).__name__}") from None


def resolved_settings(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with each processor's "auto" choices made here (the swapper: the installed one this
    machine picks), so that every node renders with the same models; and the notices a local render would
    give about those choices."""
    from pipeline.plan import ModelPlan
    from pipeline.processors import PROCESSORS

    resolved = settings
    for name in settings.processors.order:
        resolved = PROCESSORS[name].resolved(resolved)
    if resolved == settings:
        return settings, []
    return resolved, list(ModelPlan.from_settings(settings).planned)


def _shippable_models(settings: Settings) -> dict[str, dict[str, Any]]:
    """The model files a render with ``settings`` (its swapper resolved) loads that the driver has: name ->
    {path, size}. Built-in models are made on each node; a node fetches the others it lacks from the driver.
    The optional landmark model is in the plan when the driver has it (a node without it would use other
    landmarks)."""
    from pipeline.models import store
    from pipeline.plan import ModelPlan

    entries = ModelPlan.from_settings(settings).required()
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        path = store.installed_path(entry)
        if not entry.builtin and path.is_file():
            found[entry.name] = {"path": str(path), "size": path.stat().st_size}
    return found
