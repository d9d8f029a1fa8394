"""Progress (one shape from the render to the job store and the UI) and RunControl (cancel, reason, pace)."""

from __future__ import annotations

import time

from pipeline.progress import Progress, RunControl


def test_progress_fraction_final_and_stage_seconds() -> None:
    assert Progress().fraction is None and Progress(5).fraction is None
    assert Progress(30, 120).fraction == 0.25 and Progress(130, 120).fraction == 1.0
    assert Progress(120, 120, eta_s=0.0).final and not Progress(10, 120).final
    running = Progress(10, 120, 5.0, 22.0, {"stage_s": {"swap": 1.5, "enhance": 0.5}, "rss_mb": 400.0})
    assert running.stage_s == {"swap": 1.5, "enhance": 0.5} and Progress().stage_s == {}


def test_reports_are_due_at_the_chosen_pace() -> None:
    seen: list[Progress] = []
    control = RunControl(seen.append, every=0.2)
    assert control.due()  # the first report is always wanted
    control.report(Progress(1))
    assert not control.due()
    time.sleep(0.25)
    assert control.due()
    control.report(Progress(2, eta_s=0.0))
    assert [p.frames_done for p in seen] == [1, 2]
    assert not RunControl().due()  # nobody listens: nothing to build


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
