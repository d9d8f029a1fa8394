"""Cost of each quality-stack stage on CPU with surrogate models, in ms per face.

Surrogates (tests/surrogates/) have the real models' I/O but tiny graphs, so these numbers are the
pipeline's own overhead around each model (resizing, normalising, warping, masks, paste) plus a
near-free model run: a floor, not what the real weights cost. Run:
    .venv/bin/python scripts/bench_quality.py [--faces 4] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _best(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm: sessions, batching rewrite
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--faces", type=int, default=4, help="faces per batch (same face repeated)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-quality-"))
    os.environ["FACESTATION_MODELS"] = str(work / "models")
    os.environ.setdefault("FACESTATION_CACHE", str(work / "cache"))


    from pipeline.process import FaceProcessor
    from pipeline.settings import Settings, apply_overrides
    from tests import photos
    from tests.surrogates import install_surrogate

    for name in ("inswapper_128", "arcface_w600k_r50", "gfpgan_1.4", "codeformer", "gpen_bfr_256", "xseg",
                 "bisenet_resnet34", "2dfan4"):
        install_surrogate(name)
    target, n = photos.astronaut(), args.faces
    base = ["face_swapper.model=inswapper_128", "selector.mode=one", "color.method=none"]

    def processor(*extra: str) -> FaceProcessor:
        return FaceProcessor(apply_overrides(Settings(), [*base, *extra]), [photos.grace_hopper_path()])

    plain = processor()
    face = plain.select(target, plain.detect([target])[0])
    frames, faces = [target] * n, [face] * n

    def swap_ms(proc: FaceProcessor) -> float:
        return 1000 * _best(lambda: proc.swap(frames, faces), args.repeats) / n

    results: dict[str, float] = {}
    swap0 = results["swap inswapper_128 (align + swap)"] = swap_ms(plain)
    for label, extra in (
        ("pixel boost 256 (4 sub-swaps)", ("face_swapper.pixel_boost=256",)),
        ("pixel boost 512 (16 sub-swaps)", ("face_swapper.pixel_boost=512",)),
        ("mask occlusion (xseg)", ("mask.types=box,occlusion",)),
        ("mask region (bisenet)", ("mask.types=box,region",)),
        ("mask mouth (landmarks)", ("mask.types=box,mouth",)),
        ("enhancer gfpgan_1.4 (re-frame + run + mix)", ("face_enhancer.model=gfpgan_1.4",)),
        ("enhancer codeformer", ("face_enhancer.model=codeformer",)),
        ("enhancer gpen_bfr_256", ("face_enhancer.model=gpen_bfr_256",)),
        ("colour reinhard (the swap's colour step)", ("color.method=reinhard",)),
        ("colour mkl", ("color.method=mkl",)),
        ("colour histogram", ("color.method=histogram",)),
    ):
        results[label] = swap_ms(processor(*extra)) - swap0
    lm = processor("landmarks.model=2dfan4")
    detected = lm.detect([target])[0]
    select_lm = _best(lambda: lm.select(target, detected), args.repeats)
    select_plain = _best(lambda: plain.select(target, detected), args.repeats)
    results["landmarks 2dfan4 (select + refine)"] = 1000 * (select_lm - select_plain)
    items = plain.swap([target], [face])[0]
    results["paste"] = 1000 * _best(lambda: plain.blend(target, items), args.repeats)
    boosted = processor("face_swapper.pixel_boost=512")
    big = boosted.swap([target], [face])[0]
    results["paste only, 512 crop"] = 1000 * _best(lambda: boosted.blend(target, big), args.repeats)
    results = {k: round(max(v, 0.0), 2) for k, v in results.items()}
    if args.json:
        print(json.dumps({"faces_per_batch": n, "ms_per_face": results}, indent=2))
    else:
        for k, v in results.items():
            print(f"| {k} | {v} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
