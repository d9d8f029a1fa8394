#!/usr/bin/env python
"""Placements of the heavy stages compared in one run, alternated (A B C A B C), at real cost.

Usage: .venv/bin/python scripts/bench_placements.py [--twins inswapper_128,gfpgan_1.4] [--seconds 0.3]
                                                    [--rounds 2] [--variants plan,side,free] [--json]

The same clip (``bench.make_test_clip``, 1080p30, one face) is rendered once per variant per round, with one
processor (models loaded once), the cost twins of ``facestation bench --twins`` installed in a temporary
models folder. The stages' seconds a frame by threads are measured by the first render's plan and reused, so
that every later render starts at once. Variants (how the heavy stages are placed; everything else as the
defaults):

- ``plan``: what ``pipeline.renderplan`` chooses;
- ``turns``: every heavy stage in one group, taking turns on every free core (idle threads spinning or not
  as ``renderplan.spins`` decides); ``turns-spin`` / ``turns-sleep``: the same with onnxruntime's idle
  threads spinning (its default) / asleep;
- ``side``: each heavy stage side by side on cores of its own (the split ``pipeline.threadplan.split`` finds);
- ``free``: each heavy stage on every core, side by side, no turns (onnxruntime's defaults in a threaded
  pipeline: the thread pools fight).

Each row: the render's fps, its CPU seconds a frame (this process and its ffmpeg children), the load average
when it started, and fps over the model-bound limit measured at the start and the end of the run (the heavy
models alone at their best, one after another: ``pipeline.bench.model_bound``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cli.bench import install_twins  # noqa: E402
from pipeline import env, presets, renderplan, threadplan  # noqa: E402
from pipeline.bench import default_face, make_test_clip, model_bound  # noqa: E402
from pipeline.process import FaceProcessor  # noqa: E402
from pipeline.render import Render  # noqa: E402
from pipeline.video.decode import read_frames  # noqa: E402

VARIANTS = ("plan", "turns", "turns-spin", "turns-sleep", "side", "free")


def forced(variant: str) -> Any:
    """A stand-in for ``threadplan.place`` that places the heavy stages as ``variant`` says."""
    def place(curves: Any, light_cpu_s: float, free: float, n_threads: int | None = None,
              light_wall_s: float = 0.0) -> tuple[threadplan.Placement, list[threadplan.Placement]]:
        n = max(1, n_threads if n_threads is not None else round(free))
        stages = list(curves)
        if variant.startswith("turns"):
            chosen = threadplan.split(curves, [stages], n, light_cpu_s, free, light_wall_s)
        elif variant == "side":
            chosen = threadplan.split(curves, [[s] for s in stages], n, light_cpu_s, free, light_wall_s)
        else:  # free: every stage on every core, no turns
            chosen = threadplan.Placement(tuple((s,) for s in stages), tuple(n for _ in stages),
                                          dict.fromkeys(stages, n))
        assert chosen is not None, f"{variant}: more stages than threads"
        return chosen, [chosen]
    return place


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def render_once(variant: str, processor: FaceProcessor, face: Path, clip: Path, out: Path,
                curves: dict[str, Any], all_cores: bool = False) -> dict[str, Any]:
    """One render with the heavy stages placed as ``variant`` says (the plan's own measuring done once);
    ``all_cores``: the plan takes every core as free, whatever other processes take."""
    place, measure, spins = threadplan.place, renderplan.measure, renderplan.spins
    free = renderplan.free_cores
    if all_cores:
        renderplan.free_cores = lambda n, before, after: float(n)  # type: ignore[assignment]
    if variant != "plan":
        renderplan.threadplan.place = forced(variant)  # type: ignore[assignment]
    if variant in ("turns-spin", "turns-sleep"):
        renderplan.spins = lambda free, n: variant == "turns-spin"  # type: ignore[assignment]
    if curves:
        renderplan.measure = lambda *a, **k: {s: dict(c) for s, c in curves.items()}  # type: ignore[assignment]
    try:
        load, cpu = os.getloadavg()[0], cpu_seconds()
        result = Render(processor.settings, [face], clip, out, processor=processor).run()
        cpu = cpu_seconds() - cpu
    finally:
        threadplan.place, renderplan.measure, renderplan.spins = place, measure, spins
        renderplan.free_cores = free  # type: ignore[assignment]
    if not curves:
        curves.update({s: dict(c) for s, c in result.plan["curves"].items()})
        for s, c in curves.items():
            curves[s] = {int(n): t for n, t in c.items()}
    return {"variant": variant, "fps": result.fps, "placement": result.plan["placement"],
            "cpu_s_a_frame": round(cpu / max(1, result.frames), 3), "load": round(load, 2),
            "stage_s_a_frame": {k: round(v / max(1, result.frames), 3) for k, v in result.stage_s.items()},
            "turn_wait_s": result.turn_wait_s, "frames": result.frames}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--twins", default="inswapper_128,gfpgan_1.4")
    parser.add_argument("--seconds", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default="plan,side,free")
    parser.add_argument("--all-cores", action="store_true",
                        help="plan as if no other process took a core (compare placements on a busy machine)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variants {unknown} (choose from {', '.join(VARIANTS)})")
    face = default_face()
    with tempfile.TemporaryDirectory(prefix="placements-") as tmp:
        work = Path(tmp)
        overrides = install_twins(args.twins.split(","), work / "models")
        with env.MODELS.set_to(work / "models"):
            settings = presets.settings_from(None, overrides)
            clip = make_test_clip(work / "clip.mp4", face, seconds=args.seconds)
            processor = FaceProcessor(settings, [face])
            first = next(iter(read_frames(clip)))
            limits = [model_bound(processor, first)["fps"]]
            rows: list[dict[str, Any]] = []
            curves: dict[str, Any] = {}
            for r in range(args.rounds):
                for variant in variants:
                    row = render_once(variant, processor, face, clip, work / "out.mp4", curves,
                                      args.all_cores)
                    rows.append({"round": r + 1, **row})
                    print(f"round {r + 1} {variant:10} {row['fps']:.4f} fps, {row['cpu_s_a_frame']} CPU-s a "
                          f"frame, load {row['load']}: {row['placement']}", file=sys.stderr, flush=True)
            limits.append(model_bound(processor, first)["fps"])
    limit = sum(limits) / len(limits)
    for row in rows:
        row["vs_limit"] = round(row["fps"] / limit, 3)
    report = {"limit_fps": limits, "curves": curves, "rows": rows, "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"model-bound limit {limits} fps (start, end)")
        for row in rows:
            print(f"round {row['round']} {row['variant']:10} {row['fps']:.4f} fps  {row['vs_limit']:.3f} × "
                  f"limit  {row['cpu_s_a_frame']} CPU-s/frame  load {row['load']}  {row['placement']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
