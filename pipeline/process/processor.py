"""One swap's work on frames, batched across frames: detect -> select -> the face processors of
``processors.order`` -> blend.

:class:`FaceProcessor` is built once per job from the validated settings, its model plan and the source
images, keeps its models warm, and processes lists of frames. It puts together:

- the :class:`~pipeline.plan.ModelPlan`: which models run;
- :class:`~pipeline.process.models.FaceModels`: the shared models (detector, landmarker, recogniser, masks);
- the processors (pipeline/processors/), each with its own models, in the plan's order;
- :class:`~pipeline.process.identities.Identities`: the identities to swap in and the references that pick
  the faces to replace.

The chain (pipeline/chain.py) runs them; ``swap`` and ``enhance`` run one processor by hand (tests, scripts).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.faces import mapping
from pipeline.faces import select as selection
from pipeline.faces.base import Detector
from pipeline.models.sessions import CatalogSession
from pipeline.plan import ModelPlan
from pipeline.process.identities import Identities
from pipeline.process.models import FaceModels, give_budget, sessions_of
from pipeline.processors import PROCESSORS, FaceProcessorBase, FrameProcessorBase, Media, Processor
from pipeline.processors.crops import FaceMasks, Swapped, blend
from pipeline.processors.face_enhancer import FaceEnhancerProcessor
from pipeline.processors.face_swapper import FaceSwapperProcessor
from pipeline.settings import Settings
from pipeline.swap.base import Swapper
from pipeline.types import Face, Frame, Mask, ProcessorName

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser
    from pipeline.enhance.base import Enhancer


# a face whose shorter side is below this cannot be swapped: the model's crop would be pasted back as a blob
MIN_FACE_PX = 20
TOO_SMALL = (f"faces smaller than {MIN_FACE_PX} px were left as they are (too small to swap without "
             "turning them into a blur); use a larger target")


class FaceProcessor:
    def __init__(self, settings: Settings, sources: Sequence[Path | str | Frame],
                 plan: ModelPlan | None = None) -> None:
        self.settings = settings
        self.plan = plan or ModelPlan.from_settings(settings)
        self.face_models = FaceModels.build(settings, self.plan.masks, self.plan.landmarker)
        self.notices.extend(self.plan.notices)
        self.processors: list[Processor] = []
        for step in self.plan.processors:
            built = PROCESSORS[step.name](settings, self.plan.swapper, step.models)
            give_budget(built.sessions(), settings)
            self.notices.extend(built.notices)
            self.processors.append(built)
        swapper = self._step("face_swapper")
        if isinstance(swapper, FaceSwapperProcessor):
            give_budget([getattr(swapper.swapper, "recogniser", None)], settings)
        self.masks = FaceMasks(settings, self.face_models.occluder, self.face_models.parser)
        self.identities = Identities(self.face_models, sources,
                                     swapper.swapper if isinstance(swapper, FaceSwapperProcessor) else None)

    def _step(self, name: ProcessorName) -> Processor | None:
        return next((p for p in self.processors if p.name == name), None)

    # --- what it is made of ---------------------------------------------------------------------------
    @property
    def models(self) -> list[str]:
        """The catalog names of the models in use (provenance tag, summaries): the plan's."""
        return self.plan.names

    @property
    def notices(self) -> list[str]:
        return self.face_models.notices

    @property
    def detector(self) -> Detector:
        return self.face_models.detector

    @property
    def swapper(self) -> Swapper | None:
        step = self._step("face_swapper")
        return step.swapper if isinstance(step, FaceSwapperProcessor) else None

    @property
    def enhancer(self) -> Enhancer | None:
        step = self._step("face_enhancer")
        return step.enhancer if isinstance(step, FaceEnhancerProcessor) else None

    @property
    def occluder(self) -> Occluder | None:
        return self.face_models.occluder

    @property
    def parser(self) -> FaceParser | None:
        return self.face_models.parser

    @property
    def identity(self) -> object:
        """The (first) identity the swapper swaps in."""
        return self.identities.prepared[0]

    @property
    def boost(self) -> int:
        step = self._step("face_swapper")
        return step.boost if isinstance(step, FaceSwapperProcessor) else 1

    @property
    def crop_size(self) -> int:
        """The side of the first face processor's crop (the swap crop in the default order)."""
        faces = [p for p in self.processors if isinstance(p, FaceProcessorBase)]
        return faces[0].crop_size if faces else 0

    @property
    def scale(self) -> int:
        """How many times larger the output's frames are than the input's (upscaling frame processors)."""
        out = 1
        for p in self.processors:
            out *= p.scale if isinstance(p, FrameProcessorBase) else 1
        return out

    @property
    def mask(self) -> Mask:
        """The box paste mask of the swap crop (an item whose own ``mask`` is None pastes with its box)."""
        step = self._step("face_swapper")
        assert isinstance(step, FaceSwapperProcessor), "no face_swapper in processors.order"
        return step.box

    @property
    def poisson(self) -> bool:
        step = self._step("face_swapper")
        return isinstance(step, FaceSwapperProcessor) and step.poisson

    def stage_sessions(self) -> dict[str, list[CatalogSession]]:
        """The onnxruntime-backed models each stage runs (detect, then each processor's stage)."""
        m = self.face_models
        recogniser = m.recogniser if self.selects_by_identity else None  # runs on every frame's faces
        out = {"detect": sessions_of([m.detector, m.landmarker, recogniser])}
        for i, step in enumerate(self.processors):
            first = not isinstance(step, FrameProcessorBase) and self.first_of_run(i)
            mask_models = [m.occluder, m.parser] if first else []
            out[step.stage] = [*step.sessions(), *sessions_of(mask_models)]
        return out

    # --- stages ---------------------------------------------------------------------------------------
    @property
    def selects_by_identity(self) -> bool:
        """Whether :meth:`select` embeds the faces of every frame (reference or mapping selection)."""
        return self.identities.references is not None or self.settings.selector.mode == "reference"

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        return self.face_models.detector.detect(frames)

    def _big_enough(self, faces: list[Face]) -> list[Face]:
        """Drop the faces under :data:`MIN_FACE_PX` (a 16×16 video's "face" would be pasted back as a blob
        over the whole frame), with a notice the first time."""
        kept = [f for f in faces if min(f.box[2] - f.box[0], f.box[3] - f.box[1]) >= MIN_FACE_PX]
        if len(kept) < len(faces) and TOO_SMALL not in self.notices:
            self.notices.append(TOO_SMALL)
        return kept

    def select(self, frame: Frame, faces: list[Face]) -> list[Face]:
        """The faces of ``frame`` to replace (``selector`` settings), refined by the landmark model if any."""
        faces = self._big_enough(faces)
        sel, who, models = self.settings.selector, self.identities, self.face_models
        if who.references is not None:  # (selects_by_identity)
            candidates = [f for f in faces if min(f.box[2] - f.box[0], f.box[3] - f.box[1]) >= sel.min_size]
            if candidates:
                embeddings = models.embed(frame, candidates)
                candidates = [f.with_embedding(e) for f, e in zip(candidates, embeddings, strict=True)]
            assigned = mapping.assign(candidates, who.references, sel.reference_distance)
            chosen = selection.order_faces(assigned, sel.order)
        else:
            if sel.mode == "reference" and faces:
                embeddings = models.embed(frame, faces)
                faces = [f.with_embedding(e) for f, e in zip(faces, embeddings, strict=True)]
            chosen = selection.select(faces, sel.mode, sel.order, who.reference, sel.reference_distance,
                                      sel.min_size)
        if models.landmarker is not None and chosen:
            chosen = models.landmarker.refine(frame, chosen)
        return chosen

    def first_of_run(self, index: int) -> bool:
        """Whether processor ``index`` is the first face processor of its run (it frames the faces and sets
        their paste masks): the first of the order, or the first after a frame processor."""
        return index == 0 or isinstance(self.processors[index - 1], FrameProcessorBase)

    def face_step(self, index: int) -> FaceProcessorBase:
        step = self.processors[index]
        assert isinstance(step, FaceProcessorBase), f"{step.name} is not a face processor"
        return step

    def run_step(self, index: int, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]],
                 at: Sequence[int] | None = None) -> None:
        """Face processor ``index`` of the order on the faces of ``frames`` (numbers ``at``), in place; the
        first of a run sets the masks."""
        masks = self.masks if self.first_of_run(index) else None
        self.face_step(index).run(frames, items, self.identities, masks, at or [0] * len(frames))

    def prepare(self, media: Media) -> None:
        """Tell every processor the clip it will work on (before the first frame)."""
        for step in self.processors:
            step.prepare(media)
            self.notices.extend([n for n in step.notices if n not in self.notices])

    def swap(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[list[Swapped]]:
        """Align and swap every given face (all crops of all frames batched), with their paste masks."""
        items = [[Swapped.unframed(f) for f in row] for row in faces]
        step = self._step("face_swapper")
        if step is not None:
            self.run_step(self.processors.index(step), frames, items)
        return items

    @property
    def enhances(self) -> bool:
        """Whether :meth:`enhance` does anything with these settings."""
        return self._step("face_enhancer") is not None

    def enhance(self, frames: Sequence[Frame], swapped: Sequence[Sequence[Swapped]]) -> None:
        """Restore the swapped faces (``swap``'s output for ``frames``) with the enhancer, in one batch."""
        step = self._step("face_enhancer")
        if step is not None:
            self.run_step(self.processors.index(step), frames, swapped)

    def blend(self, frame: Frame, items: Sequence[Swapped], inplace: bool = False) -> Frame:
        """Colour-match each processed crop and paste it back (``inplace``: into ``frame`` itself)."""
        return blend(self.settings, frame, items, poisson=self.poisson, inplace=inplace)
