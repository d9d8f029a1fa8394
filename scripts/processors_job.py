#!/usr/bin/env python
"""Issue 23's acceptance job: a 10 s 1080p30 clip queued with face_swapper, age_modifier and
background_remover (fill transparent) to a .webm, rendered by the worker (or on the Ray farm), and every
frame of the output read back with its alpha.

Usage: .venv/bin/python scripts/processors_job.py WORKDIR [--seconds 10] [--size 1920x1080] [--farm]
       [--json]

Models are surrogates of the real files' signatures (tests/surrogates/: I/O and logic; near-free), so the
figures measure our pipeline and the VP9-with-alpha encode, not the models. Checked: the job is done, the
output is VP9 with alpha (ffprobe: alpha_mode 1), it has every frame, and in every frame the alpha is 0
somewhere (the background) and at least 250 somewhere (the person). Peak RSS of this process (the worker
runs in it; on the farm, Ray's workers are other processes) is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ORDER = "face_swapper,age_modifier,background_remover"


def alpha_frames(path: Path, width: int, height: int) -> tuple[int, int]:
    """(frames, frames whose alpha has both a 0 and a value ≥ 250), read one frame at a time (libvpx's
    decoder: ffmpeg's own VP9 decoder drops the alpha)."""
    from pipeline.video import ffmpeg

    cmd = [ffmpeg.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-c:v", "libvpx-vp9", "-i", str(path),
           "-f", "rawvideo", "-pix_fmt", "bgra", "pipe:1"]
    size = width * height * 4
    frames = good = 0
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(size):
            if len(chunk) < size:
                break
            alpha = np.frombuffer(chunk, np.uint8)[3::4]
            frames += 1
            good += int(alpha.min() == 0 and alpha.max() >= 250)
    return frames, good


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--farm", action="store_true", help="render on Ray's local runtime (2 slots)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    work = args.workdir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FACESTATION_MODELS", str(work / "models"))
    os.environ.setdefault("FACESTATION_DATA", str(work / "data"))
    os.environ.setdefault("PYTHONPATH", str(ROOT))  # Ray's workers import the pipeline
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import resource

    from pipeline.bench import default_face, make_test_clip
    from pipeline.jobs.store import JobStore
    from pipeline.jobs.worker import run
    from pipeline.settings import Settings, apply_overrides
    from pipeline.video.probe import probe
    from tests.surrogates import install_surrogate
    from tests.videos import stream_info

    for name in ("fran", "fairface"):
        install_surrogate(name)
    install_surrogate("modnet", gain=4.0)
    width, height = (int(v) for v in args.size.split("x"))
    face = default_face()
    clip = make_test_clip(work / "clip.mp4", face, seconds=args.seconds, size=(width, height))
    settings = apply_overrides(Settings(), [
        f"processors.order={ORDER}", "selector.mode=one", "age_modifier.direction=30",
        "background_remover.fill=transparent"])
    out = work / ("farm.webm" if args.farm else "queued.webm")
    store = JobStore()
    job = store.add([face], clip, out, settings)
    started = time.perf_counter()
    if args.farm:
        from pipeline.jobs.farm import Farm

        farm = Farm.connect("local", slots=2)
        try:
            run(store, "acceptance/ray", once=True, execute=farm.execute)
        finally:
            farm.close()
    else:
        run(store, "acceptance/local", once=True)
    seconds = time.perf_counter() - started
    done = store.get(job.id)
    report: dict[str, object] = {"job": done.id, "state": done.state, "error": done.error,
                                 "seconds": round(seconds, 1), "farm": args.farm, "order": ORDER,
                                 "clip_frames": probe(clip).frame_count}
    if done.state == "done":
        video = next(s for s in stream_info(out)["streams"] if s["codec_type"] == "video")
        frames, with_alpha = alpha_frames(out, width, height)
        tags = {k.lower(): v for k, v in video.get("tags", {}).items()}
        report |= {"codec": video.get("codec_name"), "alpha_mode": tags.get("alpha_mode"), "frames": frames,
                   "frames_with_alpha": with_alpha,
                   "segments": len((done.resume or {}).get("segments", [])),
                   "fps": round(frames / seconds, 2)}
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    ok = (done.state == "done" and report.get("codec") == "vp9"
          and report.get("frames") == report["clip_frames"] == report.get("frames_with_alpha"))
    report["ok"] = ok
    print(json.dumps(report, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
