"""Live mode: the newest-frame handoff, the engine's drops and updates (fake camera, fake clock, a step that
paces the camera by frame count), the stream builders, bad inputs, and `facestation live` end to end from a
file camera whose frames carry their index (a binary code of squares in a corner away from the face)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.errors import UserError
from pipeline.live import outputs
from pipeline.live.engine import Captured, LiveEngine, LiveStats
from pipeline.live.handoff import Latest
from pipeline.live.outputs import Host, Recording
from pipeline.live.step import live_settings
from pipeline.settings import Settings
from pipeline.video import builders
from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from tests import photos
from tests.timing import scaled
from tests.videos import _face_frames, count_frames

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

    def __init__(self, frames: int, size: tuple[int, int] = (8, 8), step: int = 1) -> None:
        self.total, self.size, self.step = frames, size, step  # frame i is all i * step
        self.permits = threading.Semaphore(1)
        self.put = 0
        self.cond = threading.Condition()

    def frames(self, stop: threading.Event) -> Iterator[np.ndarray]:
        try:
            for i in range(self.total):
                self._handed(i)
                self.permits.acquire()
                yield np.full((self.size[1], self.size[0], 3), i * self.step, np.uint8)
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
        self.indices: list[int | None] = []
        self.closed = self.aborted = False

    def write(self, frame: np.ndarray, index: int | None = None) -> None:
        self.frames.append(frame)
        self.indices.append(index)

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
    assert [int(f[1, 1, 0]) for f in sink.frames] == [0, 3, 6, 9] and sink.indices == [0, 3, 6, 9]
    assert (stats.captured, stats.dropped) == (10, 6)  # 1, 2, 4, 5, 7, 8
    assert stats.captured == len(stats.indices) + stats.dropped
    # frame 0 captured at 0 s, delivered at 0.1; 3, 6 and 9 captured 0.05 s into the step before theirs
    assert np.allclose(stats.latencies, [0.1, 0.15, 0.15, 0.15])
    assert sink.closed and not sink.aborted
    assert stats.summary()["frames_dropped"] == 6 and stats.summary()["latency_p50_ms"] == 150.0


def test_latency_at_the_start_and_end_of_a_run_and_per_second() -> None:
    stats = LiveStats(captured=300)
    for i in range(300):  # 10 s at 30 fps; latency 40 ms for the first 5 s, then 40 ms + 1 ms per frame
        at = i / 30
        stats.deliver(Captured(i, at, np.zeros((1, 1, 3), np.uint8)), at + 0.04 + 0.001 * max(0, i - 150))
    start, end = stats.edges()
    assert start == pytest.approx(40.0)
    assert end == pytest.approx(40.0 + 74.5)  # frames 151-299 (the last 5 s): median 225, 75 ms more
    summary = stats.summary()
    assert (summary["latency_start_p50_ms"], summary["latency_end_p50_ms"]) == (40.0, 114.5)
    assert summary["latency_growth_ms"] == 74.5
    series = stats.per_second()
    assert len(series) == 10 and series[:5] == [40.0] * 5 and series[5] == pytest.approx(40.0 + 15.0, abs=1)
    assert series == sorted(series)  # growing from the 6th second on
    assert LiveStats().summary()["latency_growth_ms"] == 0.0 and LiveStats().per_second() == []


def test_a_second_without_deliveries_is_a_gap_in_the_series() -> None:
    stats = LiveStats(captured=2)
    for i, at in enumerate((0.0, 2.5)):
        stats.deliver(Captured(i, at, np.zeros((1, 1, 3), np.uint8)), at + 0.1)
    assert stats.per_second() == [100.0, None, 100.0]


def test_a_recordings_report_has_a_record_per_frame_of_the_file_a_drop_repeating_the_one_before(
        tmp_path: Path) -> None:
    """The live step records each processed frame; the recording places it where it went in the file."""
    from pipeline.chain import Work
    from pipeline.quality.live import LiveReport

    report = LiveReport(10.0)
    recording = Recording(tmp_path / "live.mp4", 10.0, [], report)
    frame = np.zeros((48, 64, 3), np.uint8)
    for index in (0, 3, 4, 9):  # captured 10, four of them processed
        report.add(Settings(), Work(frame, [], out=frame))
        recording.write(frame, index)
    recording.close()
    assert count_frames(recording.path) == 10 and recording.report_path == tmp_path / "live.quality.json"
    written = json.loads(recording.report_path.read_text())
    assert [f["frame"] for f in written["frames"]] == list(range(10))
    assert written["summary"]["frames"] == 10 and written["identity"] is False


def test_a_recording_with_drops_plays_at_the_cameras_pace(tmp_path: Path) -> None:
    camera, clock = PacedCamera(10, size=(64, 48), step=20), Clock()
    recording = Recording(tmp_path / "live.mp4", camera.fps, ["yunet", "classic"])
    stats = LiveEngine(Settings(), lambda s: slow_step(camera, clock), clock=clock).run(camera, recording)
    assert (stats.captured, stats.dropped, stats.indices) == (10, 6, [0, 3, 6, 9])
    assert recording.repeated == 6
    info = probe(recording.path)
    assert count_frames(recording.path) == stats.captured  # 4 delivered + 6 repeats: the captured span
    assert abs(info.duration - stats.captured / camera.fps) <= 1 / camera.fps
    shown = [round(int(f[20, 30, 1]) / 20) for f in read_frames(recording.path)]
    assert shown == [0, 0, 0, 3, 3, 3, 6, 6, 6, 9]  # a dropped frame's place shows the frame before it
    assert "synthetic media: face swapped with facestation" in probe_comment(recording.path)
    assert "yunet, classic" in probe_comment(recording.path)


def test_a_recording_fits_a_frame_of_another_size_to_its_own(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "resized.mp4", 30.0)
    recording.write(np.full((48, 64, 3), 40, np.uint8), 0)
    recording.write(np.full((36, 48, 3), 200, np.uint8), 1)  # the camera went smaller: scaled up to fit
    recording.write(np.full((48, 48, 3), 120, np.uint8), 3)  # another shape: fitted, centred on black
    recording.close()
    frames = list(read_frames(recording.path))
    assert [f.shape for f in frames] == [(48, 64, 3)] * 4 and recording.repeated == 1
    assert [round(int(f[24, 32, 1]) / 20) for f in frames] == [2, 10, 10, 6]  # the repeat: the frame before
    assert int(frames[3][24, 4, 1]) < 20 and int(frames[3][24, 59, 1]) < 20  # black beside a square frame


def test_fit_keeps_the_aspect_and_leaves_a_frame_of_the_size_alone() -> None:
    frame = np.full((100, 200, 3), 255, np.uint8)
    assert outputs.fit(frame, (200, 100)) is frame
    fitted = outputs.fit(frame, (100, 100))  # 2:1 into a square: 100×50, bars above and below
    assert fitted.shape == (100, 100, 3) and fitted[50, 50, 0] == 255
    assert fitted[10, 50, 0] == 0 and fitted[90, 50, 0] == 0


def test_a_recording_given_no_capture_numbers_writes_frames_as_they_come(tmp_path: Path) -> None:
    recording = Recording(tmp_path / "plain.mp4", 30.0)
    for value in (0, 60, 120):
        recording.write(np.full((48, 64, 3), value, np.uint8))
    recording.close()
    assert count_frames(recording.path) == 3 and recording.repeated == 0


def probe_comment(path: Path) -> str:
    return subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format_tags=comment", "-of",
                           "default=nw=1:nk=1", str(path)], capture_output=True, text=True, check=True).stdout


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
    # each frame stamped when it arrives (before the input), kept as stamped: drops do not slow the stream
    assert udp.index("-use_wallclock_as_timestamps") < udp.index("-i")
    assert udp[udp.index("-fps_mode") + 1] == "passthrough"
    v4l2 = builders.live_stream_cmd("ffmpeg", "/dev/video9", kind="v4l2", width=640, height=480, fps=30)
    assert v4l2 == ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt",
                    "bgr24", "-s", "640x480", "-framerate", "30", "-i", "pipe:0", "-vf", "format=yuv420p",
                    "-f", "v4l2", "/dev/video9"]  # what v4l2loopback's readers (Zoom, OBS, Meet) take: 4:2:0


# --- the command ----------------------------------------------------------------------------------

def index_clip(path: Path, seconds: float = 2.0, fps: int = 30, size: tuple[int, int] = (320, 240)) -> Path:
    """A face clip whose frames carry their index (modulo 256: past that, its first 256 frames over again)
    in the bottom-left corner; a long one is cheap (256 frames made, the rest piped again)."""
    w, h = size
    n = round(seconds * fps)
    frames = _face_frames(photos.astronaut(), min(n, 1 << BITS), w, h)
    for i, frame in enumerate(frames):
        stamp(frame, i)
    cmd = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
           "bgr24", "-s", f"{w}x{h}", "-framerate", str(fps), "-i", "pipe:0", "-c:v", "libx264", "-preset",
           "ultrafast", "-crf", "12", "-pix_fmt", "yuv420p", str(path)]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE) as encode:
        assert encode.stdin is not None
        for i in range(n):
            encode.stdin.write(frames[i % len(frames)].tobytes())
        _, err = encode.communicate()
    assert encode.returncode == 0, err.decode(errors="replace")
    return path


def unwrap(codes: list[int]) -> list[int]:
    """Indices read modulo 256 back to the camera's frame numbers (each the next one above the last with
    that code; a code read twice in a row stays equal: a repeat, not a frame 256 later)."""
    out: list[int] = []
    for code in codes:
        out.append(code if not out else out[-1] + (code - out[-1]) % (1 << BITS))
    return out


def run_live(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["live", "--source", str(photos.grace_hopper_path()), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("args", "says"), [
    (["--camera", "missing.mp4", "--output", "out.mp4"], "no camera file"),
    (["--camera", "/dev/video97", "--output", "out.mp4"], "no camera /dev/video97"),
    (["--camera", "CLIP", "--output", "v4l2:/dev/video98"],
     "v4l2loopback is not loaded: sudo modprobe v4l2loopback devices=1 video_nr=98"),
    (["--camera", "CLIP", "--output", "v4l2:/dev/videoX"], "a virtual camera is v4l2:/dev/videoN"),
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
    monkeypatch.setattr(outputs, "HOST", fake_host(tmp_path))  # no v4l2loopback, whatever this machine has
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
    delivered = sorted(set(indices))
    assert len(delivered) == summary["frames_delivered"] and delivered[-1] == 44  # the last one goes out
    # one frame per captured frame from the first delivered on: a dropped one's place repeats the one before
    assert indices == [max(d for d in delivered if d <= k) for k in range(delivered[0], 45)]
    assert probe(out).width == 320
    # its quality report beside it: one record per frame of the file, a repeat recorded as the frame before
    report = json.loads((tmp_path / "live.quality.json").read_text())
    assert summary["quality"]["path"] == str(tmp_path / "live.quality.json")
    assert [f["frame"] for f in report["frames"]] == list(range(len(indices)))
    assert report["identity"] is False and summary["quality"]["identity_mean"] is None  # no judge live
    swapped = [f["swapped"] for f in report["frames"]]
    assert swapped == [1] * len(indices), swapped  # the one face, swapped in every frame


@contextlib.contextmanager
def udp_receiver(received: Path) -> Iterator[int]:
    """A UDP socket (its port given) whose datagrams a thread writes to ``received`` until the block
    ends; bound before the stream starts, so nothing is sent into the void."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    listener.bind(("127.0.0.1", 0))
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
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join()
        listener.close()


