"""Why a download failed, in the few words a user can act on: offline, a DNS failure, a refused
connection, an HTTP status, a full disk. The network's exceptions say it in errno numbers and nested
reasons; :func:`reason` reads them."""

from __future__ import annotations

import errno
import socket
import ssl
import urllib.error
from urllib.parse import urlsplit

_OFFLINE = {errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL}
_DISK = {errno.ENOSPC: "disk full: free some space in the models folder",
         errno.EDQUOT: "disk quota used up: free some space in the models folder",
         errno.EROFS: "the models folder is on a read-only file system",
         errno.EACCES: "permission denied writing the models folder"}


def reason(exc: BaseException, url: str) -> str:
    """One line naming why fetching ``url`` failed with ``exc``."""
    parts = urlsplit(url)
    host = parts.hostname or url
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason} from {host}".rstrip()
    inner = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(inner, socket.gaierror):
        return _lookup(inner, host)
    if isinstance(inner, ConnectionRefusedError):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"connection refused by {host}:{port}"
    if isinstance(inner, TimeoutError):
        return f"no answer from {host} (timed out)"
    if isinstance(inner, ConnectionResetError):
        return f"the connection to {host} was cut; run the fetch again to resume"
    if isinstance(inner, ssl.SSLError):
        return f"secure connection to {host} failed ({inner.reason or inner})"
    if isinstance(inner, OSError) and inner.errno in _OFFLINE:
        return f"offline: no route to {host}"
    if isinstance(inner, OSError) and inner.errno in _DISK:
        return _DISK[inner.errno]
    text = str(inner).strip("<> ") or type(inner).__name__
    return text


def _lookup(exc: socket.gaierror, host: str) -> str:
    if exc.errno == socket.EAI_AGAIN:
        return f"offline: could not look up {host} (no network or no DNS server)"
    if exc.errno == socket.EAI_NONAME:
        return f"DNS failure: {host} is not a known host name"
    return f"DNS failure looking up {host} ({exc.strerror or exc})"
