"""The GPU check's tables at real cost (scripts/gpu_check.py ``--tables``): the cost twins on each provider at
batch 1/2/4/8, IO binding for the swapper, and live mode at 720p and 1080p with the inswapper + GFPGAN twins
(the render of the article's workload is gpu_check.py's own).

- batches: each twin's (the processors' heavy ones too: the frame enhancer's real_esrgan_x2/x4 at its
  256² tile, the lip syncer's wav2lip_gan_96) dynamic-batch rewrite (pipeline.models.batching; a twin
  whose rewrite fails runs batch 1 only, as the pipeline would) on each provider, items per second at each
  batch size. TensorRT builds fp16 engines (trt_fp16_enable) cached under the facestation cache.
- io binding: the swapper (pipeline's ModelRunner.run_feeds) with inputs and outputs bound on the
  session's device against plain runs, same feeds, same outputs.
- live: ``facestation live`` from a generated clip standing in for a 30 fps camera (delivered at its own
  rate) at each of ``--live-sizes`` (default 1280x720 and 1920x1080), inswapper + GFPGAN twins on the first
  provider, into a recording: delivered fps (the goal: the camera's 30), latency p50/p95 and its p50 at the
  start and the end of the run, frames dropped of those captured.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROVIDERS = {"tensorrt": "TensorrtExecutionProvider", "cuda": "CUDAExecutionProvider",
             "cpu": "CPUExecutionProvider"}
TWIN_NAMES = ("inswapper_128", "inswapper_128_fp16", "arcface_w600k_r50", "gfpgan_1.4", "scrfd_10g",
              "real_esrgan_x2", "real_esrgan_x4", "wav2lip_gan_96")  # the last three: issue 22's processors


def build_twins(names: Sequence[str], folder: Path, width: float) -> dict[str, Path]:
    from twins import build as make_twins

    folder.mkdir(parents=True, exist_ok=True)
    return {t.name: make_twins.build_twin(t, folder, width=width).path for t in make_twins.resolve(names)}


def time_batches(path: Path, provider: str, batches: Sequence[int], items: int) -> dict[str, Any]:
    """Items per second at each batch size, on the dynamic-batch rewrite where it exists."""
    import numpy as np

    from pipeline.models import batching, sessions
    from pipeline.models.runtime import random_feeds

    batched = batching.batched_path(path)
    asked = (provider,) if provider == "cpu" else (provider, "cpu")  # as a render asks: CPU as fallback
    session = sessions.load(batched or path, None, asked)
    dynamic = all(not isinstance(a.shape[0], int) for a in session.get_inputs() if a.shape)
    row: dict[str, Any] = {"provider": session.get_providers()[0], "dynamic_batch": dynamic}
    rng = np.random.default_rng(0)
    for b in batches if dynamic else [1]:
        feeds = random_feeds(session, rng, batch=b, free=640)  # a free image size (the detector): 640
        session.run(None, feeds)  # warm (TensorRT builds its engine for this shape here)
        runs = max(1, items // b)
        started = time.perf_counter()
        for _ in range(runs):
            session.run(None, feeds)
        row[str(b)] = round(runs * b / (time.perf_counter() - started), 2)
    del session
    sessions.release(batched or path)  # one twin's session at a time
    return row


def io_binding(provider: str, batch: int, runs: int) -> dict[str, Any]:
    """The swapper's runs with and without IO binding: items per second, and whether outputs agree."""
    import numpy as np

    from pipeline.models.runner import ModelRunner
    from pipeline.models.runtime import random_feeds

    runner = ModelRunner("inswapper_128", "swapper", providers=(provider,))
    rng = np.random.default_rng(1)
    feeds = random_feeds(runner.session, rng, batch=batch)
    out: dict[str, Any] = {"provider": runner.session.get_providers()[0], "device": runner.device,
                           "batch": batch}
    results = {}
    for bound in (False, True):
        runner.io_binding = bound
        results[bound] = runner.run_feeds(feeds)[0]
        started = time.perf_counter()
        for _ in range(runs):
            runner.run_feeds(feeds)
        out["bound" if bound else "plain"] = round(runs * batch / (time.perf_counter() - started), 2)
    out["same_output"] = bool(np.allclose(results[False], results[True], atol=1e-3))
    return out


LIVE_SETTINGS = ("face_swapper.model=inswapper_128", "face_enhancer.model=gfpgan_1.4", "selector.mode=one")


def live_args(face: Path, clip: Path, output: Path, provider: str, seconds: float) -> list[str]:
    """``facestation live``'s arguments for one live row: ``clip`` as the camera, the inswapper + GFPGAN
    twins on ``provider`` (CPU as the fallback, as a render asks), a recording, JSON out."""
    providers = provider if provider == "cpu" else f"{provider},cpu"
    sets = [*LIVE_SETTINGS, f"execution.providers={providers}"]
    return ["live", "--source", str(face), "--camera", str(clip), "--output", str(output),
            "--seconds", f"{seconds:g}", "--json", *(a for s in sets for a in ("--set", s))]


