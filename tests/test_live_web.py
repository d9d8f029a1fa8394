"""The Live tab's signalling routes, without a browser: behind the login gate (401 without a login on a
shared UI), a bad offer answered 400 in one line, a run answering only the user and session that started
it; and the run's frames: the newest one processed, the ones replaced before it counted as dropped, mirror
and recording."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.errors import UserError
from pipeline.live.browser_run import BadOffer, check_offer
from pipeline.live.webrtc import LiveRuns, check_live
from pipeline.settings import Settings
from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from tests import photos
from tests.timing import scaled, wait_until
from tests.videos import count_frames
from webui.audit import AuditLog
from webui.auth import Gate, Guard

starlette = pytest.importorskip("starlette")
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from webui import live_routes  # noqa: E402

OFFER = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"


def marking(sources: Any, fps: float, report: Any = None) -> Any:
    """A build whose step inverts the frame (processing seen) without any model."""
    return lambda settings: (lambda frame: 255 - frame)


@pytest.fixture
def shared() -> Iterator[tuple[TestClient, Guard, LiveRuns]]:
    guard = Guard(frozenset({"alice", "bob"}), AuditLog(None))
    runs = LiveRuns(build=marking)
    app = Starlette(routes=live_routes.routes(runs), middleware=[Middleware(Gate, guard=guard)])
    guard.sessions.add("alice-session", "alice")
    guard.sessions.add("bob-session", "bob")
    guard.sessions.add("alice-other", "alice")
    with TestClient(app) as client:
        yield client, guard, runs


def as_(session: str) -> dict[str, str]:
    return {"access-token-x": session}


def start(runs: LiveRuns, user: str = "alice", session: str = "alice-session", **kw: Any) -> Any:
    return runs.start(user, session, Settings(), [photos.grace_hopper_path()], **kw)


def test_every_live_route_answers_401_without_a_login(shared: tuple[TestClient, Guard, LiveRuns]) -> None:
    client, _, runs = shared
    token = start(runs).token
    assert client.post("/facestation/live/offer", json={"token": token, "sdp": OFFER, "type": "offer"}
                       ).status_code == 401
    assert client.get(f"/facestation/live/stats/{token}").status_code == 401
    assert client.post(f"/facestation/live/stop/{token}").status_code == 401
    client.cookies.set("access-token-x", "forged")
    assert client.get(f"/facestation/live/stats/{token}").status_code == 401
    assert client.post(f"/facestation/live/stop/{token}").status_code == 401
    assert len(runs) == 1


@pytest.mark.parametrize(("body", "says"), [
    (b"not json", "not JSON"),
    (b'{"sdp": "v=0"}', "names no live run"),
    (b'{"token": "TOKEN", "sdp": "hello", "type": "offer"}', "not an SDP offer with a video track"),
    (b'{"token": "TOKEN", "sdp": "v=0\\r\\n", "type": "offer"}', "not an SDP offer with a video track"),
    (b'{"token": "TOKEN", "sdp": "v=0", "type": "answer"}', "not a WebRTC offer"),
])
def test_a_bad_offer_is_400_with_one_line(shared: tuple[TestClient, Guard, LiveRuns], body: bytes,
                                          says: str) -> None:
    client, _, runs = shared
    token = start(runs).token
    client.cookies.set("access-token-x", "alice-session")
    r = client.post("/facestation/live/offer", content=body.replace(b"TOKEN", token.encode()),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert says in detail and "\n" not in detail and "Traceback" not in r.text


# --- the offer route over HTTP: its size limit before the body is read, a malformed offer in words --------

@contextmanager
def served(shared: tuple[TestClient, Guard, LiveRuns]) -> Iterator[int]:
    """The live routes behind the gate, served over HTTP by uvicorn on a free loopback port (its port)."""
    import uvicorn

    from tests.browser.helpers import free_port

    _, guard, runs = shared
    app = Starlette(routes=live_routes.routes(runs), middleware=[Middleware(Gate, guard=guard)])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 30, "the test server to start")
        yield server.config.port
    finally:
        server.should_exit = True
        thread.join(scaled(30))


def post_by_hand(port: int, headers: list[str], body: bytes) -> tuple[int, str]:
    """A POST of the offer route written on a socket as ``headers`` then ``body`` (sent from a thread: the
    server may answer, and close, before it has all); the status and body of the answer, read within a
    scaled 15 s (a server waiting for the rest of a body never answers)."""
    import socket

    with socket.create_connection(("127.0.0.1", port)) as sock:
        head = ["POST /facestation/live/offer HTTP/1.1", "Host: 127.0.0.1",
                "Cookie: access-token-x=alice-session", "Content-Type: application/json", *headers]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())

        def send() -> None:
            with contextlib.suppress(OSError):  # the server answered and closed: the rest is not wanted
                sock.sendall(body)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sock.settimeout(scaled(15))
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
                got = sock.recv(65536)
                if not got:
                    break
                answer += got
        except TimeoutError:
            raise AssertionError(f"no answer within {scaled(15):.0f} s: the server waits for the whole body "
                                 f"(got {answer[:80]!r})") from None
    head_bytes, _, rest = answer.partition(b"\r\n\r\n")
    return int(head_bytes.split()[1]), rest.decode(errors="replace")


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_an_offer_declared_too_large_is_refused_before_its_body_is_read(
        shared: tuple[TestClient, Guard, LiveRuns]) -> None:
    start(shared[2])
    with served(shared) as port:  # 256 MB declared, 64 KiB sent: the answer comes without the rest
        status, text = post_by_hand(port, [f"Content-Length: {256 << 20}"], b"x" * (64 << 10))
    assert status == 413, text
    assert "too large (at most 262144)" in text and str(256 << 20) in text


def test_an_offer_sent_in_chunks_is_refused_once_it_passes_the_limit(
        shared: tuple[TestClient, Guard, LiveRuns]) -> None:
    start(shared[2])
    chunk = b"x" * (64 << 10)
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(5))  # 320 KiB, no last chunk
    with served(shared) as port:
        status, text = post_by_hand(port, ["Transfer-Encoding: chunked"], body)
    assert status == 413 and "too large" in text, text


@pytest.mark.parametrize(("body", "says"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # was a 500 (Python's JSON recursion limit)
    (b'{"token": "TOKEN", "sdp": "v=0\\r\\nm=video x y z\\r\\n", "type": "offer"}', "its SDP does not parse"),
    (b'{"token": "TOKEN", "sdp": "v=0\\r\\no=- 1 1 IN IP4 1.2.3.4\\r\\ns=-\\r\\nt=0 0\\r\\n'
     b'm=video 9 UDP/TLS/RTP/SAVPF 96\\r\\na=rtpmap:96 VP8\\r\\n", "type": "offer"}',
     "its SDP does not parse"),
    (b'{"token": "TOKEN", "sdp": "v=0\\r\\nm=video 9 UDP/TLS/RTP/SAVPF 96\\r\\n", "type": "offer"}',
     "the browser's offer was refused"),
])
def test_a_malformed_offer_is_answered_4xx_in_one_line_over_http(
        shared: tuple[TestClient, Guard, LiveRuns], body: bytes, says: str) -> None:
    token = start(shared[2]).token.encode()
    with served(shared) as port:
        data = body.replace(b"TOKEN", token)
        status, text = post_by_hand(port, [f"Content-Length: {len(data)}"], data)
    assert 400 <= status < 500, (status, text)
    detail = json.loads(text)["detail"]
    assert says in detail and "\n" not in detail and "Traceback" not in text, detail


def test_a_run_answers_only_its_user_and_session(shared: tuple[TestClient, Guard, LiveRuns]) -> None:
    client, _, runs = shared
    run = start(runs)
    run.offer(np.zeros((8, 8, 3), np.uint8))
    for session in ("bob-session", "alice-other"):  # another user; alice in another login session
        client.cookies.set("access-token-x", session)
        assert client.get(f"/facestation/live/stats/{run.token}").status_code == 404
        r = client.post("/facestation/live/offer", json={"token": run.token, "sdp": OFFER, "type": "offer"})
        assert r.status_code == 404 and "no live run of yours" in r.json()["detail"]
        with pytest.raises(UserError, match="no live run of yours"):
            runs.stop(run.token, "bob" if session == "bob-session" else "alice", session)
        assert client.post(f"/facestation/live/stop/{run.token}").status_code == 404
    client.cookies.set("access-token-x", "alice-session")
    stats = client.get(f"/facestation/live/stats/{run.token}")
    assert stats.status_code == 200 and stats.json()["frames_captured"] == 1
    assert client.get("/facestation/live/stats/unknown").status_code == 404
    stopped = client.post(f"/facestation/live/stop/{run.token}")  # as the page's beacon sends it
    assert stopped.status_code == 200 and stopped.json()["frames_captured"] == 1, stopped.text
    assert len(runs) == 0 and client.post(f"/facestation/live/stop/{run.token}").status_code == 404


def test_check_offer_and_check_live_refuse_in_one_line() -> None:
    assert check_offer(OFFER, "offer") == (OFFER, "offer")
    with pytest.raises(BadOffer, match="type 'rollback'"):
        check_offer(OFFER, "rollback")
    with pytest.raises(UserError, match="add a source photo"):
        check_live(Settings(), [])
    with pytest.raises(UserError, match="nothing of it runs live"):
        check_live(Settings.model_validate({"processors": {"order": ["lip_syncer"]}}),
                   [photos.grace_hopper_path()])


def frame(i: int) -> np.ndarray:
    out = np.zeros((48, 64, 3), np.uint8)
    out[:, :32] = i  # the left half carries the frame's number: a mirror moves it right
    return out


def test_the_run_processes_the_newest_frame_and_counts_the_ones_replaced(tmp_path: Path) -> None:
    runs = LiveRuns(build=marking)
    run = start(runs, record_to=tmp_path / "live.mp4")
    for i in (1, 2, 3):  # three frames arrive while nothing is processed: only the newest is
        run.offer(frame(i))
    item, out = run.process_next()  # type: ignore[misc]
    run.engine.delivered(item)
    assert item.index == 2 and int(out[0, 0, 0]) == 255 - 3  # inverted: the run's step
    run.mirror = True
    run.offer(frame(9))
    item, out = run.process_next()  # type: ignore[misc]
    run.engine.delivered(item)
    assert int(out[0, 0, 0]) == 255 and int(out[0, -1, 0]) == 255 - 9  # mirrored before the step
    summary = run.summary()
    assert (summary["frames_captured"], summary["frames_delivered"], summary["frames_dropped"]) == (4, 2, 2)
    stats, recording = runs.stop(run.token, "alice", "alice-session")
    assert stats["frames_delivered"] == 2 and recording == tmp_path / "live.mp4"
    recorded = list(read_frames(recording))
    assert len(recorded) == 2 and abs(int(recorded[0][0, 0, 0]) - 252) < 8
    assert len(runs) == 0 and run.process_next() is None  # stopped: the camera's handoff is closed


def test_a_live_tab_recording_writes_its_quality_report_beside_it(tmp_path: Path) -> None:
    """The real chain: each processed frame recorded, one record per frame of the file (a replaced frame's
    place repeating the one before)."""
    from tests.videos import _face_frames

    runs = LiveRuns()
    run = start(runs, record_to=tmp_path / "tab.mp4")
    faces = _face_frames(photos.astronaut(), 6, 320, 240)
    for i, face in enumerate(faces):
        run.offer(face)
        if i != 2:  # frame 2 replaced by frame 3 before it is processed
            item, _ = run.process_next()  # type: ignore[misc]
            run.engine.delivered(item)
    stats, recording = runs.stop(run.token, "alice", "alice-session")
    report = json.loads((tmp_path / "tab.quality.json").read_text())
    assert recording == tmp_path / "tab.mp4" and count_frames(recording) == 6
    assert [f["frame"] for f in report["frames"]] == list(range(6)) and report["identity"] is False
    assert [f["swapped"] for f in report["frames"]] == [1] * 6


def test_an_update_applies_new_settings_to_the_running_stream() -> None:
    built: list[Settings] = []

    def build(sources: Any, fps: float, report: Any = None) -> Any:
        def step_for(settings: Settings) -> Any:
            built.append(settings)
            return lambda f: f + len(built)
        return step_for

    runs = LiveRuns(build=build)
    run = start(runs)
    run.offer(frame(0))
    assert int(run.process_next()[1][0, 0, 0]) == 1  # type: ignore[index]
    assert runs.update(run.token, "alice", "alice-session", Settings(), [photos.grace_hopper_path()]) is False
    assert len(built) == 1  # the same settings and photos: nothing rebuilt, the stream goes on as it is
    assert runs.update(run.token, "alice", "alice-session", Settings.model_validate(
        {"color": {"strength": 0.4}}), [photos.grace_hopper_path()]) is True
    run.offer(frame(0))
    assert int(run.process_next()[1][0, 0, 0]) == 2  # type: ignore[index]
    assert built[-1].color.strength == 0.4
    with pytest.raises(UserError, match="no live run of yours"):
        runs.update(run.token, "bob", "bob-session", Settings(), [photos.grace_hopper_path()])


def test_the_app_starts_without_aiortc_and_the_tab_says_what_to_install(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = f"""
import sys; sys.modules['aiortc'] = None  # as if not installed: `import aiortc` raises ImportError
from pathlib import Path
from webui.app import build
from webui.common import UiConfig
app = build(UiConfig(data=Path({str(tmp_path)!r}), outputs=Path({str(tmp_path)!r}) / 'o', worker=False))
live = app.components['live']
print(live['missing'].visible, live['start'].interactive, '|', live['missing'].value)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("True False |") and "pip install 'facestation[live]'" in out, out


