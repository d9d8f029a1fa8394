"""The render plan: what a video render decides before its first frame.

:func:`plan_render` loads the models, runs the first frame through every stage of the chain (that frame's
first face-processor result is kept: :class:`FirstFrame`, the render does not redo it), gives the heaviest
model stage the cores that the others and decode/encode leave (light ones get one thread) and, for
``execution.batch_size=auto``, probes batch sizes within a time box (:func:`choose_batch_size`)."""

from __future__ import annotations

import copy
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import psutil

from pipeline.chain import Chain, Work
from pipeline.models.sessions import CatalogSession
from pipeline.process import FaceProcessor
from pipeline.processors.crops import Swapped
from pipeline.types import Face, Frame

log = logging.getLogger(__name__)

IO_MS_PER_MEGAPIXEL = 25.0
"""CPU time (ms) that decoding and encoding take per megapixel of a frame, beside the stages: a 1080p
transcode used most of both cores at 33 fps (BENCHMARKS.md, "Video pipeline"), ≈ 52 ms of CPU per frame."""

PROBE_SHARE = 0.05  # the batch probe may cost at most this share of the render of (at most) 10 s of clip
PROBE_SECONDS = 10.0


@dataclass
class RenderPlan:
    """What a render decided before its first frame: batch size, intra-op threads per model stage, the
    CPU time each stage took on the first frame (ms; a stage run on n threads counts n × its wall time),
    and the seconds spent loading models, on the first frame (the render's own first frame: it counts in
    the render's time) and probing beyond it."""

    batch: int = 1
    threads: dict[str, int] = field(default_factory=dict)
    cost_ms: dict[str, float] = field(default_factory=dict)
    load_s: float = 0.0
    first_s: float = 0.0
    probe_s: float = 0.0
    free_cores: float = 0.0  # cores that other processes left during the first frame
    first: FirstFrame | None = field(default=None, repr=False)  # what the first face processor made of it
    out_size: tuple[int, int] = (0, 0)  # (width, height) of the output frames (frame processors may scale)


@dataclass
class FirstFrame:
    """The plan's run of the first frame, kept so that the render does not run its first face processor (the
    swapper, in the default order) on that frame again (on a heavy model on a CPU that is seconds: 3 % of a
    1 s clip)."""

    frame: Frame
    faces: list[Face]
    swapped: list[Swapped]  # after the first face processor, before the next (they work in place)
    seconds: float = 0.0  # the first face processor took

    def take(self, frame: Frame, faces: Sequence[Face]) -> list[Swapped] | None:
        """The swapped faces if ``frame`` is this very frame with the same faces (the tracker did not move
        them); else None."""
        if frame is not self.frame or len(faces) != len(self.faces) or not all(
                np.array_equal(a.landmarks, b.landmarks) and np.array_equal(a.box, b.box)
                for a, b in zip(faces, self.faces, strict=True)):
            return None
        return self.swapped