@pytest.mark.slow
def test_live_to_udp_is_received_in_order_with_drops_counted(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    clip = index_clip(tmp_path / "clip.mp4", seconds=2.0)
    received = tmp_path / "received.ts"
    with udp_receiver(received) as port:
        code, stdout, err = run_live(capsys, "--camera", str(clip), "--output", f"udp://127.0.0.1:{port}",
                                     "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["frames_captured"] == 60
    assert summary["frames_captured"] == summary["frames_delivered"] + summary["frames_dropped"]
    indices = [read_index(f) for f in read_frames(received)]
    assert len(indices) == summary["frames_delivered"]
    assert indices == sorted(set(indices))


@pytest.mark.slow
def test_seconds_past_the_end_of_a_file_camera_are_noted(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    clip = index_clip(tmp_path / "clip.mp4", seconds=1.0)
    code, _, err = run_live(capsys, "--camera", str(clip), "--output", str(tmp_path / "live.mp4"),
                            "--seconds", "3", "--json")
    assert code == 0, err
    assert "ended after 1.0 s, before the 3 s asked" in err


@pytest.mark.slow
def test_a_minute_to_udp_keeps_its_order_counts_its_drops_and_its_latency_does_not_grow(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The acceptance run: 60 s of a 320×240 camera (built-in models) to UDP, received and read back."""
    clip = index_clip(tmp_path / "clip.mp4", seconds=60.0)
    received = tmp_path / "received.ts"
    with udp_receiver(received) as port:
        code, stdout, err = run_live(capsys, "--camera", str(clip), "--output", f"udp://127.0.0.1:{port}",
                                     "--seconds", "60", "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    captured, delivered = summary["frames_captured"], summary["frames_delivered"]
    assert captured == 1800 and captured == delivered + summary["frames_dropped"]
    indices = unwrap([read_index(f) for f in read_frames(received)])
    assert len(indices) == delivered  # every delivered frame received, none twice
    assert indices == sorted(set(indices)) and indices[-1] == captured - 1  # in order; the last one out
    assert len(set(range(captured)) - set(indices)) == summary["frames_dropped"]  # the gaps are the drops
    # latency from per-frame capture and delivery times: the end's p50 within 100 ms of the start's
    assert summary["latency_growth_ms"] <= 100.0, summary
    assert summary["latency_end_p50_ms"] - summary["latency_start_p50_ms"] == pytest.approx(
        summary["latency_growth_ms"], abs=0.15)
    assert 59 <= len(summary["latency_p50_ms_per_second"]) <= 61  # a late last frame may open second 61


# --- v4l2 and window outputs, on a machine without them --------------------------------------------

def fake_host(root: Path, *, module: bool = False, node: bool = False, loopback: bool = False) -> Host:
    """Folders standing in for /dev and /sys: v4l2loopback loaded or not, /dev/video98 there or not, and
    one of v4l2loopback's virtual devices or a camera."""
    host = Host(root / "dev", root / "sys")
    host.dev.mkdir(parents=True, exist_ok=True)
    (host.sys / "devices" / "virtual" / "video4linux").mkdir(parents=True, exist_ok=True)
    if module:
        (host.sys / "module" / "v4l2loopback").mkdir(parents=True)
    if node:
        (host.dev / "video98").touch()
    if loopback:
        (host.sys / "devices" / "virtual" / "video4linux" / "video98").mkdir()
    return host


@pytest.mark.parametrize(("state", "says"), [
    ({}, "v4l2loopback is not loaded: sudo modprobe v4l2loopback devices=1 video_nr=98 exclusive_caps=1"),
    ({"module": True}, "no v4l2loopback device /dev/video98: v4l2loopback made others"),
    ({"module": True, "node": True}, "/dev/video98 is a camera, not a v4l2loopback device"),
])
def test_a_v4l2_output_this_machine_cannot_serve_exits_2_saying_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        state: dict[str, bool], says: str) -> None:
    monkeypatch.setattr(outputs, "HOST", fake_host(tmp_path, **state))
    clip = index_clip(tmp_path / "clip.mp4", seconds=0.2)
    code, _, err = run_live(capsys, "--camera", str(clip), "--output", "v4l2:/dev/video98")
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_v4l2loopback_device_is_written_where_the_host_has_it(tmp_path: Path) -> None:
    host = fake_host(tmp_path, module=True, node=True, loopback=True)
    assert outputs.v4l2_target("v4l2:/dev/video98", host) == str(host.dev / "video98")


def ffmpeg_stub(folder: Path, says: str) -> Path:
    """An ffmpeg that fails, saying ``says``, when asked for v4l2 (the real one does everything else)."""
    real = shutil.which("ffmpeg")
    probe_exe = shutil.which("ffprobe")
    assert real and probe_exe
    folder.mkdir()
    stub = folder / "ffmpeg"
    stub.write_text("#!/bin/sh\n"
                    f'for a in "$@"; do [ "$a" = v4l2 ] && {{ echo "{says}" >&2; exit 1; }}; done\n'
                    f'exec {real} "$@"\n')
    stub.chmod(0o755)
    (folder / "ffprobe").symlink_to(probe_exe)
    return stub


@pytest.mark.parametrize(("ffmpeg_says", "says"), [
    ("[NULL @ 0x1] Requested output format 'v4l2' is not a suitable output format\n/dev/video98: Invalid "
     "argument", "this ffmpeg cannot write to a v4l2 device: install one that can"),
    ("[video4linux2,v4l2 @ 0x1] ioctl(VIDIOC_G_FMT): Invalid argument\nCould not write header for output "
     "file #0", "ffmpeg could not write to it (Could not write header for output file #0): is it a "
     "v4l2loopback device? sudo modprobe v4l2loopback"),
])
def test_an_ffmpeg_that_cannot_feed_the_virtual_camera_exits_2_saying_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        ffmpeg_says: str, says: str) -> None:
    host = fake_host(tmp_path, module=True, node=True, loopback=True)
    monkeypatch.setattr(outputs, "HOST", host)
    clip = index_clip(tmp_path / "clip.mp4", seconds=0.2)
    monkeypatch.setenv("FACESTATION_FFMPEG", str(ffmpeg_stub(tmp_path / "bin", ffmpeg_says)))
    code, _, err = run_live(capsys, "--camera", str(clip), "--output", "v4l2:/dev/video98")
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def test_a_stream_that_stops_names_its_last_line() -> None:
    error = outputs.stream_error("udp", "udp://127.0.0.1:5000", ["a", "Connection refused"])
    assert str(error) == "--output udp://127.0.0.1:5000 stopped taking frames: Connection refused"
    assert "exited" in str(outputs.stream_error("udp", "udp://h:1", []))


def test_a_headless_opencv_is_told_apart_from_one_with_windows() -> None:
    assert not outputs.opencv_has_windows("General configuration\n  GUI:                           NONE\n")
    assert outputs.opencv_has_windows("  GUI:                           GTK3\n    GTK+:   YES (ver 3.24)\n")
    assert outputs.opencv_has_windows("no such line")  # unknown: the window is tried


def test_a_window_without_a_windowing_opencv_exits_2_saying_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import cv2

    if outputs.opencv_has_windows(cv2.getBuildInformation()):
        pytest.skip("this OpenCV has windows (the headless build is what this checks)")
    monkeypatch.setenv("DISPLAY", ":97")  # a display named: the OpenCV is what lacks
    clip = index_clip(tmp_path / "clip.mp4", seconds=0.2)
    code, _, err = run_live(capsys, "--camera", str(clip), "--output", "window")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "this OpenCV is built without windows (a headless build): record to a file" in err


# --- the live chain: frames of any size, its models' threads ---------------------------------------

def test_the_live_chain_follows_a_camera_that_changes_its_size_and_its_models_do_not_spin() -> None:
    from pipeline.live.step import ChainStep
    from pipeline.models import sessions

    step = ChainStep(Settings(), [photos.grace_hopper_path()], 30.0)
    face = photos.astronaut()
    changed = []
    for size in ((320, 240), (320, 240), (240, 180), (240, 180), (320, 240)):  # smaller, then back
        frame = np.ascontiguousarray(_face_frames(face, 1, *size)[0])
        out = step(frame.copy())
        assert out.shape == frame.shape
        h, w = frame.shape[:2]
        middle = (slice(h // 4, 3 * h // 4), slice(w // 3, 2 * w // 3))  # the face
        changed.append(float(np.abs(out[middle].astype(int) - frame[middle].astype(int)).mean()))
    assert all(c > 1.5 for c in changed), changed  # the face swapped at every size (0 unswapped)
    models = [m for stage in step.processor.stage_sessions().values() for m in stage]
    assert models and not any(m.spin for m in models)
    # the detector this step loaded runs without spinning (other tests of the process may hold spinning ones)
    assert any(not row["spinning"] for row in sessions.loaded() if row["model"].startswith("face_detection"))
