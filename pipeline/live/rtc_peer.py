"""The WebRTC side of a browser's live run (aiortc): imported only when a page connects (``webrtc.py``).

:class:`ProcessedTrack` is the track sent back to the page. Three parts, so that the chain, the encoder
and the event loop work at once rather than in turn:

- a reader task on the event loop hands each frame the page's camera sends to the run's engine as aiortc
  decoded it (no conversion on the loop; the newest frame wins, those replaced are counted as dropped);
- a worker thread takes the newest camera frame, converts it to BGR, runs the chain, writes the recording
  and streams, and converts the result to the encoder's own format (I420 in a buffer the frame wraps: the
  encoder converts and copies nothing); it takes the next camera frame only once the encoder has taken its
  last result, so no frame is processed that would never be sent;
- :meth:`ProcessedTrack.recv` (aiortc's sender asking for the next frame to encode, on the loop) returns
  the worker's latest result.

Where the time goes (``run.timeline``): ``arrival`` (between camera frames arriving), ``to_bgr``, ``chain``,
``outputs``, ``to_encoder``, ``wait`` (the sender waiting for a result), ``encode`` (the sender's time
between two requests: encoding, packetizing, sending) and ``loop_lag``; ``run.threads``: CPU per thread.
"""

from __future__ import annotations

import asyncio
import fractions
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np
from aiortc import MediaStreamTrack, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError
from av import VideoFrame

from pipeline import env
from pipeline.live.browser_run import BadOffer, LiveRun
from pipeline.live.engine import Captured
from pipeline.live.timeline import LoopLag
from pipeline.types import Frame

log = logging.getLogger(__name__)

DEFAULT_CODEC = "vp8"  # FACESTATION_LIVE_CODEC unset (BENCHMARKS.md, "Live mode": the two measured)
CLOCK = 90000  # RTP's video clock
TIME_BASE = fractions.Fraction(1, CLOCK)


def to_bgr(frame: Any) -> Frame:
    """A decoded camera frame as the chain takes it (BGR, its own buffer: the chain writes into it)."""
    if isinstance(frame, VideoFrame):
        return np.asarray(frame.to_ndarray(format="bgr24"), np.uint8)
    return np.asarray(frame, np.uint8)


def to_encoder(frame: Frame) -> VideoFrame:
    """A BGR frame as the encoder takes it: I420, in a buffer the frame wraps (no copy, no conversion in
    the encoder). An odd width or height is cut to even first (I420's planes are half size)."""
    h, w = frame.shape[0] & ~1, frame.shape[1] & ~1
    yuv = np.asarray(cv2.cvtColor(np.ascontiguousarray(frame[:h, :w]), cv2.COLOR_BGR2YUV_I420), np.uint8)
    return VideoFrame.from_numpy_buffer(yuv, format="yuv420p")


class ProcessedTrack(MediaStreamTrack):
    """The page's camera track, each frame sent being the newest received, through the run's step."""

    kind = "video"

    def __init__(self, source: MediaStreamTrack, run: LiveRun, on_error: Callable[[], None]) -> None:
        super().__init__()
        self.source, self.run, self._on_error = source, run, on_error
        self._home = asyncio.get_running_loop()
        self._t0 = time.monotonic()
        self._ready: tuple[Captured, VideoFrame] | None = None  # the worker's result not yet sent
        self._over = False  # the worker has ended
        self._wake = asyncio.Event()
        self._taken = threading.Event()  # the encoder took the worker's last result: the next one may start
        self._taken.set()
        self._asked: float | None = None  # when recv last returned a frame (the sender's encoding starts)
        run.threads.start()
        self._tasks = [asyncio.ensure_future(self._read()),
                       asyncio.ensure_future(LoopLag(run.timeline).run())]
        self._worker = threading.Thread(target=self._work, name="live-chain", daemon=True)
        self._worker.start()

    async def _read(self) -> None:
        last: float | None = None
        try:
            while True:
                frame = await self.source.recv()
                now = time.perf_counter()
                if last is not None:
                    self.run.timeline.add("arrival", now - last)
                last = now
                self.run.offer(frame)
        except MediaStreamError:
            pass  # the page's camera ended
        finally:
            self.run.engine.handoff.close()

    def watch(self, sender: Any, every: float = 1.0) -> None:
        """Say what ``sender`` sends back (kbit/s, of its RTP payload), every ``every`` seconds."""

        async def bitrate() -> None:
            last = None
            while True:
                await asyncio.sleep(every)
                sent = [s.bytesSent for s in (await sender.getStats()).values()
                        if getattr(s, "type", "") == "outbound-rtp"]
                if sent and last is not None:
                    self.run.sending["kbps"] = round((sent[0] - last) * 8 / every / 1000)
                last = sent[0] if sent else last

        self._tasks.append(asyncio.ensure_future(bitrate()))

    def _work(self) -> None:
        """The worker thread: camera frames through the chain until the camera ends, the track stops, or
        the chain fails (the run's error: the page is told, the run ends)."""
        try:
            while self._taken.wait() and self.readyState == "live":
                self._taken.clear()
                done = self.run.process_next(to_bgr)
                if done is None:
                    break
                with self.run.timeline.span("to_encoder"):
                    frame = to_encoder(done[1])
                self._home.call_soon_threadsafe(self._hand, done[0], frame)
        except BaseException as exc:  # noqa: BLE001 - whatever it is ends the run, said in one line
            self.run.fail(exc)
            self._home.call_soon_threadsafe(self._on_error)
        finally:
            self._home.call_soon_threadsafe(self._end)

    def _hand(self, item: Captured, frame: VideoFrame) -> None:
        self._ready = (item, frame)
        self._wake.set()

    def _end(self) -> None:
        self._over = True
        self._wake.set()

    async def recv(self) -> VideoFrame:
        timeline = self.run.timeline
        if self._asked is not None:
            timeline.add("encode", time.perf_counter() - self._asked)
        with timeline.span("wait"):
            while self._ready is None and not self._over:
                self._wake.clear()
                await self._wake.wait()
        if self._ready is None:
            self.stop()
            raise MediaStreamError
        (item, frame), self._ready = self._ready, None
        self._taken.set()
        frame.pts, frame.time_base = int((time.monotonic() - self._t0) * CLOCK), TIME_BASE
        self.run.engine.delivered(item)
        self.run.sending.update(size=[frame.width, frame.height])
        self._asked = time.perf_counter()
        return frame

    def stop(self) -> None:
        super().stop()
        for task in self._tasks:
            task.cancel()
        self.run.engine.handoff.close()
        self._taken.set()  # a worker waiting for the encoder ends
        if self._ready is not None:
            self._ready = None
            self.run.engine.unsent()


