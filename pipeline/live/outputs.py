"""Where live frames go: a recording (the encoder, provenance tag included), MPEG-TS over UDP (what OBS's
media source opens), a v4l2loopback virtual camera, or a window. Each opens at its first frame (a frame
processor may change the size) and refuses a target it cannot reach before the run, in one line."""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import cv2
import numpy as np

from pipeline import writer
from pipeline.errors import UserError
from pipeline.live.engine import Sink
from pipeline.media import check_video_output
from pipeline.quality.live import LiveReport
from pipeline.types import Frame
from pipeline.video import builders, ffmpeg
from pipeline.video.encode import Encoder
from pipeline.video.process import FFmpegProcess

V4L2_HELP = "sudo modprobe v4l2loopback devices=1 video_nr={n} exclusive_caps=1, or give another target"


@dataclass
class Recording:
    """A file, written by the encoder at the camera's rate, with the provenance tag of ``models``.

    Frames given with their capture number are placed at it: the numbers dropped since the last frame
    are filled by repeating that frame (what a viewer saw meanwhile), so that a recording with drops plays
    at real time, its length the span captured. Repeats rather than variable-rate timestamps: the encoder
    takes raw frames on a pipe, numbered by count (no timestamps to give), and a constant-rate file is
    what every player and editor handles (a repeated frame costs the encoder little)."""

    path: Path
    fps: float
    models: list[str] = field(default_factory=list)
    report: LiveReport | None = None  # its quality report, written beside it when it closes
    repeated: int = 0  # frames written again in place of dropped ones
    frames: int = 0  # frames in the file so far
    report_path: Path | None = None  # where the report went (once closed)
    _encoder: Encoder | None = None
    _last: tuple[int, Frame] | None = None  # the last frame written with its capture number

    def write(self, frame: Frame, index: int | None = None) -> None:
        """``frame`` into the file (at the first frame's size: a frame of another size is fitted to it)."""
        if self._encoder is None:
            h, w = frame.shape[:2]
            self._encoder = Encoder(self.path, width=w, height=h, fps=self.fps, models=self.models,
                                    preset="fastest")
        frame = fit(frame, (self._encoder.width, self._encoder.height))
        if index is not None and self._last is not None and index > self._last[0] + 1:
            for _ in range(index - self._last[0] - 1):
                self._encoder.write(self._last[1])
            self.repeated += index - self._last[0] - 1
            self.frames += index - self._last[0] - 1
        if self.report is not None:
            self.report.placed(self.frames)
        self._encoder.write(frame)
        self.frames += 1
        if index is not None:
            self._last = (index, frame)

    def close(self) -> None:
        if self._encoder is not None:
            self._encoder.close()
            if self.report is not None:
                self.report_path = self.report.write(self.path)

    def abort(self) -> None:
        if self._encoder is not None:
            self._encoder.abort()


@dataclass
class Stream:
    """Raw frames piped to an ffmpeg that sends them on (``kind``: "udp" or "v4l2")."""

    target: str
    kind: str
    fps: float
    _process: FFmpegProcess | None = None
    _size: tuple[int, int] = (0, 0)  # the stream's (its first frame's)

    def write(self, frame: Frame, index: int | None = None) -> None:
        """``frame`` sent on now (``index`` unused: a stream shows frames as they come), at the first
        frame's size (a frame of another size is fitted to it)."""
        if self._process is None:
            h, w = frame.shape[:2]
            self._size = (w, h)
            cmd = builders.live_stream_cmd(ffmpeg.ffmpeg_exe(), self.target, kind=self.kind, width=w,
                                           height=h, fps=self.fps)
            self._process = FFmpegProcess(cmd, stdin=True)
        frame = fit(frame, self._size)
        try:
            self._process.stdin.write(memoryview(frame.tobytes()))
        except OSError:
            self._process.wait()
            raise stream_error(self.kind, self.target, self._process.error_lines()) from None

    def close(self) -> None:
        """The stream ended: ffmpeg finishes (its failure, if it failed, is the run's error)."""
        if self._process is None:
            return
        with contextlib.suppress(OSError):
            self._process.stdin.close()
        code = self._process.wait()
        self._process.close()
        if code != 0:
            raise stream_error(self.kind, self.target, self._process.error_lines())

    def abort(self) -> None:
        if self._process is not None:
            self._process.close()


class Window:
    """A desktop window (OpenCV's), refused where there is no display."""

    name = "facestation live"

    def __init__(self) -> None:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise UserError("--output window needs a display (no DISPLAY or WAYLAND_DISPLAY here): record "
                            "to a file or stream to udp://HOST:PORT instead")
        import cv2

        if not opencv_has_windows(cv2.getBuildInformation()):
            raise UserError("--output window: this OpenCV is built without windows (a headless build): "
                            "record to a file or stream to udp://HOST:PORT instead")
        try:
            cv2.namedWindow(self.name, cv2.WINDOW_NORMAL)
        except cv2.error as exc:
            raise UserError(f"--output window: this OpenCV cannot open a window ({exc.err}): record to a "
                            "file or stream to udp://HOST:PORT instead") from None

    def write(self, frame: Frame, index: int | None = None) -> None:
        import cv2

        cv2.imshow(self.name, frame)
        cv2.waitKey(1)

    def close(self) -> None:
        import cv2

        cv2.destroyWindow(self.name)

    abort = close


