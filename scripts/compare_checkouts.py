"""Render the same inputs with two checkouts of facestation at default settings and compare the outputs.

    python scripts/compare_checkouts.py BEFORE_DIR AFTER_DIR [--seconds 1] [--rounds 2]

Each checkout renders, with its own code (``python -m cli.main`` run in it) and this interpreter's packages,
a video made like the bench's clip (the bundled face drifting over a plain background, 1080p) and a still (one
frame of that clip) with default settings. The decoded frames of the two videos and the pixels of the two
stills must be identical; the renders are timed A B A B (``--rounds``) and the ratio printed with the load
average, so a speed claim is a ratio measured in the same run. Exit 1 when an output differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from pipeline.bench import default_face, make_test_clip
from pipeline.video.decode import read_frames


def render(checkout: Path, face: Path, target: Path, output: Path) -> float:
    """Seconds ``checkout`` takes to swap ``face`` into ``target`` at default settings."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cli.main", "swap", "--source", str(face), "--target", str(target),
                    "--output", str(output)], cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def same_video(a: Path, b: Path) -> bool:
    frames_a, frames_b = list(read_frames(a)), list(read_frames(b))
    if len(frames_a) != len(frames_b):
        return False
    return all(np.array_equal(x, y) for x, y in zip(frames_a, frames_b, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    face = default_face()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clip = make_test_clip(work / "clip.mp4", face, seconds=args.seconds)
        still = work / "still.png"
        frames = list(read_frames(clip))
        cv2.imwrite(str(still), frames[len(frames) // 2])
        times: dict[str, list[float]] = {"before": [], "after": []}
        for i in range(args.rounds):
            for name in ("before", "after"):
                times[name].append(render(getattr(args, name), face, clip, work / f"{name}{i}.mp4"))
        for name in ("before", "after"):
            render(getattr(args, name), face, still, work / f"{name}.png")
        video_same = same_video(work / "before0.mp4", work / "after0.mp4")
        still_same = np.array_equal(cv2.imread(str(work / "before.png"), cv2.IMREAD_UNCHANGED),
                                    cv2.imread(str(work / "after.png"), cv2.IMREAD_UNCHANGED))
    print(f"video frames identical: {video_same}; still pixels identical: {still_same}")
    print("render s, A B A B: " + ", ".join(f"before {b:.2f} after {a:.2f}"
                                            for b, a in zip(times["before"], times["after"], strict=True)))
    print(f"after / before: {sum(times['after']) / sum(times['before']):.3f} "
          f"(load average {os.getloadavg()[0]:.1f})")
    return 0 if video_same and still_same else 1


if __name__ == "__main__":
    sys.exit(main())
