"""``facestation live``: a camera (or a file standing in for one) swapped as it comes, to a file, a UDP
stream, a virtual camera or a window; the delivered fps, latency and drops at the end."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from pipeline import checks, presets, writer
from pipeline.request import SwapRequest, check


def register(sub: Any) -> None:
    live = sub.add_parser("live", help="swap faces in a camera's frames as they come")
    live.add_argument("--source", action="append", required=True, metavar="IMG",
                      help="photo of the face to put in (repeat for several photos of one person)")
    live.add_argument("--camera", required=True, metavar="DEVICE|FILE",
                      help="a v4l2 camera (/dev/videoN), or a video file delivered at its own frame rate")
    live.add_argument("--size", type=size_arg, metavar="WxH", help="the camera's frame size (default 640x480 "
                      "for a device, a file's own)")
    live.add_argument("--fps", type=positive, metavar="N", help="the camera's rate (default 30 for a device, "
                      "a file's own)")
    live.add_argument("--output", required=True, metavar="TARGET",
                      help="a video file, udp://HOST:PORT (MPEG-TS, for OBS), v4l2:/dev/videoN "
                      "(v4l2loopback) or window")
    live.add_argument("--seconds", type=positive, metavar="N", help="stop after N seconds of camera frames "
                      "(default: until the camera ends or Ctrl-C)")
    live.add_argument("--preset", metavar="NAME|FILE")
    live.add_argument("--set", action="append", metavar="section.key=value", help="override one setting")
    live.add_argument("--json", action="store_true", help="print fps, latency and drops as JSON")
    live.set_defaults(handler=cmd_live)


def size_arg(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    if not (w.isdigit() and h.isdigit()) or not (16 <= int(w) <= 7680 and 16 <= int(h) <= 4320):
        raise argparse.ArgumentTypeError(f"{text!r} is not a frame size WxH (e.g. 640x480)")
    return int(w), int(h)


def positive(text: str) -> float:
    """A finite number above 0 (``inf`` and ``nan`` are refused as the settings refuse them)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def cmd_live(args: argparse.Namespace) -> int:
    from pipeline.live.camera import open_camera
    from pipeline.live.engine import LiveEngine
    from pipeline.live.outputs import Recording, open_output
    from pipeline.live.step import chain_builder, live_settings
    from pipeline.quality.record import quality_summary
    from pipeline.quality.report import summary_line

    settings = presets.settings_from(args.preset, args.set)
    # the one check of a swap request, as `swap` and the queue run it (a camera in place of a target)
    checked = check(SwapRequest.of(args.source, None, live_settings(settings)[0], live=True))
    sources = list(checked.request.sources)
    camera = open_camera(args.camera, args.size, args.fps)
    info = getattr(camera, "info", None)  # a file camera's own size where none was asked for
    size = getattr(camera, "size", None) or (None if info is None else (info.width, info.height))
    if size is not None:  # a frame enhancer's frames the encoder would refuse minutes in, refused now
        checks.check_frame_size(checked.request.settings, camera.name, size, "video", checked.plan)
    sink = open_output(args.output, camera.fps, checked.plan.names, sources, args.camera)
    report = sink.report if isinstance(sink, Recording) else None  # a recording's quality report
    engine = LiveEngine(settings, chain_builder(sources, camera.fps, report))
    step = engine.step
    limit = None if args.seconds is None else max(1, round(args.seconds * camera.fps))
    with writer.stop_on_signals():  # SIGTERM/SIGHUP end the run as Ctrl-C does: the recording kept
        stats = engine.run(camera, sink, limit)
    for notice in getattr(step, "notices", []):
        print(f"facestation: note: {notice}", file=sys.stderr)
    summary = {"camera": camera.name, "output": args.output, **stats.summary()}
    if report is not None and isinstance(sink, Recording):  # beside the recording, as a render's
        summary["quality"] = quality_summary(report.written, sink.report_path)
    if limit is not None and summary["frames_captured"] < limit:  # a file camera ran out first
        ran = summary["frames_captured"] / camera.fps
        print(f"facestation: note: {camera.name} ended after {ran:.1f} s, before the {args.seconds:g} s "
              "asked", file=sys.stderr)
    if args.json:
        print(json.dumps({**summary, "latency_p50_ms_per_second": stats.per_second()}, indent=2))
    else:
        print(f"live: {summary['frames_delivered']} frames to {args.output}, {summary['fps']} fps, latency "
              f"p50 {summary['latency_p50_ms']} ms p95 {summary['latency_p95_ms']} ms (p50 "
              f"{summary['latency_start_p50_ms']} ms at the start, {summary['latency_end_p50_ms']} ms at the "
              f"end), {summary['frames_dropped']} dropped of {summary['frames_captured']}")
        if summary.get("quality"):
            print(summary_line(summary["quality"], summary["quality"]["path"]))
    return 0