def test_the_page_and_the_tab_read_the_index_code_of_the_test_camera() -> None:
    from tests.test_live import BITS, SQUARE
    from webui import live_page

    assert (live_page.INDEX_BITS, live_page.INDEX_SQUARE) == (BITS, SQUARE)
    assert f"const BITS = {BITS}, S = {SQUARE};" in live_page.LIVE_JS


class Camera:
    """A page's camera for aiortc: frames at 30 fps (made on first use: aiortc is optional), 64×48 of
    value 100, or from frame ``change`` on ``size`` of value 200 (a camera that changed its size)."""

    @staticmethod
    def track(change: int | None = None, size: tuple[int, int] = (48, 36)) -> Any:
        import fractions

        from aiortc import MediaStreamTrack
        from av import VideoFrame

        class Track(MediaStreamTrack):
            kind = "video"

            def __init__(self) -> None:
                super().__init__()
                self.sent = 0

            async def recv(self) -> VideoFrame:
                await asyncio.sleep(1 / 30)
                changed = change is not None and self.sent >= change
                w, h = size if changed else (64, 48)
                frame = VideoFrame.from_ndarray(np.full((h, w, 3), 200 if changed else 100, np.uint8),
                                                format="bgr24")
                frame.pts, frame.time_base = self.sent * 3000, fractions.Fraction(1, 90000)
                self.sent += 1
                return frame

        return Track()


