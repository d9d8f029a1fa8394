"""The Live tab's signalling, on the app's own routes behind the login gate (webui/auth.py answers 401 to
each without a login on a shared UI):

- ``POST /facestation/live/offer``: ``{"token", "sdp", "type"}`` (the page's WebRTC offer for the run its
  Start button opened) -> the server's answer ``{"sdp", "type"}``; a body that is not such an offer: 400
  with one line; one larger than :data:`MAX_OFFER`: 413, refused by its declared length before it is
  read (or once that much has come, without one); a run that is not the caller's (another user's or
  session's, or none): 404; aiortc not installed: 503 saying what to install.
- ``GET /facestation/live/stats/<token>[?fps=N]``: the running stream's fps, latency and drops, what it
  sends, where its time goes and the camera rate and size to ask for (``advice``; ``fps``: the rate the
  page's user chose) (the page polls it); of a run that ended without Stop (its error, if one ended
  it), ``"ended": true``, until its owner's Stop.
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


class TooLarge(api.BadOffer):
    """An offer larger than :data:`MAX_OFFER` (413), refused before more of it is read."""


def _too_large(size: str) -> TooLarge:
    return TooLarge(f"an offer of {size} bytes is too large (at most {MAX_OFFER}): send the page's offer "
                    "as it makes it")


async def _body(request: Request) -> dict[str, Any]:
    """The offer's JSON, its size checked before it is read: by its declared length, else as it comes
    (a larger body is never held in memory)."""
    declared = request.headers.get("content-length", "").strip()
    if declared and (not declared.isdigit() or int(declared) > MAX_OFFER):
        raise _too_large(declared) if declared.isdigit() else api.BadOffer(
            f"the offer's Content-Length {declared[:20]!r} is not a number")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_OFFER:
            raise _too_large(f"more than {MAX_OFFER}")
    try:
        body = json.loads(raw)
    except ValueError:
        raise api.BadOffer("the offer is not JSON: send {\"token\", \"sdp\", \"type\"}") from None
    except RecursionError:
        raise api.BadOffer("the offer's JSON is nested too deeply: send {\"token\", \"sdp\", \"type\"}"
                           ) from None
    if not isinstance(body, dict) or not isinstance(body.get("token"), str):
        raise api.BadOffer("the offer names no live run: send {\"token\", \"sdp\", \"type\"}")
    return body


def routes(runs: api.LiveRuns) -> list[Route]:
    async def offer(request: Request) -> JSONResponse:
        user, session = _who(request)
        try:
            body = await _body(request)
            runs.get(body["token"], user, session)
        except TooLarge as exc:
            return _problem(413, str(exc))
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
        asked = request.query_params.get("fps", "")
        chosen = int(asked) if asked.isdigit() and 1 <= int(asked) <= 120 else None
        try:
            status = runs.status(request.path_params["token"], user, session, chosen)
        except api.UserError as exc:
            return _problem(404, str(exc))
        return JSONResponse(status, headers={"cache-control": "no-store"})

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
