"""``facestation bench``: the pipeline against the transcode limit and a naive loop, printed as a table
or JSON (the measuring itself is :func:`pipeline.bench.run_bench`).

``--twins``: the same at real cost, with the cost twins of the ``twins`` package (random weights, the real
models' I/O, size and FLOPs) built once into the cache and installed in a temporary models folder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipeline import env, presets
from pipeline.errors import UserError
from pipeline.settings import key_choosing

# the twins --twins offers, each with the choice that runs it (scrfd_10g is the file of the retinaface choice)
TWINS = {"inswapper_128": "inswapper_128", "gfpgan_1.4": "gfpgan_1.4", "scrfd_10g": "retinaface",
         "inswapper_128_fp16": "inswapper_128_fp16"}


def twin_setting(twin: str) -> str:
    """``section.key=choice``: the setting that runs ``twin``."""
    return f"{key_choosing(TWINS[twin])}={TWINS[twin]}"


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure the pipeline against the transcode limit and a naive loop")
    p.add_argument("--target", metavar="VIDEO", help="clip to use (default: a generated 1080p30 clip)")
    p.add_argument("--source", action="append", metavar="IMG",
                   help="face to swap in (default: matplotlib's grace_hopper)")
    p.add_argument("--preset", metavar="NAME|FILE")
    p.add_argument("--set", action="append", metavar="section.key=value")
    p.add_argument("--no-temp-frames", action="store_true", help="skip the temp-PNG-frames baseline")
    p.add_argument("--no-naive", action="store_true",
                   help="skip the naive loop (at real cost it takes as long as the render)")
    p.add_argument("--twins", nargs="?", const="inswapper_128", metavar="NAME[,NAME…]",
                   help="run at real cost on cost twins (default inswapper_128; also inswapper_128_fp16, "
                        "gfpgan_1.4, scrfd_10g; the seed's chain: inswapper_128,gfpgan_1.4): "
                        "adds the chain's model-bound limit, the ratio to it per stage, start-up and peak "
                        "memory")
    p.add_argument("--seconds", type=float, metavar="S",
                   help="length of the generated clip (default 10, or 1 with --twins)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_bench)


def _needs(twin: str) -> list[str]:
    """The other twins a twin needs: a swapper's recogniser (it embeds the source face)."""
    from pipeline.models import catalog

    try:
        recogniser = catalog.get(twin).recogniser
    except UserError:  # a twin named otherwise than its catalog entry (scrfd_10g: retinaface)
        return []
    return [recogniser] if recogniser else []


