"""Generic stage plumbing for a threaded pipeline: bounded pipes, one thread per stage, batches, busy time.

Nothing here knows about faces or video: :class:`Stages` starts named threads that take items in order from
their :class:`Pipe` and hand results on; the first failure stops them all (every pipe gives up once the stop
event is set) and is kept for the caller; :meth:`Stages.timed` counts the seconds each stage is busy.
Stages may be put in groups that take turns (:meth:`Stages.turn`: one stage of a group works at a time, in
the order they asked, so that their thread pools share cores instead of fighting over them).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

END = object()  # the last item through a pipe


class Stop(Exception):
    """Another stage failed or the run was cancelled: leave quietly."""


class Pipe:
    """A bounded queue whose get/put give up when the run is stopping."""

    def __init__(self, size: int, stop: threading.Event) -> None:
        self.q: queue.Queue[Any] = queue.Queue(maxsize=size)
        self.stop = stop

    def put(self, item: Any) -> None:
        while True:
            if self.stop.is_set():
                raise Stop
            try:
                self.q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def get(self) -> Any:
        while True:
            if self.stop.is_set():
                raise Stop
            try:
                return self.q.get(timeout=0.1)
            except queue.Empty:
                continue

    def __iter__(self) -> Iterator[Any]:
        while (item := self.get()) is not END:
            yield item

    def batches(self, size: int) -> Iterator[list[Any]]:
        """The items in lists of ``size`` (the last may be shorter)."""
        batch: list[Any] = []
        for item in self:
            batch.append(item)
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch


class Turns:
    """A lock handed over in the order it was asked for (first come, first served), given up when the run
    stops: the stages of one group take turns with it, so none waits behind another's next frame."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self._mutex = threading.Lock()
        self._waiting: deque[threading.Event] = deque()
        self._held = False

    def acquire(self) -> None:
        with self._mutex:
            if not self._held:
                self._held = True
                return
            mine = threading.Event()
            self._waiting.append(mine)
        while not mine.wait(0.1):
            if self.stop.is_set():
                with self._mutex:
                    if mine in self._waiting:
                        self._waiting.remove(mine)
                        raise Stop
                break  # handed over just now: take it, then leave through release
        if self.stop.is_set():
            self.release()
            raise Stop

    def release(self) -> None:
        with self._mutex:
            if self._waiting:
                self._waiting.popleft().set()  # handed over: still held, by the next in line
            else:
                self._held = False


class Stages:
    """The threads of one run, their pipes and their busy seconds (and, for stages taking turns, the seconds
    each waited for its turn)."""

    def __init__(self, names: Iterable[str], queue_size: int) -> None:
        self.stop = threading.Event()  # set when the run ends, fails or is cancelled: every stage leaves
        self.errors: list[BaseException] = []
        self.names = list(names)
        self.inbox = {name: Pipe(queue_size, self.stop) for name in self.names[1:]}  # the first has none
        self.busy = dict.fromkeys(self.names, 0.0)
        self.waited = dict.fromkeys(self.names, 0.0)
        self.threads: list[threading.Thread] = []
        self._turns: dict[str, Turns] = {}

    def take_turns(self, groups: Sequence[Sequence[str]]) -> None:
        """The stages of each group of two or more work one at a time (:meth:`turn`)."""
        for group in groups:
            if len(group) > 1:
                turns = Turns(self.stop)
                self._turns.update(dict.fromkeys(group, turns))

    @contextlib.contextmanager
    def turn(self, stage: str) -> Iterator[None]:
        """Hold ``stage``'s group's turn for the block (no wait for a stage of no group); the wait counts
        in :attr:`waited`, not in its busy time."""
        turns = self._turns.get(stage)
        if turns is None:
            yield
            return
        started = time.perf_counter()
        turns.acquire()
        self.waited[stage] += time.perf_counter() - started
        try:
            yield
        finally:
            turns.release()

    def after(self, name: str) -> Pipe:
        """The pipe into the stage after ``name``."""
        return self.inbox[self.names[self.names.index(name) + 1]]

    def start(self, name: str, body: Callable[..., None], *args: Any) -> None:
        def run() -> None:
            try:
                body(*args)
            except Stop:
                pass
            except BaseException as exc:  # handed to the caller
                self.errors.append(exc)
                self.stop.set()

        t = threading.Thread(target=run, name=f"render-{name}", daemon=True)
        t.start()
        self.threads.append(t)

    @contextlib.contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.busy[stage] += time.perf_counter() - started

    def timed(self, stage: str, items: Iterable[Any]) -> Iterator[Any]:
        """``items``, with the time spent waiting for each counted as ``stage``'s."""
        it = iter(items)
        while True:
            started = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            self.busy[stage] += time.perf_counter() - started
            yield item

    def join(self, tick: Callable[[], None], timeout: float = 0.2) -> None:
        """Wait for every thread, calling ``tick`` every ``timeout`` seconds meanwhile."""
        for t in self.threads:
            while t.is_alive():
                t.join(timeout=timeout)
                tick()

    def halt(self, timeout: float = 5.0) -> None:
        """Stop every stage and wait for each up to ``timeout`` seconds."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout=timeout)

    def seconds(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.busy.items()}