@contextmanager
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop on its own thread, as the app's server runs one."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(scaled(30))
        loop.close()


async def page_connects(runs: LiveRuns, token: str, frames_back: int, camera: Any = None,
                        until: Any = None) -> Any:
    """A page (aiortc as the browser) that sends its camera (``camera``: a track of :class:`Camera`'s),
    once ``frames_back`` frames have come back (``until``: and then one it says yes to); the page, whose
    ``received`` are the frames back (the page goes on receiving)."""
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
    from aiortc.mediastreams import MediaStreamError

    page = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    page.addTrack(camera or Camera.track())
    back = asyncio.get_running_loop().create_future()
    received: list[np.ndarray] = []

    @page.on("track")
    def on_track(track: Any) -> None:
        async def receive() -> None:
            with contextlib.suppress(MediaStreamError):
                while True:
                    received.append((await track.recv()).to_ndarray(format="bgr24"))
                    if not back.done() and len(received) >= frames_back and (until is None
                                                                              or until(received[-1])):
                        back.set_result(True)
        asyncio.ensure_future(receive())

    await page.setLocalDescription(await page.createOffer())
    answer = await runs.answer(token, "alice", "alice-session", page.localDescription.sdp, "offer")
    await page.setRemoteDescription(RTCSessionDescription(**answer))
    await back
    page.received = received
    return page


