"""What one task of the render farm does on its node: render one segment of a video job.

A :class:`SegmentTask` is plain data (settings as JSON, paths and fingerprints, the frame range). The
task renders frames ``start .. start+frames-1`` with the same engine and settings as a local render
(:class:`pipeline.render.Render` with a :class:`~pipeline.jobs.segments.SegmentWriter` sink) and returns a
:class:`SegmentDone`: the segment is written straight into the job's work folder when this node sees that
folder (the driver leaves a token file there to prove it), and otherwise travels back as bytes through
Ray's object store.

Inputs and model files this node lacks come from the driver's machine through its :class:`FileServer`
(in chunks, only when missing): a node needs nothing shared but the network. Ray itself is imported
only inside the functions, so this module loads without the ``farm`` extra.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline import paths
from pipeline.jobs import resume, segments
from pipeline.jobs.hold import FolderGate
from pipeline.settings import Settings, apply_overrides, validate

if TYPE_CHECKING:
    from pipeline.process import FaceProcessor
    from pipeline.quality import QualityReport
    from pipeline.video.probe import VideoInfo

log = logging.getLogger(__name__)

CHUNK = 8 << 20  # bytes per FileServer read
TOKEN_FILE = ".farm-token"


@dataclass(frozen=True)
class SegmentTask:
    job_id: int
    settings_json: str
    sources: tuple[str, ...]
    target: str
    inputs: dict[str, dict[str, int]]  # path -> fingerprint (size, mtime_ns) on the driver's machine
    work: str  # the job's work folder on the driver's machine
    token: str  # the content of work/TOKEN_FILE: a node that reads it sees the folder
    start: int
    frames: int | None  # None: to the end of the clip
    models: dict[str, dict[str, Any]] = field(default_factory=dict)  # shippable: name -> {path, size}
    ship: bool = False  # return the bytes even when the folder is visible (a node with a look-alike path)
    hold: str | None = None  # a test's FolderGate folder: the task may wait there before it renders
    audio: str | None = None  # the job's new voice (a lip syncer follows it), shipped as an input
    container: str | None = None  # the joined output's suffix (a transparent output's segments: its codec)


@dataclass(frozen=True)
class SegmentDone:
    file: str
    start: int
    frames: int
    node: str  # host name
    node_id: str  # Ray node id (short): two nodes on one host differ here
    pid: int  # the Ray worker process that rendered it
    seconds: float  # wall time of the task, inputs and model loading included
    models: tuple[str, ...] = ()
    data: bytes | None = None  # the encoded segment, when the node could not write into the work folder
    gpu_free_mb: float | None = None  # free memory of the task's GPU when it ended (None on CPU)
    notices: tuple[str, ...] = ()  # what the user should know (the processor's, as a local render reports)
    quality: QualityReport | None = None  # the segment's quality report, its frames numbered in the output

    def segment(self) -> segments.Segment:
        """What the job's resume record keeps about this segment (not the bytes, models, GPU memory,
        notices)."""
        return segments.Segment(self.file, self.start, self.frames, self.node, self.node_id, self.pid,
                                self.seconds)


class FileServer:
    """Runs on the driver's machine (a Ray actor): serves chunks of the files the driver allowed."""

    def __init__(self) -> None:
        self._allowed: set[str] = set()

    def allow(self, files: list[str]) -> None:
        self._allowed.update(files)

    def read(self, path: str, offset: int, size: int) -> bytes:
        if path not in self._allowed:
            raise PermissionError(f"{path} is not a file of a farm job")
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(size)


def fetch(server: Any, path: str, dest: Path, size: int) -> Path:
    """Copy ``path`` from the driver's machine to ``dest`` (atomically: a partial copy never has its name)."""
    import ray

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        with open(part, "wb") as fh:
            for offset in range(0, max(size, 1), CHUNK):
                fh.write(ray.get(server.read.remote(path, offset, CHUNK)))
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    log.info("fetched %s from the driver (%d bytes)", path, size)
    return dest


def local_input(server: Any, path: str, fingerprint: dict[str, int]) -> Path:
    """``path`` itself when this node sees the same file, else a copy fetched into the node's cache."""
    own = Path(path)
    with contextlib.suppress(OSError):
        if resume.fingerprint(own) == fingerprint:
            return own
    key = hashlib.sha1(f"{path}|{fingerprint}".encode()).hexdigest()[:16]
    dest = paths.cache_dir() / "farm" / key / own.name
    if dest.is_file() and dest.stat().st_size == fingerprint["size"]:
        return dest
    return fetch(server, path, dest, fingerprint["size"])


def ship_models(server: Any, shippable: dict[str, dict[str, Any]]) -> list[str]:
    """Fetch the model files this node lacks from the driver; returns the names fetched."""
    from pipeline.models import catalog, store

    fetched = []
    for name, info in shippable.items():
        entry = catalog.get(name)
        if not store.is_installed(entry):
            fetch(server, info["path"], store.installed_path(entry), int(info["size"]))
            fetched.append(name)
    return fetched


