#!/usr/bin/env python
"""The processors' cost per 1080p frame at real cost, on the cost twins of scripts/make_twins.py.

Usage: .venv/bin/python scripts/processor_costs.py [--twins NAME ...] [--frames N] [--repeats R]
                                                   [--render-width W] [--json]

Two measurements per twin (built once into the user cache's ``twins/``, as ``facestation bench --twins``):

1. **The model alone**: one call (batch 1: a 256² tile, a face) at each thread count ``pipeline.bench.
   model_bound`` tries (1, half the cores, all of them), after a warm call; the best of ``--repeats``.
2. **The processor in a render** (the lip syncer): a generated 1080p30 clip of ``--frames`` frames with one
   face (``bench.make_test_clip``), the classic swap then the processor alone (``processors.order=
   face_swapper,lip_syncer``) and a voice (a generated tone); ms per frame by stage from the render's
   ``stage_s``. A frame enhancer at full width costs minutes a frame on a CPU (45 tiles of 256²), too long
   to render here: its frame is given as its tiles × the model's best time a tile + the enhancer's own work
   around the model (cutting, normalising, blending and placing 45 tiles: ``TiledUpscaler.enhance`` of a
   1080p frame with the model's run replaced by zeros of its output's shape, best of ``--repeats``).
   ``--render-enhancers`` renders them too, with a twin of ``--render-width`` (fewer channels, same layers).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pipeline import env, presets  # noqa: E402
from pipeline.bench import default_face, make_test_clip  # noqa: E402
from pipeline.models import catalog  # noqa: E402
from pipeline.models.runner import denormalise, normalise  # noqa: E402
from pipeline.paths import cache_dir  # noqa: E402
from pipeline.processors.frame_enhancer.tiles import TileGrid  # noqa: E402
from pipeline.processors.frame_enhancer.upscaler import TiledUpscaler  # noqa: E402
from pipeline.render import Render  # noqa: E402
from pipeline.renderplan import cores  # noqa: E402
from twins import build as mt  # noqa: E402

# twin -> (processor, the setting that selects its model)
PROCESSORS = {"real_esrgan_x4": ("frame_enhancer", "frame_enhancer.model=real_esrgan_x4"),
              "real_esrgan_x2": ("frame_enhancer", "frame_enhancer.model=real_esrgan_x2"),
              "wav2lip_gan_96": ("lip_syncer", "lip_syncer.model=wav2lip_gan_96")}
SIZE = (1920, 1080)


def model_times(path: Path, feeds: dict[str, np.ndarray], repeats: int) -> dict[int, float]:
    """Seconds of one call at each of model_bound's thread counts: the best of ``repeats``, after a warm
    call."""
    import onnxruntime as ort

    n = cores()
    out = {}
    for threads in sorted({1, max(1, n // 2), n}):
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        session.run(None, feeds)
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            session.run(None, feeds)
            runs.append(time.perf_counter() - started)
        out[threads] = min(runs)
    return out


def tone(path: Path, seconds: float, rate: int = 16000) -> Path:
    """A voice stand-in: a 220 Hz tone whose loudness swings 4 times a second (mono 16-bit WAV)."""
    t = np.arange(round(seconds * rate)) / rate
    y = 0.5 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t))
    with wave.open(str(path), "wb") as fh:
        fh.setnchannels(1)
        fh.setsampwidth(2)
        fh.setframerate(rate)
        fh.writeframes((y * 32767).astype("<i2").tobytes())
    return path


def render_costs(twin: mt.Twin, models: Path, clip: Path, voice: Path, work: Path) -> dict[str, Any]:
    """ms per frame by stage of the classic swap + the twin's processor over ``clip``."""
    processor, setting = PROCESSORS[twin.name]
    with env.MODELS.set_to(models):
        settings = presets.settings_from(None, [f"processors.order=face_swapper,{processor}",
                                                "face_swapper.model=classic", setting])
        result = Render(settings, [default_face()], clip, work / f"{twin.name}.mp4",
                        audio=voice if processor == "lip_syncer" else None).run()
    frames = max(1, result.frames)
    return {"frames": result.frames, "faces_swapped": result.faces_swapped, "fps": result.fps,
            "ms_per_frame": {k: round(1000 * v / frames, 1) for k, v in result.stage_s.items()}}


