"""Whether a process on some host is still there: the queue's workers (who holds a running job) and the
encoders' temporary files (whose partial is it) both ask.

A claim records the worker's host name and process id beside its worker id. The holder of a running job
is gone when its heartbeat is older than the store's ``stale_after`` (a worker on any host), or at once when
it ran on this host and its process no longer exists (killed, crashed; a zombie counts as gone). A process
id reused by another program makes a dead worker look alive: then only the stale heartbeat tells.
"""

from __future__ import annotations

import os
import socket

import psutil


def this_host() -> str:
    return socket.gethostname()


def this_process() -> int:
    return os.getpid()


def process_gone(host: str | None, pid: int | None) -> bool:
    """True when ``pid`` ran on this host and has ended; False when it lives or cannot be checked from
    here (another host, no pid recorded)."""
    if pid is None or host != this_host():
        return False
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # it exists but belongs to someone else
        return False
