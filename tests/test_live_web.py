"""The Live tab's signalling routes, without a browser: behind the login gate (401 without a login on a
shared UI), a bad offer answered 400 in one line, a run answering only the user and session that started
it; and the run's frames: the newest one processed, the ones replaced before it counted as dropped, mirror
and recording."""

from __future__ import annotations

import asyncio
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
from tests import photos
from tests.timing import scaled, wait_until
from webui.audit import AuditLog
from webui.auth import Gate, Guard

starlette = pytest.importorskip("starlette")
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from webui import live_routes  # noqa: E402

OFFER = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"


def marking(sources: Any, fps: float) -> Any:
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


def test_an_update_applies_new_settings_to_the_running_stream() -> None:
    built: list[Settings] = []

    def build(sources: Any, fps: float) -> Any:
        def step_for(settings: Settings) -> Any:
            built.append(settings)
            return lambda f: f + len(built)
        return step_for

    runs = LiveRuns(build=build)
    run = start(runs)
    run.offer(frame(0))
    assert int(run.process_next()[1][0, 0, 0]) == 1  # type: ignore[index]
    runs.update(run.token, "alice", "alice-session", Settings.model_validate({"color": {"strength": 0.4}}),
                [photos.grace_hopper_path()])
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
    from webui import live_tab

    assert (live_tab.INDEX_BITS, live_tab.INDEX_SQUARE) == (BITS, SQUARE)
    assert f"const BITS = {BITS}, S = {SQUARE};" in live_tab.LIVE_JS


class Camera:
    """A page's camera for aiortc: grey frames at 30 fps (made on first use: aiortc is optional)."""

    @staticmethod
    def track() -> Any:
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
                frame = VideoFrame.from_ndarray(np.full((48, 64, 3), 100, np.uint8), format="bgr24")
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


async def page_connects(runs: LiveRuns, token: str, frames_back: int) -> Any:
    """A page (aiortc as the browser) that sends its camera and has ``frames_back`` frames come back."""
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    page = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    page.addTrack(Camera.track())
    back = asyncio.get_running_loop().create_future()

    @page.on("track")
    def on_track(track: Any) -> None:
        async def receive() -> None:
            for _ in range(frames_back):
                await track.recv()
            back.set_result(True)
        asyncio.ensure_future(receive())

    await page.setLocalDescription(await page.createOffer())
    answer = await runs.answer(token, "alice", "alice-session", page.localDescription.sdp, "offer")
    await page.setRemoteDescription(RTCSessionDescription(**answer))
    await back
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
