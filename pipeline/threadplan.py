"""Where the heavy model stages of a render run, and on how many threads: the placement, from measured costs.

Pure arithmetic on what :mod:`pipeline.renderplan` measured (no models here, so every rule is unit-tested
with injected costs). The inputs: for each heavy model stage, its seconds a frame at the thread counts
measured (a :data:`Curve`), the CPU seconds a frame that everything else takes (decode, encode, the light
stages: they run beside the heavy ones on threads of their own) and the cores free for the render.

A placement cuts the heavy stages into **groups**. The groups run side by side, each on cores of its own;
the stages of one group **take turns** on their group's cores (one runs at a time, each on its own best
thread count up to the group's), so their onnxruntime thread pools never fight. One group of every heavy
stage on every core is running the models one after another, each with all the cores; one group per stage
with a core each is running them concurrently. Which wins is measured, not assumed: on 2 cores the
inswapper twin scales almost linearly (3.1 s a face on one thread, 1.6 s on two) while the GFPGAN twin's
second thread buys less, so taking turns is close to concurrent there, and a balanced split wins on many
cores where one model's threads stop paying.

The predicted seconds a frame of a placement (its **period**) is the larger of
- the busiest group's turn: the sum of its stages' times (every group must finish its frame in a period),
- the CPU the frame needs spread over the cores: Σ threads × time of every heavy stage, plus the light
  work, over the free cores (a stage's threads hold their cores while it runs; the light work fills in),
- the slowest light stage (a light stage has one thread: it cannot go faster than its own time).

The **model-bound limit** is the chain's frames/s if each heavy stage ran at its best time on these cores,
one after another: 1 / Σ min over threads of its time. A placement whose groups run side by side can beat
it (each model on fewer threads, where the threads pay better); taking turns can at best meet it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

Curve = Mapping[int, float]  # threads -> seconds a frame of one stage at that many intra-op threads

MORE_GROUPS_MUST_WIN = 0.03
"""A placement with more groups (more models resident in activations at once, frames further apart) is
chosen over one with fewer only when it is this much faster: closer than that is within measuring noise."""


def at(curve: Curve, n: int) -> float:
    """Seconds a frame at ``n`` threads: as measured; between two measured counts, the frames/s in between
    (linear); below the fewest measured, that count's time scaled as if the threads paid fully (``t·m/n``:
    fewer threads never look better than measured); above the most measured, no faster than it."""
    if not curve:
        raise ValueError("no measured time")
    if n in curve:
        return curve[n]
    counts = sorted(curve)
    if n < counts[0]:
        return curve[counts[0]] * counts[0] / n
    if n > counts[-1]:
        return curve[counts[-1]]
    lo = max(c for c in counts if c < n)
    hi = min(c for c in counts if c > n)
    rate = 1 / curve[lo] + (1 / curve[hi] - 1 / curve[lo]) * (n - lo) / (hi - lo)
    return 1 / rate


def best(curve: Curve, up_to: int) -> tuple[int, float]:
    """The thread count (≤ ``up_to``) at which the stage is fastest, and its seconds a frame."""
    options = [(at(curve, n), n) for n in range(1, max(1, up_to) + 1)]
    t, n = min(options)
    return n, t


@dataclass(frozen=True)
class Placement:
    """Groups of heavy stages (side by side), each group's cores, each stage's threads and the predicted
    seconds a frame."""

    groups: tuple[tuple[str, ...], ...]
    cores: tuple[int, ...]  # threads of each group (its stages take turns on them)
    threads: dict[str, int] = field(compare=False)  # each heavy stage's own (≤ its group's)
    period_s: float = 0.0

    def describe(self) -> str:
        """One line: ``swap + enhance take turns on 2 threads`` / ``swap on 1 ‖ enhance on 1``."""
        parts = []
        for stages, n in zip(self.groups, self.cores, strict=True):
            each = ", ".join(f"{s} {self.threads[s]}" for s in stages)
            parts.append(f"{' + '.join(stages)} take turns on {_threads(n)} ({each})" if len(stages) > 1
                         else f"{stages[0]} on {_threads(self.threads[stages[0]])}")
        return " ‖ ".join(parts) if parts else "no heavy stage"


def _threads(n: int) -> str:
    return f"{n} thread" if n == 1 else f"{n} threads"


def period(curves: Mapping[str, Curve], groups: Sequence[Sequence[str]], cores: Sequence[int],
           light_cpu_s: float, free: float, light_wall_s: float = 0.0) -> tuple[float, dict[str, int]]:
    """The predicted seconds a frame of ``groups`` on ``cores`` threads each, and each stage's threads."""
    threads: dict[str, int] = {}
    turns, cpu = [], light_cpu_s
    for stages, n in zip(groups, cores, strict=True):
        turn = 0.0
        for stage in stages:
            k, t = best(curves[stage], n)
            threads[stage] = k
            turn += t
            cpu += k * t
        turns.append(turn)
    return max([*turns, cpu / max(free, 1e-9), light_wall_s]), threads


