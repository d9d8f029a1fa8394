"""Live mode in a browser: the page's camera comes in over WebRTC and goes back processed on the same
connection.

:class:`LiveRuns` holds the live runs of one app, each bound to the user and login session that started it
(a token names it; anybody else asking for it is told there is no such run). A run is a
:class:`~pipeline.live.engine.LiveEngine` fed by the incoming track (newest frame wins, the replaced ones
counted as dropped) and pulled by the outgoing one (``rtc_peer.ProcessedTrack``), optionally mirrored and
recorded to a file in the user's results (provenance tag included). ``aiortc`` is imported only when a
connection is made (``rtc_peer``): the app starts without it and :func:`rtc_missing` says what to install.

A run whose connection ends without Stop (the page closed or lost: aiortc's connection ``closed`` or
``failed``) is ended by the server: its recording finished and kept, the run gone from the live ones; its
summary waits for its owner's Stop (a bounded number of them, the oldest forgotten first).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import media, writer
from pipeline.errors import UserError
from pipeline.live.browser_run import BadOffer, LiveRun, check_offer
from pipeline.live.engine import Build, LiveEngine, Sink
from pipeline.live.outputs import Recording, open_stream
from pipeline.live.step import chain_builder, live_settings
from pipeline.quality.live import LiveReport
from pipeline.request import Checked, SwapRequest, check
from pipeline.settings import Settings

log = logging.getLogger(__name__)

RTC_HELP = ("live video in the browser needs aiortc on the server: pip install 'facestation[live]' "
            "(scripts/setup.sh installs it)")
BROWSER_FPS = 30.0  # the rate keyframes and the tracker are paced for (a browser camera's usual one)
CLOSE_WAIT_S = 10.0
KEPT_ENDED = 64  # summaries of runs ended without Stop, kept for their owner's Stop


def rtc_missing() -> str | None:
    """Why live video in the browser cannot work here (aiortc is not installed), or None."""
    try:
        import aiortc  # noqa: F401
    except ImportError:
        return RTC_HELP
    return None


def check_live(settings: Settings, sources: Sequence[str | Path] | None) -> Checked:
    """The swap request's one check (:func:`pipeline.request.check`) of a run with the page's camera: its
    plan and settings as a live run uses them."""
    return check(SwapRequest.of(sources, None, live_settings(settings)[0], live=True))


def _applied(settings: Settings, sources: Sequence[str | Path] | None) -> tuple[str, tuple[str, ...]]:
    """What a run's step is built from: its live settings and source photos."""
    return settings.model_dump_json(), tuple(str(s) for s in sources or ())


@dataclass(frozen=True)
class Ended:
    """A run that ended without Stop: whose it was, its summary and recording."""

    user: str
    session: str
    summary: dict[str, Any]
    recording: Path | None


# a run's steps for its source photos at its camera rate, filling its recording's quality report (if any)
Builder = Callable[[Sequence[Path | str], float, LiveReport | None], Build]


