"""The Live tab in Debian's chromium with a fake camera: a face clip whose frames carry their index in a
corner (tests/test_live.py's code), given to the browser as its camera; the page sends it over WebRTC and
plays what comes back. Read back from the page's <video>: the index advances, and the face differs from
the camera's frame of the same index (it was swapped) while the index corner is the camera's."""

from __future__ import annotations

import base64
import contextlib
import math
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from pipeline.video.decode import read_frames
from pipeline.video.probe import probe
from tests.browser.helpers import chromium, open_tab, running_app, screenshot, sign_in, upload
from tests.photos import grace_hopper_path
from tests.test_live import index_clip, read_index
from tests.timing import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SIZE = (320, 240)
FRAMES = 90  # the fake camera loops the file: 3 s at 30 fps, indices 0-89 over and over
SAMPLES = 30  # frames back measured in the page, the camera's loop wrapping among them

GRAB = """(selector) => {
  const v = document.querySelector(selector);
  if (!v || !v.videoWidth) return null;
  const c = document.createElement('canvas');
  c.width = v.videoWidth; c.height = v.videoHeight;
  c.getContext('2d').drawImage(v, 0, 0);
  return c.toDataURL('image/png');
}"""


def fake_camera(tmp_path: Path, size: tuple[int, int] = SIZE) -> tuple[Path, list[np.ndarray]]:
    """A y4m for chromium's fake camera: the face clip of FRAMES frames, each stamped with its index."""
    clip = index_clip(tmp_path / "camera.mp4", seconds=FRAMES / 30, size=size)
    y4m = tmp_path / "camera.y4m"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", str(clip), "-pix_fmt",
                    "yuv420p", "-f", "yuv4mpegpipe", str(y4m)], check=True, capture_output=True)
    return y4m, list(read_frames(clip))


PAGE_STATE = """() => [window.fsLive.state.pc && window.fsLive.state.pc.connectionState,
  ...['#live-overlay', '#live-status'].map((id) => document.querySelector(id).innerText),
  ...['#live-local', '#live-remote'].map((id) => document.querySelector(id).videoWidth)]"""


def camera_args(y4m: Path) -> list[str]:
    """chromium's fake camera playing ``y4m`` (looped), given without asking; host ICE candidates as is."""
    return ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-video-capture={y4m}", "--disable-features=WebRtcHideLocalIpsWithMdns"]


def live_page(browser: Any, url: str) -> Any:
    """A page of the app with a source photo, on the Live tab (not started)."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url)
    page.wait_for_selector("#sources")
    upload(page, "sources", grace_hopper_path())
    wait_until(lambda: page.locator("#sources").inner_text().count("grace"), 60, "the source upload")
    open_tab(page, "Live")
    return page


def grab(page: Any, selector: str, size: tuple[int, int] = SIZE) -> np.ndarray | None:
    """The frame ``selector``'s video shows now, at ``size`` (None before it has one)."""
    url = page.evaluate(GRAB, selector)
    if not url:
        return None
    data = np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8)
    frame = cv2.imdecode(data, cv2.IMREAD_COLOR)
    return None if frame is None else cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


def enough(measured: dict[str, Any]) -> dict[str, Any] | None:
    indices = measured["indices"]
    wrapped = any(b < a for a, b in zip(indices, indices[1:], strict=False))  # ... 88, 89, 0, 1 ...
    return measured if measured["samples"] >= SAMPLES and wrapped else None


