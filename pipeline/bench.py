"""``facestation bench``: the pipeline against the transcode limit and a naive loop, on one clip, in one run.

(a) transcode: decode -> encode with the same settings, nothing else (the ceiling for any face swapper);
(b) naive: read a frame, detect, swap, paste, write — batch 1, one thread, frames piped to and from ffmpeg;
(c) temp frames: how roop-style tools work — every frame extracted to a PNG on disk, processed file by file,
    then encoded from the PNGs;
(d) facestation: the staged, batched render. Reported as fps and ratios measured side by side.

With real-cost models (``facestation bench --twins``: the cost twins of scripts/make_twins.py) the report
adds (e) the model-bound limit: each model stage's per-face time on its own at its best thread count,
the fps no pipeline of these models can beat on this machine; plus start-up and peak memory.
"""

from __future__ import annotations

import logging
import resource
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from pipeline import plancache
from pipeline.chain import Chain
from pipeline.checking.photos import default_face
from pipeline.errors import UserError
from pipeline.models import sessions
from pipeline.models.runtime import random_feeds
from pipeline.models.sessions import CatalogSession
from pipeline.process import FaceProcessor
from pipeline.render import Render, RenderResult, no_face_notice
from pipeline.renderplan import cores, cpu_sample, free_cores, planned, spins, stage_models
from pipeline.settings import Settings
from pipeline.threadplan import measured_counts
from pipeline.types import Frame
from pipeline.video.decode import read_frames
from pipeline.video.encode import Encoder, encoder_for
from pipeline.video.probe import probe
from pipeline.video.trim import Trim

log = logging.getLogger(__name__)


def make_test_clip(path: Path, face: Path, seconds: float = 10.0, size: tuple[int, int] = (1920, 1080),
                   fps: int = 30) -> Path:
    """A clip of ``face`` drifting and zooming over a plain background (no audio)."""
    from pipeline.image import read_image

    img = read_image(face).bgr
    w, h = size
    n = round(seconds * fps)
    base = 0.6 * min(w / img.shape[1], h / img.shape[0])
    background = np.full((h, w, 3), (60, 90, 120), np.uint8)
    with Encoder(path, width=w, height=h, fps=fps, encoder="libx264", quality=80, preset="fastest") as enc:
        for i in range(n):
            t = i / max(1, n - 1)
            scale = base * (0.85 + 0.3 * t)
            dx, dy = 0.15 * w * np.sin(2 * np.pi * t), 0.05 * h * np.cos(2 * np.pi * t)
            m = np.array([[scale, 0, w / 2 - scale * img.shape[1] / 2 + dx],
                          [0, scale, h / 2 - scale * img.shape[0] / 2 + dy]], np.float32)
            enc.write(cv2.warpAffine(img, m, (w, h), dst=background.copy(),
                                     borderMode=cv2.BORDER_TRANSPARENT))
    return path


def _loop(target: Path, out: Path, s: Settings, processor: FaceProcessor | None) -> float:
    """fps of decode -> (detect, swap, paste one frame at a time, if ``processor``) -> encode."""
    info = probe(target)
    started = time.perf_counter()
    n = 0
    chain = Chain(processor) if processor is not None else None
    with encoder_for(out, info, s) as enc:
        for frame in read_frames(target, info=info, trim=Trim.of(s)):
            if chain is not None:
                frame = chain.one(frame).out  # type: ignore[assignment]
            enc.write(frame)
            n += 1
    return n / (time.perf_counter() - started)


def _temp_frames(processor: FaceProcessor, target: Path, out: Path, s: Settings, workdir: Path) -> float:
    """The way roop-style tools work: extract every frame to PNG, process file by file, encode the PNGs."""
    import subprocess

    from pipeline.video import ffmpeg

    info = probe(target)
    frames_dir = workdir / "frames"
    frames_dir.mkdir(exist_ok=True)
    exe = ffmpeg.ffmpeg_exe()
    started = time.perf_counter()
    subprocess.run([exe, "-v", "error", "-i", str(target), "-vsync", "0", str(frames_dir / "%06d.png")],
                   check=True)
    chain = Chain(processor)
    for png in sorted(frames_dir.glob("*.png")):
        frame: Frame | None = cv2.imread(str(png))  # type: ignore[assignment]
        if frame is None:
            raise UserError(f"cannot read back {png.name}")
        out_frame = chain.one(frame).out
        assert out_frame is not None
        cv2.imwrite(str(png), out_frame)
    n = len(list(frames_dir.glob("*.png")))
    crf = str(round(35 - 0.23 * s.output.quality))
    subprocess.run([exe, "-v", "error", "-y", "-framerate", str(info.fps), "-i", str(frames_dir / "%06d.png"),
                    "-c:v", "libx264", "-crf", crf, "-pix_fmt", "yuv420p", str(out)], check=True)
    seconds = time.perf_counter() - started
    for png in frames_dir.glob("*.png"):
        png.unlink()
    return n / seconds


