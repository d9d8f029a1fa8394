"""Progress (one shape from the render to the job store and the UI) and RunControl (cancel, reason, pace)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pipeline.errors import UserError
from pipeline.progress import HOLD_VARIABLE, FrameHold, Progress, RateMeter, RunControl, hold_from_env
from tests.timing import scaled, wait_until


def test_progress_fraction_final_and_stage_seconds() -> None:
    assert Progress().fraction is None and Progress(5).fraction is None
    assert Progress(30, 120).fraction == 0.25 and Progress(130, 120).fraction == 1.0
    assert Progress(120, 120, eta_s=0.0).final and not Progress(10, 120).final
    running = Progress(10, 120, 5.0, 22.0, {"stage_s": {"swap": 1.5, "enhance": 0.5}, "rss_mb": 400.0})
    assert running.stage_s == {"swap": 1.5, "enhance": 0.5} and Progress().stage_s == {}


def test_reports_are_due_at_the_chosen_pace() -> None:
    now = [100.0]
    seen: list[Progress] = []
    control = RunControl(seen.append, every=0.2, clock=lambda: now[0])
    assert control.due()  # the first report is always wanted
    control.report(Progress(1))
    assert not control.due()
    now[0] += 0.19
    assert not control.due()
    now[0] += 0.01
    assert control.due()
    control.report(Progress(2, eta_s=0.0))
    assert not control.due()  # the pace counts from the last report
    assert [p.frames_done for p in seen] == [1, 2]
    assert not RunControl().due()  # nobody listens: nothing to build


def test_a_relayed_part_keeps_the_pace_on_the_same_clock() -> None:
    now = [0.0]
    seen: list[Progress] = []
    part = RunControl(seen.append, every=1.0, clock=lambda: now[0]).relay(lambda p: p)
    assert part.due()
    part.report(Progress(1))
    now[0] = 0.5
    assert not part.due()
    now[0] = 1.0
    assert part.due() and [p.frames_done for p in seen] == [1]


def test_the_rate_is_measured_from_the_first_frame_and_lately_and_none_before_a_few_frames() -> None:
    now = [50.0]
    meter = RateMeter(window=2.0, min_frames=4, min_s=0.5, clock=lambda: now[0])
    assert meter.rate() is None and meter.eta(100) is None
    now[0] = 60.0  # the stages took 10 s to fill: the first frame comes; none of that time is a rate
    meter.add(1)
    for done in (2, 3, 4):
        now[0] += 0.1
        meter.add(done)
    assert meter.rate() is None  # 3 frames measured: no rate, no ETA yet
    for done in range(5, 21):
        now[0] += 0.1
        meter.add(done)
    assert meter.rate() == pytest.approx(10.0) and meter.eta(50) == pytest.approx(5.0)
    for done in range(21, 41):  # it slows down: the last 2 s count, not the whole run
        now[0] += 0.2
        meter.add(done)
    assert meter.rate() == pytest.approx(5.0)


def test_the_eta_comes_within_eight_frames_and_moves_less_than_30_percent_a_second() -> None:
    """Frames one by one at an uneven pace (every eighth after a long pause, as batches make them; a 2 s
    stall every 60, as a busy machine makes them), at a speed that halves half-way: there is an ETA by the
    8th frame, and sampled each second it moves by less than 30 % from one second to the next while more
    than 5 s are left (below that the countdown itself is more than a fifth a second). The recent rate
    alone (the ETA before) swings more."""
    now = [100.0]
    meter = RateMeter(clock=lambda: now[0])
    total, etas, raw = 900, [], []
    next_sample = now[0] + 1.0
    for done in range(1, total + 1):
        step = 0.05 if done < total // 2 else 0.1
        now[0] += step * (4.0 if done % 8 == 0 else 0.55 + 0.4 * ((done * 7) % 5) / 4)
        now[0] += 2.0 if done % 60 == 0 else 0.0  # another program had the processor for 2 s
        meter.add(done)
        if done == 8:
            assert meter.eta(total - done) is not None  # a first estimate within 8 frames
        while now[0] >= next_sample:
            etas.append(meter.eta(total - done))
            fps = meter.rate()
            raw.append((total - done) / fps if fps else None)
            next_sample += 1.0

    def worst(samples: list[float | None]) -> float:
        pairs = [(a, b) for a, b in zip(samples, samples[1:], strict=False) if a and b and min(a, b) > 5]
        assert len(pairs) > 40
        return max(abs(b - a) / a for a, b in pairs)

    assert worst(etas) < 0.3, worst(etas)
    assert worst(raw) > 0.3


def test_a_quiet_run_reports_anyway_but_never_in_place_of_a_held_frame(tmp_path: Path) -> None:
    now = [0.0]
    control = RunControl(lambda p: None, every=0.5, clock=lambda: now[0], hold=None)
    control.report(Progress(1))
    now[0] = 0.9
    assert not control.quiet(1.0)
    now[0] = 1.0
    assert control.quiet(1.0)
    held = RunControl(lambda p: None, clock=lambda: now[0], hold=FrameHold(5, tmp_path / "flag"))
    now[0] = 10.0
    assert not held.quiet(1.0)  # the frame to hold at is reported where frames are made
    assert not RunControl(clock=lambda: now[0], hold=None).quiet(1.0)  # nobody listens


def test_stop_keeps_the_first_reason() -> None:
    control = RunControl()
    assert not control.cancelled and control.reason is None
    control.stop("lost")
    control.stop("cancel")
    assert control.cancelled and control.cancel.is_set() and control.reason == "lost"


def test_relay_converts_and_shares_cancel_and_reason() -> None:
    seen: list[Progress] = []
    job = RunControl(seen.append, every=0.0)
    part = job.relay(lambda p: Progress(100 + p.frames_done, 200, stage={"segments": 3}))
    part.report(Progress(5, 100))
    assert seen == [Progress(105, 200, stage={"segments": 3})]
    part.stop("stop")
    assert job.cancelled and job.reason == "stop" and part.reason == "stop"
    job2 = RunControl()
    job2.stop("cancel")
    assert job2.relay(lambda p: p).cancelled


# ---------------------------------------------------------------- the test hold (FACESTATION_TEST_HOLD_FRAME)


def _held_run(control: RunControl, frames: int, done: list[int]) -> threading.Thread:
    """A producer reporting each frame as the render's encode stage does (due, then report)."""

    def run() -> None:
        for n in range(1, frames + 1):
            if control.due():
                control.report(Progress(n, frames))
            done.append(n)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("release", ["remove the flag", "cancel", "release"])
