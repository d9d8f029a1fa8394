"""One ffmpeg child process, owned by exactly one Python object.

stderr is drained on a thread (its tail kept for error messages, so a chatty ffmpeg never blocks
on a full pipe); a watcher thread kills the process within ~0.1 s of the cancel event being set;
:meth:`FFmpegProcess.close` kills and reaps it, so no ffmpeg outlives its owner.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import subprocess
import threading
from pathlib import Path
from typing import IO, BinaryIO, cast

from pipeline import env
from pipeline.errors import UserError

log = logging.getLogger(__name__)

_POLL_S = 0.1


class ToolTimeout(UserError):
    """A helper program (ffprobe, a trial encode) did not answer in time; it was stopped."""


def run_tool(cmd: list[str], *, on: str | Path | None = None, limit: float | None = None
             ) -> subprocess.CompletedProcess[bytes]:
    """Run a short helper program to its end and return what it said; :class:`ToolTimeout` (naming the
    program and ``on``, the file it was working on) when it takes longer than ``limit`` s (default
    ``FACESTATION_TOOL_TIMEOUT``): it is killed, nothing waits on it."""
    limit = limit if limit is not None else env.TOOL_TIMEOUT.get()
    try:
        return subprocess.run(cmd, capture_output=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        where = f" on {on}" if on is not None else ""
        raise ToolTimeout(f"{Path(cmd[0]).name} did not answer within {limit:g} s{where} and was stopped: "
                          f"the file may be on a stalled drive, or set {env.TOOL_TIMEOUT.name} to wait "
                          "longer") from None


class FFmpegProcess:
    def __init__(
        self,
        cmd: list[str],
        *,
        stdin: bool = False,
        stdout: bool = False,
        cancel: threading.Event | None = None,
        tail_lines: int = 30,
    ) -> None:
        log.debug("starting %s", subprocess.list2cmdline(cmd))
        self.cmd = cmd
        self._tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self.lines = 0  # every stderr line ffmpeg wrote (with ``-loglevel error``: each one is an error)
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,  # Ctrl-C or SIGHUP to the terminal's group reach facestation, which ends
        )                            # its children itself (a recording's encoder finishes its file)
        self.cancelled = False
        self._cancel = cancel
        self._stderr_thread = threading.Thread(target=self._drain, name="ffmpeg-stderr", daemon=True)
        self._stderr_thread.start()
        if cancel is not None:
            threading.Thread(target=self._watch, name="ffmpeg-cancel", daemon=True).start()

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> BinaryIO:
        """Unbuffered (``bufsize=0``): a raw FileIO, so ``readinto`` fills caller buffers directly."""
        assert self.proc.stdout is not None
        return cast(BinaryIO, self.proc.stdout)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._tail.append(line)
                self.lines += 1

    def _watch(self) -> None:
        assert self._cancel is not None
        while self.proc.poll() is None:
            if self._cancel.wait(_POLL_S):
                self.cancelled = True
                self.kill()
                return

    def tail(self, lines: int = 5) -> str:
        """The last lines ffmpeg wrote to stderr, joined for an error message."""
        self._stderr_thread.join(timeout=1.0)
        return " | ".join(list(self._tail)[-lines:])

    def error_lines(self) -> list[str]:
        """The stderr lines kept (the last ``tail_lines``), after ffmpeg has finished writing them."""
        self._stderr_thread.join(timeout=1.0)
        return list(self._tail)

    def last_error(self) -> str:
        """The most telling stderr line (the last one, usually), or the exit status."""
        self._stderr_thread.join(timeout=1.0)
        return self._tail[-1] if self._tail else f"ffmpeg exited with status {self.proc.returncode}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        """Kill if still running, reap, close pipes. Safe to call twice."""
        self.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.proc.wait()
        self._stderr_thread.join(timeout=1.0)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
