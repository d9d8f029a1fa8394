"""``facestation swap``: one image or video; a video shows a progress bar on stderr while it renders."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import add_marker_option
from pipeline import presets, writer
from pipeline.markers import with_markers
from pipeline.request import SwapRequest, check
from pipeline.settings import Settings

if TYPE_CHECKING:
    from pipeline.progress import Progress


def register(sub: Any) -> None:
    swap = sub.add_parser("swap", help="swap faces in an image or a video")
    swap.add_argument("--source", action="append", required=True, metavar="IMG",
                      help="photo of the face to put in (repeat for several photos of one person)")
    swap.add_argument("--target", required=True, metavar="IMG|VIDEO")
    swap.add_argument("--output", required=True, metavar="PATH")
    swap.add_argument("--preset", metavar="NAME|FILE")
    swap.add_argument("--set", action="append", metavar="section.key=value", help="override one setting")
    add_marker_option(swap)
    swap.add_argument("--json", action="store_true", help="print a machine-readable summary")
    swap.add_argument("--audio", metavar="FILE", help="a new voice for the output: it replaces the target's "
                      "sound, and the lip syncer's mouth follows it")
    swap.set_defaults(handler=cmd_swap)


def cmd_swap(args: argparse.Namespace) -> int:
    settings = with_markers(presets.settings_from(args.preset, args.set), args.marker)
    request = SwapRequest.of(args.source, args.target, settings, args.output, args.audio)
    checked = check(request)  # the one check: what the queue and the web UI refuse, refused here alike
    for notice in checked.output_notices:  # said before the work, as the queue and the web UI say it
        print(f"facestation: note: {notice}", file=sys.stderr)
    sources, target, output = list(request.sources), Path(args.target), Path(args.output)
    audio = request.voice
    writer.claim(output, sources, target, audio)  # the one writer's rules: nor a queued job's file
    with writer.stop_on_signals():  # the partial output removed, exit 143/129
        if checked.frames is None:  # a still image
            from pipeline.still import swap_image  # the models load only for a command that needs them

            summary = swap_image(settings, sources, target, output)
        else:
            summary = swap_video(settings, sources, target, output, show_progress=not args.json,
                                 audio=audio)
    for notice in summary.get("notices", []):
        print(f"facestation: note: {notice}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"wrote {summary['output']}")
        if summary.get("quality"):
            from pipeline.quality.report import summary_line

            print(summary_line(summary["quality"], summary["quality"]["path"]))
    return 0


def swap_video(settings: Settings, sources: list[Path], target: Path, output: Path,
               show_progress: bool = True, audio: Path | None = None) -> dict[str, Any]:
    """Render a video (``audio``: the new voice it carries); a progress bar on stderr when it is a terminal.
    Returns the render's summary."""
    from pipeline.progress import RunControl
    from pipeline.render import no_face_notice, render
    from pipeline.video.probe import probe

    info = probe(target)
    show = show_progress and sys.stderr.isatty()
    control = RunControl(progress_bar if show else None)
    if settings.markers:  # a render a stretch, joined as a job joins its segments
        from pipeline.jobs.markers import render_file

        result = render_file(settings, sources, target, output, info=info, control=control, audio=audio)
    else:
        result = render(settings, sources, target, output, info=info, audio=audio, control=control)
    if show:
        print(file=sys.stderr)
    notice = no_face_notice(target, settings) if result.faces_swapped == 0 else None
    if notice is not None:
        result.notices.append(notice)
    return result.summary()


def progress_bar(p: Progress) -> None:
    """One line on stderr, redrawn in place: ``[#####.....] 120/300  24.0 fps ETA     8s``."""
    width = 30
    frac = p.frames_done / p.frames_total if p.frames_total else 0.0
    filled = int(frac * width)
    eta = f"{p.eta_s:5.0f}s" if p.eta_s is not None else "   ?s"
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {p.frames_done}/{p.frames_total} "
          f"{p.fps or 0.0:5.1f} fps ETA {eta}", end="", file=sys.stderr, flush=True)
