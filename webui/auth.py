"""Who is asking, on every request: the gate in front of the whole web app when logins are configured.

Gradio checks the password and sets its session cookie; :class:`Gate` (ASGI middleware) stands in front
of every route, Gradio's own included, and

- answers 401 to any request without a signed-in session, except the login page and its static assets;
- throttles ``POST /login``: failures for an account or an address are slowed, then refused with 429 for
  a while (:class:`Throttle`), and logged; a successful login is written to the audit log;
- serves Gradio's file cache (``/gradio_api/file=…``) only to the user it was handed to: every upload
  answer and every event answer is read for the files it names (:class:`Ledger`), and any other file
  is refused with 403, whoever asks;
- tells the routes behind it who is asking (``scope["facestation.user"]`` and the session).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from webui.audit import AuditLog

log = logging.getLogger("webui.auth")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

USER_KEY = "facestation.user"
SESSION_KEY = "facestation.session"
COOKIE_PREFIX = "access-token-"  # Gradio's session cookies: access-token-<id> and access-token-unsecure-<id>
# what the login page itself needs before anyone has signed in
PUBLIC_PATHS = frozenset({"/", "/login", "/login/", "/favicon.ico", "/theme.css", "/gradio_api/theme.css",
                          "/manifest.json", "/robots.txt"})
# Gradio's launch() asks this of its own server, without a login, once at start
LOOPBACK_ONLY = frozenset({"/gradio_api/startup-events"})
LOOPBACK = frozenset({"127.0.0.1", "::1"})
PUBLIC_PREFIXES = ("/assets/", "/svelte/", "/static/", "/pwa_icon")
FILE_PREFIXES = ("/gradio_api/file=", "/gradio_api/file/")
MAX_LOGIN_BODY = 64 * 1024


# ---------------------------------------------------------------- throttling


@dataclass(frozen=True)
class ThrottlePolicy:
    """After ``slow_after`` failures an account's or address's answers are delayed (``delay_s`` more for
    each further failure, at most ``max_delay_s``); after ``lock_after`` failures within ``window_s``
    every login for it is refused with 429 for ``lock_s`` seconds, the right password included."""

    slow_after: int = 3
    delay_s: float = 0.5
    max_delay_s: float = 2.0
    account_lock_after: int = 5
    address_lock_after: int = 20
    window_s: float = 600.0
    lock_s: float = 300.0


@dataclass
class _Record:
    failures: list[float] = field(default_factory=list)
    locked_until: float = 0.0


class Throttle:
    """Failed logins per account and per address (in memory: a restart forgets them)."""

    def __init__(self, policy: ThrottlePolicy | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or ThrottlePolicy()
        self._clock = clock
        self._records: dict[tuple[str, str], _Record] = {}
        self._lock = threading.Lock()

    def _keys(self, account: str, address: str) -> tuple[tuple[str, str], tuple[str, str]]:
        return ("account", account.strip().lower()), ("address", address)

    def refused_for(self, account: str, address: str) -> float:
        """Seconds left before this account and address may try again (0: they may try now)."""
        now = self._clock()
        with self._lock:
            return max(max(self._records.get(k, _Record()).locked_until - now, 0.0)
                       for k in self._keys(account, address))

    def delay(self, account: str, address: str) -> float:
        """How long to hold the answer to this attempt (grows with recent failures)."""
        p, now = self.policy, self._clock()
        with self._lock:
            recent = max(sum(1 for t in self._records.get(k, _Record()).failures if now - t < p.window_s)
                         for k in self._keys(account, address))
        return min(p.max_delay_s, p.delay_s * (recent - p.slow_after + 1)) if recent >= p.slow_after else 0.0

    def failed(self, account: str, address: str) -> None:
        p, now = self.policy, self._clock()
        limits = (p.account_lock_after, p.address_lock_after)
        with self._lock:
            for key, limit in zip(self._keys(account, address), limits, strict=True):
                record = self._records.setdefault(key, _Record())
                record.failures = [t for t in record.failures if now - t < p.window_s] + [now]
                if len(record.failures) >= limit:
                    record.locked_until = now + p.lock_s
                    record.failures.clear()
                    log.warning("login: %s %r locked for %.0f s after %d failed logins", key[0], key[1],
                                p.lock_s, limit)

    def succeeded(self, account: str, address: str) -> None:
        with self._lock:
            for key in self._keys(account, address):
                self._records.pop(key, None)


# ---------------------------------------------------------------- sessions and files


class Sessions:
    """Gradio's session tokens, as seen on successful logins: token -> user name."""

    def __init__(self) -> None:
        self._users: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, token: str, user: str) -> None:
        with self._lock:
            self._users[token] = user

    def find(self, cookies: dict[str, str]) -> tuple[str, str] | None:
        """(session token, user) of the first Gradio session cookie this server issued, else None."""
        with self._lock:
            for name, token in cookies.items():
                if name.startswith(COOKIE_PREFIX) and token in self._users:
                    return token, self._users[token]
        return None

    def end_all(self, user: str) -> None:
        with self._lock:
            for token in [t for t, u in self._users.items() if u == user]:
                del self._users[token]


