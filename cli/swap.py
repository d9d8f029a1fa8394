"""``facestation swap``: one image or video; a video shows a progress bar on stderr while it renders."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from pipeline import presets
from pipeline.alpha import transparent
from pipeline.checks import (
    check_alpha_output,
    check_audio,
    check_lip_sync_sound,
    check_output_size,
    require_models,
)
from pipeline.jobs import service
from pipeline.media import check_output, check_video_output, kind_of
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
    swap.add_argument("--json", action="store_true", help="print a machine-readable summary")
    swap.add_argument("--audio", metavar="FILE", help="a new voice for the output: it replaces the target's "
                      "sound, and a lip_syncer's mouth follows it")
    swap.set_defaults(handler=cmd_swap)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP asked ``swap`` to stop: handled like Ctrl-C (the partial output is removed); the
    exit code is 128 + the signal's number (143, 129), as a shell reports a process its signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn the first SIGTERM/SIGHUP into :class:`Stopped` in the main thread (later ones are ignored while
    the render cleans up); the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGTERM, signal.SIGHUP)

    def stop(signum: int, frame: FrameType | None) -> None:
        for sig in wanted:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_swap(args: argparse.Namespace) -> int:
    target = Path(args.target)
    output = Path(args.output)
    sources = [Path(s) for s in args.source]
    audio = None if args.audio is None else check_audio(args.audio)
    settings = presets.settings_from(args.preset, args.set)
    check_output(output, [target, *sources, *([audio] if audio else [])])
    check_alpha_output(settings, output)  # a transparent background into a file that keeps it
    service.refuse_queue_clash(sources, target, output, audio)  # nor a queued job's file
    check_lip_sync_sound(settings, target, audio)  # a lip syncer needs a sound to follow
    require_models(settings)  # every missing model named at once
    check_output_size(settings, target)  # a frame enhancer's output the encoder cannot take
    with stop_on_signals():
        if kind_of(target) == "image":
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
    return 0


def swap_video(settings: Settings, sources: list[Path], target: Path, output: Path,
               show_progress: bool = True, audio: Path | None = None) -> dict[str, Any]:
    """Render a video (``audio``: the new voice it carries); a progress bar on stderr when it is a terminal.
    Returns the render's summary."""
    from pipeline.progress import RunControl
    from pipeline.render import no_face_notice, render
    from pipeline.video.probe import probe

    check_video_output(output, transparent(settings))
    info = probe(target)
    show = show_progress and sys.stderr.isatty()
    result = render(settings, sources, target, output, info=info, audio=audio,
                    control=RunControl(progress_bar if show else None))
    if show:
        print(file=sys.stderr)
    if result.faces_swapped == 0:
        result.notices.append(no_face_notice(target, settings))
    return result.summary()


def progress_bar(p: Progress) -> None:
    """One line on stderr, redrawn in place: ``[#####.....] 120/300  24.0 fps ETA     8s``."""
    width = 30
    frac = p.frames_done / p.frames_total if p.frames_total else 0.0
    filled = int(frac * width)
    eta = f"{p.eta_s:5.0f}s" if p.eta_s is not None else "   ?s"
    print(f"\r[{'#' * filled}{'.' * (width - filled)}] {p.frames_done}/{p.frames_total} "
          f"{p.fps or 0.0:5.1f} fps ETA {eta}", end="", file=sys.stderr, flush=True)