def check_measure(measured: dict[str, Any]) -> None:
    """The page's own glass-to-glass figures: read back from the video, not a speed threshold."""
    p50, p95, fps = measured["latency_p50_ms"], measured["latency_p95_ms"], measured["fps"]
    assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in (p50, p95, fps)), measured
    assert 0 < p50 <= p95 and fps > 0, measured
    assert measured["received"] >= measured["samples"], measured  # each measured frame came back
    indices = measured["indices"]
    assert len(indices) >= SAMPLES and all(0 <= i < FRAMES for i in indices), indices
    # in the camera's order: each index back showed in the camera no earlier than the one before (its
    # latency taken from the camera's latest loop, not one 3 s older; two frames of one busy display
    # refresh share its time), a new frame each time
    shown = measured["shown_ms"]
    pairs = list(zip(indices, shown, strict=True))
    backwards = [(a, b) for a, b in zip(pairs, pairs[1:], strict=False) if a[1] > b[1]]
    assert not backwards, (backwards, pairs)
    assert all((b - a) % FRAMES for a, b in zip(indices, indices[1:], strict=False)), indices


def describe(measured: dict[str, Any]) -> str:
    return (f"{measured['fps']:.1f} fps, glass to glass p50 {measured['latency_p50_ms']:.0f} ms, "
            f"p95 {measured['latency_p95_ms']:.0f} ms ({measured['samples']} frames)")


