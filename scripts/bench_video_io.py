#!/usr/bin/env python3
"""Measure video I/O throughput at 1080p: ffmpeg pipe vs PyAV, for decode and encode.

Generates one 1080p clip (lavfi testsrc2, libx264) in a temp folder, then times on the same clip:
  decode  pipe  : pipeline.video.decode.read_frames (ffmpeg -> bgr24 pipe -> numpy), the default
  decode  pyav  : PyAV in-process decode, frame.to_ndarray(format="bgr24"), threaded decoding
  encode  pipe  : pipeline.video.encode.Encoder (bgr24 pipe -> ffmpeg libx264)
  encode  pyav  : PyAV libx264 encode of the same frames with the same preset and CRF
  transcode pipe: read_frames -> Encoder (what a render pays for I/O alone)
Each is run --repeats times; the best run is reported (fps) with the pipe/PyAV ratio.

    .venv/bin/python scripts/bench_video_io.py [--seconds 10] [--repeats 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.video import builders, ffmpeg  # noqa: E402
from pipeline.video.decode import read_frames  # noqa: E402
from pipeline.video.encode import Encoder  # noqa: E402
from pipeline.video.probe import probe  # noqa: E402
from pipeline.video.trim import Trim  # noqa: E402

log = logging.getLogger("bench_video_io")

QUALITY, PRESET = 80, "fast"  # -> libx264 veryfast, CRF 17 (see builders.quality_args)


def make_clip(path: Path, seconds: int) -> None:
    subprocess.run([ffmpeg.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
                    "-f", "lavfi", "-i", f"testsrc2=size=1920x1080:rate=30:duration={seconds}",
                    "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p",
                    "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", str(path)],
                   check=True)


def decode_pipe(clip: Path) -> int:
    return sum(1 for _ in read_frames(clip, hwaccel="none"))


def decode_pyav(clip: Path) -> int:
    import av

    n = 0
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            frame.to_ndarray(format="bgr24")
            n += 1
    return n


def encode_pipe(frames: list[np.ndarray], n: int, out: Path) -> int:
    h, w = frames[0].shape[:2]
    with Encoder(out, width=w, height=h, fps=30, encoder="libx264", quality=QUALITY, preset=PRESET) as enc:
        for i in range(n):
            enc.write(frames[i % len(frames)])
    return n


def encode_pyav(frames: list[np.ndarray], n: int, out: Path) -> int:
    import av

    args = builders.quality_args("libx264", QUALITY, PRESET)
    h, w = frames[0].shape[:2]
    with av.open(str(out), "w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {"preset": args[args.index("-preset") + 1], "crf": args[args.index("-crf") + 1]}
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(frames[i % len(frames)], format="bgr24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return n


def transcode_pipe(clip: Path, out: Path) -> int:
    info = probe(clip)
    n = 0
    with Encoder(out, width=info.width, height=info.height, fps=info.fps, source=info, encoder="libx264",
                 quality=QUALITY, preset=PRESET) as enc:
        for frame in read_frames(clip, info=info, hwaccel="none"):
            enc.write(frame)
            n += 1
    return n


def best_fps(fn: Callable[[], int], repeats: int) -> float:
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        n = fn()
        best = max(best, n / (time.perf_counter() - t))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10,
                        help="clip length at 30 fps (default 10 = 300 frames)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clip = work / "clip1080.mp4"
        make_clip(clip, args.seconds)
        # 60 distinct frames, cycled for encoding
        frames = list(read_frames(clip, trim=Trim(end=2.0), hwaccel="none"))
        n = args.seconds * 30
        results = {
            "decode_pipe": best_fps(lambda: decode_pipe(clip), args.repeats),
            "decode_pyav": best_fps(lambda: decode_pyav(clip), args.repeats),
            "encode_pipe_libx264": best_fps(lambda: encode_pipe(frames, n, work / "a.mp4"), args.repeats),
            "encode_pyav_libx264": best_fps(lambda: encode_pyav(frames, n, work / "b.mp4"), args.repeats),
            "transcode_pipe": best_fps(lambda: transcode_pipe(clip, work / "c.mp4"), args.repeats),
        }
    ratios = {
        "decode_pipe/pyav": results["decode_pipe"] / results["decode_pyav"],
        "encode_pipe/pyav": results["encode_pipe_libx264"] / results["encode_pyav_libx264"],
    }
    if args.json:
        print(json.dumps({"frames": n, "size": "1920x1080", "fps": results, "ratio": ratios}, indent=2))
        return
    print(f"1080p30, {n} frames, best of {args.repeats}, libx264 preset={PRESET} quality={QUALITY}")
    for key, value in results.items():
        print(f"  {key:22s} {value:7.1f} fps")
    for key, value in ratios.items():
        print(f"  {key:22s} {value:7.2f}x")


if __name__ == "__main__":
    main()