def cores() -> int:
    """Cores for onnxruntime's intra-op threads: the physical cores this process may run on (onnxruntime's
    own default, ``threads=0``, is the physical core count too)."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = os.cpu_count() or 1
    return max(1, min(allowed, psutil.cpu_count(logical=False) or allowed))


def share_threads(cost_ms: dict[str, float], io_ms: float, n_cores: float,
                  model_stages: Sequence[str] = ("detect", "swap", "enhance")) -> dict[str, int]:
    """Intra-op threads per model stage from what each costs per frame (CPU ms).

    The heaviest stage sets the pace; while it takes one frame, every other stage and decode+encode
    (``io_ms``) need their own CPU time, so it gets the cores they leave: ``n`` threads with
    ``n + n·rest/heaviest ≤ cores`` (rounded, at least 1). Every other model stage gets one thread.
    """
    models = {k: v for k, v in cost_ms.items() if k in model_stages}
    if not models:
        return {}
    heaviest = max(models, key=lambda k: models[k])
    rest = io_ms + sum(v for k, v in cost_ms.items() if k != heaviest)
    share = n_cores / (1.0 + rest / max(models[heaviest], 1e-6))
    return {k: max(1, min(round(n_cores), round(share))) if k == heaviest else 1 for k in models}


CpuSample = tuple[float, float, float]  # (wall clock, CPU seconds busy on the whole machine, ours)


def cpu_sample() -> CpuSample:
    t = psutil.cpu_times()
    own = psutil.Process().cpu_times()
    return time.perf_counter(), sum(t) - t.idle - getattr(t, "iowait", 0.0), own.user + own.system


def free_cores(n_cores: int, before: CpuSample, after: CpuSample) -> float:
    """The cores not taken by other processes between two samples (at least 1): on a machine shared
    with other jobs, a stage given every core would only fight them (measured: inswapper twin at
    load ≈ 30 on 2 cores, 15.5 s a face on one thread, 26 s on two)."""
    wall = after[0] - before[0]
    if wall < 0.05:
        return float(n_cores)
    others = max(0.0, (after[1] - before[1]) - (after[2] - before[2])) / wall  # logical CPUs busy with others
    logical = psutil.cpu_count() or n_cores
    return max(1.0, n_cores * (1.0 - min(1.0, others / logical)))


def set_threads(models: dict[str, list[CatalogSession]], threads: dict[str, int], n_cores: int) -> None:
    """Give each stage's CPU models their threads; a model on onnxruntime's default (0 = every core) keeps
    it where the plan gives it every core, so that a loaded 554 MB session is not made again. A model on a
    GPU provider is left as it is: its intra-op threads only drive the nodes that fall back to the CPU,
    and re-making it (a TensorRT engine: seconds) twice per render, per farm segment, bought nothing."""
    for stage, found in models.items():
        for model in found:
            n = threads.get(stage, 1)
            if model.on_cpu and not (model.threads == 0 and n == n_cores):
                model.set_threads(n)


def unload_unused(processor: FaceProcessor) -> None:
    """Drop what no stage of a render runs: the swapper's recogniser has made the source identities (with
    the arcface twin: 174 MB held for nothing). The selector's recogniser stays: it picks faces per frame."""
    recogniser = getattr(processor.swapper, "recogniser", None)
    if isinstance(recogniser, CatalogSession):
        recogniser.unload()


def _load(models: dict[str, list[CatalogSession]]) -> float:
    started = time.perf_counter()
    for found in models.values():
        for model in found:
            _ = model.session
    return time.perf_counter() - started


def stage_models(processor: FaceProcessor) -> dict[str, list[CatalogSession]]:
    """The onnxruntime-backed models each stage runs (built-in classic code has none)."""
    return processor.stage_sessions()


def model_stages(chain: Chain) -> list[str]:
    """The stages that run onnxruntime models (they share the cores by cost): detect, model processors."""
    costs = {p.stage: p.cost for p in chain.processor.processors}
    return ["detect", *(s.name for s in chain.stages if costs.get(s.name) == "model")]


def _first_frame(chain: Chain, frame: Frame, start: int = 0) -> tuple[FirstFrame, dict[str, float], Frame]:
    """What the chain made of ``frame`` (number ``start``; kept after its first face processor), what each
    stage took (s), and the output frame (its size is the output's)."""
    took: dict[str, float] = {}
    started = time.perf_counter()
    work = chain.finder(start=start).push([frame])[0]
    took["detect"] = time.perf_counter() - started
    first = FirstFrame(frame, work.faces, [])
    work.frame = frame.copy()  # the render blends into its own frames: this run leaves the frame as it was
    for i, stage in enumerate(chain.stages):
        started = time.perf_counter()
        stage.run([work])
        took[stage.name] = time.perf_counter() - started
        if i == 0 and not stage.name.startswith("blend") and chain.first_is_face:
            first.swapped, first.seconds = copy.deepcopy(work.items), took[stage.name]
    assert work.out is not None
    return first, took, work.out


