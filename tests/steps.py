"""One processor of a :class:`~pipeline.process.FaceProcessor` run by hand on given faces, as the chain runs
it (``FaceProcessor.run_step``), for tests that look at its face items before the blend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pipeline.process import FaceItem, FaceProcessor
from pipeline.processors import Processor
from pipeline.processors.face_enhancer import FaceEnhancerProcessor
from pipeline.processors.face_swapper import FaceSwapperProcessor
from pipeline.types import Face, Frame

P = TypeVar("P", bound=Processor)


def step(proc: FaceProcessor, kind: type[P]) -> P:
    """The processor of ``proc``'s order that is a ``kind`` (it must be there)."""
    found = [p for p in proc.processors if isinstance(p, kind)]
    assert found, f"no {kind.name} in processors.order"
    return found[0]


def swapper(proc: FaceProcessor) -> FaceSwapperProcessor:
    return step(proc, FaceSwapperProcessor)


def enhancer(proc: FaceProcessor) -> FaceEnhancerProcessor:
    return step(proc, FaceEnhancerProcessor)


def run(proc: FaceProcessor, kind: type[Processor], frames: Sequence[Frame],
        faces: Sequence[Sequence[Face]]) -> list[list[FaceItem]]:
    """``faces`` of ``frames`` through the ``kind`` processor alone: each face's item, framed, run and with
    its paste mask (what the blend would paste)."""
    items = [[FaceItem.unframed(f) for f in row] for row in faces]
    proc.run_step(proc.processors.index(step(proc, kind)), frames, items)
    return items


def swap(proc: FaceProcessor, frames: Sequence[Frame],
         faces: Sequence[Sequence[Face]]) -> list[list[FaceItem]]:
    """``faces`` of ``frames`` through the face swapper."""
    return run(proc, FaceSwapperProcessor, frames, faces)
