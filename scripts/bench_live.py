"""Live mode's speed (a benchmark, not a test): `facestation live` from a file camera (a face clip delivered
at 30 fps, as a camera would) into a recording, with the built-in models (yunet + classic) or, with
``--twins``, at real cost on cost twins (as ``facestation bench --twins``: scripts/make_twins.py's, built
once into the cache): delivered fps, latency p50/p95, the p50 at the start and the end, and drops, with the
load average at the time (BENCHMARKS.md, "Live mode").

    .venv/bin/python scripts/bench_live.py [--seconds 20] [--sizes 640x480,1280x720] [--twins inswapper_128]
        [--set section.key=value ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.bench import install_twins  # noqa: E402
from cli.live import size_arg  # noqa: E402
from cli.main import main  # noqa: E402
from pipeline import env  # noqa: E402
from pipeline.bench import default_face, make_test_clip  # noqa: E402


def one(face: Path, folder: Path, size: tuple[int, int], seconds: float, overrides: list[str]) -> dict:
    clip = make_test_clip(folder / f"camera_{size[0]}.mp4", face, seconds=seconds + 1, size=size, fps=30)
    out = io.StringIO()
    output = folder / f"live_{size[0]}.mp4"
    args = ["live", "--source", str(face), "--camera", str(clip), "--output", str(output),
            "--seconds", str(seconds), "--json", *(a for o in overrides for a in ("--set", o))]
    with contextlib.redirect_stdout(out):
        code = main(args)
    if code != 0:
        raise SystemExit(f"facestation live failed ({code})")
    return {"size": f"{size[0]}x{size[1]}", "load_average_1m": round(os.getloadavg()[0], 2),
            **json.loads(out.getvalue())}


def sizes_arg(text: str) -> list[tuple[int, int]]:
    return [size_arg(s) for s in text.split(",")]


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sizes", type=sizes_arg, default="640x480,1280x720",
                        help="comma list of camera sizes WxH")
    parser.add_argument("--twins", metavar="NAME[,NAME…]",
                        help="cost twins to run on (e.g. inswapper_128), as facestation bench --twins")
    parser.add_argument("--set", action="append", default=[], metavar="section.key=value")
    args = parser.parse_args()
    face = default_face()
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "models"
        overrides = (install_twins(args.twins.split(","), models) if args.twins else []) + args.set
        with env.MODELS.set_to(models) if args.twins else contextlib.nullcontext():
            for size in args.sizes:
                row = one(face, Path(tmp), size, args.seconds, overrides)
                print(json.dumps({"twins": args.twins or "", **{k: v for k, v in row.items()
                                                                 if k not in ("camera", "output")}}),
                      flush=True)


if __name__ == "__main__":
    run()
