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

from pipeline import media
from pipeline.checks import require_models
from pipeline.errors import UserError
from pipeline.live.browser_run import BadOffer, LiveRun, check_offer
from pipeline.live.engine import Build, LiveEngine
from pipeline.live.outputs import Recording
from pipeline.live.step import chain_builder, live_settings
from pipeline.plan import ModelPlan
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


def check_live(settings: Settings, sources: Sequence[str | Path] | None) -> Settings:
    """The settings a live run uses, after the checks a run needs (a source photo, the models)."""
    if not sources:
        raise UserError("add a source photo (the face to put in) before starting the camera")
    for source in sources:
        media.check_media(source, ("image",))
    live = live_settings(settings)[0]
    require_models(live)
    return live


@dataclass(frozen=True)
class Ended:
    """A run that ended without Stop: whose it was, its summary and recording."""

    user: str
    session: str
    summary: dict[str, Any]
    recording: Path | None


class LiveRuns:
    """The live runs of one app, by token; each answers only the user and session that started it."""

    def __init__(self, build: Callable[[Sequence[Path | str], float], Build] = chain_builder) -> None:
        self._build = build
        self._runs: dict[str, LiveRun] = {}
        self._closing: dict[str, LiveRun] = {}  # runs being stopped: gone once their recording is finished
        self._over: dict[str, Ended] = {}  # runs whose connection ended without Stop
        self._lock = threading.Lock()

    def start(self, user: str, session: str, settings: Settings, sources: Sequence[str | Path],
              record_to: Path | None = None, mirror: bool = False) -> LiveRun:
        """A new run for this user and session, its step built now (models loaded) so that the camera's
        first frame is processed at once."""
        live = check_live(settings, sources)
        engine = LiveEngine(live, self._build([Path(s) for s in sources], BROWSER_FPS))
        recording = None
        if record_to is not None:
            media.check_video_output(record_to)
            recording = Recording(record_to, BROWSER_FPS, ModelPlan.from_settings(live).names)
        run = LiveRun(secrets.token_urlsafe(18), user, session, engine, mirror, recording)
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

    def update(self, token: str, user: str, session: str, settings: Settings,
               sources: Sequence[str | Path] | None) -> None:
        """New settings or source photos for the running stream, from its next frame on."""
        run = self.get(token, user, session)
        live = check_live(settings, sources)
        run.engine.update(live, self._build([Path(s) for s in sources or ()], BROWSER_FPS))

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
            return run.engine.stats.summary(), run.finish()
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
            self._over[run.token] = Ended(run.user, run.session, run.engine.stats.summary(), recording)
            while len(self._over) > KEPT_ENDED:
                del self._over[next(iter(self._over))]
        log.info("live run of %r ended without Stop (its connection closed)", run.user or "local")

    def __len__(self) -> int:
        """How many runs are live or being stopped (a run counts until its recording is finished)."""
        with self._lock:
            return len(self._runs) + len(self._closing)
