"""The render plan: what a video render decides before its first frame.

:func:`plan_render` loads the models, runs the first frame through every stage of the chain (what the
first run of face processors made of it is kept: :class:`FirstFrame`, the render does not redo it), measures
each heavy model stage alone at fewer threads (within a time box; a curve measured before is read from
:mod:`pipeline.plancache` instead), places the heavy stages on the cores
(:mod:`pipeline.threadplan`: which run side by side, which take turns, on how many threads; light ones get
one thread) and, for ``execution.batch_size=auto``, probes batch sizes within a time box
(:func:`choose_batch_size`).

This is the one place where a render's sessions get their threads: a model built with ``execution.threads``
> 0 (pipeline/families.py hands the setting to every model it builds) keeps it; every other CPU model gets
the plan's share, its idle threads asleep where other processes share the cores (:func:`spins`)."""

from __future__ import annotations

import copy
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from pipeline import plancache, threadplan
from pipeline.chain import Chain, Work
from pipeline.models.sessions import CatalogSession
from pipeline.process import FaceProcessor
from pipeline.processors.crops import FaceItem
from pipeline.types import Face, Frame

log = logging.getLogger(__name__)

IO_MS_PER_MEGAPIXEL = 25.0
"""CPU time (ms) that decoding and encoding take per megapixel of a frame, beside the stages: a 1080p
transcode used most of both cores at 33 fps (BENCHMARKS.md, "Video pipeline"), ≈ 52 ms of CPU per frame."""

PROBE_SHARE = 0.05  # the batch probe may cost at most this share of the render of (at most) 10 s of clip
PROBE_SECONDS = 10.0
MEASURE_SHARE = 0.1  # measuring heavy stages at fewer threads: at most this share of the render of…
MEASURE_SECONDS = 60.0  # …at most this much of the clip (a render's first minute decides its plan)
HEAVY_SHARE = 0.1  # a model stage costing less than this share of the heaviest one's CPU is light
SHARED_CORES = 0.5  # other processes taking more than this many cores: the machine is shared


@dataclass
class RenderPlan:
    """What a render decided before its first frame: batch size, intra-op threads per model stage, the
    CPU time each stage took on the first frame (ms; a stage run on n threads counts n × its wall time),
    the seconds spent loading models, on the first frame (the render's own first frame: it counts in the
    render's time) and measuring and probing beyond it; and where the heavy stages run (``groups``: side by
    side, the stages of one group taking turns) with the measured seconds a frame by threads behind it."""

    batch: int = 1
    threads: dict[str, int] = field(default_factory=dict)
    cost_ms: dict[str, float] = field(default_factory=dict)
    load_s: float = 0.0
    first_s: float = 0.0
    first_cpu_s: float = 0.0  # CPU seconds of the process on the first frame
    probe_s: float = 0.0
    free_cores: float = 0.0  # cores that other processes left during the first frame
    first: FirstFrame | None = field(default=None, repr=False)  # what the first face processors made of it
    out_size: tuple[int, int] = (0, 0)  # (width, height) of the output frames (frame processors may scale)
    groups: list[list[str]] = field(default_factory=list)  # heavy stages: groups side by side, turns within
    curves: dict[str, dict[int, float]] = field(default_factory=dict)  # heavy stage -> threads -> s a frame
    placement: str = ""  # the placement in words
    period_s: float = 0.0  # its predicted seconds a frame
    limit_s: float = 0.0  # the heavy stages at their best, one after another (s a frame)
    considered: list[dict[str, Any]] = field(default_factory=list)  # every placement weighed, fastest first
    measure_s: float = 0.0  # measuring heavy stages at fewer threads (and re-making their sessions)
    spin: bool = True  # whether the multi-threaded sessions' idle threads spin

    def summary(self) -> dict[str, Any]:
        """What ``facestation bench`` reports of the plan."""
        return {"placement": self.placement, "groups": self.groups, "threads": self.threads,
                "period_s": self.period_s, "limit_s": self.limit_s, "free_cores": self.free_cores,
                "spin": self.spin, "batch": self.batch,
                "curves": {k: {str(n): t for n, t in v.items()} for k, v in self.curves.items()},
                "considered": self.considered, "first_frame_cpu_ms": self.cost_ms,
                "seconds": {"load": self.load_s, "first_frame": self.first_s, "measure": self.measure_s,
                            "probe": self.probe_s}}


