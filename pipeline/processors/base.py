"""The processor contract: what every processor declares and how it is run.

A processor is one module (``face_swapper.py``, ``face_enhancer.py``…) whose class says, as class data:

- ``name``: its name in ``processors.order`` (FaceFusion's vocabulary);
- ``section``: the settings section it reads (``swapper``, ``enhancer``…);
- ``where``: ``"face"`` (each selected face's aligned crop, at its own template and size) or ``"frame"``;
- ``batches``: whether one run takes the faces of several frames at once (a render batches across frames);
- ``cost``: its class in the render's thread plan (``"model"``: an onnxruntime stage that shares the cores by
  measured cost; ``"light"``: image work, one thread);
- ``stage``: the name its work is timed under (a render stage; ``swap``, ``enhance``…);

and, as class methods, the models it needs for given settings (:meth:`Processor.models`, read by the model
plan) and whether it does anything with them (:meth:`Processor.active`). An instance is built from settings
and the names the plan gave it, is told the clip it will work on (:meth:`Processor.prepare`: a lip syncer
reads the audio there) and runs on a batch: a face processor on the faces' crops
(:meth:`FaceProcessorBase.run`), a frame processor on whole frames (:meth:`FrameProcessorBase.run_frames`,
which may change their size: ``scale``). Each batch comes with its frames' numbers in the output (``at``: 0 is
the output's first frame).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

import cv2
import numpy as np

from pipeline.settings import Settings
from pipeline.types import Alpha, Face, Frame, ProcessorName

if TYPE_CHECKING:
    from pipeline.models.sessions import CatalogSession
    from pipeline.processors.crops import FaceMasks, Swapped

Where = Literal["face", "frame"]
Cost = Literal["model", "light"]


@dataclass(frozen=True)
class Media:
    """The clip a run works on, as the processors that need more than pixels see it.

    ``target``: the target file (None: frames given in memory); ``fps``: the output's frame rate (None: a
    still image); ``start``: where in the target the output's first frame is (seconds); ``audio``: a new voice
    the output carries instead of the target's own sound (``--audio``), else None."""

    target: Path | None = None
    fps: float | None = None
    start: float = 0.0
    audio: Path | None = None

    @property
    def still(self) -> bool:
        return self.fps is None


STILL = Media()


class Identities(Protocol):
    """Who goes onto which face (pipeline.process.identities.Identities)."""

    prepared: list[object]  # one identity per source (mapping) or one for all, as the swapper prepared it

    def index_of(self, face: Face) -> int: ...


class Processor(ABC):
    name: ClassVar[ProcessorName]
    section: ClassVar[str]
    where: ClassVar[Where]
    batches: ClassVar[bool]
    cost: ClassVar[Cost]
    stage: ClassVar[str]

    @classmethod
    @abstractmethod
    def models(cls, settings: Settings, swapper: str) -> tuple[str, ...]:
        """The catalog models it runs with ``settings`` (``swapper``: the resolved swapper)."""

    @abstractmethod
    def __init__(self, settings: Settings, swapper: str, models: tuple[str, ...]) -> None:
        """Build it: ``models``: the plan's for it ``swapper``: the resolved one."""

    @classmethod
    def active(cls, settings: Settings) -> bool:
        """Whether it changes anything with ``settings`` (an enhancer set to none does not)."""
        return True

    @abstractmethod
    def sessions(self) -> list[CatalogSession]:
        """The onnxruntime-backed models it runs (for loading and the thread plan)."""

    def prepare(self, media: Media) -> None:
        """Get ready for ``media`` (called before the first batch of a run; most processors need nothing)."""
        return None

    @property
    def notices(self) -> list[str]:
        """What the user should know about how it runs (filled while it is built or prepared)."""
        return []


class FaceProcessorBase(Processor):
    """A processor on each selected face's aligned crop."""

    where: ClassVar[Where] = "face"

    @property
    @abstractmethod
    def crop_size(self) -> int:
        """Side of the crop it works on."""

    @abstractmethod
    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int]) -> None:
        """Work on the faces of ``frames`` (``items[i]``: frame i's; ``at[i]``: its number), in one batch, in
        place.

        An item that no processor has framed yet (``item.framed`` is False) is aligned from the frame at this
        processor's template and size; one framed by an earlier processor is re-framed here (its result
        composited over the frame). ``masks``: set the items' paste masks on the crop this processor frames
        (given to the first face processor of the order, and to the first after a frame processor), else
        None."""


class FrameProcessorBase(Processor):
    """A processor on whole frames (after the faces of the processors before it are pasted back)."""

    where: ClassVar[Where] = "frame"

    @property
    def scale(self) -> int:
        """How many times larger its frames come out than they went in (an upscaler's factor)."""
        return 1

    @abstractmethod
    def run_frames(self, frames: Sequence[Frame], at: Sequence[int]) -> list[Frame]:
        """``frames`` processed (new arrays: the inputs are left as they are), ``scale`` × their size."""

    def run_alpha(self, frames: Sequence[Frame], alphas: Sequence[Alpha | None],
                  at: Sequence[int]) -> tuple[list[Frame], list[Alpha | None]]:
        """``frames`` processed with their alpha planes (uint8 H×W, None: opaque): by default
        :meth:`run_frames`, each alpha resized linearly to its new frame (a processor that makes alpha, the
        background remover, says otherwise)."""
        done = self.run_frames(frames, at)
        return done, [scaled_alpha(a, f) for a, f in zip(alphas, done, strict=True)]


def scaled_alpha(alpha: Alpha | None, frame: Frame) -> Alpha | None:
    """``alpha`` at ``frame``'s size (resized linearly where a frame processor scaled the frame)."""
    if alpha is None or alpha.shape[:2] == frame.shape[:2]:
        return alpha
    return np.asarray(cv2.resize(alpha, (frame.shape[1], frame.shape[0]), interpolation=cv2.INTER_LINEAR),
                      np.uint8)
