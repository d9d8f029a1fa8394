"""Live mode: the newest-frame handoff, the engine's drops and updates (fake camera, fake clock, a step that
paces the camera by frame count), the stream builders, bad inputs, and `facestation live` end to end from a
file camera whose frames carry their index (a binary code of squares in a corner away from the face)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.errors import UserError
from pipeline.live.engine import LiveEngine
from pipeline.live.handoff import Latest
from pipeline.live.step import live_settings
from pipeline.settings import Settings
from pipeline.video import builders
from pipeline.video.decode import read_frames
from tests import photos
from tests.timing import scaled
from tests.videos import _face_frames

BITS, SQUARE = 8, 14  # the index code: 8 squares of 14 px along the bottom-left edge


def stamp(frame: np.ndarray, index: int) -> None:
    h = frame.shape[0]
    for b in range(BITS):
        value = 255 if index >> b & 1 else 0
        frame[h - SQUARE - 2:h - 2, 2 + b * SQUARE:2 + (b + 1) * SQUARE] = value


def read_index(frame: np.ndarray) -> int:
    h = frame.shape[0]
    index = 0
    for b in range(BITS):
        cell = frame[h - SQUARE:h - 4, 5 + b * SQUARE:(b + 1) * SQUARE - 1]
        index |= int(cell.mean() > 128) << b
    return index


def test_the_index_code_reads_back() -> None:
    frame = np.full((240, 320, 3), 90, np.uint8)
    for i in (0, 1, 77, 255):
        stamp(frame, i)
        assert read_index(frame) == i


# --- the handoff ------------------------------------------------------------------------------------

def test_newest_frame_wins_and_replaced_ones_are_counted() -> None:
    slot: Latest[int] = Latest()
    assert slot.put(0) is False
    assert slot.put(1) is True and slot.put(2) is True  # 0 and 1 replaced
    assert slot.take() == 2
    assert slot.put(3) is False
    slot.close()
    assert slot.take() == 3 and slot.take() is None  # the waiting one is still delivered after close
    assert (slot.offered, slot.dropped) == (4, 2)


# --- the engine, paced by frame count ------------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class PacedCamera:
    """Yields a frame only when the step allows one; ``put`` counts the frames the engine has handed off
    (frame i is surely handed off once the generator is asked for frame i + 1, or ends)."""

    name, fps = "paced", 30.0

    def __init__(self, frames: int) -> None:
        self.total = frames
        self.permits = threading.Semaphore(1)
        self.put = 0
        self.cond = threading.Condition()

    def frames(self, stop: threading.Event) -> Iterator[np.ndarray]:
        try:
            for i in range(self.total):
                self._handed(i)
                self.permits.acquire()
                yield np.full((8, 8, 3), i, np.uint8)
        finally:  # the end, or the engine closing it (a limit): no more frames to wait for
            self._handed(self.total)

    def _handed(self, n: int) -> None:
        with self.cond:
            self.put = n
            self.cond.notify_all()

    def release(self, n: int) -> None:
        """Let ``n`` more frames come and wait until the engine has handed them off."""
        with self.cond:
            target = min(self.total, self.put + n)
        for _ in range(n):
            self.permits.release()
        with self.cond:
            assert self.cond.wait_for(lambda: self.put >= target, timeout=scaled(30))


class Collect:
    def __init__(self) -> None:
        self.frames: list[np.ndarray] = []
        self.closed = self.aborted = False

    def write(self, frame: np.ndarray) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


def slow_step(camera: PacedCamera, clock: Clock, tag: int = 0):
    """A step slow enough that three frames arrive while it works on one (and 100 ms of clock pass)."""
    def step(frame: np.ndarray) -> np.ndarray:
        clock.now += 0.05
        camera.release(3)
        clock.now += 0.05
        out = frame.copy()
        out[0, 0, 0] = tag
        return out
    return step


def test_a_slow_step_drops_the_frames_it_cannot_take_and_counts_them_exactly() -> None:
    camera, clock, sink = PacedCamera(10), Clock(), Collect()
    engine = LiveEngine(Settings(), lambda s: slow_step(camera, clock), clock=clock)
    stats = engine.run(camera, sink)
    assert stats.indices == [0, 3, 6, 9]  # each frame that waited while another was processed is the newest
    assert [int(f[1, 1, 0]) for f in sink.frames] == [0, 3, 6, 9]
    assert (stats.captured, stats.dropped) == (10, 6)  # 1, 2, 4, 5, 7, 8
    assert stats.captured == len(stats.indices) + stats.dropped
    # frame 0 captured at 0 s, delivered at 0.1; 3, 6 and 9 captured 0.05 s into the step before theirs
    assert np.allclose(stats.latencies, [0.1, 0.15, 0.15, 0.15])
    assert sink.closed and not sink.aborted
    assert stats.summary()["frames_dropped"] == 6 and stats.summary()["latency_p50_ms"] == 150.0


def test_a_limit_stops_the_camera_after_that_many_frames() -> None:
    camera, clock, sink = PacedCamera(10), Clock(), Collect()
    stats = LiveEngine(Settings(), lambda s: slow_step(camera, clock), clock=clock).run(camera, sink, limit=4)
    assert stats.captured == 4 and stats.indices == [0, 3] and stats.dropped == 2


def test_update_switches_the_step_between_frames_without_a_restart() -> None:
    camera, clock, sink = PacedCamera(10), Clock(), Collect()
    built: list[Settings] = []
    engine: LiveEngine

    def build(settings: Settings):
        built.append(settings)
        inner = slow_step(camera, clock, tag=len(built))

        def step(frame: np.ndarray) -> np.ndarray:
            if len(built) == 1 and int(frame[0, 0, 0]) == 3:
                engine.update(settings.model_copy(update={"execution": settings.execution}))
            return inner(frame)
        return step

    engine = LiveEngine(Settings(), build, clock=clock)
    engine.run(camera, sink)
    assert len(built) == 2
    assert [int(f[0, 0, 0]) for f in sink.frames] == [1, 1, 2, 2]  # frame 3 finishes with the old step


def test_a_camera_that_fails_is_the_runs_error_and_the_output_is_dropped() -> None:
    class Broken:
        name, fps = "broken", 30.0

        def frames(self, stop: threading.Event) -> Iterator[np.ndarray]:
            yield np.zeros((8, 8, 3), np.uint8)
            raise UserError("camera /dev/video0 stopped: unplugged")

    sink = Collect()
    with pytest.raises(UserError, match="unplugged"):
        LiveEngine(Settings(), lambda s: (lambda f: f)).run(Broken(), sink)
    assert sink.aborted and not sink.closed


def test_live_leaves_out_the_lip_syncer_with_a_notice_and_has_no_look_ahead() -> None:
    settings = Settings.model_validate({"processors": {"order": ["face_swapper", "lip_syncer"]}})
    live, notices = live_settings(settings)
    assert live.processors.order == ("face_swapper",) and live.tracker.max_gap == 0
    assert len(notices) == 1 and "lip_syncer" in notices[0]
    with pytest.raises(UserError, match="nothing of it runs live"):
        live_settings(Settings.model_validate({"processors": {"order": ["lip_syncer"]}}))


# --- builders -------------------------------------------------------------------------------------

def test_camera_and_stream_commands_as_lists() -> None:
    cam = builders.camera_cmd("ffmpeg", "/dev/video0", width=640, height=480, fps=30)
    assert cam[cam.index("-f") + 1] == "v4l2" and cam[cam.index("-i") + 1] == "/dev/video0"
    assert cam[-3:] == ["-pix_fmt", "bgr24", "pipe:1"] and "640x480" in cam
    udp = builders.live_stream_cmd("ffmpeg", "udp://127.0.0.1:5000", kind="udp", width=640, height=480,
                                   fps=30)
    assert udp[-3:] == ["-f", "mpegts", "udp://127.0.0.1:5000?pkt_size=1316"]
    assert udp[udp.index("-tune") + 1] == "zerolatency" and udp[udp.index("-g") + 1] == "30"
    v4l2 = builders.live_stream_cmd("ffmpeg", "/dev/video9", kind="v4l2", width=640, height=480, fps=30)
    assert v4l2[-3:] == ["-f", "v4l2", "/dev/video9"]


# --- the command ----------------------------------------------------------------------------------

def index_clip(path: Path, seconds: float = 2.0, fps: int = 30, size: tuple[int, int] = (320, 240)) -> Path:
    """A face clip whose frames carry their index in the bottom-left corner."""
    w, h = size
    frames = _face_frames(photos.astronaut(), round(seconds * fps), w, h)
    for i, frame in enumerate(frames):
        stamp(frame, i)
    cmd = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
           "bgr24", "-s", f"{w}x{h}", "-framerate", str(fps), "-i", "pipe:0", "-c:v", "libx264", "-preset",
           "ultrafast", "-crf", "12", "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(cmd, input=frames.tobytes(), check=True, capture_output=True)
    return path


def run_live(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["live", "--source", str(photos.grace_hopper_path()), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("args", "says"), [
    (["--camera", "missing.mp4", "--output", "out.mp4"], "no camera file"),
    (["--camera", "/dev/video97", "--output", "out.mp4"], "no camera /dev/video97"),
    (["--camera", "CLIP", "--output", "v4l2:/dev/video98"],
     "no v4l2loopback device /dev/video98: sudo modprobe"),
    (["--camera", "CLIP", "--output", "udp://no-such-host.invalid:5000"], "cannot reach host"),
    (["--camera", "CLIP", "--output", "udp://127.0.0.1"], "udp://HOST:PORT"),
    (["--camera", "CLIP", "--output", "out.gif"], "cannot write video"),
    (["--camera", "CLIP", "--size", "640by480", "--output", "out.mp4"], "not a frame size"),
    (["--camera", "CLIP", "--seconds", "-1", "--output", "out.mp4"], "not a positive number"),
    (["--camera", "CLIP", "--output", "window"], "needs a display"),
])
def test_bad_inputs_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch, args: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    if "CLIP" in args:
        args = [str(index_clip(tmp_path / "clip.mp4", seconds=0.2)) if a == "CLIP" else a for a in args]
    code, out, err = run_live(capsys, *args)
    assert code == 2, err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not list(tmp_path.glob("out*"))


@pytest.mark.slow
def test_live_from_a_file_camera_to_a_recording_keeps_the_frames_in_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = index_clip(tmp_path / "clip.mp4", seconds=2.0)
    out = tmp_path / "live.mp4"
    code, stdout, err = run_live(capsys, "--camera", str(clip), "--output", str(out), "--seconds", "1.5",
                                 "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["frames_captured"] == 45  # 1.5 s of a 30 fps camera, counted, never timed
    assert summary["frames_captured"] == summary["frames_delivered"] + summary["frames_dropped"]
    indices = [read_index(f) for f in read_frames(out)]
    assert len(indices) == summary["frames_delivered"]
    assert indices == sorted(set(indices)) and indices[-1] <= 44
    from pipeline.video.probe import probe
    assert probe(out).width == 320


@pytest.mark.slow
def test_live_to_udp_is_received_in_order_with_drops_counted(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    clip = index_clip(tmp_path / "clip.mp4", seconds=2.0)
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    listener.bind(("127.0.0.1", 0))  # bound before the stream starts: nothing is sent into the void
    port = listener.getsockname()[1]
    received = tmp_path / "received.ts"
    done = threading.Event()

    def receive() -> None:
        listener.settimeout(0.2)
        with received.open("wb") as f:
            while True:
                try:
                    f.write(listener.recv(65536))
                except TimeoutError:
                    if done.is_set():
                        return

    thread = threading.Thread(target=receive)
    thread.start()
    try:
        code, stdout, err = run_live(capsys, "--camera", str(clip), "--output", f"udp://127.0.0.1:{port}",
                                     "--json")
    finally:
        done.set()
        thread.join()
        listener.close()
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["frames_captured"] == 60
    assert summary["frames_captured"] == summary["frames_delivered"] + summary["frames_dropped"]
    indices = [read_index(f) for f in read_frames(received)]
    assert len(indices) == summary["frames_delivered"]
    assert indices == sorted(set(indices))
