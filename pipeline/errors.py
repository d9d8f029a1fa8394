"""Typed errors with messages a user can act on.

``UserError`` and its subclasses are the user's to fix (CLI exit 2, one line; web UI warning).
Anything else is an internal error (CLI exit 1).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path


class FacestationError(Exception):
    """Base of every error the engine raises on purpose."""


class UserError(FacestationError):
    """Bad input, a missing model, no face: the user can fix it. Exit code 2."""


class BadMedia(UserError):
    """A file that is missing, empty, truncated, not an image/video, or too large."""


class NoFaceFound(UserError):
    """No face where one is needed."""


class ModelMissing(UserError):
    """A model is selected but its file is not installed."""


class ModelMismatch(UserError):
    """A model file whose hash or I/O signature does not match its catalog entry."""


class FetchFailed(UserError):
    """A model download that did not arrive; ``reason`` says why in a few words (offline, DNS failure,
    connection refused, HTTP status, disk full)."""

    def __init__(self, name: str, reason: str, url: str) -> None:
        super().__init__(f"could not download {name} from {url}: {reason}")
        self.name, self.reason, self.url = name, reason, url


class SettingsError(UserError):
    """Unknown settings key or a value out of range; the message names the key."""


class Cancelled(FacestationError):
    """A render stopped because its job was cancelled."""


class OutputFault(UserError):
    """The disk refused a write the user can make possible: full, read-only, no permission."""


# errno -> what the user can do about it
_FIXES = {
    errno.ENOSPC: "the disk is full: free some space or write to another disk",
    errno.EDQUOT: "the disk quota is used up: free some space or write to another disk",
    errno.EROFS: "the file system is read-only: write to another folder",
    errno.EACCES: "permission denied: write to a folder you own or fix its permissions",
    errno.EPERM: "operation not permitted: write to a folder you own or fix its permissions",
}


def os_fault(exc: OSError, path: str | Path | None = None) -> OutputFault | None:
    """The one line for an environment fault the user can fix (disk full, read-only, permissions, too few
    file descriptors), naming the path; None for any other OSError."""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return OutputFault(_too_many_files())
    fix = _FIXES.get(exc.errno or 0)
    if fix is None:
        return None
    where = path if path is not None else (exc.filename or "a file")
    return OutputFault(f"cannot write {where}: {fix}")


def _too_many_files() -> str:
    try:
        import resource

        limit = f"this process may open {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"
    except (ImportError, OSError, ValueError):
        limit = "the limit is reached"
    return (f"too many open files ({limit}): raise the limit, e.g. `ulimit -n 4096` in the shell that runs "
            "facestation")


class OutOfMemory(UserError):
    """Memory ran out (numpy, onnxruntime, OpenCV, a child process that could not start): the user can ask
    for less."""


# what numpy, onnxruntime (CPU arena, CUDA, cuBLAS/cuDNN), OpenCV and the C library say when memory runs out
_NO_MEMORY = ("out of memory", "failed to allocate", "unable to allocate", "cannot allocate memory",
              "bad_alloc", "insufficient memory", "alloc_failed", "available memory of")
MEMORY_FIX = ("ask for less: a smaller batch (--set execution.batch_size=1), fewer threads "
              "(--set execution.threads=2), a smaller model, or close other programs")


def memory_fault(exc: BaseException) -> OutOfMemory | None:
    """The one line for memory that ran out (a MemoryError, ENOMEM, an onnxruntime or OpenCV allocation
    failure), with what was being allocated and what to do; None for any other exception."""
    text = " ".join(str(exc).split())
    no_memory = isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM)
    if not no_memory and not any(words in text.lower() for words in _NO_MEMORY):
        return None
    said = re.search(r"(?i)(failed to allocate|unable to allocate|out of memory|cannot allocate)[^;]*", text)
    detail = said.group(0).rstrip(" .")[:100] if said else type(exc).__name__
    return OutOfMemory(f"memory ran out ({detail}): {MEMORY_FIX}")


def fault_in_text(text: str, path: str | Path) -> OutputFault | None:
    """The same, from a tool's error text (ffmpeg writes ``...: No space left on device``)."""
    for code in _FIXES:
        if os.strerror(code).lower() in text.lower():
            return os_fault(OSError(code, os.strerror(code)), path)
    return None


def missing(path: str | Path, role: str) -> UserError:
    """Why ``path`` (the ``role`` it plays: "target", "audio file"…) cannot be opened when it does not exist
    as a file: not found, or a symbolic link that loops or points at nothing (not "not found": the link is
    there)."""
    path = Path(path)
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return UserError(f"{role} {path} is a symbolic link that loops (it leads back to itself)")
        except OSError:
            return UserError(f"{role} {path} is a broken symbolic link (to {os.readlink(path)}, which does "
                             "not exist)")
    return UserError(f"{role} not found: {path}")


def not_a_file(path: str | Path, wanted: str = "a file") -> BadMedia | None:
    """BadMedia naming what ``path`` is when it exists but is not a regular file (a folder, a named pipe, a
    device: reading one would block or never end); None for a regular file or a missing path."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    what = ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    return BadMedia(f"{path} is {what}, not {wanted}")
