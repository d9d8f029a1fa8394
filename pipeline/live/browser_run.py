"""One browser's live run: its owner, its engine, mirror and recording, and the peer connection once the
page has connected (``rtc_peer``); the check of the page's offer."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import UserError
from pipeline.live.engine import Captured, LiveEngine
from pipeline.live.outputs import Recording
from pipeline.types import Frame

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
    """One browser's live run: its owner, the engine, mirror and recording, the peer connection."""

    token: str
    user: str
    session: str
    engine: LiveEngine
    mirror: bool = False
    recording: Recording | None = None
    peer: Any = None  # aiortc's RTCPeerConnection, once the page has connected
    loop: asyncio.AbstractEventLoop | None = None  # the loop the peer lives on
    started: float = field(default_factory=time.monotonic)
    recorded: Path | None = None  # the recording's file, once finished
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def offer(self, frame: Frame) -> None:
        """A frame from the page's camera (mirrored first if asked)."""
        if self.mirror:
            frame = np.ascontiguousarray(frame[:, ::-1])
        self.engine.offer(frame)

    def process_next(self) -> tuple[Captured, Frame] | None:
        """The newest camera frame processed (recorded if asked); None once the camera has ended."""
        done = self.engine.process_next()
        if done is None:
            return None
        with self._lock:
            if self.recording is not None:
                self.recording.write(done[1], done[0].index)  # a dropped frame's place repeats the last
        return done

    def summary(self) -> dict[str, Any]:
        return self.engine.stats.summary(last=SHOWN_LAST)

    def finish(self) -> Path | None:
        """The camera has ended: the recording closed; its file, if any frame went into it (a second
        call gives the same answer)."""
        self.engine.handoff.close()
        with self._lock:
            recording, self.recording = self.recording, None
            if recording is not None:
                recording.close()
                self.recorded = recording.path if recording.path.is_file() else None
            return self.recorded
