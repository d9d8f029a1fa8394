"""The parts of a browser's live stream that need no browser: where its time goes (the per-stage timeline,
CPU per thread, the event loop's lag), the camera rate and size it advises (counts and an injected clock),
the codec it prefers in the page's offer, and who may send it to the host's OBS or virtual camera."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.live.adapt import GRACE_S, MIN_FPS, REMEMBER_S, SETTLE_S, WINDOW_S, Adapter
from pipeline.live.timeline import LoopLag, ThreadCpu, Timeline, thread_group
from tests.test_live import Clock
from webui.common import UiConfig
from webui.live_tab import on_hosts_machine

# --- the timeline ---------------------------------------------------------------------------------------


def test_the_timeline_keeps_each_stages_durations_and_their_percentiles() -> None:
    clock = Clock()
    timeline = Timeline(clock)
    for ms in range(1, 101):  # chain: 1 .. 100 ms
        with timeline.span("chain"):
            clock.now += ms / 1000
    timeline.add("encode", 0.004)
    with pytest.raises(ValueError), timeline.span("to_bgr"):  # a stage that raises is still timed
        clock.now += 0.002
        raise ValueError
    summary = timeline.summary()
    assert list(summary) == ["chain", "encode", "to_bgr"]  # first-seen order
    assert summary["chain"] == {"p50_ms": 50.5, "p95_ms": 95.05, "max_ms": 100.0, "n": 100}
    assert summary["encode"]["p50_ms"] == 4.0 and summary["to_bgr"]["max_ms"] == 2.0
    for _ in range(400):  # only the last 300 of a stage are kept
        timeline.add("encode", 0.001)
    assert timeline.summary()["encode"] == {"p50_ms": 1.0, "p95_ms": 1.0, "max_ms": 1.0, "n": 300}


def test_threads_are_grouped_by_their_job() -> None:
    assert thread_group("Thread-7 (decoder_worker)") == "decoder_worker"
    assert thread_group("asyncio_3") == "asyncio" and thread_group("live-chain") == "live-chain"


def test_cpu_per_thread_counts_the_busy_thread_and_not_the_idle_one(tmp_path: Path) -> None:
    clock = Clock()
    threads = [SimpleNamespace(name="live-chain", native_id=101),
               SimpleNamespace(name="Thread-3 (decoder_worker)", native_id=102)]

    def stat(ticks: int) -> str:  # /proc/self/task/N/stat: utime and stime are fields 14 and 15
        return "101 (python) S " + " ".join(["0"] * 10) + f" {ticks} {ticks} 0 0\n"

    for thread in threads:
        (tmp_path / str(thread.native_id)).mkdir()
        (tmp_path / str(thread.native_id) / "stat").write_text(stat(0))
    (tmp_path / "103").mkdir()  # a thread Python did not start (onnxruntime's, the codecs')
    (tmp_path / "103" / "stat").write_text(stat(0))
    cpu = ThreadCpu(tmp_path, clock)
    cpu.start()
    clock.now = 2.0
    (tmp_path / "101" / "stat").write_text(stat(50))  # 100 ticks of 2 s: half a core at 100 ticks/s
    (tmp_path / "103" / "stat").write_text(stat(10))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(threading, "enumerate", lambda: threads)
        m.setattr("pipeline.live.timeline.TICK", 100)
        assert cpu.summary() == {"live-chain": 50.0, "native": 10.0}  # the idle one: not listed
    assert ThreadCpu(tmp_path / "nowhere").summary() == {}


def test_the_event_loops_lag_is_how_late_it_runs_what_was_due() -> None:
    timeline = Timeline()

    async def blocked() -> None:
        lag = asyncio.ensure_future(LoopLag(timeline, every=0.01).run())
        await asyncio.sleep(0.05)
        threading.Event().wait(0.2)  # the loop blocked (a conversion on it): its next tick is late
        await asyncio.sleep(0.05)
        lag.cancel()

    asyncio.run(blocked())
    assert timeline.summary()["loop_lag"]["max_ms"] >= 150


# --- the advice: what the camera should send -----------------------------------------------------------


def feed(adapter: Adapter, clock: Clock, seconds: float, made: float, sent: float, counts: list[int],
         size: tuple[int, int] = (640, 480)) -> Any:
    """``seconds`` of a camera making ``made`` frames a second and the server sending ``sent``, observed
    once a second (``counts``: captured and delivered so far, carried on); the last advice."""
    advice = adapter.advice
    for _ in range(int(seconds)):
        clock.now += 1
        counts[0] += round(made)
        counts[1] += round(sent)
        advice = adapter.observe(counts[0], counts[1], size)
    return advice


def test_a_server_that_falls_behind_advises_a_lower_rate_then_a_smaller_size() -> None:
    clock = Clock()
    adapter, counts = Adapter(30, clock), [0, 0]
    assert feed(adapter, clock, 10, 30, 29, counts).fps is None  # keeping up: nothing to ask
    adapter, counts = Adapter(30, clock), [0, 0]
    advice = feed(adapter, clock, GRACE_S + WINDOW_S + 1, 30, 15, counts)  # delivers half
    assert advice.fps == 18 and advice.size is None  # a little above what it delivers: 15 × 1.15
    assert "camera lowered to 18 fps" in advice.note
    assert feed(adapter, clock, SETTLE_S - 1, 18, 6, counts).fps == 18  # settling: no change yet
    advice = feed(adapter, clock, WINDOW_S, 18, 6, counts)
    assert advice.fps == MIN_FPS  # 6 × 1.15 is under the least rate asked
    advice = feed(adapter, clock, SETTLE_S + WINDOW_S, 10, 5, counts)  # still behind at the least rate
    assert advice.fps == MIN_FPS and advice.size == (480, 360) and "480×360" in advice.note
    assert advice.as_dict() == {"fps": MIN_FPS, "size": "480x360", "note": advice.note}


def test_a_server_that_keeps_up_again_steps_back_but_not_to_where_it_fell_behind_lately() -> None:
    clock = Clock()
    adapter, counts = Adapter(30, clock), [0, 0]
    feed(adapter, clock, GRACE_S, 30, 20, counts)  # the first seconds out: not judged
    assert feed(adapter, clock, WINDOW_S + 1, 30, 20, counts).fps == 23  # behind at 30 (at t = 9 s)
    assert feed(adapter, clock, SETTLE_S, 23, 23, counts).fps == 28  # keeps up at 23: a step up
    # keeps up at 28; 30 is where it fell behind, 30 s ago only at t = 39 s
    assert feed(adapter, clock, REMEMBER_S - 10, 28, 28, counts).fps == 28
    assert feed(adapter, clock, 2 * SETTLE_S, 28, 28, counts).fps is None  # back to what was chosen
    assert adapter.advice.note == ""


def test_nothing_is_judged_before_the_first_frame_goes_out_and_for_a_while_after() -> None:
    clock = Clock()
    adapter, counts = Adapter(30, clock), [0, 0]
    assert feed(adapter, clock, 10, 30, 0, counts).fps is None  # the models' first run, the connection
    assert feed(adapter, clock, GRACE_S, 30, 10, counts).fps is None  # their first frames out
    assert feed(adapter, clock, WINDOW_S + 1, 30, 10, counts).fps == 12


# --- the codec the page's offer is answered with ----------------------------------------------------


OFFER = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
         "a=rtpmap:111 opus/48000/2\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 45\r\n"
         "a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
         "a=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1\r\na=rtpmap:103 rtx/90000\r\n"
         "a=fmtp:103 apt=102\r\na=rtpmap:45 AV1/90000\r\n")


def test_the_preferred_codec_goes_first_in_the_offers_video_section() -> None:
    pytest.importorskip("aiortc")
    from pipeline.live.rtc_peer import _codec, prefer_codec

    h264 = prefer_codec(OFFER, "H264")
    lines = h264.split("\r\n")
    assert "m=video 9 UDP/TLS/RTP/SAVPF 102 96 97 103 45" in lines
    maps = [ln for ln in lines if ln.startswith("a=rtpmap:")]
    assert maps == ["a=rtpmap:111 opus/48000/2", "a=rtpmap:102 H264/90000", "a=rtpmap:96 VP8/90000",
                    "a=rtpmap:97 rtx/90000", "a=rtpmap:103 rtx/90000", "a=rtpmap:45 AV1/90000"]
    video = [ln for ln in OFFER.split("\r\n") if ln.startswith("m=video")]
    assert sorted(set(lines) - {"m=video 9 UDP/TLS/RTP/SAVPF 102 96 97 103 45"}) == sorted(
        set(OFFER.split("\r\n")) - set(video))  # the same lines otherwise, reordered
    assert prefer_codec(OFFER, "VP8") == OFFER  # first already
    assert prefer_codec(OFFER, "VP9") == OFFER  # not offered: the offer as it came
    assert _codec(h264) == "H264" and _codec(OFFER) == "VP8"


def test_aiortc_answers_with_the_preferred_codec_first() -> None:
    pytest.importorskip("aiortc")
    from aiortc import RTCPeerConnection, RTCSessionDescription

    from pipeline.live.rtc_peer import _codec, prefer_codec

    async def answer(offer: str) -> str:
        page, server = RTCPeerConnection(), RTCPeerConnection()
        page.addTransceiver("video", direction="sendrecv")
        await page.setLocalDescription(await page.createOffer())
        sdp = prefer_codec(page.localDescription.sdp, offer)
        await server.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
        await server.setLocalDescription(await server.createAnswer())
        said = server.localDescription.sdp
        await page.close()
        await server.close()
        return said

    assert _codec(asyncio.run(answer("H264"))) == "H264"
    assert _codec(asyncio.run(answer("VP8"))) == "VP8"


# --- sending to the host's OBS or virtual camera ----------------------------------------------------


@pytest.mark.parametrize(("users", "client", "allowed"), [
    ((), "192.168.1.20", True),  # a UI for this machine alone (it listens on loopback only)
    ((("alice", "pw"),), "127.0.0.1", True),  # a shared UI, its page opened on the host itself
    ((("alice", "pw"),), "::1", True),
    ((("alice", "pw"),), "192.168.1.20", False),  # a colleague's laptop on the LAN
    ((("alice", "pw"),), None, False),
])
def test_only_the_hosts_own_page_may_send_to_its_obs_or_virtual_camera(
        tmp_path: Path, users: tuple[tuple[str, str], ...], client: str | None, allowed: bool) -> None:
    ctx = SimpleNamespace(config=UiConfig(users=users, data=tmp_path))
    request = SimpleNamespace(client=SimpleNamespace(host=client) if client else None)
    assert on_hosts_machine(ctx, request) is allowed  # type: ignore[arg-type]