def test_a_run_whose_page_leaves_without_stop_is_ended_by_the_server(tmp_path: Path) -> None:
    pytest.importorskip("aiortc")
    runs = LiveRuns(build=marking)
    run = start(runs, record_to=tmp_path / "live.mp4")
    with event_loop() as loop:
        page = asyncio.run_coroutine_threadsafe(page_connects(runs, run.token, 5), loop).result(scaled(60))
        assert len(runs) == 1 and run.summary()["frames_delivered"] >= 5
        asyncio.run_coroutine_threadsafe(page.close(), loop).result(scaled(30))  # gone, no Stop
        wait_until(lambda: len(runs) == 0, 30, "the server to end the run its page left")
    with pytest.raises(UserError, match="no live run of yours"):
        runs.get(run.token, "alice", "alice-session")
    recorded = list(read_frames(tmp_path / "live.mp4"))  # finished and kept
    assert len(recorded) >= 5 and abs(int(recorded[0][0, 0, 0]) - 155) < 8  # 255 - 100: the run's step
    with pytest.raises(UserError, match="no live run of yours"):
        runs.stop(run.token, "bob", "bob-session")  # its summary is its owner's only
    summary, recording = runs.stop(run.token, "alice", "alice-session")  # her Stop, pressed after
    assert summary["frames_delivered"] >= 5 and recording == tmp_path / "live.mp4"
    with pytest.raises(UserError, match="no live run of yours"):
        runs.stop(run.token, "alice", "alice-session")  # once