def partitions(items: Sequence[str]) -> Iterator[list[list[str]]]:
    """Every way to cut ``items`` into groups (order inside and among groups as given)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for cut in partitions(rest):
        yield [[first], *cut]
        for i in range(len(cut)):
            yield [*cut[:i], [first, *cut[i]], *cut[i + 1:]]


def split(curves: Mapping[str, Curve], groups: Sequence[Sequence[str]], n_threads: int, light_cpu_s: float,
          free: float, light_wall_s: float = 0.0) -> Placement | None:
    """The best split of ``n_threads`` among ``groups`` (None if there are more groups than threads): for
    each turn length that some group reaches at some thread count, every group on the fewest threads that
    keep its turn within it; of those that fit, the one with the shortest period."""
    if len(groups) > n_threads:
        return None
    turns = [[sum(best(curves[s], n)[1] for s in group) for n in range(1, n_threads + 1)] for group in groups]
    found: tuple[float, list[int], dict[str, int]] | None = None
    for goal in sorted({t for row in turns for t in row}):
        cores = [next((n + 1 for n, t in enumerate(row) if t <= goal), 0) for row in turns]
        if 0 in cores or sum(cores) > n_threads:
            continue
        p, threads = period(curves, groups, cores, light_cpu_s, free, light_wall_s)
        if found is None or p < found[0] * (1 - 1e-9):
            found = (p, cores, threads)
    if found is None:
        return None
    p, cores, threads = found
    return Placement(tuple(tuple(g) for g in groups), tuple(cores), threads, round(p, 4))


def place(curves: Mapping[str, Curve], light_cpu_s: float, free: float, n_threads: int | None = None,
          light_wall_s: float = 0.0) -> tuple[Placement, list[Placement]]:
    """The placement of the heavy stages of ``curves`` on ``free`` cores (``n_threads``, default the free
    cores rounded: the threads there are to give) with the fastest predicted period, and every
    placement considered (fastest first). More groups win only by :data:`MORE_GROUPS_MUST_WIN`."""
    n = max(1, n_threads if n_threads is not None else round(free))
    stages = list(curves)
    considered = [p for cut in partitions(stages)
                  if (p := split(curves, cut, n, light_cpu_s, free, light_wall_s)) is not None]
    considered.sort(key=lambda p: (p.period_s, len(p.groups)))
    if not considered:
        return Placement((), (), {}, light_wall_s), []
    chosen = considered[0]
    for p in considered:
        if len(p.groups) < len(chosen.groups) and p.period_s <= chosen.period_s * (1 + MORE_GROUPS_MUST_WIN):
            chosen = p
    return chosen, considered


def limit_s(curves: Mapping[str, Curve], n_threads: int) -> float:
    """The model-bound seconds a frame: each stage at its best thread count (≤ ``n_threads``), one after
    another."""
    return sum(best(c, n_threads)[1] for c in curves.values())


def measured_counts(n_cores: int) -> list[int]:
    """The thread counts to measure each heavy stage at, most first: every count up to 4 cores, then
    powers of two and the cores themselves (between them :func:`at` interpolates)."""
    if n_cores <= 4:
        return list(range(n_cores, 0, -1))
    counts = {n_cores, *(2 ** i for i in range(n_cores.bit_length()) if 2 ** i < n_cores)}
    return sorted(counts, reverse=True)
