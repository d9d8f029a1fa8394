"""``facestation bench``: the pipeline against the transcode limit and a naive loop, printed as a table
or JSON (the measuring itself is :func:`pipeline.bench.run_bench`)."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from pipeline import presets


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure the pipeline against the transcode limit and a naive loop")
    p.add_argument("--target", metavar="VIDEO", help="clip to use (default: a generated 10 s 1080p30 clip)")
    p.add_argument("--source", action="append", metavar="IMG",
                   help="face to swap in (default: matplotlib's grace_hopper)")
    p.add_argument("--preset", metavar="NAME|FILE")
    p.add_argument("--set", action="append", metavar="section.key=value")
    p.add_argument("--no-temp-frames", action="store_true", help="skip the temp-PNG-frames baseline")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from pipeline.bench import default_face, run_bench  # loads the render engine

    settings = presets.settings_from(args.preset, args.set)
    sources = [Path(s) for s in args.source] if args.source else [default_face()]
    with tempfile.TemporaryDirectory(prefix="facestation-bench-") as tmp:
        report = run_bench(settings, sources, Path(args.target) if args.target else None, Path(tmp),
                           with_temp=not args.no_temp_frames)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def print_report(report: dict[str, Any]) -> None:
    c = report["clip"]
    print(f"clip {c['width']}x{c['height']} {c['fps']:g} fps, {c['frames']} frames; "
          f"models {', '.join(report['models'])}; encoder {report['encoder']}; batch {report['batch_size']}")
    for name, fps in report["fps"].items():
        if fps is not None:
            print(f"  {name:12} {fps:7.2f} fps")
    for name, ratio in report["ratio"].items():
        if ratio is not None:
            print(f"  {name.replace('_vs_', ' / '):26} {ratio:.2f}")
    print("  busy ms per frame: " + ", ".join(f"{k} {v}" for k, v in report["ms_per_frame"].items()))
