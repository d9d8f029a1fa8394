"""Soak the render queue: N short video jobs through one worker process; resource use must stay flat.

Runs ``facestation queue run`` as a separate process and samples ITS resident memory, open file
descriptors, threads and child processes when job 5 and job N have finished (and after each job).

    .venv/bin/python scripts/soak_queue.py [--jobs 50] [--seconds 0.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.jobs.store import JobStore  # noqa: E402
from pipeline.settings import Settings, apply_overrides  # noqa: E402
from tests import photos  # noqa: E402
from tests.videos import count_frames, make_clip  # noqa: E402


def sample(proc: psutil.Process) -> dict[str, float]:
    return {"rss_mb": round(proc.memory_info().rss / 1e6, 1), "fds": proc.num_fds(),
            "threads": proc.num_threads(), "children": len(proc.children(recursive=True))}


def fd_kinds(pid: int) -> dict[str, int]:
    """What the worker's descriptors point at, grouped (file names reduced to their suffix)."""
    kinds: dict[str, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        key = target.split(":")[0] if ":" in target else (Path(target).suffix or target)
        kinds[key] = kinds.get(key, 0) + 1
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=0.5, help="clip length")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp_s:
        tmp = Path(tmp_s)
        env = {**os.environ, "FACESTATION_DATA": str(tmp / "data"),
               "FACESTATION_QUEUE_CHECKPOINT_SECONDS": "0.25",
               "PYTHONPATH": str(REPO)}
        os.environ["FACESTATION_DATA"] = env["FACESTATION_DATA"]
        clip = make_clip(tmp / "face.mp4", seconds=args.seconds, size=(160, 120),
                         face_image=photos.astronaut())
        settings = apply_overrides(Settings(),
                                   ["selector.mode=one", "execution.batch_size=1", "detector.size=160"])
        store = JobStore()
        jobs = [store.add([photos.grace_hopper_path()], clip, tmp / f"out{i:03d}.mp4", settings).id
                for i in range(args.jobs)]
        started = time.perf_counter()
        worker = subprocess.Popen([sys.executable, "-m", "cli", "queue", "run", "--worker-id", "soak"],
                                  cwd=REPO, env=env, stderr=subprocess.PIPE)
        proc = psutil.Process(worker.pid)
        samples: dict[int, dict[str, float]] = {}
        try:
            while len(samples) < args.jobs:
                finished = sum(1 for j in store.list() if j.finished)
                if finished > len(samples):  # one sample per finished job (several if it fell behind)
                    for n in range(len(samples) + 1, finished + 1):
                        samples[n] = sample(proc)
                if worker.poll() is not None:
                    raise SystemExit(f"worker exited: {worker.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.02)
            seconds = time.perf_counter() - started
            open_files = fd_kinds(worker.pid)
        finally:
            worker.terminate()
            worker.wait(20)
        states = [store.get(j).state for j in jobs]
        frames_ok = all(count_frames(tmp / f"out{i:03d}.mp4") == count_frames(clip) for i in range(args.jobs))
        result = {
            "jobs": args.jobs, "clip": f"{args.seconds} s 160x120 30 fps + audio",
            "seconds": round(seconds, 1),
            "done": states.count("done"), "frames_exact": frames_ok,
            "at_job_5": samples[min(5, args.jobs)], f"at_job_{args.jobs}": samples[args.jobs],
            "open_files_at_end": open_files,
            "rss_mb_range_after_5": [min(s["rss_mb"] for n, s in samples.items() if n >= 5),
                                     max(s["rss_mb"] for n, s in samples.items() if n >= 5)],
        }
    print(json.dumps(result, indent=None if not args.json else 2))
    return 0 if result["done"] == args.jobs and frames_ok else 1


if __name__ == "__main__":
    sys.exit(main())