def install_twins(names: list[str], folder: Path) -> list[str]:
    """Build the twins (and those they need) into the cache once, link them into ``folder``; the
    settings that select them."""
    from pipeline.paths import cache_dir

    unknown = [n for n in names if n not in TWINS]
    if unknown:
        raise UserError(f"no cost twin named {', '.join(unknown)} (choose from: {', '.join(TWINS)})")
    wanted = list(dict.fromkeys(n for name in names for n in (name, *_needs(name))))
    cache = cache_dir() / "twins"
    print(f"building cost twins {', '.join(wanted)} in {cache} (once)", file=sys.stderr)
    built = subprocess.run([sys.executable, "-m", "twins", str(cache), "--only", *wanted, "--no-run"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise UserError(f"make_twins failed: {(built.stderr or built.stdout).strip().splitlines()[-1:]}")
    folder.mkdir(parents=True, exist_ok=True)
    try:  # only the twins asked for: another cached swapper twin would be picked by face_swapper.model=auto
        built_files = json.loads((cache / "twins.json").read_text())
    except (OSError, ValueError):
        built_files = {}
    for file, record in built_files.items():
        if isinstance(record, dict) and record.get("twin") in wanted and (cache / file).is_file():
            (folder / file).symlink_to(cache / file)
    return [twin_setting(n) for n in names if n in TWINS]


def cmd_bench(args: argparse.Namespace) -> int:
    from pipeline.bench import default_face, make_test_clip, run_bench  # loads the render engine

    sources = [Path(s) for s in args.source] if args.source else [default_face()]
    with tempfile.TemporaryDirectory(prefix="facestation-bench-") as tmp:
        overrides = list(args.set or [])
        if args.twins:
            overrides = install_twins(args.twins.split(","), Path(tmp) / "models") + overrides
        with env.MODELS.set_to(Path(tmp) / "models") if args.twins else contextlib.nullcontext():
            settings = presets.settings_from(args.preset, overrides)
            target = Path(args.target) if args.target else None
            if target is None:
                seconds = args.seconds or (1.0 if args.twins else 10.0)
                target = make_test_clip(Path(tmp) / "bench-1080p.mp4", sources[0], seconds=seconds)
            report = run_bench(settings, sources, target, Path(tmp),
                               with_temp=not (args.no_temp_frames or args.twins), limit=bool(args.twins),
                               with_naive=not args.no_naive)
    for notice in report.get("notices", []):
        print(f"facestation: note: {notice}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def print_report(report: dict[str, Any]) -> None:
    c = report["clip"]
    print(f"clip {c['width']}x{c['height']} {c['fps']:g} fps, {c['frames']} frames; "
          f"models {', '.join(report['models'])}; encoder {report['encoder']}; batch {report['batch_size']}; "
          f"threads {report.get('threads', {})}")
    for name, fps in report["fps"].items():
        if fps is not None:
            print(f"  {name:12} {fps:7.2f} fps")
    for name, ratio in report["ratio"].items():
        if ratio is not None:
            print(f"  {name.replace('_vs_', ' / '):26} {ratio:.2f}")
    print("  busy ms per frame: " + ", ".join(f"{k} {v}" for k, v in report["ms_per_frame"].items()))
    print("  processors, ms per frame: " + ", ".join(
        f"{k} {v}" for k, v in report.get("processor_ms_per_frame", {}).items()))
    if report.get("report"):
        r = report["report"]
        print(f"  quality report: {r['ms_per_frame']} ms a frame busy ({100 * r['share_of_render']:.1f} % of "
              f"the render's time; identity {'on' if r['identity'] else 'off: report.identity=false'})")
    print_plan(report.get("plan", {}))
    bound = report.get("model_bound")
    if bound:
        for model, times in bound["per_face_s"].items():
            print(f"  {model}: s per face by threads " + ", ".join(f"{t}: {v}" for t, v in times.items()))
    if report.get("chain"):
        print_chain(report["chain"])
    print("  start-up s: " + ", ".join(f"{k} {v}" for k, v in report["startup_s"].items()))
    if report.get("ran_on"):
        print("  models ran on: " + ", ".join(f"{k} {v}" for k, v in report["ran_on"].items()))
    print("  peak RSS MB: " + ", ".join(f"{k} {v}" for k, v in report["peak_rss_mb"].items()))


def print_plan(plan: dict[str, Any]) -> None:
    """Where the render placed its stages, the measured seconds a frame behind it and what else it weighed."""
    if not plan:
        return
    print(f"  plan: {plan['placement']}; threads {plan['threads']}; batch {plan['batch']}; "
          f"{plan['free_cores']} cores free; predicted {plan['period_s']} s a frame "
          f"(heavy stages at their best one after another: {plan['limit_s']} s)")
    for stage, curve in plan.get("curves", {}).items():
        print(f"    {stage}: s a frame by threads " + ", ".join(f"{n}: {t}" for n, t in curve.items()))
    for option in plan.get("considered", [])[1:]:
        print(f"    also weighed: {option['placement']}: {option['period_s']} s a frame")


def print_chain(chain: dict[str, Any]) -> None:
    """The chain against its model-bound limit, stage by stage."""
    cpu = chain.get("cpu_s_a_frame", {})
    print(f"  chain: limit {chain['limit_fps']} fps, achieved {chain['achieved_fps']} fps, "
          f"ratio {chain['ratio']} (wall {chain['wall_s']} s); CPU s a frame: render {cpu.get('render')}, "
          f"the models alone {cpu.get('models_alone')}")
    print(f"    {'stage':10} {'model':22} {'busy s/frame':>12} {'threads':>7} {'turn wait':>9} "
          f"{'model alone s (threads)':>24}")
    for stage, row in chain["stages"].items():
        alone = f"{row['model_alone_s']} ({row['model_alone_threads']})"
        print(f"    {stage:10} {row['model']:22} {row['busy_s_a_frame']:>12} {row['threads'] or '-':>7} "
              f"{row['turn_wait_s_a_frame']:>9} {alone:>24}")