@dataclass
class FirstFrame:
    """The plan's run of the first frame, kept so that the render does not run the face processors of the
    chain's first run (the swapper, and the enhancer where it follows) on that frame again: on heavy
    models on a CPU that is seconds (the GFPGAN twin's run was 2 % of a 1 s clip's render). What comes after
    that run's blend (a frame processor, a second run) runs again: it is not kept."""

    frame: Frame
    faces: list[Face]
    done: dict[str, tuple[list[FaceItem], float]] = field(default_factory=dict)
    """stage -> the faces after it (before the next: they work in place) and the seconds it took"""

    def take(self, stage: str, frame: Frame, faces: Sequence[Face]) -> tuple[list[FaceItem], float] | None:
        """What ``stage`` made of the faces, and its seconds, if ``frame`` is this very frame with the same
        faces (the tracker did not move them); else None. Each stage's result is handed over once."""
        if stage not in self.done or frame is not self.frame or len(faces) != len(self.faces) or not all(
                np.array_equal(a.landmarks, b.landmarks) and np.array_equal(a.box, b.box)
                for a, b in zip(faces, self.faces, strict=True)):
            return None
        return self.done.pop(stage)


def cores() -> int:
    """Cores for onnxruntime's intra-op threads: the physical cores this process may run on (onnxruntime's
    own default, ``threads=0``, is the physical core count too)."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = os.cpu_count() or 1
    return max(1, min(allowed, psutil.cpu_count(logical=False) or allowed))


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


def spins(free: float, n_cores: int) -> bool:
    """Whether the render's multi-threaded CPU sessions let onnxruntime's idle threads spin (its default)
    rather than sleep: yes on cores of its own; no where other processes took more than
    :data:`SHARED_CORES` of them during the first frame. A spinning thread waiting for work holds a core
    that the others (and our own decode, encode and light stages) then wait for: on a shared machine that
    doubled the CPU a small model's run took (live mode); on an idle one, sleeping saves nothing and costs
    the wake-ups (and re-making a session loaded with the default)."""
    return free >= n_cores - SHARED_CORES


def planned(models: dict[str, list[CatalogSession]]) -> dict[str, list[CatalogSession]]:
    """The models whose threads the plan gives: on the CPU provider, not fixed by ``execution.threads``. A
    model on a GPU provider is left as it is: its intra-op threads only drive the nodes that fall back to
    the CPU, and re-making it (a TensorRT engine: seconds) twice per render, per farm segment, bought
    nothing."""
    return {stage: [m for m in found if m.on_cpu and m.planned] for stage, found in models.items()}


def set_threads(models: dict[str, list[CatalogSession]], threads: dict[str, int], n_cores: int,
                spin: bool = True) -> None:
    """Give each stage's models their threads (and, with more than one, whether idle ones spin); a model on
    onnxruntime's default (0 = every core) keeps it where it is given every core and spins, so that a
    loaded 554 MB session is not made again; unless that default session is gone from the cache (an
    earlier stretch measured the model at fewer threads and gave it every core: that session is kept)."""
    for stage, found in models.items():
        n = threads.get(stage, 1)
        for model in found:
            want = spin if n > 1 else model.spin  # one thread never waits for another: either will do
            default = model.threads == 0 and n == n_cores and model.spin == want
            if not (default and (model.kept(0, want) or not model.kept(n, want))):
                model.set_threads(n)
                model.set_spinning(want)


def unload_unused(processor: FaceProcessor) -> None:
    """Drop what no stage of a render runs: the models that made the source identities (a swapper's
    recogniser; with the arcface twin: 174 MB held for nothing). The selector's recogniser stays: it picks
    faces per frame."""
    for session in processor.helper_sessions():
        session.unload()


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


Rerun = Callable[[], None]  # one stage's run on the first frame again (a copy of its input)


def _first_frame(chain: Chain, frame: Frame, start: int = 0
                 ) -> tuple[FirstFrame, dict[str, float], Frame, dict[str, Rerun]]:
    """What the chain made of ``frame`` (number ``start``; kept after its first face processor), what each
    stage took (s), the output frame (its size is the output's) and how to run each stage on it again."""
    took: dict[str, float] = {}
    started = time.perf_counter()
    work = chain.finder(start=start).push([frame])[0]
    took["detect"] = time.perf_counter() - started
    first = FirstFrame(frame, work.faces)
    reruns: dict[str, Rerun] = {"detect": _redetect(chain, frame)}
    work.frame = frame.copy()  # the render blends into its own frames: this run leaves the frame as it was
    kept = chain.first_face_run
    for stage in chain.stages:
        if stage.sessions:
            reruns[stage.name] = _rerun(stage.run, copy.deepcopy(work))
        started = time.perf_counter()
        stage.run([work])
        took[stage.name] = time.perf_counter() - started
        if stage.name in kept:
            first.done[stage.name] = copy.deepcopy(work.items), took[stage.name]
    assert work.out is not None
    return first, took, work.out, reruns


def _rerun(run: Callable[[list[Work]], None], before: Work) -> Rerun:
    return lambda: run([copy.deepcopy(before)])


def _redetect(chain: Chain, frame: Frame) -> Rerun:
    def run() -> None:
        chain.processor.detect([frame])
    return run


def heavy_stages(cpu_ms: dict[str, float], stages: Sequence[str], io_ms: float,
                 models: dict[str, list[CatalogSession]]) -> list[str]:
    """The model stages worth placing: CPU models the plan gives threads to, costing more CPU a frame than
    decoding and encoding it (YuNet at 1080p, ≈ 40 ms against ≈ 52, is light: one thread, as before) and at
    least :data:`HEAVY_SHARE` of the heaviest one's (beside a swapper of seconds a face the detector is
    light even where a busy machine makes it cost more than decoding and encoding: a group's thread given
    to it, or its turn, would cost the heavy ones far more than it gains)."""
    mine = {s: cpu_ms.get(s, 0.0) for s in stages if models.get(s)}
    top = max(mine.values(), default=0.0)
    return [s for s, ms in mine.items() if ms > io_ms and ms >= HEAVY_SHARE * top]


def measure(models: dict[str, list[CatalogSession]], reruns: dict[str, Rerun], took: dict[str, float],
            heavy: Sequence[str], n_cores: int, budget_s: float, spin: bool,
            size: tuple[int, int] = (0, 0)) -> dict[str, dict[int, float]]:
    """Each heavy stage's seconds a frame at :func:`threadplan.measured_counts` (all cores: the first frame's
    own), its models alone on those threads, while the next measurement (reckoned as if the threads paid
    fully) fits in ``budget_s``; a stage whose curve was kept (:mod:`pipeline.plancache`: same model files,
    frame ``size``, cores and sharing) is not measured again, its kept curve is scaled to its first frame."""
    counts = threadplan.measured_counts(n_cores)
    keys = {s: plancache.key(models[s], size, n_cores, shared=not spin) for s in heavy}
    curves = {s: {n_cores: round(took[s], 4)} for s in heavy}
    todo = []
    for stage in heavy:
        kept = plancache.curve(keys[stage], took[stage], n_cores, counts)
        if kept is None:
            todo.append(stage)
        else:
            curves[stage] = kept
    spent = 0.0
    for n, stage in ((n, stage) for n in counts[1:] for stage in todo):
        if spent + took[stage] * n_cores / n > budget_s:
            break
        started = time.perf_counter()
        set_threads({stage: models[stage]}, {stage: n}, n_cores, spin)
        _load({stage: models[stage]})
        ran = time.perf_counter()
        reruns[stage]()
        curves[stage][n] = round(time.perf_counter() - ran, 4)
        spent += time.perf_counter() - started
    for stage in todo:
        if set(counts) <= set(curves[stage]):
            plancache.keep(keys[stage], curves[stage], n_cores)
    return curves


def plan_render(processor: FaceProcessor, frame: Frame, frames: int = 0, fps: float = 30.0,
                chain: Chain | None = None, start: int = 0, known: RenderPlan | None = None) -> RenderPlan:
    """Load the models, run the first frame through every stage, place the stages on the cores and pick the
    batch.

    ``frames``/``fps``: the clip, for the time boxes (measuring, :func:`choose_batch_size`); ``chain``: the
    render's (a fresh one of ``processor`` by default); ``start``: the first frame's number in the output.
    ``known``: the plan of a render of the same models on frames of this size (a marker's earlier stretch,
    pipeline/markers.py): its threads, placement and batch are taken as they are, the models loaded at
    those threads from the start (the sessions that render left in the cache: none made again) and only
    the first frame is run.
    """
    chain = chain or Chain(processor)
    models, n_cores, plan = stage_models(processor), cores(), RenderPlan()
    ours = planned(models)
    unload_unused(processor)
    if known is not None:
        set_threads(ours, known.threads, n_cores, known.spin)
        return _known(plan, known, chain, frame, start, _load(models))
    set_threads(ours, dict.fromkeys(ours, n_cores), n_cores)  # the first frame: every core, as loaded
    plan.load_s = _load(models)
    first_frame, took, reruns, before = _timed_first_frame(plan, chain, frame, start)
    plan.free_cores = round(free_cores(n_cores, before, cpu_sample()), 2)
    plan.cost_ms = {k: round(1000 * v * (n_cores if ours.get(k) else 1), 2) for k, v in took.items()}
    io_ms = IO_MS_PER_MEGAPIXEL * frame.shape[0] * frame.shape[1] / 1e6
    heavy = heavy_stages(plan.cost_ms, model_stages(chain), io_ms, ours)
    clip = min(frames, MEASURE_SECONDS * fps) if frames > 0 else MEASURE_SECONDS * fps
    started = time.perf_counter()
    plan.spin = spins(plan.free_cores, n_cores)
    plan.curves = measure(ours, reruns, took, heavy, n_cores, MEASURE_SHARE * plan.first_s * clip, plan.spin,
                          size=(frame.shape[1], frame.shape[0]))
    chosen = _place(plan, io_ms, n_cores)
    plan.threads = {s: chosen.get(s, 1) if ours.get(s) else found[0].threads
                    for s, found in models.items() if found}
    set_threads(ours, plan.threads, n_cores, plan.spin)
    plan.load_s += _load(models)
    plan.measure_s = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    first = sum(v for k, v in took.items() if k != "blend")
    plan.batch = choose_batch_size(chain, frame, processor.settings.execution.batch_size,
                                   faces=first_frame.faces, first_s=first, frames=frames, fps=fps)
    plan.probe_s = round(time.perf_counter() - started, 3)
    plan.load_s = round(plan.load_s, 3)
    log.info("render plan: %s; threads %s (%.1f cores free), batch %d, first frame %s ms, load %.1f s, "
             "measuring %.1f s, probe %.1f s", plan.placement, plan.threads, plan.free_cores, plan.batch,
             plan.cost_ms, plan.load_s, plan.measure_s, plan.probe_s)
    return plan


def _timed_first_frame(plan: RenderPlan, chain: Chain, frame: Frame, start: int
                       ) -> tuple[FirstFrame, dict[str, float], dict[str, Rerun], Any]:
    """Run the first frame through ``chain`` into ``plan`` (its faces, output size, wall and CPU seconds);
    what the chain made of it, its stages' seconds, the reruns for measuring, the CPU sample taken before."""
    started = time.perf_counter()
    before = cpu_sample()
    plan.first, took, out, reruns = _first_frame(chain, frame, start)
    plan.out_size = (out.shape[1], out.shape[0])
    plan.first_s = round(time.perf_counter() - started, 3)
    plan.first_cpu_s = round(cpu_sample()[2] - before[2], 3)
    return plan.first, took, reruns, before


def _known(plan: RenderPlan, known: RenderPlan, chain: Chain, frame: Frame, start: int,
           load_s: float) -> RenderPlan:
    """``known``'s decisions with this render's run of its first frame (:func:`plan_render`)."""
    _, took, _, _ = _timed_first_frame(plan, chain, frame, start)
    plan.cost_ms = {k: round(1000 * v * (known.threads.get(k) or 1), 2) for k, v in took.items()}
    for name in ("batch", "threads", "free_cores", "groups", "curves", "placement", "period_s", "limit_s",
                 "considered", "spin"):
        setattr(plan, name, copy.copy(getattr(known, name)))
    plan.load_s = round(load_s, 3)
    log.info("render plan: as the last render of these models (%s; threads %s, batch %d), load %.1f s",
             plan.placement, plan.threads, plan.batch, plan.load_s)
    return plan


def _place(plan: RenderPlan, io_ms: float, n_cores: int) -> dict[str, int]:
    """The heavy stages placed by :func:`threadplan.place` on the free cores (every other stage is light
    work beside them): the plan's placement, and the heavy stages' threads."""
    light = {k: v for k, v in plan.cost_ms.items() if k not in plan.curves}
    light_cpu = (io_ms + sum(light.values())) / 1000
    chosen, considered = threadplan.place(plan.curves, light_cpu, plan.free_cores,
                                          max(1, min(n_cores, round(plan.free_cores))),
                                          light_wall_s=max(light.values(), default=0.0) / 1000)
    plan.groups = [list(g) for g in chosen.groups]
    plan.placement, plan.period_s = chosen.describe(), chosen.period_s
    plan.limit_s = round(threadplan.limit_s(plan.curves, n_cores), 4)
    plan.considered = [{"placement": p.describe(), "period_s": p.period_s} for p in considered]
    return chosen.threads


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
