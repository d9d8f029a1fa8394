#!/usr/bin/env python
"""Peak RSS of `facestation swap` on a 10 s and a 60 s clip (same size): memory must not grow with length.

Usage: .venv/bin/python scripts/bench_memory.py [--size 1920x1080]
Each render runs in its own process; peak RSS is that process's ru_maxrss (children excluded: ffmpeg's own
memory is per-frame and independent of length too, but is not Python's to bound).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import resource, sys, json
from cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def peak_rss(clip: Path, face: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, "swap", "--source", str(face), "--target", str(clip),
                           "--output", str(out), "--set", "selector.mode=one", "--json"],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    summary = json.loads("\n".join(proc.stdout.strip().splitlines()[:-1]))
    return {"peak_rss_mb": round(last["maxrss_kb"] / 1024, 1), "frames": summary["frames"],
            "fps": summary["fps"]}


def main() -> None:
    from pipeline.bench import default_face, make_test_clip

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="1920x1080")
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    face = default_face()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seconds in (10, 60):
            clip = make_test_clip(Path(tmp) / f"c{seconds}.mp4", face, seconds=seconds, size=(w, h))
            results[f"{seconds}s"] = peak_rss(clip, face, Path(tmp) / f"o{seconds}.mp4")
            clip.unlink()
    ratio = results["60s"]["peak_rss_mb"] / results["10s"]["peak_rss_mb"]
    print(json.dumps({"size": args.size, **results, "ratio_60_vs_10": round(ratio, 3)}, indent=2))


if __name__ == "__main__":
    main()