def face_box(frame: np.ndarray) -> tuple[slice, slice]:
    h, w = frame.shape[:2]
    return slice(h // 4, 3 * h // 4), slice(w // 3, 2 * w // 3)


def test_the_live_tab_swaps_the_browsers_camera_over_webrtc(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    y4m, camera = fake_camera(tmp_path)
    from pipeline.live import step as live_step

    changed: list[float] = []  # per frame the server processed: how much the chain changed the face box
    chain_step = live_step.ChainStep.__call__

    def watched(self: live_step.ChainStep, frame: np.ndarray) -> np.ndarray:
        before = frame.copy()  # the step may blend into the frame itself
        out = chain_step(self, frame)
        rows, cols = face_box(before)
        inside = np.abs(out[rows, cols].astype(int) - before[rows, cols].astype(int)).mean()
        changed.append(float(inside))
        return out

    monkeypatch.setattr(live_step.ChainStep, "__call__", watched)  # the app runs in this process
    with running_app(worker=False, data=tmp_path / "data", outputs=tmp_path / "outputs") as (url, app), \
            chromium(camera_args(y4m)) as browser:
        page = live_page(browser, url)
        page.locator("#live-record input").check()
        page.locator("#live-start").click()
        seen: list[tuple[int, np.ndarray]] = []

        def received() -> bool:
            frame = grab(page, "#live-remote")
            if frame is not None and float(frame.mean()) > 10:
                seen.append((read_index(frame), frame))
            return len({i for i, _ in seen}) >= 5

        try:
            wait_until(received, 120, "five different frames back from the server")
        except AssertionError as exc:  # say where it stopped: the connection, the overlay, the status
            raise AssertionError(f"{exc}; the page: {page.evaluate(PAGE_STATE)}") from None
        measured = wait_until(lambda: enough(page.evaluate("window.fsLive.measure()")), 60,
                              f"{SAMPLES} frames back measured in the page, the camera's loop wrapping")
        overlay = wait_until(lambda: "glass to glass" in page.inner_text("#live-overlay")
                             and page.inner_text("#live-overlay"), 30, "the glass-to-glass overlay")
        page.set_viewport_size({"width": 1440, "height": 900})
        screenshot(page, "live-tab")
        indices = [i for i, _ in seen]
        steps = [(b - a) % FRAMES for a, b in zip(indices, indices[1:], strict=False)]
        assert all(i < FRAMES for i in indices), indices  # each read back is a frame the camera sent
        assert sum(s for s in steps if s < FRAMES // 2) > 0 and sum(steps) > 0, indices  # it advances
        # the frames that came back went through the chain, which swapped the face (measured on the server,
        # before the video codec: the codec's own changes at 320×240 are as large as a classic swap's)
        assert len(changed) >= 5 and float(np.median(changed)) > 1.0, changed  # 2–4 a swap, 0 none
        check_measure(measured)
        print(f"measured in the page: {describe(measured)}; overlay: {overlay}")
        page.locator("#live-stop").click()
        said = wait_until(lambda: "saved to your results" in page.inner_text("#live-status")
                          and page.inner_text("#live-status"), 30, "the stop summary")
        assert said.startswith("stopped; ") and "not applied" not in said, said  # a plain line
        # nothing stale: the meters cleared, no poll left to write over them
        assert page.inner_text("#live-overlay") == "stopped"
        assert page.evaluate("window.fsLive.state.timer") is None
        assert page.evaluate("window.fsLive.measure()")["fps"] == 0
        assert len(app.ctx.live) == 0
    recordings = list((tmp_path / "outputs" / "local").glob("live-swap-*.mp4"))
    assert len(recordings) == 1 and recordings[0].name in said
    recorded = [read_index(f) for f in read_frames(recordings[0])]
    assert len(recorded) >= 5 and all(i < FRAMES for i in recorded)
    tags = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format_tags=comment", "-of",
                           "default=nw=1:nk=1", str(recordings[0])], capture_output=True, text=True).stdout
    assert "synthetic media: face swapped with facestation" in tags


@contextlib.contextmanager
def recording_live(tmp_path: Path, size: tuple[int, int] = SIZE) -> Iterator[tuple[Any, Any]]:
    """The app (its results in ``tmp_path / "outputs"``) and chromium with the fake camera at ``size``; a
    page on the Live tab, started with Record on: (page, app)."""
    y4m, _ = fake_camera(tmp_path, size)
    with running_app(worker=False, data=tmp_path / "data", outputs=tmp_path / "outputs") as (url, app), \
            chromium(camera_args(y4m)) as browser:
        page = live_page(browser, url)
        page.locator("#live-record input").check()
        page.locator("#live-start").click()
        yield page, app


def recorded_in(outputs: Path, said: str) -> Path:
    """The one live recording in the local user's results, named in the status line ``said``."""
    recordings = list((outputs / "local").glob("live-swap-*.mp4"))
    assert len(recordings) == 1 and recordings[0].name in said, (recordings, said)
    return recordings[0]


def status_after_stop(page: Any) -> str:
    def said() -> str | None:
        text = page.inner_text("#live-status")
        return text if text.startswith("stopped") else None
    return wait_until(said, 30, "the stop summary")


def test_a_camera_that_changes_its_size_mid_run_goes_on_and_is_recorded_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the browser does under load (here: the user picks a smaller size while live): the camera sends
    320×240 instead of 640×480; the stream goes on at the new size, and Stop keeps a recording of the
    whole run at the size it started with."""
    # the user's change is the one under test: the server's own advice (a smaller camera when this machine
    # falls behind, as it does under load: 480×360 before the user's pick) is held for the run
    monkeypatch.setattr("pipeline.live.adapt.GRACE_S", math.inf)
    outputs = tmp_path / "outputs"
    with recording_live(tmp_path, (640, 480)) as (page, app):
        # the frames the server sent (its stats, polled by the page; the page's own index meter reads
        # the test camera's code at its first size only)
        def received() -> int:
            return int((page.evaluate("window.fsLive.state.server") or {}).get("frames_delivered", 0))

        wait_until(lambda: received() >= 30, 120, "30 swapped frames sent at 640×480")
        assert page.evaluate("document.querySelector('#live-remote').videoWidth") == 640
        page.select_option("#live-size", "320x240")  # applied to the running camera
        wait_until(lambda: page.evaluate("document.querySelector('#live-remote').videoWidth") == 320, 60,
                   "the swapped video at the camera's new size")
        then = received()
        wait_until(lambda: received() >= then + 30, 60, "30 more frames sent after the change")
        presented = page.evaluate("window.fsLive.measure()")["presented"][1]
        wait_until(lambda: page.evaluate("window.fsLive.measure()")["presented"][1] >= presented + 10, 30,
                   "the page to show 10 more frames")
        server = page.evaluate("window.fsLive.state.server")
        assert server["size"] == [320, 240] and not server["ended"], server
        assert "expected a" not in page.inner_text("#live-overlay")
        page.locator("#live-stop").click()
        said = status_after_stop(page)
        assert len(app.ctx.live) == 0 and "saved to your results" in said, said
    captured = int(said.split(" dropped of ")[1].split(";")[0])
    recording = recorded_in(outputs, said)
    info = probe(recording)
    frames = list(read_frames(recording))
    assert (info.width, info.height) == (640, 480)  # the run's first size: later frames fitted to it
    # the whole run, at the camera's pace: a frame for each one captured from the first delivered on
    assert captured - 30 <= len(frames) <= captured and abs(info.duration - len(frames) / 30) < 0.2
    assert all(f.shape == (480, 640, 3) for f in frames)


def test_an_error_in_the_chain_shows_on_the_page_ends_the_run_and_keeps_its_recording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACESTATION_TEST_LIVE_FAIL_FRAME", "40")  # the app runs in this process
    outputs = tmp_path / "outputs"
    with recording_live(tmp_path) as (page, app):
        said = "the live stream stopped on an internal error (RuntimeError: " \
               "FACESTATION_TEST_LIVE_FAIL_FRAME=40: the chain fails here)"
        try:
            overlay = wait_until(lambda: said in page.inner_text("#live-overlay")
                                 and page.inner_text("#live-overlay"), 120, "the error on the page")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the page: {page.evaluate(PAGE_STATE)}, "
                                 f"{page.evaluate('window.fsLive.state.server')}") from None
        assert overlay == f"stopped: {said}"  # one line, nothing else
        status = status_after_stop(page)  # the page pressed Stop for the summary
        assert re.fullmatch(rf"stopped: {re.escape(said)}; \d+ frames swapped, \d+ dropped of \d+; "
                            r"recording saved to your results as live-swap-\S+\.mp4", status), status
        assert len(app.ctx.live) == 0 and page.evaluate("window.fsLive.state.token") == ""
        screenshot(page, "live-error")
    frames = list(read_frames(recorded_in(outputs, status)))
    # the camera's frames, by their index code (VP8 at the low bitrate of a loaded machine may blur a bit of
    # a few: nine in ten read back as a camera index)
    read = [read_index(f) < FRAMES for f in frames]
    assert len(frames) >= 39 and sum(read) >= 0.9 * len(frames), (len(frames), sum(read))


def test_the_camera_picker_lists_the_fake_cameras_and_obs_receives_the_stream(tmp_path: Path) -> None:
    """Three fake cameras (chromium's test patterns; the second is a depth camera, Y16): the picker lists
    them, the third one picked is the one sent; "Also send to: OBS" streams the swapped frames as MPEG-TS
    over UDP, read here."""
    from tests.test_live import udp_receiver

    received = tmp_path / "received.ts"
    fake = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream=device-count=3",
            "--disable-features=WebRtcHideLocalIpsWithMdns"]
    with running_app(worker=False, data=tmp_path / "data", outputs=tmp_path / "outputs") as (url, app), \
            chromium(fake) as browser, udp_receiver(received) as port:
        page = live_page(browser, url)
        cameras = wait_until(lambda: [o for o in page.locator("#live-camera option").all_inner_texts()
                                      if o.startswith("fake_device")] or None, 30, "the cameras listed")
        assert cameras == ["fake_device_0", "fake_device_1", "fake_device_2"], cameras
        page.select_option("#live-camera", label="fake_device_2")
        page.locator("#live-send-to input").first.click()
        page.get_by_role("option", name="OBS (MPEG-TS over UDP)", exact=True).first.click()
        target = page.locator("#live-send-target input, #live-send-target textarea").first
        wait_until(lambda: target.input_value() == "udp://127.0.0.1:5000", 10, "the OBS address filled in")
        target.fill(f"udp://127.0.0.1:{port}")
        target.press("Enter")
        page.locator("#live-start").click()
        try:
            wait_until(lambda: page.evaluate("window.fsLive.measure()")["fps"] > 0, 120, "frames back")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the page: {page.evaluate(PAGE_STATE)}, "
                                 f"{page.evaluate('window.fsLive.state.server')}") from None
        assert page.evaluate("window.fsLive.state.stream.getVideoTracks()[0].label") == "fake_device_2"
        assert f"sending to udp://127.0.0.1:{port}" in page.inner_text("#live-status")
        wait_until(lambda: received.stat().st_size > 200_000, 60, "the stream at the UDP receiver")
        page.locator("#live-mirror input").check()  # both panels: the camera's by the page, the swapped
        transform = "getComputedStyle(document.querySelector('#live-local')).transform"  # by the server
        wait_until(lambda: page.evaluate(transform) == "matrix(-1, 0, 0, 1, 0, 0)", 10, "the camera mirrored")
        wait_until(lambda: all(r.mirror for r in app.ctx.live._runs.values()), 10, "the stream mirrored")
        page.locator("#live-stop").click()
        status_after_stop(page)
    frames = list(read_frames(received))
    assert len(frames) >= 10 and frames[0].shape == (480, 640, 3)  # chromium's fake camera: 640×480


USERS = (("alice", "alice-pw"), ("bob", "bob-pw"))




def test_live_over_https_with_two_accounts(tmp_path: Path) -> None:
    """As a colleague's laptop would: the UI over HTTPS (``--listen``'s self-signed certificate), alice
    live and receiving swapped frames, bob signed in beside her seeing nothing of hers; alice's page
    closed without Stop ends her run on the server, her recording kept in her results only."""
    y4m, _ = fake_camera(tmp_path)
    outputs = tmp_path / "outputs"
    with running_app(users=USERS, self_signed=True, worker=False, data=tmp_path / "data",
                     outputs=outputs) as (url, app), chromium(camera_args(y4m)) as browser:
        url = url.replace("http://", "https://")
        alice, bob = (sign_in(browser, url, *account, https=True) for account in USERS)
        anon = browser.new_context(ignore_https_errors=True)
        upload(alice, "sources", grace_hopper_path())
        wait_until(lambda: alice.locator("#sources").inner_text().count("grace"), 60, "alice's source upload")
        open_tab(alice, "Live")
        alice.locator("#live-record input").check()
        alice.locator("#live-start").click()
        assert alice.evaluate("window.isSecureContext")  # the camera is given to the HTTPS page
        measured = wait_until(lambda: enough(alice.evaluate("window.fsLive.measure()")), 120,
                              f"{SAMPLES} swapped frames back in alice's page over HTTPS")
        check_measure(measured)
        print(f"over HTTPS: {describe(measured)}")
        token = alice.evaluate("window.fsLive.state.token")
        assert token and len(app.ctx.live) == 1
        screenshot(alice, "live-https-alice")

        open_tab(bob, "Live")  # bob's page shows no stream of hers
        assert bob.evaluate("document.querySelector('#live-remote').srcObject") is None
        assert bob.inner_text("#live-overlay") == "stopped"
        assert bob.evaluate("window.fsLive.state.token") == ""
        offer = {"token": token, "sdp": "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n", "type": "offer"}
        for who, status in ((bob.request, 404), (anon.request, 401)):  # her run, as another, as nobody
            assert who.get(f"{url}/facestation/live/stats/{token}").status == status
            assert who.post(f"{url}/facestation/live/offer", data=offer).status == status
            assert who.post(f"{url}/facestation/live/stop/{token}").status == status
        assert len(app.ctx.live) == 1  # still running for alice
        screenshot(bob, "live-https-bob")

        alice.close(run_before_unload=True)  # gone without Stop: the page's beacon ends her run
        wait_until(lambda: len(app.ctx.live) == 0, 60, "the server to end the run of alice's closed page")
        recordings = list(outputs.rglob("live-swap-*.mp4"))  # finished and kept, in her results only
        assert [r.relative_to(outputs).parts[0] for r in recordings] == ["alice"], recordings
        open_tab(bob, "Queue")  # bob's results
        assert recordings[0].name not in bob.inner_text("body")
    assert len(list(read_frames(recordings[0]))) >= SAMPLES // 2
