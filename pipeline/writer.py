"""The one output writer: the rules every entry point that writes a file keeps (``facestation swap``, ``queue
add`` and its batch, the queue's jobs and their farm segments, ``facestation live`` and the Live tab's
recording).

- :func:`claim`: the output is not an input, is a file that can be written there (:func:`media.check_output`),
  and is no queued or running job's input or output, nor are its inputs what such a job writes, by the
  file named (:mod:`pipeline.jobs.clash`; a queued job is checked by the queue itself, in its transaction).
- A temporary name renamed into place when the file is whole (:class:`pipeline.video.encode.Encoder`,
  :func:`pipeline.image.write_image`; the quality report beside it, ``NAME.quality.json``, by
  :func:`pipeline.quality.write_report` through :func:`pipeline.paths.write_atomic`).
- :func:`stop_on_signals`: SIGTERM and SIGHUP (systemd, ``docker stop``, a dropped ssh session) end a run as
  Ctrl-C does. A render removes its partial file (nothing half-made appears under the output's name); a live
  recording is finished and kept under its name with the frames up to the signal (what the camera gave is
  the recording); a queued job is handed back to the queue with its finished segments
  (:func:`on_stop_signals`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP asked a run to stop: handled like Ctrl-C; a command that ends with it exits 128 + the
    signal's number (143, 129), as a shell reports a process its signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn the first SIGTERM/SIGHUP into :class:`Stopped` in the main thread (later ones are ignored while
    the run finishes or cleans up); the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def on_stop_signals(callback: Callable[[], None]) -> None:
    """SIGTERM and SIGHUP call ``callback`` (a worker that finishes its step and hands its job back) rather
    than raising; in the main thread only (elsewhere nothing is installed)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, lambda *_: callback())


def claim(output: str | Path, sources: Sequence[str | Path], target: str | Path | None = None,
          audio: str | Path | None = None, *, need_bytes: int | None = None) -> Path:
    """Refuse, in one line, an output that overwrites an input or cannot be written, or that a queued or
    running job of the default queue reads or writes (or inputs one writes); the output's path."""
    from pipeline import media
    from pipeline.jobs import service

    output = Path(output)
    inputs = [Path(p) for p in (*sources, *([target] if target is not None else []), *([audio] if audio
                                                                                          else []))]
    media.check_output(output, inputs, need_bytes=need_bytes)
    service.refuse_queue_clash(sources, target, output, audio)
    return output
