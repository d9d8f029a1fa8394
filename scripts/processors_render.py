#!/usr/bin/env python
"""Issue 22's acceptance render: a 10 s 1080p30 clip through face_swapper, lip_syncer, face_enhancer and
frame_enhancer with a new voice, checked and measured.

Usage: .venv/bin/python scripts/processors_render.py WORKDIR [--seconds 10] [--size 1920x1080]
       [--upscaler real_esrgan_x2] [--models DIR] [--json]

Models: each model the order needs is taken from ``--models DIR`` where a file of its name is there (cost
twins from scripts/make_twins.py: real cost), else a surrogate of its exact signature is generated
(tests/surrogates/: I/O and logic only, the model's own cost is then near zero). The report says which.
Checked: the output's frame count, its size (× the upscaler's scale), that its sound is the new voice (its
pitch, as long as the clip), and that memory stays flat: the process's RSS is sampled every 0.25 s and the
peak of the last half of the render is compared with the peak of the first half.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ORDER = ("face_swapper", "lip_syncer", "face_enhancer", "frame_enhancer")


class RssSampler:
    def __init__(self, every: float = 0.25) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        process = psutil.Process()
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), process.memory_info().rss / 2**20))
            self._stop.wait(self._every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def install_models(models: Path | None, upscaler: str) -> dict[str, str]:
    """Each model of the order in the models folder: a cost twin from ``models`` or a surrogate."""
    from pipeline.models import catalog
    from pipeline.paths import models_dir
    from tests.surrogates import install_surrogate

    where: dict[str, str] = {}
    for name in ("wav2lip_gan_96", "gfpgan_1.4", upscaler):
        entry = catalog.get(name)
        twin = None if models is None else models / entry.file
        if twin is not None and twin.is_file():
            dest = models_dir() / entry.file
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(twin, dest)
            where[name] = "cost twin"
        else:
            install_surrogate(name)
            where[name] = "surrogate"
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--upscaler", default="real_esrgan_x2")
    parser.add_argument("--models", type=Path, default=None, help="a folder of cost twins")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    work = args.workdir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FACESTATION_MODELS", str(work / "models"))
    os.environ.setdefault("FACESTATION_DATA", str(work / "data"))
    from pipeline.bench import default_face, make_test_clip
    from pipeline.models import catalog
    from pipeline.render import render
    from pipeline.settings import Settings, apply_overrides
    from pipeline.video.probe import probe
    from tests.sounds import pitch, voice

    width, height = (int(v) for v in args.size.split("x"))
    where = install_models(args.models, args.upscaler)
    face = default_face()
    clip = make_test_clip(work / "clip.mp4", face, seconds=args.seconds, size=(width, height))
    new_voice = voice(work / "voice.wav", args.seconds + 2.0)
    settings = apply_overrides(Settings(), [
        f"processors.order={','.join(ORDER)}", "face_enhancer.model=gfpgan_1.4", "selector.mode=one",
        "lip_syncer.model=wav2lip_gan_96", f"frame_enhancer.model={args.upscaler}"])
    out = work / "out.mp4"
    with RssSampler() as rss:
        started = time.perf_counter()
        result = render(settings, [face], clip, out, audio=new_voice)
        seconds = time.perf_counter() - started
    info, scale = probe(out), catalog.get(args.upscaler).scale
    half = len(rss.samples) // 2
    first = max((m for _, m in rss.samples[:half]), default=0.0)
    last = max((m for _, m in rss.samples[half:]), default=0.0)
    report = {
        "clip": {"size": [width, height], "frames": probe(clip).frame_count, "seconds": args.seconds},
        "models": where, "order": list(ORDER), "frames": result.frames, "output_frames": info.frame_count,
        "output_size": [info.width, info.height], "expected_size": [width * scale, height * scale],
        "audio_pitch_hz": round(pitch(out), 1), "voice_hz": 1000.0,
        "fps": result.fps, "seconds": round(seconds, 1),
        "ms_per_frame": {k: round(1000 * v / max(1, result.frames), 1) for k, v in result.stage_s.items()},
        "peak_rss_mb": round(max(m for _, m in rss.samples), 1),
        "rss_first_half_peak_mb": round(first, 1), "rss_second_half_peak_mb": round(last, 1),
        "notices": result.notices,
    }
    ok = (report["output_frames"] == report["clip"]["frames"] == result.frames
          and report["output_size"] == report["expected_size"] and abs(report["audio_pitch_hz"] - 1000) < 10
          and last <= first * 1.1 + 50)
    report["ok"] = ok
    print(json.dumps(report, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in report.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
