"""One port, HTTPS only, with a plain answer for plain HTTP.

A browser pointed at ``http://HOST:PORT/`` of a ``--listen`` port used to get a reset connection (the TLS
server cannot read an HTTP request). ``answer_plain_http`` takes over the listening socket(s) of Gradio's
uvicorn server once it has started: each accepted connection is peeked at (not read) until its first byte
arrives. A TLS handshake (first byte 0x16) is handed, untouched, to uvicorn's own protocol with uvicorn's own
SSL context (``loop.connect_accepted_socket``): no proxy, no byte copied, the client's address kept (the
login throttle and the audit log use it). Anything else gets a short temporary redirect to the same host and
path over https, with a one-line text body saying so, and is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from typing import Any

log = logging.getLogger("webui")

TLS_HANDSHAKE = 0x16  # the first byte of every TLS record carrying a ClientHello
FIRST_BYTE_WAIT = 60.0  # seconds an idle connection may stay open: asyncio's own TLS handshake limit
REQUEST_WAIT = 10.0  # seconds a plain client has to send its request head
HEAD_LIMIT = 8192  # bytes of a plain request head read at most
DRAIN_LIMIT = 1 << 20  # bytes of a plain request's body read (and dropped) at most before closing
ACCEPT_RETRY = 1.0  # seconds before accepting again after the system refused (out of file descriptors)
SHUTDOWN_POLL = 0.1  # seconds between looks at the server's exit flag (as uvicorn's own main loop)

# a Host header or request target we are willing to echo into a Location header
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
_PATH = re.compile(r"^/[\x21-\x7e]*$")


def plain_answer(head: bytes, local: tuple[str, int]) -> bytes:
    """The whole response to a plain-HTTP request head: a 307 to the https URL of the same host and path
    (temporary, so no browser keeps it if the host later serves plain HTTP there), one line of text."""
    lines = head.split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ")
    path = parts[1] if len(parts) == 3 and _PATH.match(parts[1]) else "/"
    host = ""
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "host":
            host = value.strip()
    if not _HOST.match(host):
        address, port = local[0], local[1]
        host = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    url = f"https://{host}{path}"
    body = f"This server speaks https: open {url}\n".encode()
    return (f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {url}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


async def _readable(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(conn.fileno())


async def _answer(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> None:
    head = b""
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(REQUEST_WAIT):
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                chunk = await loop.sock_recv(conn, HEAD_LIMIT - len(head))
                if not chunk:
                    break
                head += chunk
    with contextlib.suppress(TimeoutError, OSError):
        async with asyncio.timeout(REQUEST_WAIT):
            await loop.sock_sendall(conn, plain_answer(head, conn.getsockname()[:2]))
            conn.shutdown(socket.SHUT_WR)  # then read what the client still sends (a POST's body), so that
            drained = 0  # closing does not reset the connection before the client has read the answer
            while drained < DRAIN_LIMIT and (chunk := await loop.sock_recv(conn, HEAD_LIMIT)):
                drained += len(chunk)


class HttpsPort:
    """The accept loops on one uvicorn server's listening sockets (made by ``answer_plain_http``)."""

    def __init__(self, server: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.server, self.loop = server, loop
        self.tasks: set[asyncio.Task[None]] = set()

    def _protocol(self) -> asyncio.Protocol:
        """A connection protocol exactly as uvicorn's own listener makes it (``uvicorn.Server.startup``)."""
        config = self.server.config
        protocol: asyncio.Protocol = config.http_protocol_class(
            config=config, server_state=self.server.server_state, app_state=self.server.lifespan.state,
            _loop=self.loop)
        return protocol

    def _spawn(self, work: Any) -> None:
        task = self.loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _connection(self, conn: socket.socket) -> None:
        handed = False
        try:
            async with asyncio.timeout(FIRST_BYTE_WAIT):
                await _readable(self.loop, conn)
            first = conn.recv(1, socket.MSG_PEEK)
            if first and first[0] == TLS_HANDSHAKE:
                await self.loop.connect_accepted_socket(self._protocol, conn, ssl=self.server.config.ssl)
                handed = True  # uvicorn's connection owns the socket from here
            elif first:
                await _answer(self.loop, conn)
        except (TimeoutError, OSError) as exc:  # a silent client, a reset, a failed handshake (ssl.SSLError)
            log.debug("connection dropped before a request: %s", exc)
        finally:
            if not handed:
                conn.close()

    async def _accept(self, listener: socket.socket) -> None:
        try:
            while True:
                try:
                    conn, _ = await self.loop.sock_accept(listener)
                except ConnectionAbortedError:  # the client left before it was accepted
                    continue
                except OSError as exc:  # out of file descriptors or memory: wait, as asyncio's own loop does
                    log.warning("accepting a connection failed, retrying in %s s: %s", ACCEPT_RETRY, exc)
                    await asyncio.sleep(ACCEPT_RETRY)
                    continue
                conn.setblocking(False)
                self._spawn(self._connection(conn))
        finally:
            listener.close()

    async def take_over(self) -> bool:
        """Close uvicorn's listeners (their sockets live on, duplicated) and accept on them here, until the
        server is asked to exit. False, with uvicorn's listeners left as they are, where uvicorn's parts are
        not as this module knows them (a newer uvicorn): plain http is then reset as before."""
        try:
            self._protocol()
            served_all, tls = list(self.server.servers), self.server.config.ssl
        except (AttributeError, TypeError) as exc:
            log.warning("plain http to this port will not be told to use https (uvicorn differs: %s)", exc)
            return False
        if tls is None:
            return False
        listeners = []
        for served in served_all:
            for sock in served.sockets:
                dup = socket.socket(fileno=os.dup(sock.fileno()))
                dup.setblocking(False)
                listeners.append(dup)
            served.close()
        accepting = [self.loop.create_task(self._accept(listener)) for listener in listeners]
        self._spawn(self._until_exit(accepting))
        return True

    async def _until_exit(self, accepting: list[asyncio.Task[None]]) -> None:
        while not self.server.should_exit:
            await asyncio.sleep(SHUTDOWN_POLL)
        for task in accepting:
            task.cancel()
        await asyncio.gather(*accepting, return_exceptions=True)


def answer_plain_http(server: Any, timeout: float = 30.0) -> bool:
    """Make the started uvicorn ``server`` (Gradio's ``Blocks.server``, serving TLS) answer plain HTTP on
    its port; returns once its loop accepts through us (True), or at once where it cannot (False)."""
    loop = server.servers[0].get_loop()
    return asyncio.run_coroutine_threadsafe(HttpsPort(server, loop).take_over(), loop).result(timeout)