def opencv_has_windows(build_information: str) -> bool:
    """Whether OpenCV's build information names a GUI backend (a headless build says ``GUI: NONE``; asking
    such a build for a window fails); True when it does not say (the window is tried)."""
    for line in build_information.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "GUI":
            return value.strip().upper() not in ("", "NONE")
    return True


def udp_target(target: str) -> str:
    """``udp://HOST:PORT`` checked: a port, a host that resolves."""
    parts = urlsplit(target)
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise UserError(f"--output {target}: a UDP target is udp://HOST:PORT (e.g. udp://127.0.0.1:5000)")
    try:
        socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_DGRAM)
    except OSError as exc:
        raise UserError(f"--output {target}: cannot reach host {parts.hostname} "
                        f"({exc.strerror or exc})") from None
    return f"udp://{parts.hostname}:{port}"


@dataclass(frozen=True)
class Host:
    """Where this machine shows its device nodes and its kernel's modules and virtual devices (a test gives
    folders standing in for them)."""

    dev: Path = Path("/dev")
    sys: Path = Path("/sys")


HOST = Host()


def v4l2_target(target: str, host: Host | None = None) -> str:
    """``v4l2:/dev/videoN`` checked: v4l2loopback loaded, the device there, one of its (virtual, not a
    camera), writable; the device node's path."""
    host = host or HOST
    device = target.removeprefix("v4l2:")
    n = device.removeprefix("/dev/video")
    if not device.startswith("/dev/video") or not n.isdigit():
        raise UserError(f"--output {target}: a virtual camera is v4l2:/dev/videoN")
    if not (host.sys / "module" / "v4l2loopback").is_dir():
        raise UserError(f"--output {target}: v4l2loopback is not loaded: {V4L2_HELP.format(n=n)}")
    node = host.dev / f"video{n}"
    if not node.exists():
        raise UserError(f"no v4l2loopback device {device}: v4l2loopback made others (ls "
                        f"/sys/devices/virtual/video4linux), or reload it: sudo modprobe -r v4l2loopback; "
                        f"{V4L2_HELP.format(n=n)}")
    if not (host.sys / "devices" / "virtual" / "video4linux" / f"video{n}").exists():
        raise UserError(f"--output {target}: {device} is a camera, not a v4l2loopback device: give one of "
                        "v4l2loopback's (ls /sys/devices/virtual/video4linux)")
    if not os.access(node, os.W_OK):
        raise UserError(f"--output {target}: {device} is not writable by this user (add yourself to the "
                        "video group)")
    return str(node)


def stream_error(kind: str, target: str, lines: list[str]) -> UserError:
    """What stopped a stream's ffmpeg (its stderr ``lines``), in one line the user can act on."""
    said = lines[-1] if lines else "ffmpeg exited"
    if kind != "v4l2":
        return UserError(f"--output {target} stopped taking frames: {said}")
    text = " ".join(lines)
    if "'v4l2'" in text and any(m in text for m in ("not a suitable output format", "not known",
                                                     "Unknown output format")):
        return UserError(f"--output v4l2:{target}: this ffmpeg cannot write to a v4l2 device: install one "
                         f"that can (sudo apt-get install ffmpeg) or name it in {ffmpeg.ENV_VAR}")
    return UserError(f"--output v4l2:{target}: ffmpeg could not write to it ({said}): is it a v4l2loopback "
                     f"device? {V4L2_HELP.format(n=target.rpartition('video')[2])}")


def open_stream(target: str, fps: float) -> Stream:
    """The stream for ``udp://HOST:PORT`` (MPEG-TS, what OBS's media source opens) or ``v4l2:/dev/videoN``
    (a v4l2loopback virtual camera), checked before the run."""
    if target.startswith("udp://"):
        return Stream(udp_target(target), "udp", fps)
    if target.startswith("v4l2:"):
        return Stream(v4l2_target(target), "v4l2", fps)
    raise UserError(f"{target}: a stream goes to udp://HOST:PORT (OBS) or v4l2:/dev/videoN (a virtual "
                    "camera)")


def fit(frame: Frame, size: tuple[int, int]) -> Frame:
    """``frame`` at ``size`` (width, height): as it is when it is that size, else scaled to fit inside it,
    its aspect kept, centred on black (a camera that changed its size mid-run, in a file or stream that
    cannot)."""
    h, w = frame.shape[:2]
    if (w, h) == size:
        return frame
    scale = min(size[0] / w, size[1] / h)
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    out = np.zeros((size[1], size[0], *frame.shape[2:]), frame.dtype)
    x, y = (size[0] - sw) // 2, (size[1] - sh) // 2
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    out[y:y + sh, x:x + sw] = cv2.resize(frame, (sw, sh), interpolation=interpolation)
    return out


def open_output(target: str, fps: float, models: list[str], sources: list[Path], camera: str) -> Sink:
    """The sink for ``--output TARGET``, checked before the run (a file: by the one writer's rules, so not
    an input nor a queued job's file; the camera, a file standing in for one, is the run's target)."""
    if target == "window":
        return Window()
    if target.startswith(("udp://", "v4l2:")):
        return open_stream(target, fps)
    if "://" in target:
        raise UserError(f"--output {target}: use a file, udp://HOST:PORT, v4l2:/dev/videoN or window")
    path = Path(target)
    writer.claim(path, sources, camera if Path(camera).exists() else None)
    check_video_output(path)
    return Recording(path, fps, models, LiveReport(fps))
