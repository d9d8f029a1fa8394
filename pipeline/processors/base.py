"""The processor contract: what every processor declares and how it is run.

A processor is one folder (``face_swapper/``, ``face_enhancer/``…) whose class says, as class data:

- ``name``: its name in ``processors.order`` (FaceFusion's vocabulary): its folder's name;
- ``section``: the settings section it reads;
- ``title``: its name in words (the UI's heading for its settings);
- ``batches``: whether one run takes the faces of several frames at once (a render batches across frames);
- ``cost``: its class in the render's thread plan (``"model"``: an onnxruntime stage that shares the cores by
  measured cost; ``"light"``: image work, one thread);
- ``stage``: the name its work is timed under (a render stage; ``swap``, ``enhance``…);
- ``pastes_under``: a face processor's paste mask: which of the user's ``mask.types`` it pastes under beside
  its own mask (FaceFusion's processor of that name: the swappers all of them, most others occlusion only);
- ``reads_original``: whether it reads the target frame as decoded (the expression restorer's "original"),
  so that the chain keeps that frame as it was;
- ``needs_sources``: whether it puts the source photos' face in (a swapper): each source must show a face;
- ``needs_sound``: whether it follows a sound (the target's, or a new voice): a still needs a voice;
- ``not_live``: why it cannot run on a camera ("" where it can);
- ``families``: the model families only it runs (a catalog entry's ``family`` -> the code that builds it);

and, as class methods, the models it needs for given settings (:meth:`Processor.models`, read by the model
plan, with :meth:`Processor.planned`: what the plan should say about them), whether it does anything with
them (:meth:`Processor.active`), whether it makes the output transparent (:meth:`Processor.makes_alpha`) and
its settings with its "auto" choices made (:meth:`Processor.resolved`). An instance is built from settings
and the names the plan gave it, is given the source faces (:meth:`Processor.take_sources`: a swapper makes
its identities there), is told the clip it will work on (:meth:`Processor.prepare`: a lip syncer reads the
audio there) and runs on a batch: a face processor on the faces' crops (:meth:`FaceProcessorBase.run`), a
frame processor on whole frames (:meth:`FrameProcessorBase.run_frames`, which may change their size:
``scale``). Each batch comes with its frames' numbers in the output (``at``: 0 is the output's first frame).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

import cv2
import numpy as np

from pipeline.settings import Settings
from pipeline.types import Alpha, Face, Frame, MaskType

if TYPE_CHECKING:
    from pipeline.families import Family
    from pipeline.models.sessions import CatalogSession
    from pipeline.processors.crops import FaceItem, FaceMasks

Cost = Literal["model", "light"]
Sources = Sequence[Sequence[tuple[Frame, Face]]]  # per identity: its (image, face) pairs


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


@dataclass(frozen=True)
class Original:
    """A target frame as decoded, before any processor changed it, and ``scale``: how many times larger the
    frame the processors now work on is (an upscaling frame processor came before)."""

    frame: Frame
    scale: int = 1


class Identities(Protocol):
    """Who goes onto which face (pipeline.process.identities.Identities)."""

    def index_of(self, face: Face) -> int:
        """Which of the identities given to :meth:`Processor.take_sources` goes onto ``face``."""
        ...


class Processor(ABC):
    name: ClassVar[str]
    section: ClassVar[str]
    title: ClassVar[str]
    batches: ClassVar[bool]
    cost: ClassVar[Cost]
    stage: ClassVar[str]
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset()
    reads_original: ClassVar[bool] = False
    needs_sources: ClassVar[bool] = False
    needs_sound: ClassVar[bool] = False
    not_live: ClassVar[str] = ""
    families: ClassVar[Mapping[str, Family]] = {}

    @classmethod
    @abstractmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        """The models it runs with ``settings``: catalog names (or a model with no file, e.g. the classic
        swapper, which nothing fetches or loads)."""

    @classmethod
    def planned(cls, settings: Settings) -> list[str]:
        """What the plan should tell the user about :meth:`models` (a fallback chosen for "auto")."""
        return []

    @classmethod
    def active(cls, settings: Settings) -> bool:
        """Whether it changes anything with ``settings`` (an enhancer set to none does not)."""
        return True

    @classmethod
    def makes_alpha(cls, settings: Settings) -> bool:
        """Whether the frames it gives carry an alpha plane with ``settings`` (the output is transparent):
        its settings section says (``ProcessorSection.makes_alpha``), so that low layers ask settings."""
        return bool(getattr(settings, cls.section).makes_alpha)

    @classmethod
    def resolved(cls, settings: Settings) -> Settings:
        """``settings`` with its "auto" choices made here (a farm's nodes run what this machine chose)."""
        return settings

    @abstractmethod
    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        """Build it: ``models``: the plan's for it."""

    @abstractmethod
    def sessions(self) -> list[CatalogSession]:
        """The onnxruntime-backed models it runs on the frames (for loading and the thread plan)."""

    def helper_sessions(self) -> list[CatalogSession]:
        """The models it runs only before the frames (a swapper's recogniser, for the source identities):
        given a memory budget, dropped before a render's frames."""
        return []

    def take_sources(self, sources: Sources) -> None:
        """The source faces, one group per identity (one per source with a mapping, else one for all);
        most processors do not use them."""
        return None

    def prepare(self, media: Media) -> None:
        """Get ready for ``media`` (called before the first batch of a run; most processors need nothing)."""
        return None

    @property
    def notices(self) -> list[str]:
        """What the user should know about how it runs (filled while it is built or prepared)."""
        return []


class FaceProcessorBase(Processor):
    """A processor on each selected face's aligned crop."""

    @property
    @abstractmethod
    def crop_size(self) -> int:
        """Side of the crop it works on."""

    @abstractmethod
    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        """Work on the faces of ``frames`` (``items[i]``: frame i's; ``at[i]``: its number), in one batch, in
        place: each item's ``result`` and paste mask set to what this processor pastes and where.

        Each item is framed at this processor's template and size (``crops.frame_items``: an earlier
        processor's paste is kept beneath). ``masks``: the user's mask types, of which it applies those it
        ``pastes_under`` (None: its own mask only). ``originals[i]``: frame i as decoded (None: ``frames``
        are)."""


class FrameProcessorBase(Processor):
    """A processor on whole frames (after the faces of the processors before it are pasted back)."""

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
