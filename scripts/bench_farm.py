"""Time one video job three ways on this machine: the local worker, the render farm with 1 task slot and
with 2 (a local Ray runtime), all with the same clip, settings and 1 s segments.

    .venv/bin/python scripts/bench_farm.py [--seconds 10] [--size 320x240] [--json]

Prints the wall time of each job (claim to done, Ray's start-up excluded), the sum of the segments' own
task times, and the driver's overhead per segment: (farm with 1 slot - local worker) / segments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.jobs.farm import Farm  # noqa: E402
from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.jobs.worker import run  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from tests import photos  # noqa: E402
from tests.videos import count_frames, make_clip  # noqa: E402

FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])


def one_job(folder: Path, clip: Path, name: str, slots: int | None) -> dict[str, float]:
    store = JobStore(folder / f"{name}.sqlite3")
    out = folder / f"{name}.mp4"
    job = store.add([photos.grace_hopper_path()], clip, out, FAST)
    farm = Farm.connect("local", slots=slots, segment_seconds=1.0) if slots else None
    try:
        started = time.perf_counter()
        run(store, f"bench/{name}", once=True, segment_seconds=1.0,
            **({"execute": farm.execute} if farm else {}))
        wall = time.perf_counter() - started
    finally:
        if farm is not None:
            farm.close()
    done = store.get(job.id)
    assert done.state == "done", done.error
    segs = done.resume.get("segments", [])
    return {"wall_s": round(wall, 2), "frames": count_frames(out), "segments": len(segs),
            "task_s_sum": round(sum(s.get("seconds") or 0 for s in segs), 2),
            "workers": len({s.get("pid") for s in segs if s.get("pid")})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", default="320x240")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="bench-farm-") as tmp:
        folder = Path(tmp)
        for var, sub in (("FACESTATION_DATA", "data"), ("FACESTATION_MODELS", "models")):
            os.environ.setdefault(var, str(folder / sub))
        os.environ.setdefault("FACESTATION_FARM_OBJECT_STORE_MB", "200")
        clip = make_clip(folder / "clip.mp4", seconds=args.seconds, size=(w, h),
                         face_image=photos.astronaut())
        rows = {"local worker": one_job(folder, clip, "local", None),
                "farm, 1 slot": one_job(folder, clip, "farm1", 1),
                "farm, 2 slots": one_job(folder, clip, "farm2", 2)}
    n = rows["farm, 1 slot"]["segments"]
    overhead = (rows["farm, 1 slot"]["wall_s"] - rows["local worker"]["wall_s"]) / max(n, 1)
    result = {"clip": f"{args.seconds:g} s {args.size}", "cores": os.cpu_count(), "jobs": rows,
              "speedup_2_vs_1": round(rows["farm, 1 slot"]["wall_s"] / rows["farm, 2 slots"]["wall_s"], 2),
              "driver_overhead_s_per_segment": round(overhead, 2)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, row in rows.items():
        print(f"{name:14} wall {row['wall_s']:6.1f} s  tasks {row['task_s_sum']:6.1f} s  "
              f"{row['segments']} segments on {row['workers']} worker(s)  {row['frames']} frames")
    print(f"2 slots vs 1: x{result['speedup_2_vs_1']}; driver overhead per segment "
          f"{result['driver_overhead_s_per_segment']} s ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
