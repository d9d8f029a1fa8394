"""The Live tab's signalling routes, without a browser: behind the login gate (401 without a login on a
shared UI), a bad offer answered 400 in one line, a run answering only the user and session that started
it; and the run's frames: the newest one processed, the ones replaced before it counted as dropped, mirror
and recording."""

from __future__ import annotations

from collections.abc import Iterator
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
    client.cookies.set("access-token-x", "forged")
    assert client.get(f"/facestation/live/stats/{token}").status_code == 401


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
    client.cookies.set("access-token-x", "alice-session")
    stats = client.get(f"/facestation/live/stats/{run.token}")
    assert stats.status_code == 200 and stats.json()["frames_captured"] == 1
    assert client.get("/facestation/live/stats/unknown").status_code == 404


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
