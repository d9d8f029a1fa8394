"""The failure policy of the queue, without a database: what a death, a stop or an error does to a job."""

from __future__ import annotations

import pytest

from pipeline.jobs.model import ACTIONS, STATES, IllegalTransition, check
from pipeline.jobs.policy import Counters, decide

FRESH = Counters(failures=0, deaths=0, progressed=False, cancel_requested=False)


def test_deaths_without_progress_fail_the_job_at_max_attempts() -> None:
    job = FRESH
    for n in (1, 2):
        d = decide("death", job, 3, "worker w silent for 130 s")
        assert (d.state, d.deaths, d.failures, d.progressed) == ("queued", n, 0, False)
        assert d.log == "worker w silent for 130 s: job re-queued" and d.error is None
        job = Counters(d.failures, d.deaths, d.progressed, False)
    d = decide("death", job, 3, "worker w restarted")
    assert (d.state, d.deaths, d.failures) == ("failed", 3, 0)  # a death is not an error of the job
    assert d.error == "the worker died 3 times on this job without progress (out of memory?)"
    assert d.log == f"worker w restarted: {d.error}"


def test_a_recorded_segment_forgives_the_deaths_before() -> None:
    d = decide("death", Counters(0, 2, True, False), 3, "gone")
    assert (d.state, d.deaths, d.progressed) == ("queued", 0, False)


def test_a_stop_counts_nothing() -> None:
    d = decide("stop", Counters(1, 2, True, False), 1, "worker w stopped")
    assert (d.state, d.failures, d.deaths, d.progressed) == ("queued", 1, 2, True)
    assert d.log == "worker w stopped: job re-queued"


def test_an_error_that_may_pass_is_retried_until_max_attempts_a_users_error_never() -> None:
    first = decide("error", FRESH, 3, "EncodeError: broken pipe")
    assert (first.state, first.failures) == ("queued", 1)
    assert first.log == "error 1 of at most 3: EncodeError: broken pipe: job re-queued"
    last = decide("error", Counters(2, 0, False, False), 3, "EncodeError: broken pipe")
    assert (last.state, last.failures, last.log) == ("failed", 3, None)  # the worker writes its line
    assert last.error == "EncodeError: broken pipe"
    user = decide("user_error", FRESH, 3, "the source face is too small")
    assert (user.state, user.failures, user.error) == ("failed", 1, "the source face is too small")


@pytest.mark.parametrize("event", ["death", "stop"])
def test_a_requested_cancel_wins_over_a_requeue(event: str) -> None:
    d = decide(event, Counters(0, 5, False, True), 3, "gone")  # type: ignore[arg-type]
    assert d.state == "cancelled" and d.log == "gone: job cancelled" and d.error is None


def test_an_error_with_cancel_requested_fails_the_job() -> None:
    assert decide("error", Counters(0, 0, False, True), 3, "boom").state == "failed"


def test_the_declared_transitions_are_what_check_allows() -> None:
    for action, (starts, leads_to) in ACTIONS.items():
        for state in STATES:
            if state in starts:
                check(action, 1, state)
                for to in leads_to:
                    check(action, 1, state, to)
            else:
                with pytest.raises(IllegalTransition, match=f"cannot {action} job 1: it is {state}"):
                    check(action, 1, state, orphaned=state != "running")
    with pytest.raises(ValueError, match="requeue leads to queued, not done"):
        check("requeue", 1, "running", "done")
    check("delete", 1, "running", orphaned=True)  # a job whose worker is gone
    check("cancel", 1, "running", "cancelled", orphaned=True)
    with pytest.raises(IllegalTransition):
        check("retry", 1, "running", orphaned=True)