def plan_render(processor: FaceProcessor, frame: Frame, frames: int = 0, fps: float = 30.0,
                chain: Chain | None = None, start: int = 0) -> RenderPlan:
    """Load the models, run the first frame through every stage, share the cores and pick the batch.

    ``frames``/``fps``: the clip, for the probe's time box (:func:`choose_batch_size`); ``chain``: the
    render's (a fresh one of ``processor`` by default); ``start``: the first frame's number in the output.
    """
    chain = chain or Chain(processor)
    execution = processor.settings.execution
    models = stage_models(processor)
    n_cores = cores()
    plan = RenderPlan()
    unload_unused(processor)
    if not execution.threads:
        set_threads(models, dict.fromkeys(models, n_cores), n_cores)  # measure each stage on every core
    plan.load_s = _load(models)
    started = time.perf_counter()
    before = cpu_sample()
    plan.first, took, out = _first_frame(chain, frame, start)
    plan.out_size = (out.shape[1], out.shape[0])
    plan.first_s = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    plan.free_cores = round(free_cores(n_cores, before, cpu_sample()), 2)
    plan.cost_ms = {k: round(1000 * v * (n_cores if models.get(k) and not execution.threads else 1), 2)
                    for k, v in took.items()}
    if execution.threads:
        plan.threads = dict.fromkeys(models, execution.threads)
    else:
        io_ms = IO_MS_PER_MEGAPIXEL * frame.shape[0] * frame.shape[1] / 1e6
        plan.threads = share_threads(plan.cost_ms, io_ms, plan.free_cores, model_stages(chain))
        set_threads(models, plan.threads, n_cores)
        reload_s = _load(models)
        plan.load_s += reload_s
        started += reload_s
    first = sum(v for k, v in took.items() if k != "blend")
    plan.batch = choose_batch_size(chain, frame, execution.batch_size, faces=plan.first.faces,
                                   first_s=first, frames=frames, fps=fps)
    plan.probe_s = round(time.perf_counter() - started, 3)
    plan.load_s = round(plan.load_s, 3)
    log.info("render plan: batch %d, threads %s (%.1f cores free), first frame %s ms, load %.1f s, "
             "probe %.1f s beyond the first frame", plan.batch, plan.threads, plan.free_cores, plan.cost_ms,
             plan.load_s, plan.probe_s)
    return plan


def choose_batch_size(chain: Chain, frame: Frame, requested: int | str, *, faces: list[Face],
                      first_s: float, frames: int = 0, fps: float = 30.0, limit: int = 16) -> int:
    """``requested`` if fixed; else the batch size past which the throughput of detection and the face
    processors stops improving, found by a time-boxed probe on ``frame``.

    ``faces``: the frame's; ``first_s``: what one frame already took (the plan's first run). The probe
    tries 1 (again), 2, 4… while the next try still fits: all of it, first run included, costs at most
    ``PROBE_SHARE`` of the render at batch 1 of ``frames`` (capped at ``PROBE_SECONDS`` of clip). On a
    heavy model on a CPU (seconds per face) that leaves batch 1 untried again or one try of 2; on a GPU,
    1…16.
    """
    if requested != "auto":
        return int(requested)
    per_frame = first_s
    spent = per_frame
    budget_frames = min(frames, PROBE_SECONDS * fps) if frames > 0 else PROBE_SECONDS * fps
    budget = PROBE_SHARE * per_frame * budget_frames
    best_b, best_t = 1, per_frame
    available = psutil.virtual_memory().available
    b = 1
    while b <= limit and spent + b * best_t <= budget:
        t = _probe_run(chain, frame, faces, b) / b
        spent += t * b
        log.debug("batch %d: %.1f frames/s", b, 1 / max(t, 1e-9))
        if b == 1:
            best_t = t
        elif t * 1.05 > best_t:  # less than 5 % better: stop growing
            break
        else:
            best_b, best_t = b, t
        scale = chain.processor.scale  # the frames after an upscaler are scale² larger
        frame_bytes = frame.nbytes * (1 + scale**2) * 2 * chain.processor.settings.execution.queue_size
        if frame_bytes * b * 2 > available * 0.25:
            break
        b *= 2
    return best_b


def _probe_run(chain: Chain, frame: Frame, faces: list[Face], b: int) -> float:
    started = time.perf_counter()
    chain.processor.detect([frame] * b)
    works = [Work(frame, faces) for _ in range(b)]
    for stage in chain.stages:
        if not stage.name.startswith("blend"):
            stage.run(works)
    return time.perf_counter() - started
