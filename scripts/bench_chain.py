#!/usr/bin/env python
"""The seed's chain at real cost against its model-bound limit, and the swap-only bar: one command.

Usage: .venv/bin/python scripts/bench_chain.py [--seconds 1] [--json]

Runs, each in a process of its own (so one's sessions and memory do not weigh on the other), on a generated
1 s 1080p30 clip with one face (30 frames) and default settings:

1. ``facestation bench --twins inswapper_128,gfpgan_1.4 --no-naive --json``: the detector, the inswapper
   twin and the GFPGAN twin; the chain's model-bound limit (each model alone at its best thread count, one
   after another) and the render's fps, measured in the same run;
2. ``facestation bench --twins --no-naive --json``: the inswapper twin alone (the swap-only bar).

and prints, for each, the load average before and after, the limit, what the render achieved, their ratio
(the goal: ≥ 0.9), each stage's busy seconds a face, the placement and the peak RSS; ``--json`` prints both
reports whole. A figure taken while other processes load the machine is marked so by its load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL = 0.9
RUNS = {"chain": ["--twins", "inswapper_128,gfpgan_1.4"], "swap only": ["--twins", "inswapper_128"]}


def bench(args: list[str], seconds: float) -> dict[str, Any]:
    """One ``facestation bench`` at real cost, its JSON report, with the load average around it."""
    before = os.getloadavg()
    done = subprocess.run([sys.executable, "-m", "cli.main", "bench", *args, "--seconds", f"{seconds:g}",
                           "--no-naive", "--json"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench {' '.join(args)} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    report: dict[str, Any] = json.loads(done.stdout)
    report["load_average"] = {"before": [round(x, 2) for x in before],
                              "after": [round(x, 2) for x in os.getloadavg()]}
    return report


def summary(name: str, report: dict[str, Any]) -> list[str]:
    chain = report["chain"]
    ratio = chain["ratio"] or 0.0
    load = report["load_average"]
    lines = [f"{name}: limit {chain['limit_fps']} fps, achieved {chain['achieved_fps']} fps, ratio {ratio} "
             f"({'≥' if ratio >= GOAL else '<'} {GOAL}); wall {chain['wall_s']} s; load average "
             f"{load['before'][0]} before, {load['after'][0]} after",
             f"  placement: {chain['placement']} (predicted {chain['predicted_s_a_frame']} s a frame)"]
    for stage, row in chain["stages"].items():
        lines.append(f"  {stage:8} busy {row['busy_s_a_face']} s a face ({row['threads']} threads, waited "
                     f"{row['turn_wait_s_a_frame']} s a frame for its turn); {row['model']} alone "
                     f"{row['model_alone_s']} s at {row['model_alone_threads']} threads")
    cpu = chain["cpu_s_a_frame"]
    lines.append(f"  CPU s a frame: the render {cpu['render']} (this process), the models alone at their "
                 f"best {cpu['models_alone']}")
    rss = report["peak_rss_mb"]
    lines.append(f"  peak RSS: render {rss['render']} MB, whole process {rss['process']} MB")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of the generated clip")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    reports = {name: bench(run, args.seconds) for name, run in RUNS.items()}
    if args.json:
        print(json.dumps(reports, indent=2))
    for name, report in reports.items():
        print("\n".join(summary(name, report)), file=sys.stderr if args.json else sys.stdout)
    return 0 if all((r["chain"]["ratio"] or 0) >= GOAL for r in reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
