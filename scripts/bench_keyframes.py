#!/usr/bin/env python
"""Keyframe detection on the `facestation bench` clip (10 s 1080p30, a real face drifting and zooming):
render fps with ``detector.interval=1`` against ``auto`` (alternating, repeated, in one run), then the
landmark error and identity figures of keyframes against detection on every frame, and both against the
clip's ground truth (the clip is a known warp of the photo, so the true landmarks are known up to one
fitted 5-point template: tests/keyframe_measure.py).

Usage: .venv/bin/python scripts/bench_keyframes.py [--repeat 3] [--interval auto] [--skip-accuracy]
Built-in models (yunet + classic), ``output.preset=fast``; prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.bench import default_face, make_test_clip  # noqa: E402
from pipeline.faces.keyframes import interval_for  # noqa: E402
from pipeline.image import read_image  # noqa: E402
from pipeline.render import Render  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from pipeline.video.decode import read_frames  # noqa: E402
from tests.keyframe_measure import bench_clip_warp, compare  # noqa: E402

SIZE = (1920, 1080)
SECONDS, FPS = 10.0, 30


def _cpu_s() -> float:
    """CPU seconds used so far by this process and its finished children (the ffmpeg processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def speed(clip: Path, face: Path, settings: Settings, repeat: int, interval: str, work: Path) -> dict:
    """Renders with interval=1 and ``interval`` alternating, ``repeat`` pairs: wall fps, and the CPU
    seconds each used (what a shared machine's load does not change much)."""
    runs: dict[str, list[dict]] = {"1": [], interval: []}
    for _ in range(repeat):
        for value in ("1", interval):
            s = apply_overrides(settings, {"detector.interval": value})
            cpu = _cpu_s()
            r = Render(s, [face], clip, work / f"out-{value}.mp4").run()
            runs[value].append({"fps": r.fps, "seconds": r.seconds, "cpu_s": round(_cpu_s() - cpu, 2),
                                "load_1min": round(os.getloadavg()[0], 1), "stage_s": r.stage_s})
    pairs = list(zip(runs["1"], runs[interval], strict=True))
    ratios = [k["fps"] / e["fps"] for e, k in pairs]
    cpu_ratios = [e["cpu_s"] / k["cpu_s"] for e, k in pairs]

    def median(key: str, value: str) -> float:
        return round(float(np.median([r[key] if key in r else r["stage_s"][key] for r in runs[value]])), 2)

    return {"runs": runs, "fps_ratio_each": [round(x, 3) for x in ratios],
            "fps_ratio_median": round(float(np.median(ratios)), 3),
            "cpu_ratio_each": [round(x, 3) for x in cpu_ratios],
            "cpu_ratio_median": round(float(np.median(cpu_ratios)), 3),
            "detect_busy_s_median": {v: median("detect", v) for v in runs},
            "cpu_s_median": {v: median("cpu_s", v) for v in runs}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interval", default="auto")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    face = default_face()
    settings = apply_overrides(Settings(), {"output.preset": "fast"})
    n = interval_for(args.interval if args.interval == "auto" else int(args.interval), FPS)
    out: dict = {"clip": "10 s 1920x1080 30 fps, grace_hopper drifting and zooming", "interval": n}
    with tempfile.TemporaryDirectory(prefix="facestation-keyframes-") as tmp:
        work = Path(tmp)
        clip = make_test_clip(work / "bench-1080p.mp4", face, SECONDS, SIZE, FPS)
        if not args.skip_speed:
            out["speed"] = speed(clip, face, settings, args.repeat, args.interval, work)
            print(json.dumps(out["speed"]), file=sys.stderr)
        if not args.skip_accuracy:
            photo = read_image(face).bgr.shape[:2]
            warp = bench_clip_warp((photo[0], photo[1]), round(SECONDS * FPS), SIZE)
            out["accuracy"] = compare(read_frames(clip), face, settings, n, FPS, warp=warp).summary()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
