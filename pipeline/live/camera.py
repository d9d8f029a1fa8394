"""Where live frames come from: a v4l2 camera through ffmpeg, or a file that stands in for one.

A :class:`FileCamera` delivers the file's frames at its own rate (or ``fps``), as a camera would: frame i
is released at start + i / fps (a slow decode is late, never early), by an injected clock and sleep. Both
kinds stop when the ``stop`` event is set (their ffmpeg is killed and reaped)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from pipeline.errors import Cancelled, UserError
from pipeline.types import Frame
from pipeline.video import builders, ffmpeg
from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from pipeline.video.process import FFmpegProcess

DEFAULT_SIZE = (640, 480)
DEFAULT_FPS = 30.0


class Camera(Protocol):
    name: str
    fps: float

    def frames(self, stop: threading.Event) -> Iterator[Frame]:
        """BGR frames as the camera gives them, until it ends or ``stop`` is set."""
        ...


@dataclass
class FileCamera:
    """A video file delivered at its own frame rate (``fps``: another rate), resized to ``size`` if given."""

    path: Path
    size: tuple[int, int] | None = None
    fps: float = 0.0  # 0: the file's
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if not self.path.is_file():
            raise UserError(f"no camera file {self.path}: give a camera device (/dev/videoN) or a video file")
        self.info = probe(self.path)
        self.fps = self.fps or float(self.info.fps)
        self.name = self.path.name

    def frames(self, stop: threading.Event) -> Iterator[Frame]:
        start: float | None = None
        try:
            for i, frame in enumerate(read_frames(self.path, info=self.info, cancel=stop, hwaccel="none")):
                now = self.clock()
                start = now if start is None else start
                wait = start + i / self.fps - now
                if wait > 0:
                    self.sleep(wait)
                yield self._sized(frame)
        except Cancelled:
            return

    def _sized(self, frame: Frame) -> Frame:
        if self.size is None or (frame.shape[1], frame.shape[0]) == self.size:
            return frame
        return np.asarray(cv2.resize(frame, self.size, interpolation=cv2.INTER_AREA), np.uint8)


@dataclass
class DeviceCamera:
    """A v4l2 camera (``/dev/videoN``) read through ffmpeg at ``size`` and ``fps``."""

    device: str
    size: tuple[int, int] = DEFAULT_SIZE
    fps: float = DEFAULT_FPS

    def __post_init__(self) -> None:
        if not os.path.exists(self.device):
            raise UserError(f"no camera {self.device}: plug one in, or give a video file as --camera")
        self.name = self.device

    def frames(self, stop: threading.Event) -> Iterator[Frame]:
        w, h = self.size
        cmd = builders.camera_cmd(ffmpeg.ffmpeg_exe(), self.device, width=w, height=h, fps=self.fps)
        process = FFmpegProcess(cmd, stdout=True, cancel=stop)
        try:
            while not stop.is_set():
                data = _read_exactly(process, w * h * 3)
                if data is None:
                    break
                yield np.frombuffer(data, np.uint8).reshape(h, w, 3)
            if not stop.is_set() and not process.cancelled:
                process.wait()
                raise camera_error(self.device, process.last_error())
        finally:
            process.close()


def _read_exactly(process: FFmpegProcess, size: int) -> bytearray | None:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = process.stdout.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            return None
        got += n
    return data


def camera_error(device: str, message: str) -> UserError:
    """What went wrong with a camera device, in one line the user can act on."""
    if "busy" in message.lower():
        return UserError(f"camera {device} is busy: another program is using it (close it and retry)")
    return UserError(f"camera {device} stopped: {message}")


def open_camera(spec: str, size: tuple[int, int] | None, fps: float | None) -> Camera:
    """``spec``: a device (``/dev/videoN``) or a video file."""
    if spec.startswith("/dev/"):
        return DeviceCamera(spec, size or DEFAULT_SIZE, fps or DEFAULT_FPS)
    return FileCamera(Path(spec), size, fps or 0.0)
