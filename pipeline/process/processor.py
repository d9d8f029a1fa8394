"""One swap's work on frames, batched across frames: detect -> select -> the face processors of
``processors.order`` -> blend.

:class:`FaceProcessor` is built once per job from the validated settings, its model plan and the source
images, keeps its models warm, and processes lists of frames. It puts together:

- the :class:`~pipeline.plan.ModelPlan`: which models run;
- :class:`~pipeline.process.models.FaceModels`: the shared models (detector, landmarker, recogniser, masks);
- the processors (pipeline/processors/), each with its own models, in the plan's order;
- :class:`~pipeline.process.identities.Identities`: the identities to put in and the references that pick
  the faces to replace.

The chain (pipeline/chain.py) runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.faces import mapping
from pipeline.faces import select as selection
from pipeline.faces.base import Detector
from pipeline.models.sessions import CatalogSession
from pipeline.plan import ModelPlan
from pipeline.process.identities import Identities
from pipeline.process.models import FaceModels, give_budget, sessions_of
from pipeline.processors import PROCESSORS, FaceProcessorBase, FrameProcessorBase, Media, Processor
from pipeline.processors.base import Original
from pipeline.processors.crops import FaceItem, FaceMasks, blend
from pipeline.settings import Settings
from pipeline.types import Face, Frame

# a face whose shorter side is below this cannot be swapped: the model's crop would be pasted back as a blob
MIN_FACE_PX = 20
TOO_SMALL = (f"faces smaller than {MIN_FACE_PX} px were left as they are (too small to swap without "
             "turning them into a blur); use a larger target")


class FaceProcessor:
    def __init__(self, settings: Settings, sources: Sequence[Path | str | Frame],
                 plan: ModelPlan | None = None) -> None:
        self.settings = settings
        self.plan = plan or ModelPlan.from_settings(settings)
        self.face_models = FaceModels.build(settings, self.plan.masks, self.plan.landmarker,
                                            self.plan.classifier)
        self.notices.extend(self.plan.notices)
        self.processors: list[Processor] = []
        for step in self.plan.processors:
            built = PROCESSORS[step.name](settings, step.models)
            give_budget([*built.sessions(), *built.helper_sessions()], settings)
            self.notices.extend(built.notices)
            self.processors.append(built)
        self.masks = FaceMasks(settings, self.face_models.occluder, self.face_models.parser)
        self.identities = Identities(self.face_models, sources, self.plan.needs_sources)
        for built in self.processors:
            built.take_sources(self.identities.groups)

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

    def stage_sessions(self) -> dict[str, list[CatalogSession]]:
        """The onnxruntime-backed models each stage runs (detect, then each processor's stage)."""
        m = self.face_models
        recogniser = m.recogniser if self.selects_by_identity else None  # runs on every frame's faces
        out = {"detect": sessions_of([m.detector, m.landmarker, recogniser, m.classifier])}
        for step in self.processors:
            kinds = step.pastes_under
            mask_models = [m.occluder if "occlusion" in kinds else None,
                           m.parser if "region" in kinds else None]
            out[step.stage] = [*step.sessions(), *sessions_of(mask_models)]
        return out

    def helper_sessions(self) -> list[CatalogSession]:
        """The models the processors ran only before the frames (to make the source identities)."""
        return [s for p in self.processors for s in p.helper_sessions()]

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
        """The faces of ``frame`` to replace (``selector`` settings: those its filters admit), refined by the
        landmark model if any; a face a filter turns away is left alone."""
        faces = self.face_models.admitted(frame, self._big_enough(faces))
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

    def face_step(self, index: int) -> FaceProcessorBase:
        step = self.processors[index]
        assert isinstance(step, FaceProcessorBase), f"{step.name} is not a face processor"
        return step

    def run_step(self, index: int, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]],
                 at: Sequence[int] | None = None, originals: Sequence[Original] | None = None) -> None:
        """Face processor ``index`` of the order on the faces of ``frames`` (numbers ``at``; ``originals``:
        each as decoded, None: ``frames`` are), in place, with its paste masks."""
        self.face_step(index).run(frames, items, self.identities, self.masks, at or [0] * len(frames),
                                  originals)

    def prepare(self, media: Media) -> None:
        """Tell every processor the clip it will work on (before the first frame)."""
        for step in self.processors:
            step.prepare(media)
            self.notices.extend([n for n in step.notices if n not in self.notices])

    def blend(self, frame: Frame, items: Sequence[FaceItem], inplace: bool = False) -> Frame:
        """Paste each face processor's result back, in order (``inplace``: into ``frame`` itself)."""
        return blend(frame, items, inplace=inplace)