class LiveRuns:
    """The live runs of one app, by token; each answers only the user and session that started it."""

    def __init__(self, build: Builder = chain_builder) -> None:
        self._build = build
        self._runs: dict[str, LiveRun] = {}
        self._closing: dict[str, LiveRun] = {}  # runs being stopped: gone once their recording is finished
        self._over: dict[str, Ended] = {}  # runs whose connection ended without Stop
        self._lock = threading.Lock()

    def start(self, user: str, session: str, settings: Settings, sources: Sequence[str | Path],
              record_to: Path | None = None, mirror: bool = False, stream_to: str = "") -> LiveRun:
        """A new run for this user and session, its step built now (models loaded) so that the camera's
        first frame is processed at once; ``stream_to``: also sent to ``udp://HOST:PORT`` (OBS) or
        ``v4l2:/dev/videoN`` (a virtual camera), as ``facestation live --output`` does."""
        checked = check_live(settings, sources)
        live = checked.request.settings
        streams: list[Sink] = [open_stream(stream_to, BROWSER_FPS)] if stream_to else []
        recording = None
        if record_to is not None:
            writer.claim(record_to, sources)  # the one writer's rules: nor a queued job's file
            media.check_video_output(record_to)
            # with its quality report, which the run's steps fill
            recording = Recording(record_to, BROWSER_FPS, checked.plan.names, LiveReport(BROWSER_FPS))
        report = None if recording is None else recording.report
        engine = LiveEngine(live, self._build([Path(s) for s in sources], BROWSER_FPS, report))
        run = LiveRun(secrets.token_urlsafe(18), user, session, engine, mirror, recording, streams)
        run.applied = _applied(live, sources)
        with self._lock:
            self._runs[run.token] = run
        log.info("live run started by %r", user or "local")
        return run

    def get(self, token: str, user: str, session: str) -> LiveRun:
        """The run ``token`` names, if it is this user's in this session (the same answer otherwise)."""
        with self._lock:
            run = self._runs.get(token)
        if run is None or (run.user, run.session) != (user, session):
            raise UserError("no live run of yours: press Start again")
        return run

    def status(self, token: str, user: str, session: str, chosen_fps: int | None = None) -> dict[str, Any]:
        """The run's figures as its page shows them: a live run's (``ended`` false) with the camera rate
        and size to ask for (``chosen_fps``: the one its user chose), or, until its owner's Stop, those of a
        run that ended without Stop (``ended`` true, ``error`` what ended it)."""
        with self._lock:
            ended = self._over.get(token)
        if ended is not None and (ended.user, ended.session) == (user, session):
            return ended.summary
        return {**self.get(token, user, session).advise(chosen_fps), "ended": False}

    def update(self, token: str, user: str, session: str, settings: Settings,
               sources: Sequence[str | Path] | None) -> bool:
        """New settings or source photos for the running stream, from its next frame on; False (nothing
        rebuilt) when they are those it runs with (a control that says it changed to the same value)."""
        run = self.get(token, user, session)
        live = check_live(settings, sources).request.settings
        if _applied(live, sources) == run.applied:
            return False
        report = None if run.recording is None else run.recording.report
        run.engine.update(live, self._build([Path(s) for s in sources or ()], BROWSER_FPS, report))
        run.applied = _applied(live, sources)
        return True

    def set_mirror(self, token: str, user: str, session: str, mirror: bool) -> None:
        self.get(token, user, session).mirror = mirror

    async def answer(self, token: str, user: str, session: str, sdp: object, kind: object) -> dict[str, str]:
        """The page's offer answered: its camera track is processed and sent back on the same connection."""
        run = self.get(token, user, session)
        offer = check_offer(sdp, kind)
        missing = rtc_missing()
        if missing:
            raise UserError(missing)
        if run.peer is not None:
            raise BadOffer("this live run is already connected: press Start again for a new one")
        from pipeline.live import rtc_peer

        run.loop = asyncio.get_running_loop()
        return await rtc_peer.connect(run, *offer, on_end=lambda: self._ended(run))

    def stop(self, token: str, user: str, session: str) -> tuple[dict[str, Any], Path | None]:
        """End the run: the connection closed, the recording finished; its summary and recording (also
        of a run whose connection ended before, once)."""
        with self._lock:
            ended = self._over.get(token)
            if ended is not None and (ended.user, ended.session) == (user, session):
                del self._over[token]
                return ended.summary, ended.recording
        run = self.get(token, user, session)
        with self._lock:
            if self._runs.pop(token, None) is None:
                raise UserError("no live run of yours: press Start again")  # stopped at this moment
            self._closing[token] = run
        try:
            if run.peer is not None and run.loop is not None and run.loop.is_running():
                closing = asyncio.run_coroutine_threadsafe(run.peer.close(), run.loop)
                closing.result(CLOSE_WAIT_S)
            recording = run.finish()
            return {**run.engine.stats.summary(), "error": run.error}, recording
        finally:
            with self._lock:
                self._closing.pop(token, None)

    def stop_all(self) -> int:
        """The app stops: every run ended as its owner's Stop would (recordings finished); how many."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            try:
                self.stop(run.token, run.user, run.session)
            except (UserError, TimeoutError, RuntimeError) as exc:  # gone meanwhile; the loop already closed
                log.info("live run of %r at shutdown: %s", run.user or "local", exc)
                run.finish()
        return len(runs)

    def _ended(self, run: LiveRun) -> None:
        """The connection ended (Stop, the page closed or lost): the recording finished and the run gone
        from the live ones; unless Stop ended it, its summary is kept for its owner's :meth:`stop`."""
        recording = run.finish()
        with self._lock:
            if self._runs.pop(run.token, None) is None:
                return  # Stop ended it and answered already
            summary = {**run.summary(), **run.engine.stats.summary(), "ended": True}
            self._over[run.token] = Ended(run.user, run.session, summary, recording)
            while len(self._over) > KEPT_ENDED:
                del self._over[next(iter(self._over))]
        log.info("live run of %r ended without Stop (its connection closed)", run.user or "local")

    def __len__(self) -> int:
        """How many runs are live or being stopped (a run counts until its recording is finished)."""
        with self._lock:
            return len(self._runs) + len(self._closing)
