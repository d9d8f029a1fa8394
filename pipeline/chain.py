"""The chain, written once: detect -> select -> the processors of ``processors.order`` -> blend.

The order is cut into runs of face processors: each run works on the faces' crops and ends in a blend (the
crops pasted back); a frame processor works on the blended frame, and the faces go on in the frame it gives
(scaled with it) to the next run. Generator-first: :meth:`Chain.run` takes frames and yields each one
processed, in order, as a :class:`Work` (the frame, its faces, the processed face items, the blended output);
:attr:`Chain.busy` holds each stage's seconds. A still, the preview and the bench's naive loop run it frame by
frame (:meth:`Chain.one`); the video render (pipeline/render.py) is its threaded driver: one thread for
:class:`Finder` (detection and selection, on keyframes with tracking in a video) and one per
:attr:`Chain.stages` entry, the same stage bodies."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from pipeline.faces.base import region_detection
from pipeline.faces.keyframes import KeyframeDetector, interval_for
from pipeline.faces.track import Tracker
from pipeline.models.sessions import CatalogSession
from pipeline.process import FaceProcessor
from pipeline.processors.base import FrameProcessorBase, Original
from pipeline.processors.crops import FaceItem
from pipeline.types import Alpha, Face, Frame


@dataclass
class Work:
    """One frame on its way through the chain."""

    frame: Frame  # the frame the next stage works on (after a frame processor: what it made)
    faces: list[Face]  # the faces chosen to process (in ``frame``'s pixels)
    detected: list[Face] = field(default_factory=list)  # every face found (the quality report, the debugger)
    items: list[FaceItem] = field(default_factory=list)  # the chosen faces as the processors left them
    out: Frame | None = None  # the blended frame (after the last stage)
    index: int = 0  # its number in the output (0: the first)
    cut: bool = False  # a video's frame that starts a new scene (faces are not followed across it)
    alpha: Alpha | None = None  # its transparency (uint8 H×W; None: opaque): a still's own, the remover's
    decoded: Frame | None = None  # the frame as decoded, before any processor (the expression restorer's)
    scale: int = 1  # how many times larger ``frame`` is than ``decoded`` (upscaling frame processors)

    def __post_init__(self) -> None:
        if not self.items:
            self.items = [FaceItem.unframed(f) for f in self.faces]
        if self.decoded is None:
            self.decoded = self.frame  # a reference: the chain copies it only where a blend would change it

    @property
    def original(self) -> Original:
        assert self.decoded is not None
        return Original(self.decoded, self.scale)

    def replace_frame(self, frame: Frame, scale: int, alpha: Alpha | None = None) -> None:
        """``frame`` (``scale`` × the size, with ``alpha``) is what the next stages work on; the faces follow
        it."""
        self.frame = self.out = frame
        self.alpha = alpha
        self.scale *= scale
        self.faces = [f.scaled(scale) for f in self.faces]
        self.detected = [f.scaled(scale) for f in self.detected]
        self.items = [FaceItem.unframed(f) for f in self.faces]


@dataclass(frozen=True)
class Stage:
    """One step after detection: a face processor, or the blend."""

    name: str  # its stage name (timing, the render's thread): swap, enhance, blend…
    run: Callable[[list[Work]], None]
    batches: bool  # takes the frames of a batch at once (else one frame a run)
    sessions: list[CatalogSession]  # the onnxruntime models it runs


class Finder:
    """Detection and selection. Frame by frame (``fps`` None) every frame is detected in full; in a video the
    detector runs on keyframes (``detector.interval``), faces are followed in between and tracked (the tracker
    holds a few frames back to bridge gaps: :meth:`flush` at the end)."""

    def __init__(self, processor: FaceProcessor, fps: float | None = None, start: int = 0) -> None:
        """``start``: the number of the first frame pushed (frames are numbered in the order pushed)."""
        self.processor = processor
        self.next = start
        self.keys: KeyframeDetector | None = None
        self.tracker: Tracker[tuple[int, Frame, list[Face], bool]] | None = None
        if fps is not None:
            s, models = processor.settings, processor.face_models
            self.tracker = Tracker(s.tracker, fps)
            interval = interval_for(s.detector.interval, fps)
            refine = None if models.landmarker is None else models.landmarker.refine
            self.keys = KeyframeDetector(processor.detect, processor.select, interval, s.tracker.scene_cut,
                                         region_detection(models.detector), refine)

    def push(self, frames: Sequence[Frame]) -> list[Work]:
        """The frames whose faces are known now (a video's tracker may hold some back)."""
        numbers = range(self.next, self.next + len(frames))
        self.next += len(frames)
        if self.keys is None or self.tracker is None:
            detected = self.processor.detect(frames)
            return [Work(f, self.processor.select(f, d), d, index=i)
                    for f, d, i in zip(frames, detected, numbers, strict=True)]
        ready: list[Work] = []
        chosen = self.keys.faces(frames)
        for frame, faces, found, cut, i in zip(frames, chosen, self.keys.found, self.keys.cuts, numbers,
                                               strict=True):
            ready.extend(Work(f, list(fs), found, index=n, cut=c)
                         for (n, f, found, c), fs in self.tracker.push(frame, faces, (i, frame, found, cut),
                                                                       cut=cut))
        return ready

    def flush(self) -> list[Work]:
        if self.tracker is None:
            return []
        return [Work(f, list(fs), found, index=n, cut=c) for (n, f, found, c), fs in self.tracker.flush()]


class Chain:
    """The stages of one :class:`~pipeline.process.FaceProcessor`, and their busy time."""

    def __init__(self, processor: FaceProcessor, *, inplace: bool = False) -> None:
        """``inplace``: the blend writes into the decoded frame itself (a render owns its frames)."""
        self.processor = processor
        self.inplace = inplace
        self.keep_decoded = False  # a processor after a blend reads the frame as decoded: copy it first
        self.stages = self._stages(processor)
        self.busy: dict[str, float] = dict.fromkeys(["detect", *(s.name for s in self.stages)], 0.0)

    def _stages(self, processor: FaceProcessor) -> list[Stage]:
        """A stage per processor of the order, a blend after each run of face processors (and at the end)."""
        sessions = processor.stage_sessions()
        stages: list[Stage] = []
        pending = False  # face processors have worked since the last blend

        def blend() -> None:
            blends = sum(s.name.startswith("blend") for s in stages)
            stages.append(Stage("blend" if not blends else f"blend{blends + 1}", self._blend, False, []))

        for i, p in enumerate(processor.processors):
            if isinstance(p, FrameProcessorBase):
                if pending:
                    blend()
                stages.append(Stage(p.stage, self._frame_step(p), p.batches, sessions[p.stage]))
                pending = False
            else:
                stages.append(Stage(p.stage, self._face_step(i), p.batches, sessions[p.stage]))
                pending = True
            if p.reads_original and any(s.name.startswith("blend") for s in stages):
                self.keep_decoded = True
        if pending or not stages:
            blend()
        return stages

    @property
    def first_face_run(self) -> list[str]:
        """The stages of the face processors before the first blend (none where a frame processor comes
        first): the render's first frame keeps what the plan's run of them made."""
        run: list[str] = []
        for stage, p in zip(self.stages, self.processor.processors, strict=False):
            if isinstance(p, FrameProcessorBase) or stage.name != p.stage:
                break
            run.append(stage.name)
        return run

    def finder(self, fps: float | None = None, start: int = 0) -> Finder:
        return Finder(self.processor, fps, start)

    def _face_step(self, index: int) -> Callable[[list[Work]], None]:
        def run(batch: list[Work]) -> None:
            self.processor.run_step(index, [w.frame for w in batch], [w.items for w in batch],
                                    [w.index for w in batch], [w.original for w in batch])
        return run

    def _frame_step(self, step: FrameProcessorBase) -> Callable[[list[Work]], None]:
        def run(batch: list[Work]) -> None:
            done, alphas = step.run_alpha([w.frame for w in batch], [w.alpha for w in batch],
                                          [w.index for w in batch])
            for w, frame, alpha in zip(batch, done, alphas, strict=True):
                w.replace_frame(frame, step.scale, alpha)
        return run

    def _blend(self, batch: list[Work]) -> None:
        for w in batch:
            if self.inplace and self.keep_decoded and w.decoded is w.frame:
                w.decoded = w.frame.copy()  # a later processor reads it as decoded
            w.out = self.processor.blend(w.frame, w.items, inplace=self.inplace)
            w.frame = w.out

    @contextlib.contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.busy[stage] = self.busy.get(stage, 0.0) + time.perf_counter() - started

    def through(self, works: list[Work]) -> list[Work]:
        """``works`` through every stage after detection, timed."""
        for stage in self.stages:
            if works:
                with self.timing(stage.name):
                    stage.run(works)
        return works

    def one(self, frame: Frame, index: int = 0, alpha: Alpha | None = None) -> Work:
        """One frame (number ``index`` of the output, with its own ``alpha``: a still's), detected in full,
        processed and blended."""
        with self.timing("detect"):
            work = self.finder(start=index).push([frame])[0]
        work.alpha = alpha
        return self.through([work])[0]



def frame_changers(order: Sequence[str]) -> list[str] | None:
    """What changes a frame in which no face was found, the one notion of what a run of ``order`` changed
    there: its frame processors (whole frames, whatever their faces; [] : nothing, an unchanged copy); None
    when the order has no face processor (no face was asked for)."""
    from pipeline.processors import PROCESSORS
    from pipeline.processors.base import FaceProcessorBase

    faces = {name: issubclass(PROCESSORS[name], FaceProcessorBase) for name in order if name in PROCESSORS}
    if not any(faces.values()):
        return None
    return [name for name, face in faces.items() if not face]


def no_face_notice(target_name: str, order: Sequence[str], mode: str) -> str | None:
    """What a run of ``order`` says when no face was found in any frame of ``target_name``: the output is an
    unchanged copy, or only its frame processors changed it (:func:`frame_changers`); None: no face asked."""
    changers = frame_changers(order)
    if changers is None:
        return None
    said = f"no face to replace was found in any frame of {target_name} (selector.mode={mode})"
    if changers:
        return f"{said}; only {', '.join(changers)} changed it"
    return f"{said}; the output is an unchanged copy"