def live_row(provider: str, size: tuple[int, int], seconds: float, work: Path) -> dict[str, Any]:
    """One live run (:func:`live_args`) of a ``size`` camera at 30 fps for ``seconds``: its summary."""
    from cli.main import main as facestation
    from pipeline.bench import default_face, make_test_clip

    clip = work / f"camera-{size[0]}x{size[1]}-{seconds}.mp4"
    if not clip.exists():
        make_test_clip(clip, default_face(), seconds=seconds + 1, size=size, fps=30)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = facestation(live_args(default_face(), clip, work / f"live-{size[0]}.mp4", provider, seconds))
    if code != 0:
        raise SystemExit(f"facestation live at {size[0]}x{size[1]} failed ({code})")
    summary = json.loads(out.getvalue())
    keep = ("frames_captured", "frames_delivered", "frames_dropped", "fps", "latency_p50_ms",
            "latency_p95_ms", "latency_start_p50_ms", "latency_end_p50_ms")
    return {"provider": provider, "size": f"{size[0]}x{size[1]}", **{k: summary[k] for k in keep}}


def table(report: dict[str, Any]) -> str:
    """The BENCHMARKS.md tables of a ``--tables`` report."""
    batches = report["batches_asked"]
    lines = [f"onnxruntime {report['onnxruntime']}; {report['device']}", "",
             "| twin | provider (got) | dynamic batch | "
             + " | ".join(f"b={b} items/s" for b in batches) + " |",
             "|---|---|---|" + "---|" * len(batches)]
    for twin, rows in report["batches"].items():
        for asked, row in rows.items():
            cells = [str(row.get(str(b), "–")) for b in batches]
            dynamic = "yes" if row["dynamic_batch"] else "no"
            lines.append(f"| {twin} | {asked} ({row['provider']}) | {dynamic} | " + " | ".join(cells) + " |")
    if report.get("io_binding"):
        lines += ["", "| swapper IO binding | device | batch | plain items/s | bound items/s | same output |",
                  "|---|---|---|---|---|---|"]
        for row in report["io_binding"]:
            lines.append(f"| {row['provider']} | {row['device']} | {row['batch']} | {row['plain']} | "
                         f"{row['bound']} | {row['same_output']} |")
    if report.get("live"):
        lines += ["", "| live (inswapper + gfpgan twins, 30 fps camera) | size | delivered fps "
                  "| latency p50 / p95 ms | p50 start → end ms | dropped / captured |",
                  "|---|---|---|---|---|---|"]
        for row in report["live"]:
            lines.append(f"| {row['provider']} | {row['size']} | {row['fps']} | {row['latency_p50_ms']} / "
                         f"{row['latency_p95_ms']} | {row['latency_start_p50_ms']} → "
                         f"{row['latency_end_p50_ms']} | {row['frames_dropped']} / "
                         f"{row['frames_captured']} |")
    return "\n".join(lines)



def run(args: argparse.Namespace, work: Path, device: str) -> dict[str, Any]:
    from pipeline.models.runtime import ort
    from pipeline.paths import cache_dir

    providers = list(args.providers)
    batches = [int(b) for b in args.batches.split(",")]
    default = cache_dir() / "twins" if args.width == 1.0 else work / "twins"
    folder = Path(args.twins) if args.twins else default
    twins = build_twins(args.only or TWIN_NAMES, folder, args.width)
    os.environ["FACESTATION_MODELS"] = str(folder)  # the twins are the models folder from here on
    available = ort().get_available_providers()
    report: dict[str, Any] = {"onnxruntime": ort().__version__, "available": available, "device": device,
                              "batches_asked": batches, "batches": {}, "io_binding": [], "live": []}
    for name, path in twins.items():
        report["batches"][name] = {p: time_batches(path, p, batches, args.items) for p in providers
                                   if PROVIDERS[p] in available}
    if "inswapper_128" in twins and "arcface_w600k_r50" in twins:
        report["io_binding"] = [io_binding(p, max(batches), args.runs) for p in providers
                                if PROVIDERS[p] in available]
    if args.live_sizes and {"inswapper_128", "arcface_w600k_r50", "gfpgan_1.4"} <= set(twins):
        first = next(p for p in providers if PROVIDERS[p] in available)
        report["live"] = [live_row(first, size, args.live_seconds, work) for size in args.live_sizes]
    return report


def live_sizes(text: str) -> list[tuple[int, int]]:
    """``--live-sizes``: a comma list of WxH ("" for none)."""
    sizes = []
    for item in filter(None, text.split(",")):
        w, _, h = item.partition("x")
        if not (w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0):
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of WxH (e.g. 1280x720,1920x1080)")
        sizes.append((int(w), int(h)))
    return sizes