class ModelFreeUpscaler(TiledUpscaler):
    """The frame enhancer with its model's run replaced by zeros of the output's shape: its own work."""

    def upscale(self, tiles: np.ndarray) -> np.ndarray:
        blob = normalise(tiles, self.entry)
        side = blob.shape[-1] * self.scale
        return denormalise(np.zeros((len(blob), 3, side, side), np.float32), self.entry)


def enhancer_own_ms(name: str, frame: np.ndarray, repeats: int) -> float:
    """ms of the frame enhancer's work around its model on ``frame`` (blend 80, the default): the best."""
    upscaler = ModelFreeUpscaler(name)
    runs = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        upscaler.enhance([frame], 80)
        runs.append(time.perf_counter() - started)
    return 1000 * min(runs[1:])


def tiles_per_frame(entry: catalog.ModelEntry) -> int:
    assert entry.tile is not None
    grid = TileGrid(SIZE[1], SIZE[0], *entry.tile)
    return len(grid.rows) * len(grid.cols)


def measure(name: str, frames: int, repeats: int, render_width: float | None, work: Path) -> dict[str, Any]:
    """``render_width`` None: no render of a frame enhancer."""
    twin = mt.TWINS[name]
    full = mt.build_twin(twin, cache_dir() / "twins")
    rng = np.random.default_rng(0)
    feeds = {k: rng.uniform(0, 1, s).astype(np.float32) for k, s in twin.run_dims.items()}
    times = model_times(full.path, feeds, repeats)
    report: dict[str, Any] = {"twin": name, "gmac_per_call": round(full.gmac[twin.target_label], 2),
                              "model_s_by_threads": {t: round(s, 3) for t, s in times.items()}}
    clip = make_test_clip(work / "clip.mp4", default_face(), seconds=frames / 30, size=SIZE)
    enhancer = PROCESSORS[name][0] == "frame_enhancer"
    if enhancer:
        from pipeline.video.decode import read_frames

        frame = next(iter(read_frames(clip)))
        n, own = tiles_per_frame(catalog.get(twin.entry)), enhancer_own_ms(name, frame, repeats)
        report.update(tiles_per_frame=n, enhancer_own_ms=round(own, 1),
                      frame_ms_estimate=round(n * min(times.values()) * 1000 + own, 1))
    if enhancer and render_width is None:
        return report
    width = render_width if enhancer and render_width else 1.0
    models = work / f"models-{name}-{width:g}"
    if width != 1.0:
        mt.build_twin(twin, models, width=width)
    else:
        models.mkdir(parents=True, exist_ok=True)
        (models / full.path.name).symlink_to(full.path)
    voice = tone(work / "voice.wav", frames / 30 + 1.0)
    report["render"] = {**render_costs(twin, models, clip, voice, work), "twin_width": width}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--twins", nargs="+", default=list(PROCESSORS), choices=list(PROCESSORS))
    parser.add_argument("--frames", type=int, default=6, help="frames of the 1080p clip (default 6)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per thread count (best kept)")
    parser.add_argument("--render-enhancers", action="store_true",
                        help="render the frame enhancers too (a twin of --render-width: minutes a frame)")
    parser.add_argument("--render-width", type=float, default=1 / 8,
                        help="channel width of the frame enhancers' twin in a render (default 1/8)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.frames < 1 or args.repeats < 1 or not 0 < args.render_width <= 1:
        raise SystemExit("processor_costs: --frames and --repeats need 1 or more, --render-width (0, 1]")
    reports = []
    with tempfile.TemporaryDirectory(prefix="facestation-costs-") as tmp:
        for name in args.twins:
            width = args.render_width if args.render_enhancers else None
            reports.append(measure(name, args.frames, args.repeats, width, Path(tmp)))
            if not args.json:
                print(json.dumps(reports[-1]), flush=True)
    if args.json:
        print(json.dumps({"cores": cores(), "load_average": [round(x, 2) for x in _load()],
                          "twins": reports}, indent=1))
    return 0


def _load() -> tuple[float, ...]:
    import os

    return os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,)


if __name__ == "__main__":
    sys.exit(main())
