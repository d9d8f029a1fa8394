"""The WebRTC side of a browser's live run (aiortc): imported only when a page connects (``webrtc.py``).

:class:`ProcessedTrack` is the track sent back to the page. A reader task takes every frame the page's
camera sends and offers it to the run's engine (the newest frame wins; those replaced before processing
are counted as dropped); each :meth:`ProcessedTrack.recv` — the encoder asking for its next frame —
processes the newest one waiting on a worker thread, so latency stays bounded however slow the chain is.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from av import VideoFrame

from pipeline.live.browser_run import BadOffer, LiveRun

log = logging.getLogger(__name__)

CLOCK = 90000  # RTP's video clock
TIME_BASE = fractions.Fraction(1, CLOCK)


class ProcessedTrack(MediaStreamTrack):
    """The page's camera track, each frame sent being the newest received, through the run's step."""

    kind = "video"

    def __init__(self, source: MediaStreamTrack, run: LiveRun) -> None:
        super().__init__()
        self.source, self.run = source, run
        self._t0 = time.monotonic()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while True:
                frame = await self.source.recv()
                if isinstance(frame, VideoFrame):
                    self.run.offer(np.asarray(frame.to_ndarray(format="bgr24"), np.uint8))
        except MediaStreamError:
            pass  # the page's camera ended
        finally:
            self.run.engine.handoff.close()

    async def recv(self) -> VideoFrame:
        done = await asyncio.to_thread(self.run.process_next)
        if done is None:
            self.stop()
            raise MediaStreamError
        item, out = done
        frame = VideoFrame.from_ndarray(out, format="bgr24")
        frame.pts, frame.time_base = int((time.monotonic() - self._t0) * CLOCK), TIME_BASE
        self.run.engine.delivered(item)
        return frame

    def stop(self) -> None:
        super().stop()
        self._reader.cancel()
        self.run.engine.handoff.close()


async def connect(run: LiveRun, sdp: str, kind: str, on_end: Callable[[], None]) -> dict[str, str]:
    """Answer the page's offer: its video track comes back processed on the same connection."""
    peer = RTCPeerConnection(RTCConfiguration(iceServers=[]))  # host candidates only: no public STUN asked
    run.peer = peer

    @peer.on("track")
    def on_track(track: MediaStreamTrack) -> None:
        if track.kind == "video":
            peer.addTrack(ProcessedTrack(track, run))

    @peer.on("connectionstatechange")
    async def on_state() -> None:
        log.info("live run of %r: connection %s", run.user or "local", peer.connectionState)
        if peer.connectionState in ("failed", "closed"):
            await peer.close()
            await asyncio.to_thread(on_end)  # the recording's encoder finishes off the loop

    try:
        await peer.setRemoteDescription(RTCSessionDescription(sdp=sdp, type=kind))
        await peer.setLocalDescription(await peer.createAnswer())
    except Exception as exc:  # aiortc's reasons are ValueError, InvalidStateError, ...: all the offer's fault
        await peer.close()
        run.peer = None
        raise BadOffer(f"the browser's offer was refused: {_first_line(exc)}") from None
    answer: Any = peer.localDescription
    return {"sdp": answer.sdp, "type": answer.type}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
