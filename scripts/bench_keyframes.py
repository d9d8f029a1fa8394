#!/usr/bin/env python
"""Keyframe detection on real-face 1080p30 clips (grace_hopper drifting and zooming): the `facestation bench`
clip (10 s, up to 6 px a frame) and the test's clip (2 s, the same path at 5x the speed, up to 30 px a frame).

For each clip and each way of following faces between keyframes (``region``: YuNet re-detects around the
face; ``flow``: the optical-flow follower, what detectors without regions use):
- accuracy: landmark error of keyframes against detection on every frame of the same frames, both against
  the clip's ground truth (the clip is a known warp of the photo: tests/keyframe_measure.py), and the
  identity (SFace) of the swapped face;
- cost: CPU ms per frame of the detect stage (detect + select + following, ``time.process_time`` in this
  single process, one onnxruntime thread so no idle spinning is counted), every frame detected against
  keyframes with each follower, run side by side frame by frame so the machine's load hits all alike,
  with the mean cost of a keyframe and of a followed frame.
Then (unless --skip-speed) render fps with ``detector.interval=1`` against ``auto`` with each follower
(alternating, repeated, in one run).

Usage: .venv/bin/python scripts/bench_keyframes.py [--repeat 3] [--interval auto] [--skip-accuracy]
       [--skip-speed] [--identity-every 1]
Built-in models (yunet + classic), ``output.preset=fast``; prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.bench import default_face, make_test_clip  # noqa: E402
from pipeline.faces.base import region_detection  # noqa: E402
from pipeline.faces.keyframes import KeyframeDetector, interval_for  # noqa: E402
from pipeline.image import read_image  # noqa: E402
from pipeline.process import FaceProcessor  # noqa: E402
from pipeline.render import Render  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from pipeline.video.decode import read_frames  # noqa: E402
from tests.keyframe_measure import bench_clip_warp, compare  # noqa: E402

SIZE = (1920, 1080)
FPS = 30
CLIPS = {"bench 10 s": 10.0, "test 2 s (5x faster)": 2.0}
FOLLOWERS = ("region", "flow")


def _cpu_s() -> float:
    """CPU seconds used so far by this process and its finished children (the ffmpeg processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextmanager
def _flow_only() -> Iterator[None]:
    """Renders inside follow by optical flow whatever the detector can do."""
    with mock.patch("pipeline.render.region_detection", lambda detector: None):
        yield


def speed(clip: Path, face: Path, settings: Settings, repeat: int, interval: str, work: Path) -> dict:
    """Renders with interval=1, ``interval`` re-detecting and ``interval`` with flow, alternating, ``repeat``
    rounds: wall fps, and the CPU seconds each used (what a shared machine's load does not change much)."""
    modes = {"1": ("1", False), f"{interval} region": (interval, False), f"{interval} flow": (interval, True)}
    runs: dict[str, list[dict]] = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode, (value, flow) in modes.items():
            s = apply_overrides(settings, {"detector.interval": value})
            cpu = _cpu_s()
            with _flow_only() if flow else nullcontext():
                r = Render(s, [face], clip, work / "out.mp4").run()
            runs[mode].append({"fps": r.fps, "cpu_s": round(_cpu_s() - cpu, 2),
                               "load_1min": round(os.getloadavg()[0], 1),
                               "detect_s": r.stage_s.get("detect")})

    def summary(mode: str) -> dict:
        pairs = list(zip(runs["1"], runs[mode], strict=True))
        return {"fps_ratio_each": [round(k["fps"] / e["fps"], 3) for e, k in pairs],
                "cpu_ratio_each": [round(e["cpu_s"] / k["cpu_s"], 3) for e, k in pairs],
                **{f"{key}_median": round(float(np.median([k[key] for _, k in pairs])), 3)
                   for key in ("fps", "cpu_s", "detect_s")}}

    return {"runs": runs, **{mode: summary(mode) for mode in modes}}


def cost(clip: Path, face: Path, settings: Settings, n: int) -> dict:
    """CPU ms per frame of the detect stage: every frame detected, and keyframes with each follower, side by
    side frame by frame; for the keyframe modes also the mean cost of a keyframe and of a followed frame."""
    processor = FaceProcessor(apply_overrides(settings, {"execution.threads": "1"}), [face])
    cut = settings.tracker.scene_cut
    regions = region_detection(processor.detector)
    modes = {"every frame": KeyframeDetector(processor.detect, processor.select, 1, cut),
             "region": KeyframeDetector(processor.detect, processor.select, n, cut, regions),
             "flow": KeyframeDetector(processor.detect, processor.select, n, cut)}
    spent: dict[str, dict[str, list[float]]] = {m: {"key": [], "followed": []} for m in modes}
    for frame in read_frames(clip):
        for mode, keys in modes.items():
            before, started = keys.keyframes, time.process_time()
            keys.faces([frame])
            kind = "key" if keys.keyframes > before else "followed"
            spent[mode][kind].append(1000 * (time.process_time() - started))
    out: dict[str, dict[str, float]] = {}
    for mode, kinds in spent.items():
        every = kinds["key"] + kinds["followed"]
        out[mode] = {"ms_per_frame": round(float(np.mean(every)), 2), "keyframes": len(kinds["key"]),
                     **{f"ms_per_{k}": round(float(np.mean(v)), 2) for k, v in kinds.items() if v}}
    return out


def accuracy(clip: Path, face: Path, settings: Settings, n: int, seconds: float, every: int) -> dict:
    photo = read_image(face).bgr.shape[:2]
    warp = bench_clip_warp((photo[0], photo[1]), round(seconds * FPS), SIZE)
    return {follower: compare(read_frames(clip), face, settings, n, FPS, identity_every=every, warp=warp,
                              flow=follower == "flow").summary()
            for follower in FOLLOWERS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--interval", default="auto")
    parser.add_argument("--identity-every", type=int, default=1)
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    face = default_face()
    settings = apply_overrides(Settings(), {"output.preset": "fast"})
    n = interval_for(args.interval if args.interval == "auto" else int(args.interval), FPS)
    out: dict = {"interval": n, "load_1min_start": round(os.getloadavg()[0], 1)}
    with tempfile.TemporaryDirectory(prefix="facestation-keyframes-") as tmp:
        work = Path(tmp)
        for name, seconds in CLIPS.items():
            clip = make_test_clip(work / f"clip-{seconds:g}.mp4", face, seconds, SIZE, FPS)
            result: dict = {"cost": cost(clip, face, settings, n)}
            if not args.skip_accuracy:
                result["accuracy"] = accuracy(clip, face, settings, n, seconds, args.identity_every)
            result["load_1min"] = round(os.getloadavg()[0], 1)
            out[name] = result
            print(json.dumps({name: result}), file=sys.stderr)
        if not args.skip_speed:
            clip = work / f"clip-{CLIPS['bench 10 s']:g}.mp4"
            out["speed"] = speed(clip, face, settings, args.repeat, args.interval, work)
    out["load_1min_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