def test_a_hold_stops_the_run_at_its_frame_until_released(tmp_path: Path, release: str) -> None:
    flag = tmp_path / "held"
    hold = FrameHold(5, flag)
    seen: list[Progress] = []
    control = RunControl(seen.append, every=3600.0, hold=hold)  # the pace alone would report frame 1 only
    done: list[int] = []
    thread = _held_run(control, 20, done)
    wait_until(flag.exists, 30, "the run to reach its hold")
    assert flag.read_text() == "5\n" and done == [1, 2, 3, 4]  # it waits inside the report of frame 5
    assert [p.frames_done for p in seen] == [1, 2, 3, 4, 5] and thread.is_alive()
    {"remove the flag": flag.unlink, "cancel": control.stop, "release": hold.release}[release]()
    thread.join(timeout=scaled(30))
    assert not thread.is_alive() and done == list(range(1, 21))
    assert [p.frames_done for p in seen] == [1, 2, 3, 4, 5]  # once passed, the usual pace again


def test_a_hold_in_a_relayed_part_counts_the_runs_frames(tmp_path: Path) -> None:
    flag = tmp_path / "held"
    job = RunControl(None, every=3600.0, hold=FrameHold(105, flag))
    part = job.relay(lambda p: Progress(100 + p.frames_done, 200))
    done: list[int] = []
    thread = _held_run(part, 20, done)
    wait_until(flag.exists, 30, "the part to reach the job's hold")
    assert done == [1, 2, 3, 4]
    flag.unlink()
    thread.join(timeout=scaled(30))
    assert done == list(range(1, 21))


def test_the_hold_comes_from_one_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOLD_VARIABLE, raising=False)
    assert hold_from_env() is None and not RunControl(every=0.5).due()
    monkeypatch.setenv(HOLD_VARIABLE, f"12:{tmp_path / 'flag'}")
    monkeypatch.setattr(threading, "current_thread", lambda: None)  # not the main thread: no signal handlers
    hold = hold_from_env()
    assert hold is not None and (hold.frame, hold.flag) == (12, tmp_path / "flag")
    assert RunControl().due()  # nobody listens, yet the hold's frame must be reported
    for bad in ("12", "x:/tmp/f", "12:", "-1:/tmp/f"):
        monkeypatch.setenv(HOLD_VARIABLE, bad)
        with pytest.raises(UserError, match=f"{HOLD_VARIABLE}=.*expected FRAME:FLAGFILE"):
            hold_from_env()