async def connect(run: LiveRun, sdp: str, kind: str, on_end: Callable[[], None]) -> dict[str, str]:
    """Answer the page's offer: its video track comes back processed on the same connection."""
    peer = RTCPeerConnection(RTCConfiguration(iceServers=[]))  # host candidates only: no public STUN asked
    run.peer = peer

    def failed() -> None:  # the chain failed (run.error says how): the connection ends, the run with it
        asyncio.ensure_future(peer.close())

    @peer.on("track")
    def on_track(track: MediaStreamTrack) -> None:
        if track.kind == "video":
            processed = ProcessedTrack(track, run, failed)
            processed.watch(peer.addTrack(processed))

    @peer.on("connectionstatechange")
    async def on_state() -> None:
        log.info("live run of %r: connection %s", run.user or "local", peer.connectionState)
        if peer.connectionState in ("failed", "closed"):
            await peer.close()
            await asyncio.to_thread(on_end)  # the recording's encoder finishes off the loop

    try:
        sdp = prefer_codec(sdp, (env.LIVE_CODEC.get() or DEFAULT_CODEC).upper())
        await peer.setRemoteDescription(RTCSessionDescription(sdp=sdp, type=kind))
        await peer.setLocalDescription(await peer.createAnswer())
    except Exception as exc:  # aiortc's reasons are ValueError, InvalidStateError, ...: all the offer's fault
        await peer.close()
        run.peer = None
        raise BadOffer(f"the browser's offer was refused: {_first_line(exc)}") from None
    answer: Any = peer.localDescription
    run.sending.update(codec=_codec(answer.sdp))
    return {"sdp": answer.sdp, "type": answer.type}


def prefer_codec(sdp: str, codec: str) -> str:
    """The offer with ``codec`` first on its video section (its payload types first on the ``m=`` line
    and its ``a=rtpmap`` lines first: aiortc reads the offer's preference from those), where it offers the
    codec: the answer then lists it first, and both sides send with it."""
    newline = "\r\n" if "\r\n" in sdp else "\n"
    lines = sdp.split(newline)
    video = next((i for i, ln in enumerate(lines) if ln.startswith("m=video ")), None)
    if video is None:
        return sdp
    end = next((i for i in range(video + 1, len(lines)) if lines[i].startswith("m=")), len(lines))
    maps = [i for i in range(video + 1, end) if lines[i].startswith("a=rtpmap:")]
    ours = {lines[i].split()[0].removeprefix("a=rtpmap:") for i in maps
            if len(lines[i].split()) > 1 and lines[i].split()[1].split("/")[0].upper() == codec}
    if not ours:
        return sdp
    ordered = sorted((lines[i] for i in maps), key=lambda ln: ln.split()[0].removeprefix("a=rtpmap:")
                     not in ours)
    for i, line in zip(maps, ordered, strict=True):
        lines[i] = line
    parts = lines[video].split()
    lines[video] = " ".join([*parts[:3], *(t for t in parts[3:] if t in ours),
                             *(t for t in parts[3:] if t not in ours)])
    return newline.join(lines)


def _codec(sdp: str) -> str:
    """The video codec the answer sends with (its first on the video line)."""
    lines = sdp.splitlines()
    video = next((ln.split()[3] for ln in lines if ln.startswith("m=video ") and len(ln.split()) > 3), "")
    for ln in lines:
        if ln.startswith(f"a=rtpmap:{video} "):
            return ln.split()[1].split("/")[0]
    return ""


def _first_line(exc: BaseException) -> str:
    """aiortc's reason in one line; its parser's own failures (an assertion, an index) as what they mean."""
    text = str(exc).strip().splitlines()
    if isinstance(exc, (AssertionError, IndexError, KeyError)) or not text:
        return f"its SDP does not parse ({type(exc).__name__}{': ' + text[0] if text else ''})"
    return text[0]
