"""The placement of heavy stages on the cores from measured costs (pipeline/threadplan.py), injected."""

from __future__ import annotations

import pytest

from pipeline.threadplan import at, best, limit_s, measured_counts, partitions, place

# seconds a frame by threads, as measured on the 2-core machine (BENCHMARKS.md, "The seed's chain"): the
# inswapper twin's second thread pays almost fully, the GFPGAN twin's much less
SWAP = {1: 3.1, 2: 1.6}
GFPGAN = {1: 5.3, 2: 3.45}


def test_times_between_and_beyond_the_measured_counts() -> None:
    curve = {2: 4.0, 8: 1.0}
    assert at(curve, 2) == 4.0 and at(curve, 8) == 1.0
    assert at(curve, 1) == 8.0  # fewer threads than measured: as if each paid fully, never better
    assert at(curve, 16) == 1.0  # more: no faster than the most measured
    assert at(curve, 5) == pytest.approx(1 / (0.25 + 0.75 * 3 / 6))  # frames/s in between, linear
    assert best({1: 3.0, 2: 3.3}, 2) == (1, 3.0)  # a second thread that costs more is not taken
    with pytest.raises(ValueError):
        at({}, 1)


def test_every_way_to_group_the_stages_is_weighed() -> None:
    assert [sum(1 for _ in partitions(list("abcdef"[:n]))) for n in range(1, 6)] == [1, 2, 5, 15, 52]
    for cut in partitions(["a", "b", "c"]):
        assert sorted(s for group in cut for s in group) == ["a", "b", "c"]


def test_one_heavy_stage_gets_every_core() -> None:
    chosen, _ = place({"swap": SWAP}, light_cpu_s=0.1, free=2.0)
    assert chosen.groups == (("swap",),) and chosen.threads == {"swap": 2}
    # both cores run the swap; the light work (0.1 CPU-s) fills in beside it
    assert chosen.period_s == pytest.approx(max(1.6, (2 * 1.6 + 0.1) / 2))


def test_two_heavy_models_on_two_cores_take_turns_when_their_threads_pay() -> None:
    chosen, considered = place({"swap": SWAP, "enhance": GFPGAN}, light_cpu_s=0.15, free=2.0)
    assert chosen.groups == (("swap", "enhance"),) and chosen.cores == (2,)
    assert chosen.threads == {"swap": 2, "enhance": 2}
    assert chosen.describe() == "swap + enhance take turns on 2 threads (swap 2, enhance 2)"
    side_by_side = next(p for p in considered if len(p.groups) == 2)
    assert side_by_side.threads == {"swap": 1, "enhance": 1}
    assert side_by_side.period_s == 5.3  # the enhancer alone on its core; the swap's core waits
    assert chosen.period_s == pytest.approx((2 * 1.6 + 2 * 3.45 + 0.15) / 2)  # 5.125 < 5.3


def test_two_heavy_models_run_side_by_side_when_second_threads_pay_little() -> None:
    curves = {"swap": {1: 3.0, 2: 2.2}, "enhance": {1: 3.3, 2: 2.4}}
    chosen, _ = place(curves, light_cpu_s=0.15, free=2.0)
    assert chosen.groups == (("swap",), ("enhance",)) and chosen.threads == {"swap": 1, "enhance": 1}
    assert chosen.describe() == "swap on 1 thread ‖ enhance on 1 thread"
    assert chosen.period_s == 3.3  # beats the limit of taking turns with every core (2.2 + 2.4 = 4.6)
    assert limit_s(curves, 2) == pytest.approx(4.6)


def test_more_groups_must_win_clearly() -> None:
    # side by side 5.0 against 5.1 taking turns: within 3 %, so the simpler one (fewer groups) stays
    curves = {"swap": {1: 5.0, 2: 2.5}, "enhance": {1: 5.0, 2: 2.55}}
    chosen, considered = place(curves, light_cpu_s=0.0, free=2.0)
    assert considered[0].period_s < chosen.period_s and len(chosen.groups) == 1


def test_many_cores_split_between_models_whose_threads_stop_paying() -> None:
    # on 16 cores each model scales to about 4x at 8 threads and no further: two groups of 8 side by side
    curve = {1: 4.0, 2: 2.1, 4: 1.2, 8: 1.0, 16: 0.95}
    chosen, _ = place({"swap": curve, "enhance": curve}, light_cpu_s=0.2, free=16.0)
    assert len(chosen.groups) == 2 and sum(chosen.cores) <= 16
    assert chosen.period_s < limit_s({"swap": curve, "enhance": curve}, 16)  # side by side beats the limit


def test_any_set_of_heavy_processors_is_placed_within_the_cores() -> None:
    curves = {"swap": SWAP, "lipsync": {1: 0.09, 2: 0.06}, "enhance": GFPGAN,
              "frame_enhance": {1: 222.0, 2: 115.0}}
    for free in (1.0, 2.0, 8.0):
        chosen, considered = place(curves, light_cpu_s=0.3, free=free)
        placed = [s for group in chosen.groups for s in group]
        assert sorted(placed) == sorted(curves)  # every stage once
        assert sum(chosen.cores) <= max(1, round(free))
        for group, n in zip(chosen.groups, chosen.cores, strict=True):
            assert all(chosen.threads[s] <= n for s in group)
        # no stage can be quicker than at its best on every thread there is
        assert chosen.period_s >= max(best(c, max(1, round(free)))[1] for c in curves.values())
        assert considered[0].period_s <= chosen.period_s


def test_one_free_core_makes_one_group_on_one_thread() -> None:
    chosen, considered = place({"swap": SWAP, "enhance": GFPGAN}, light_cpu_s=0.15, free=1.0)
    assert chosen.groups == (("swap", "enhance"),) and chosen.threads == {"swap": 1, "enhance": 1}
    assert all(len(p.groups) == 1 for p in considered)  # two groups need two threads


def test_the_counts_measured() -> None:
    assert measured_counts(1) == [1]
    assert measured_counts(2) == [2, 1]
    assert measured_counts(4) == [4, 3, 2, 1]
    assert measured_counts(16) == [16, 8, 4, 2, 1]
    assert measured_counts(12) == [12, 8, 4, 2, 1]