def sees_folder(work: Path, token: str) -> bool:
    with contextlib.suppress(OSError):
        return (work / TOKEN_FILE).read_text(encoding="utf-8") == token
    return False


def task_settings(settings_json: str, cpus: float | None) -> Settings:
    """The job's settings, with onnxruntime's threads set to the cores Ray gave this task on CPU (two
    renders side by side on one machine would otherwise each take every core)."""
    import json

    settings = validate(json.loads(settings_json))
    if cpus and settings.execution.threads == 0:
        settings = apply_overrides(settings, [f"execution.threads={max(1, int(cpus))}"])
    return settings


@functools.lru_cache(maxsize=1)
def _processor(settings_json: str, sources: tuple[str, ...]) -> FaceProcessor:
    """One processor per Ray worker process and job: the next segment of the same job reuses its models."""
    import json

    from pipeline.process import FaceProcessor

    return FaceProcessor(validate(json.loads(settings_json)), list(sources))


def video_offset(path: Path) -> float:
    """Seconds from the file's start time to its video stream's first frame (what an input ``-ss`` counts
    from)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.start_time is None or stream.time_base is None or container.start_time is None:
            return 0.0
        return max(0.0, float(stream.start_time * stream.time_base) - container.start_time / av.time_base)


def seek_range(settings: Settings, info: VideoInfo, start: int, frames: int | None,
               voice: bool = False) -> tuple[Settings, tuple[int, int | None]]:
    """The settings and frame range a segment renders with, so that it decodes from near its own start.

    Picking frames by index decodes (and drops) every frame before the segment: segment k of a long clip
    would decode k segments for nothing. A constant-frame-rate source without a trim start seeks instead
    (input ``-ss``, accurate: ffmpeg decodes from the keyframe before and drops up to the time) half a
    frame before frame ``start``, so the first frame out is exactly frame ``start``. Others keep the index,
    and so does a job with a new voice (``voice``: heard by frame number from the clip's first frame).
    """
    stop = None if frames is None else start + frames
    if start == 0 or info.is_vfr or settings.video.start is not None or voice:
        return settings, (start, stop)
    at = video_offset(info.path) + (start - 0.5) / float(info.fps)
    return apply_overrides(settings, [f"video.start={at:.6f}"]), (0, frames)


def render_segment(task: SegmentTask, server: Any) -> SegmentDone:
    """The Ray task: render one segment (see the module text)."""
    import ray

    from pipeline.quality.report import shifted
    from pipeline.render import Render
    from pipeline.video.probe import probe

    if task.hold is not None:
        FolderGate(Path(task.hold)).hold_task(task.start)
    started = time.perf_counter()
    context = ray.get_runtime_context()
    cpus = context.get_assigned_resources().get("CPU") if not ray.get_gpu_ids() else None
    target = local_input(server, task.target, task.inputs[task.target])
    sources = tuple(str(local_input(server, s, task.inputs[s])) for s in task.sources)
    voice = None if task.audio is None else local_input(server, task.audio, task.inputs[task.audio])
    ship_models(server, task.models)
    settings = task_settings(task.settings_json, cpus)
    work = Path(task.work)
    direct = not task.ship and sees_folder(work, task.token)
    folder = work if direct else Path(tempfile.mkdtemp(prefix=f"facestation-job{task.job_id}-"))
    try:
        processor = _processor(settings.model_dump_json(), sources)
        info = probe(target)
        written: list[segments.Segment] = []

        def sink(width: int, height: int) -> segments.SegmentWriter:
            return segments.SegmentWriter(folder, first_frame=task.start,
                                          segment_frames=task.frames or 1 << 40, source=info,
                                          settings=settings, size=(width, height),
                                          on_segment=written.append, container=task.container)

        seeked, frames = seek_range(settings, info, task.start, task.frames, voice is not None)
        result = Render(seeked, sources, target, sink=sink, processor=processor, info=info, frames=frames,
                        audio=voice).run()
        quality = None if result.quality is None else shifted(result.quality, task.start - frames[0])
        segment = written[0]
        data = None if direct else (folder / segment.file).read_bytes()
    finally:
        if not direct:
            shutil.rmtree(folder, ignore_errors=True)
    return SegmentDone(segment.file, segment.start, segment.frames, socket.gethostname(),
                       context.get_node_id()[:12], os.getpid(), round(time.perf_counter() - started, 3),
                       tuple(processor.models), data, gpu_free_mb([str(g) for g in ray.get_gpu_ids()]),
                       tuple(dict.fromkeys(processor.notices)), quality)


def gpu_free_mb(gpus: list[str]) -> float | None:
    """Free memory of the first GPU Ray gave this task, from nvidia-smi (None on CPU or without it)."""
    import subprocess

    if not gpus or not shutil.which("nvidia-smi"):
        return None
    cmd = ["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", gpus[0]]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True).stdout
        return float(out.strip().splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
