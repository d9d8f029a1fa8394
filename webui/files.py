"""Results handed out by link: a random token per user, session and job, checked on every response.

The outputs folder is never served and results never pass through Gradio's shared file cache. Download
(and the Queue tab's before / after player, with inline links to the job's output and target)
mints a token (:meth:`ResultLinks.issue`) bound to the signed-in user, the login session and the job;
``GET /facestation/result/<token>/<name>`` (:func:`route`) answers the file only when the same user in
the same session asks, the link has not expired and the job is still there, done, with that output (or
target). Deleting a job revokes its links. Every other case gets the same 404, so a link tells nothing to
anyone else. A download is audited when it is served, not when its link is handed out. A Queue row's
thumbnail (:meth:`ResultLinks.thumbnail`) keeps its link while the picture is the same, served cacheable,
so the table drawn every second does not fetch it again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from webui.auth import SESSION_KEY, USER_KEY

PREFIX = "/facestation/result"
LINK_TTL_S = 3600.0


@dataclass(frozen=True)
class Link:
    user: str
    session: str
    job_id: int
    path: Path
    expires: float
    inline: bool = False  # shown in the page (the before / after player), not saved as a download
    cacheable: bool = False  # a Queue row's thumbnail: its file is named after what it shows


class ResultLinks:
    """token -> :class:`Link`, in memory: a restart revokes every link."""

    def __init__(self, ttl_s: float = LINK_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._links: dict[str, Link] = {}
        self._thumbs: dict[tuple[str, str, int, Path], str] = {}  # (user, session, job, file) -> token
        self._lock = threading.Lock()

    def issue(self, user: str, session: str, job_id: int, path: Path, inline: bool = False,
              cacheable: bool = False) -> str:
        """A fresh link (a path on this server) to ``path`` for this user and session; ``inline`` links
        are served for playing in the page, the others as a download."""
        token = secrets.token_urlsafe(24)
        with self._lock:
            now = self._clock()
            for old in [t for t, link in self._links.items() if link.expires < now]:
                del self._links[old]
            self._links[token] = Link(user, session, job_id, Path(path), now + self.ttl_s, inline, cacheable)
        return f"{PREFIX}/{token}/{quote(Path(path).name)}"

    def thumbnail(self, user: str, session: str, job_id: int, path: Path) -> str:
        """An inline link to a job's thumbnail that stays the same while it has half its time left, so a
        table drawn again every second shows the picture the browser already has (served cacheable: a
        thumbnail's name changes with what it shows)."""
        key = (user, session, job_id, Path(path))
        with self._lock:
            token = self._thumbs.get(key)
            link = self._links.get(token or "")
            if token and link is not None and link.expires - self._clock() > self.ttl_s / 2:
                return f"{PREFIX}/{token}/{quote(Path(path).name)}"
        url = self.issue(user, session, job_id, path, inline=True, cacheable=True)
        with self._lock:
            self._thumbs = {k: t for k, t in self._thumbs.items() if t in self._links}
            self._thumbs[key] = url.split("/")[-2]
        return url

    def resolve(self, token: str, user: str, session: str) -> Link | None:
        with self._lock:
            link = self._links.get(token)
        if link is None or link.expires < self._clock() or (link.user, link.session) != (user, session):
            return None
        return link

    def revoke_job(self, job_id: int) -> int:
        """Forget every link to ``job_id``'s files (output and target); returns how many there were."""
        with self._lock:
            gone = [t for t, link in self._links.items() if link.job_id == job_id]
            for token in gone:
                del self._links[token]
        return len(gone)


def route(links: ResultLinks, still_valid: Callable[[Link], bool],
          downloaded: Callable[[Link], None] | None = None) -> Route:
    """The one route that hands out results; ``still_valid`` asks the job store about the link's job;
    ``downloaded`` (the audit log) hears of each download actually served (a GET of a non-inline link:
    not the player's inline files, not a HEAD)."""

    def result(request: Request) -> Response:
        user = request.scope.get(USER_KEY, "")
        session = request.scope.get(SESSION_KEY, "")
        link = links.resolve(request.path_params["token"], user, session)
        if link is None or not still_valid(link) or not link.path.is_file():
            return JSONResponse({"detail": "no such file"}, status_code=404,
                                headers={"cache-control": "no-store"})
        disposition = "inline" if link.inline else "attachment"
        if downloaded is not None and not link.inline and request.method == "GET":
            downloaded(link)
        cache = "private, max-age=3600" if link.cacheable else "private, no-store"
        return FileResponse(link.path, filename=link.path.name, content_disposition_type=disposition,
                            headers={"cache-control": cache})

    return Route(PREFIX + "/{token}/{name}", result, methods=["GET", "HEAD"])