def model_bound(processor: FaceProcessor, frame: Frame, repeats: int = 2) -> dict[str, Any]:
    """The chain's model-bound limit: each model stage's main model alone (batch 1) at each thread count of
    :func:`pipeline.threadplan.measured_counts` (1…N on up to 4 cores), its best time, and the frames/s of
    the chain if each ran at its best, one after another (one face a frame): 1 / Σ best.

    The face models are timed on random inputs of their own shapes; the detector on ``frame`` (its input is
    the frame resized: :meth:`processor.detect`, which counts its resize too, ≈ 2 ms at 1080p). The models
    are left on the threads they had, loaded. What a stage's one model measured is kept for the render
    plan (:mod:`pipeline.plancache`): the render after it reads it instead of measuring that model again."""
    rng = np.random.default_rng(0)
    counts = sorted(measured_counts(cores()))
    out: dict[str, Any] = {"per_face_s": {}, "cpu_per_face_s": {}, "best_threads": {}, "stage": {}}
    before, planned_models = cpu_sample(), planned(stage_models(processor))
    for stage, models in stage_models(processor).items():
        if not models:
            continue
        model, had, spun = models[0], models[0].threads, models[0].spin
        run = _detect_run(processor, frame) if stage == "detect" else _model_run(model, rng)
        times, cpu = {}, {}
        for threads in counts:
            model.set_threads(threads)
            run()  # loads it, then a warm run
            runs = []
            for _ in range(repeats):
                started, used = time.perf_counter(), time.process_time()
                run()
                runs.append((time.perf_counter() - started, time.process_time() - used))
            times[threads], cpu[threads] = (round(x, 4) for x in min(runs))
        model.set_threads(had)
        model.set_spinning(spun)
        _ = model.session  # loaded again now: the naive loop timed next must not pay for it
        out["per_face_s"][model.name] = times
        out["cpu_per_face_s"][model.name] = cpu  # CPU seconds of the process in that run (all its threads)
        out["best_threads"][model.name] = min(times, key=lambda t: times[t])
        out["stage"][model.name] = stage
    shared = not spins(free_cores(cores(), before, cpu_sample()), cores())
    for found in planned_models.values():
        if len(found) == 1 and found[0].name in out["stage"]:
            key = plancache.key(found, (frame.shape[1], frame.shape[0]), cores(), shared)
            plancache.keep(key, out["per_face_s"][found[0].name], cores())
    total = sum(out["per_face_s"][m][t] for m, t in out["best_threads"].items())
    out["seconds_a_frame"] = round(total, 4)
    out["fps"] = round(1.0 / total, 4) if total else None
    return out


def _model_run(model: CatalogSession, rng: np.random.Generator) -> Callable[[], None]:
    feeds: dict[str, Any] = {}

    def run() -> None:
        session = model.session
        if not feeds:
            feeds.update(random_feeds(session, rng))
        session.run(None, feeds)
    return run


def _detect_run(processor: FaceProcessor, frame: Frame) -> Callable[[], None]:
    def run() -> None:
        processor.detect([frame])
    return run


def processor_costs(processor: FaceProcessor, stage_s: dict[str, float], frames: int) -> dict[str, float]:
    """Each processor of the order: its stage's busy ms per frame in the render (a face processor's
    includes the masks it sets, when it is the first of its run)."""
    return {p.name: round(1000 * stage_s.get(p.stage, 0.0) / max(1, frames), 2) for p in processor.processors}


def report_cost(settings: Settings, result: RenderResult) -> dict[str, Any]:
    """The quality report's own cost in the render (pipeline/quality/): its busy ms a frame (the ``quality``
    stage and its look in the detect thread), with or without the identity judge (``report.identity``)."""
    busy = result.stage_s.get("quality", 0.0)
    return {"identity": settings.report.identity,
            "ms_per_frame": round(1000 * busy / max(1, result.frames), 2),
            "share_of_render": round(busy / max(result.seconds, 1e-9), 4)}


