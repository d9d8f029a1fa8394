"""One browser's live run: its owner, its engine, mirror and recording, and the peer connection once the
page has connected (``rtc_peer``); the check of the page's offer."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import UserError
from pipeline.live.adapt import Adapter
from pipeline.live.engine import Captured, LiveEngine, Sink
from pipeline.live.outputs import Recording
from pipeline.live.timeline import ThreadCpu, Timeline
from pipeline.types import Frame

log = logging.getLogger(__name__)

SHOWN_LAST = 60  # the running stream's fps and latency: of its last this many frames


class BadOffer(UserError):
    """A WebRTC offer that cannot be answered (not SDP, no video, the peer refused it)."""


def check_offer(sdp: object, kind: object) -> tuple[str, str]:
    """An offer as a browser sends it: SDP text with a video section, of type "offer"."""
    if kind != "offer":
        raise BadOffer(f"not a WebRTC offer (type {kind!r}, expected 'offer')")
    if not isinstance(sdp, str) or not sdp.startswith("v=0") or "\nm=video " not in sdp:
        raise BadOffer("not an SDP offer with a video track (the page sends its camera's)")
    return sdp, kind


@dataclass
class LiveRun:
    """One browser's live run: its owner, the engine, mirror, recording and streams, the peer connection,
    where its time goes (``timeline``, ``threads``) and the error that ended it, if one did."""

    token: str
    user: str
    session: str
    engine: LiveEngine
    mirror: bool = False
    recording: Recording | None = None
    streams: list[Sink] = field(default_factory=list)  # e.g. MPEG-TS over UDP for OBS, a virtual camera
    peer: Any = None  # aiortc's RTCPeerConnection, once the page has connected
    loop: asyncio.AbstractEventLoop | None = None  # the loop the peer lives on
    started: float = field(default_factory=time.monotonic)
    recorded: Path | None = None  # the recording's file, once finished
    timeline: Timeline = field(default_factory=Timeline)
    threads: ThreadCpu = field(default_factory=ThreadCpu)
    size: tuple[int, int] | None = None  # the camera's frames now (width, height)
    sending: dict[str, Any] = field(default_factory=dict)  # what goes back: codec, size, and why
    error: str | None = None  # what ended the run, in one line
    adapter: Adapter = field(default_factory=Adapter)  # the camera rate and size this machine keeps up with
    applied: tuple[str, tuple[str, ...]] = ("", ())  # the settings and source photos its step was built from
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def offer(self, frame: Any) -> None:
        """A frame from the page's camera, as it came (converted only if the chain takes it)."""
        self.engine.offer(frame)

    def process_next(self, to_bgr: Callable[[Any], Frame] = np.asarray) -> tuple[Captured, Frame] | None:
        """The newest camera frame (waits for one) as BGR (``to_bgr``), mirrored if asked, processed,
        recorded and streamed; None once the camera has ended."""
        item = self.engine.handoff.take()
        if item is None:
            return None
        with self.timeline.span("to_bgr"):
            frame = to_bgr(item.frame)
            if self.mirror:
                frame = np.ascontiguousarray(frame[:, ::-1])
        self.size = (frame.shape[1], frame.shape[0])
        with self.timeline.span("chain"):
            out = self.engine.run_step(frame)
        with self._lock, self.timeline.span("outputs"):
            for sink in ([self.recording] if self.recording else []) + self.streams:
                sink.write(out, item.index)  # a recording repeats the last frame in a dropped one's place
        return item, out

    def summary(self) -> dict[str, Any]:
        """The running stream's figures (fps and latency of its last frames), what it sends, where its
        time goes."""
        return {**self.engine.stats.summary(last=SHOWN_LAST), "size": list(self.size or ()),
                "sending": self.sending, "error": self.error, "timeline": self.timeline.summary(),
                "threads": self.threads.summary()}

    def advise(self, chosen_fps: int | None = None) -> dict[str, Any]:
        """The running stream's figures with the camera rate and size to ask for now (``chosen_fps``: the
        rate the page's user chose)."""
        if chosen_fps:
            self.adapter.chosen_fps = chosen_fps
        stats = self.engine.stats
        advice = self.adapter.observe(stats.captured, len(stats.indices), self.size)
        return {**self.summary(), "advice": advice.as_dict()}

    def fail(self, exc: BaseException) -> None:
        """The run cannot go on: ``exc`` in one line is its error; the camera's frames stop."""
        if self.error is None:
            self.error = one_line(exc)
            log.warning("live run of %r failed: %s", self.user or "local", self.error,
                        exc_info=not isinstance(exc, UserError))
        self.engine.handoff.close()

    def finish(self) -> Path | None:
        """The camera has ended: the recording closed and the streams ended; the recording's file, if any
        frame went into it (a second call gives the same answer). A stream that fails to finish is the run's
        error unless it has one."""
        self.engine.handoff.close()
        with self._lock:
            recording, self.recording = self.recording, None
            streams, self.streams = self.streams, []
            for sink in streams:
                try:
                    sink.close()
                except UserError as exc:
                    self.error = self.error or one_line(exc)
            if recording is not None:
                recording.close()
                self.recorded = recording.path if recording.path.is_file() else None
            return self.recorded


def one_line(exc: BaseException) -> str:
    """An error as the page shows it: a user's error as it says, anything else named with its first line."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(exc, UserError):
        return text or type(exc).__name__
    return f"the live stream stopped on an internal error ({type(exc).__name__}{': ' + text if text else ''})"