def test_the_apps_end_stops_its_live_runs_and_finishes_their_recordings(tmp_path: Path) -> None:
    runs = LiveRuns(build=marking)
    live = start(runs, record_to=tmp_path / "live.mp4")
    start(runs, "bob", "bob-session")
    live.offer(frame(7))
    live.engine.delivered(live.process_next()[0])  # type: ignore[index]
    assert runs.stop_all() == 2 and len(runs) == 0
    assert len(list(read_frames(tmp_path / "live.mp4"))) == 1
    with pytest.raises(UserError, match="no live run of yours"):
        runs.get(live.token, "alice", "alice-session")


def failing(at: int, error: BaseException) -> Any:
    """A build whose step inverts frames and raises ``error`` at frame ``at``."""

    def build(sources: Any, fps: float, report: Any = None) -> Any:
        seen = [0]

        def step(frame: np.ndarray) -> np.ndarray:
            seen[0] += 1
            if seen[0] == at:
                raise error
            return 255 - frame
        return lambda settings: step
    return build


@pytest.mark.parametrize(("error", "says"), [
    (RuntimeError("boom\nat line 2"), "the live stream stopped on an internal error (RuntimeError: boom)"),
    (UserError("the source photo is gone"), "the source photo is gone"),
])
def test_an_error_in_the_chain_ends_the_run_in_one_line_and_keeps_its_recording(
        tmp_path: Path, error: BaseException, says: str) -> None:
    pytest.importorskip("aiortc")
    runs = LiveRuns(build=failing(8, error))
    run = start(runs, record_to=tmp_path / "live.mp4")
    with event_loop() as loop:
        page = asyncio.run_coroutine_threadsafe(page_connects(runs, run.token, 3), loop).result(scaled(60))
        wait_until(lambda: len(runs) == 0, 30, "the server to end the run its chain failed in")
        status = runs.status(run.token, "alice", "alice-session")  # what the page's poll reads
        assert status["ended"] and status["error"] == says, status
        asyncio.run_coroutine_threadsafe(page.close(), loop).result(scaled(30))
    summary, recording = runs.stop(run.token, "alice", "alice-session")  # the page's Stop, pressed for it
    assert summary["error"] == says and recording == tmp_path / "live.mp4"
    recorded = list(read_frames(recording))  # the frames before the failure, kept and playable
    assert len(recorded) >= 7 and abs(int(recorded[0][0, 0, 0]) - 155) < 8
    assert summary["frames_delivered"] in (6, 7)  # the last one processed may not have been sent


def test_a_camera_that_changes_its_size_mid_run_goes_on_and_is_recorded_whole(tmp_path: Path) -> None:
    pytest.importorskip("aiortc")
    runs = LiveRuns(build=marking)
    run = start(runs, record_to=tmp_path / "live.mp4")
    camera = Camera.track(change=20, size=(48, 36))  # from its 21st frame on: 48×36 (was 64×48), value 200
    with event_loop() as loop:
        page = asyncio.run_coroutine_threadsafe(page_connects(
            runs, run.token, 5, camera, until=lambda f: f.shape[:2] == (36, 48)), loop).result(scaled(60))
        more = len(page.received) + 5  # the stream goes on at the new size
        wait_until(lambda: len(page.received) >= more, 30, "five more frames at the camera's new size")
        assert run.size == (48, 36) and len(runs) == 1 and run.error is None
        asyncio.run_coroutine_threadsafe(page.close(), loop).result(scaled(30))
        wait_until(lambda: len(runs) == 0, 30, "the server to end the run its page left")
    summary, recording = runs.stop(run.token, "alice", "alice-session")
    assert summary["error"] is None and recording is not None
    info = probe(recording)
    assert (info.width, info.height) == (64, 48)  # the recording's size: the first frame's
    shades = [int(f[24, 32, 0]) for f in read_frames(recording)]
    before, after = [s for s in shades if abs(s - 155) < 10], [s for s in shades if abs(s - 55) < 10]
    assert before and after and shades.index(after[0]) > shades.index(before[-1])  # both, in order
    assert len(shades) == summary["frames_captured"] - shades_missing(run)  # the whole run, at its pace


def shades_missing(run: Any) -> int:
    """Frames captured before the first one delivered: a recording starts at its first frame."""
    return run.engine.stats.indices[0]
