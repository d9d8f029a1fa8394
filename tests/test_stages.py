"""The stage plumbing (pipeline/stages.py): turns handed over in order, one stage of a group at a time, and a
render whose every queue stays bounded while its last stage is stuck."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pipeline import render as render_module
from pipeline.render import Render
from pipeline.settings import Settings, apply_overrides
from pipeline.stages import Stages, Stop, Turns
from pipeline.types import Frame
from tests import photos
from tests.timing import scaled, wait_until
from tests.videos import make_clip


def test_turns_are_handed_over_in_the_order_they_were_asked_for() -> None:
    turns = Turns(threading.Event())
    turns.acquire()
    order: list[str] = []

    def take(name: str) -> None:
        turns.acquire()
        order.append(name)
        turns.release()

    threads = []
    for i, name in enumerate(["a", "b", "c"]):
        threads.append(threading.Thread(target=take, args=(name,)))
        threads[-1].start()
        wait_until(lambda n=i + 1: len(turns._waiting) == n, 10, f"{name} to wait in line")
    turns.release()
    for t in threads:
        t.join(scaled(10))
    assert order == ["a", "b", "c"]
    turns.acquire()  # free again: taken at once
    turns.release()


def test_a_stage_waiting_for_its_turn_leaves_when_the_run_stops() -> None:
    stop = threading.Event()
    turns = Turns(stop)
    turns.acquire()
    left: list[str] = []

    def wait() -> None:
        try:
            turns.acquire()
        except Stop:
            left.append("stopped")

    t = threading.Thread(target=wait)
    t.start()
    wait_until(lambda: len(turns._waiting) == 1, 10, "the stage to wait for its turn")
    stop.set()
    t.join(scaled(10))
    assert left == ["stopped"] and not turns._waiting


def test_a_stage_waits_while_another_of_its_group_works_and_that_wait_is_counted() -> None:
    stages = Stages(["a", "b", "c"], 2)
    stages.take_turns([["a", "b"], ["c"]])
    entered: list[str] = []
    a_in, a_out = threading.Event(), threading.Event()

    def a() -> None:
        with stages.turn("a"):
            entered.append("a")
            a_in.set()
            a_out.wait(scaled(10))
            entered.append("a done")

    def enter(name: str) -> None:
        with stages.turn(name):
            entered.append(name)

    threads = [threading.Thread(target=a), threading.Thread(target=enter, args=("b",)),
               threading.Thread(target=enter, args=("c",))]
    threads[0].start()
    a_in.wait(scaled(10))
    threads[1].start()
    threads[2].start()
    threads[2].join(scaled(10))  # c is of no group: it works beside a
    wait_until(lambda: stages.waited["b"] == 0.0 and len(stages._turns["b"]._waiting) == 1, 10,
               "b to wait for a's turn to end")
    assert entered == ["a", "c"]
    a_out.set()
    for t in threads:
        t.join(scaled(10))
    assert entered == ["a", "c", "a done", "b"]
    assert stages.waited["b"] > stages.waited["a"] and stages.waited["c"] == 0.0  # no group: never waits


class HeldSink:
    """A frame sink that takes the first frame, then holds the encoder until released."""

    encoder, encoder_reason, asked = "held", "test", "held"

    def __init__(self) -> None:
        self.frames = 0
        self.release = threading.Event()

    def write(self, frame: Frame) -> None:
        self.frames += 1
        if self.frames == 1:
            self.release.wait(scaled(120))

    def close(self) -> Path:
        return Path("held")

    def abort(self) -> None:
        self.release.set()


def test_no_queue_grows_while_the_encoder_is_stuck(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Default settings, a 300-frame clip, the encoder held at its first frame: every stage fills its
    bounded queue and then waits, so the frames decoded stop at what the queues, the stages in hand and the
    tracker's look-ahead hold, far fewer than the clip's, until the encoder goes on."""
    clip = make_clip(tmp_path / "long.mp4", seconds=10, size=(160, 120), face_image=photos.astronaut())
    decoded: list[int] = [0]
    reader = render_module.read_frames

    def counting(*args: Any, **kwargs: Any) -> Any:
        for frame in reader(*args, **kwargs):
            decoded[0] += 1
            yield frame

    monkeypatch.setattr(render_module, "read_frames", counting)
    settings = Settings()
    sink = HeldSink()
    job = Render(settings, [photos.grace_hopper_path()], clip, sink=lambda w, h: sink)
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(job.run()))
    runner.start()
    wait_until(lambda: all(p.q.full() for p in job.stages.inbox.values()), 120, "every queue to fill")
    held = decoded[0]
    queues = settings.execution.queue_size * len(job.stages.inbox)
    in_hand = job.batch * len(job.stages.names) + settings.tracker.max_gap + 2
    assert held <= queues + in_hand < 300, (held, queues, in_hand)
    assert all(p.q.qsize() <= settings.execution.queue_size for p in job.stages.inbox.values())
    sink.release.set()
    runner.join(scaled(300))
    assert done and done[0].frames == 300 == sink.frames


@pytest.mark.parametrize("order", ["face_swapper,face_enhancer"])
def test_a_render_whose_plan_groups_swap_and_enhance_runs_them_in_turn(
        order: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's groups reach the render: stages of one group never run at once (surrogates, made heavy by
    injected measurements)."""
    from pipeline import renderplan
    from pipeline.process import FaceProcessor
    from tests.surrogates import install_surrogate

    install_surrogate("gfpgan_1.4")
    monkeypatch.setattr(renderplan, "heavy_stages", lambda cpu, stages, io, models: ["swap", "enhance"])
    monkeypatch.setattr(renderplan, "measure", lambda models, reruns, took, heavy, n, budget, spin:
                        {"swap": {1: 3.1, 2: 1.6}, "enhance": {1: 5.3, 2: 3.45}})
    monkeypatch.setattr(renderplan, "free_cores", lambda n, before, after: 2.0)
    running: list[int] = []
    overlaps: list[int] = []
    lock = threading.Lock()
    step = FaceProcessor.run_step

    def watched(self: FaceProcessor, index: int, *args: Any, **kwargs: Any) -> Any:
        with lock:
            running.append(index)
            if len(set(running)) > 1:
                overlaps.append(len(running))
        try:
            return step(self, index, *args, **kwargs)
        finally:
            with lock:
                running.remove(index)

    monkeypatch.setattr(FaceProcessor, "run_step", watched)
    clip = make_clip(tmp_path / "c.mp4", seconds=1, size=(320, 240), face_image=photos.astronaut())
    settings = apply_overrides(Settings(), ["face_enhancer.model=gfpgan_1.4", f"processors.order={order}"])
    result = Render(settings, [photos.grace_hopper_path()], clip, tmp_path / "out.mp4").run()
    assert result.plan["groups"] == [["swap", "enhance"]]
    assert result.plan["placement"].startswith("swap + enhance take turns on 2 threads")
    assert result.frames == 30 and overlaps == []
    assert set(result.turn_wait_s) <= {"swap", "enhance"}
