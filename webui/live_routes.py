"""The Live tab's signalling, on the app's own routes behind the login gate (webui/auth.py answers 401 to
each without a login on a shared UI):

- ``POST /facestation/live/offer``: ``{"token", "sdp", "type"}`` (the page's WebRTC offer for the run its
  Start button opened) -> the server's answer ``{"sdp", "type"}``; a body that is not such an offer: 400
  with one line; a run that is not the caller's (another user's or session's, or none): 404;
  aiortc not installed: 503 saying what to install.
- ``GET /facestation/live/stats/<token>``: the running stream's fps, latency and drops (the page polls it).
- ``POST /facestation/live/stop/<token>``: the run ended (the page sends it with ``navigator.sendBeacon``
  when it is closed or left without Stop) -> its summary and recording's name; not the caller's run: 404.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pipeline import api
from webui.auth import SESSION_KEY, USER_KEY

log = logging.getLogger("webui.live")

PREFIX = "/facestation/live"
MAX_OFFER = 256 * 1024


def _who(request: Request) -> tuple[str, str]:
    return request.scope.get(USER_KEY, ""), request.scope.get(SESSION_KEY, "")


def _problem(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers={"cache-control": "no-store"})


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_OFFER:
        raise api.BadOffer(f"an offer of {len(raw)} bytes is too large (at most {MAX_OFFER})")
    try:
        body = json.loads(raw)
    except ValueError:
        raise api.BadOffer("the offer is not JSON: send {\"token\", \"sdp\", \"type\"}") from None
    if not isinstance(body, dict) or not isinstance(body.get("token"), str):
        raise api.BadOffer("the offer names no live run: send {\"token\", \"sdp\", \"type\"}")
    return body


def routes(runs: api.LiveRuns) -> list[Route]:
    async def offer(request: Request) -> JSONResponse:
        user, session = _who(request)
        try:
            body = await _body(request)
            runs.get(body["token"], user, session)
        except api.BadOffer as exc:
            return _problem(400, str(exc))
        except api.UserError as exc:
            return _problem(404, str(exc))
        missing = api.rtc_missing()
        if missing:
            return _problem(503, missing)
        try:
            answer = await runs.answer(body["token"], user, session, body.get("sdp"), body.get("type"))
        except api.BadOffer as exc:
            return _problem(400, str(exc))
        except api.UserError as exc:
            return _problem(404, str(exc))
        return JSONResponse(answer, headers={"cache-control": "no-store"})

    def stats(request: Request) -> JSONResponse:
        user, session = _who(request)
        try:
            run = runs.get(request.path_params["token"], user, session)
        except api.UserError as exc:
            return _problem(404, str(exc))
        return JSONResponse(run.summary(), headers={"cache-control": "no-store"})

    def stop(request: Request) -> JSONResponse:  # not async: closing the peer waits on the event loop
        user, session = _who(request)
        try:
            summary, recording = runs.stop(request.path_params["token"], user, session)
        except api.UserError as exc:
            return _problem(404, str(exc))
        return JSONResponse({**summary, "recording": recording.name if recording else None},
                            headers={"cache-control": "no-store"})

    return [Route(PREFIX + "/offer", offer, methods=["POST"]),
            Route(PREFIX + "/stats/{token}", stats, methods=["GET"]),
            Route(PREFIX + "/stop/{token}", stop, methods=["POST"])]