def process_peak_rss_mb() -> float:
    """This process's peak RSS in MB (10^6 bytes, as the render's own peak; Linux gives ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, 1)


def run_bench(settings: Settings, sources: list[Path], target: Path | None, workdir: Path,
              with_temp: bool = True, limit: bool = False, with_naive: bool = True) -> dict[str, Any]:
    """Every way of :mod:`pipeline.bench` on one clip; ``limit``: the model-bound limit too (heavy models);
    ``with_naive`` False: no naive loop (at real cost it takes as long as the render)."""
    if target is None:
        log.info("generating a 10 s 1080p30 test clip")
        target = make_test_clip(workdir / "bench-1080p.mp4", sources[0])
    info = probe(target)
    started = time.perf_counter()
    processor = FaceProcessor(settings, sources)
    first_frame = next(iter(read_frames(target, info=info)))
    Chain(processor).one(first_frame)  # warm the models
    warm_s = time.perf_counter() - started
    bound = model_bound(processor, first_frame) if limit else None
    transcode = _loop(target, workdir / "transcode.mp4", settings, None)
    naive = _loop(target, workdir / "naive.mp4", settings, processor) if with_naive else None
    temp_frames = (_temp_frames(processor, target, workdir / "temp_frames.mp4", settings, workdir)
                   if with_temp else None)
    started = time.perf_counter()
    result = Render(settings, sources, target, workdir / "pipeline.mp4", processor=processor, info=info).run()
    startup = time.perf_counter() - started - result.seconds
    report: dict[str, Any] = {
        "clip": {"path": str(target), "width": info.width, "height": info.height, "fps": float(info.fps),
                 "frames": info.frame_count},
        "models": processor.models,
        "encoder": result.encoder,
        "batch_size": result.batch_size,
        "threads": result.threads,
        "fps": {"transcode": round(transcode, 2), "naive": round(naive, 3) if naive else None,
                "temp_frames": round(temp_frames, 2) if temp_frames else None, "pipeline": result.fps},
        "ratio": {"pipeline_vs_transcode": round(result.fps / transcode, 3),
                  "pipeline_vs_naive": round(result.fps / naive, 3) if naive else None,
                  "pipeline_vs_temp_frames": round(result.fps / temp_frames, 3) if temp_frames else None},
        "plan": result.plan,
        "stage_busy_s": result.stage_s,
        "ms_per_frame": {k: round(1000 * v / max(1, result.frames), 2) for k, v in result.stage_s.items()},
        "processor_ms_per_frame": processor_costs(processor, result.stage_s, result.frames),
        "faces_swapped": result.faces_swapped,
        "report": report_cost(settings, result),
        "startup_s": {"first_load_and_frame": round(warm_s, 2), "render": round(startup, 2),
                      "render_loading": result.load_s, "render_measuring": result.measure_s,
                      "render_probe": result.probe_s},
        "peak_rss_mb": {"render": result.peak_rss_mb,
                        "process": process_peak_rss_mb()},
        "notices": list(result.notices),
        "ran_on": sessions.ran_on(),  # each model file -> the provider onnxruntime really gave it
    }
    notice = no_face_notice(target, settings) if result.faces_swapped == 0 else None
    if notice is not None:  # the ratios then compare copies: say so, not a plain success
        report["notices"].append(notice + "; the figures measure no swap")
    if bound is not None:
        report["model_bound"] = bound
        if bound["fps"]:
            report["fps"]["model_bound"] = bound["fps"]
            report["ratio"]["pipeline_vs_model_bound"] = round(result.fps / bound["fps"], 3)
            report["ratio"]["naive_vs_model_bound"] = round(naive / bound["fps"], 3) if naive else None
        report["chain"] = chain_report(result, bound)
    return report


def chain_report(result: RenderResult, bound: dict[str, Any]) -> dict[str, Any]:
    """The chain at real cost: the model-bound limit, what the render achieved, their ratio, and per model
    stage its busy seconds a frame in the render (and a face), its threads there, the seconds it waited for
    its turn, and its main model alone at its best (seconds a face, threads)."""
    frames, faces = max(1, result.frames), max(1, result.faces_swapped)
    stages: dict[str, Any] = {}
    for model, stage in bound["stage"].items():
        best = bound["best_threads"][model]
        stages[stage] = {"model": model, "busy_s_a_frame": round(result.stage_s.get(stage, 0.0) / frames, 3),
                         "busy_s_a_face": round(result.stage_s.get(stage, 0.0) / faces, 3),
                         "threads": result.threads.get(stage),
                         "turn_wait_s_a_frame": round(result.turn_wait_s.get(stage, 0.0) / frames, 3),
                         "model_alone_s": bound["per_face_s"][model][best], "model_alone_threads": best}
    limit = bound["fps"] or 0.0
    models_cpu = sum(bound["cpu_per_face_s"][m][t] for m, t in bound["best_threads"].items())
    return {"limit_fps": limit, "achieved_fps": result.fps,
            "cpu_s_a_frame": {"render": round(result.cpu_s / frames, 3),
                              "models_alone": round(models_cpu, 3)},
            "ratio": round(result.fps / limit, 3) if limit else None,
            "wall_s": result.seconds, "placement": result.plan.get("placement"),
            "predicted_s_a_frame": result.plan.get("period_s"), "stages": stages}


class BackgroundBench:
    """A benchmark running on its own thread (for the web UI): poll :meth:`status` until it is done.

    Uses a short generated clip so it finishes in well under a minute on a CPU.
    """

    def __init__(self, settings: Settings, seconds: float = 3.0, size: tuple[int, int] = (1280, 720)) -> None:
        self.settings, self.seconds, self.size = settings, seconds, size
        self.state = "running"
        self.report: dict[str, Any] | None = None
        self.error: str | None = None
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, name="facestation-bench", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            face = default_face()
            with tempfile.TemporaryDirectory(prefix="facestation-bench-") as tmp:
                clip = make_test_clip(Path(tmp) / "bench.mp4", face, seconds=self.seconds, size=self.size)
                self.report = run_bench(self.settings, [face], clip, Path(tmp), with_temp=False)
            self.state = "done"
        except Exception as exc:  # reported to the UI as text; the thread must not die silently
            log.exception("benchmark failed")
            self.error, self.state = f"{type(exc).__name__}: {exc}", "failed"

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "report": self.report, "error": self.error,
                "elapsed_s": round(time.time() - self.started, 1)}
