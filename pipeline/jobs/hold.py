"""Holding a segmented job at a known point, so that a test stops, kills or cancels it mid-render on any
machine, however fast it renders.

A hold is given to one job through its :class:`~pipeline.jobs.runner.JobContext` (``hold=``); a job without
one pays nothing. After each segment the job records, it calls ``hold.segment_recorded(n, cancel)`` with the
number of segments its resume record now holds: a hold may block there until a test lets it go on or the run
is stopped (its ``cancel`` event set). While a video job is held, its render waits on its bounded queues
(its ffmpeg processes still run); while the farm's driver is held, it submits nothing new.

- :class:`Gate`: for a worker in this process (threading events);
- :class:`FolderGate`: for a worker in another process, armed by ``FACESTATION_TEST_HOLD=<folder>`` (read by
  :func:`hold_from_env`, the one place): the job writes how many segments it holds to ``<folder>/reached`` and
  waits while that is at least the number in ``<folder>/allowed``. ``<folder>/pace_frames`` (a number) makes
  that worker end its segments by frame count; while ``<folder>/hold_tasks`` exists, each farm task waits
  before it renders (``<folder>/waiting-<start>`` holds its pid meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pipeline import env
from pipeline.jobs.segments import Pace

_TICK = 0.01  # seconds between two looks at the cancel event while held


class SegmentHold(Protocol):
    """A grip on a job after each segment it records (a test's: :class:`Gate`, :class:`FolderGate`)."""

    def segment_recorded(self, segments: int, cancel: threading.Event) -> None:
        """Called after each recorded segment; may block until released or ``cancel`` is set."""


@dataclass
class Gate:
    """Holds the job once it has recorded ``after`` segments, until :meth:`open` (or its run is stopped).
    ``reached`` is set when it is held."""

    after: int
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def segment_recorded(self, segments: int, cancel: threading.Event) -> None:
        if segments < self.after:
            return
        self.reached.set()
        while not self.released.is_set() and not cancel.wait(_TICK):
            pass

    def open(self) -> None:
        self.released.set()


@dataclass(frozen=True)
class FolderGate:
    """The :class:`Gate` of a worker in another process: see the module text."""

    folder: Path

    def allowed(self) -> int | None:
        """How many segments the job may hold before it waits (None: no limit, the file is not there)."""
        with contextlib.suppress(OSError, ValueError):
            return int((self.folder / "allowed").read_text(encoding="utf-8"))
        return None

    def segment_recorded(self, segments: int, cancel: threading.Event) -> None:
        part = self.folder / f".reached.{os.getpid()}"
        part.write_text(str(segments), encoding="utf-8")
        os.replace(part, self.folder / "reached")
        while (limit := self.allowed()) is not None and segments >= limit and not cancel.wait(_TICK):
            pass

    def pace(self) -> Pace | None:
        """The frame-counted pace ``pace_frames`` asks for (None: the worker's own)."""
        with contextlib.suppress(OSError, ValueError):
            return Pace.frames(int((self.folder / "pace_frames").read_text(encoding="utf-8")))
        return None

    def hold_tasks(self, on: bool) -> None:
        """Make the farm's tasks wait before they render (``on``), or let them go."""
        path = self.folder / "hold_tasks"
        if on:
            path.touch()
        else:
            path.unlink(missing_ok=True)

    def hold_task(self, start: int) -> None:
        """In a farm task (another process, maybe): wait while tasks are held, saying so with this pid."""
        if not (self.folder / "hold_tasks").exists():
            return
        mark = self.folder / f"waiting-{start}"
        mark.write_text(str(os.getpid()), encoding="utf-8")
        try:
            while (self.folder / "hold_tasks").exists():
                time.sleep(_TICK)
        finally:
            mark.unlink(missing_ok=True)

    def waiting_tasks(self) -> dict[int, int]:
        """Segment start -> pid of the farm tasks held now."""
        found = {}
        for mark in self.folder.glob("waiting-*"):
            with contextlib.suppress(OSError, ValueError):
                found[int(mark.name.removeprefix("waiting-"))] = int(mark.read_text(encoding="utf-8"))
        return found

    def reached(self) -> int:
        """What the held job last wrote (0 before its first segment)."""
        with contextlib.suppress(OSError, ValueError):
            return int((self.folder / "reached").read_text(encoding="utf-8"))
        return 0

    def allow(self, segments: int | None) -> None:
        """Let the job hold up to ``segments`` segments (None: lift the hold)."""
        path = self.folder / "allowed"
        if segments is None:
            path.unlink(missing_ok=True)
            return
        part = path.with_name(".allowed.part")
        part.write_text(str(segments), encoding="utf-8")
        os.replace(part, path)


def hold_from_env() -> FolderGate | None:
    """The hold ``FACESTATION_TEST_HOLD`` arms for every job of this process's worker (None: not set)."""
    folder = env.TEST_HOLD.get()
    return FolderGate(folder) if folder else None