class Ledger:
    """Which of Gradio's cached files (uploads, images an event returned) were handed to which user."""

    def __init__(self) -> None:
        self._owners: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: str) -> str:
        return os.path.realpath(path)

    def record(self, user: str, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                self._owners.setdefault(self._key(path), set()).add(user)

    def allows(self, user: str, path: str) -> bool:
        key = self._key(path)
        with self._lock:
            owners = self._owners.get(key, set())
            if owners and not os.path.exists(key):  # the cache was cleaned: forget it
                del self._owners[key]
                return False
            return user in owners


def file_paths(data: Any) -> Iterator[str]:
    """Every ``path`` of a Gradio FileData found in a decoded JSON answer."""
    if isinstance(data, dict):
        meta = data.get("meta")
        is_file = isinstance(meta, dict) and meta.get("_type") == "gradio.FileData"
        if isinstance(data.get("path"), str) and is_file:
            yield data["path"]
        for value in data.values():
            yield from file_paths(value)
    elif isinstance(data, list):
        for value in data:
            yield from file_paths(value)


# ---------------------------------------------------------------- the gate


@dataclass
class Guard:
    """Everything the gate consults; one per running app."""

    accounts: frozenset[str]
    audit: AuditLog
    throttle: Throttle = field(default_factory=Throttle)
    sessions: Sessions = field(default_factory=Sessions)
    ledger: Ledger = field(default_factory=Ledger)


class Gate:
    """ASGI middleware: see the module docstring. ``guard.accounts`` empty: no login, everything passes."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.guard.accounts:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in ("/login", "/login/") and scope.get("method") == "POST":
            await self._login(scope, receive, send)
            return
        found = self.guard.sessions.find(Request(scope).cookies)
        if found is None:
            client = (scope.get("client") or ("", 0))[0]
            if (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
                    or (path in LOOPBACK_ONLY and client in LOOPBACK)):
                await self.app(scope, receive, send)
            elif scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await _answer(send, 401, "Not authenticated: sign in first")
            return
        session, user = found
        scope[USER_KEY], scope[SESSION_KEY] = user, session
        if path.startswith("/logout"):
            self.guard.sessions.end_all(user)
            self.guard.audit.record(user, "logout")
        if path.startswith(FILE_PREFIXES):
            wanted = path.split("=", 1)[1] if "=" in path else path[len("/gradio_api/file/"):]
            if not self.guard.ledger.allows(user, wanted):
                await _answer(send, 403, "File not allowed")
                return
        elif path.startswith("/gradio_api/"):
            send = _Recorder(send, lambda paths: self.guard.ledger.record(user, paths),
                             upload=path.rstrip("/") == "/gradio_api/upload")
        await self.app(scope, receive, send)

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        replay = _replay(body, receive)
        form = await Request(scope, _replay(body, receive)).form()
        account = str(form.get("username") or "").strip()
        address = (scope.get("client") or ("?", 0))[0]
        throttle = self.guard.throttle
        wait = throttle.refused_for(account, address)
        if wait > 0:
            log.warning("login refused for %r from %s: too many failed logins (%.0f s left)",
                        account, address, wait)
            await _answer(send, 429, f"too many failed logins: try again in {int(wait) + 1} s",
                          {"retry-after": str(int(wait) + 1)})
            return
        delay = throttle.delay(account, address)
        if delay:
            await asyncio.sleep(delay)
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                if message["status"] == 200:
                    for token in _set_cookie_tokens(message.get("headers", [])):
                        self.guard.sessions.add(token, account)
            await send(message)

        await self.app(scope, replay, watch)
        if status and status[0] == 200:
            throttle.succeeded(account, address)
            self.guard.audit.record(account, "login", address=address)
        else:
            throttle.failed(account, address)
            log.warning("login failed for %r from %s", account, address)


class _Recorder:
    """Wraps ``send``: reads the files named in a JSON or event-stream answer as it goes out."""

    def __init__(self, send: Send, record: Callable[[list[str]], None], upload: bool = False) -> None:
        self.send, self.record, self.upload = send, record, upload
        self.kind = ""
        self.buffer = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            content_type = headers.get(b"content-type", b"").decode("latin-1")
            self.kind = "sse" if "text/event-stream" in content_type else (
                "json" if "json" in content_type else "")
        elif message["type"] == "http.response.body" and self.kind:
            self.buffer += message.get("body", b"")
            self._scan(final=not message.get("more_body", False))
        await self.send(message)

    def _scan(self, final: bool) -> None:
        if self.kind == "json":
            if final:
                self._decode(self.buffer)
            return
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._decode(line[5:])

    def _decode(self, text: bytes) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            return
        paths = list(file_paths(data))
        if self.upload and isinstance(data, list) and all(isinstance(p, str) for p in data):
            paths += data  # the answer to /gradio_api/upload: the cached paths of the uploaded files
        if paths:
            self.record(paths)


def _set_cookie_tokens(headers: list[tuple[bytes, bytes]]) -> Iterator[str]:
    for name, value in headers:
        if name.lower() == b"set-cookie":
            cookie = value.decode("latin-1").split(";", 1)[0]
            key, _, token = cookie.partition("=")
            if key.strip().startswith(COOKIE_PREFIX) and token:
                yield token.strip().strip('"')


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_LOGIN_BODY or not message.get("more_body", False):
            return body[:MAX_LOGIN_BODY]


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _answer(send: Send, status: int, detail: str, extra: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store")]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
