"""The models one swap shares across its processors, built once from the model plan: the detector, the
optional 68-point landmarker, the recogniser that picks faces by identity (on first use) and the mask models.
The processors build their own (process/processor.py puts them together). A model file that is missing fails
here, not mid-render. Every onnxruntime model built here gets the memory budget of these settings
(``execution.model_memory``): the sessions' owner sets it, not a module global."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline import families
from pipeline.faces.base import Detector, Recogniser
from pipeline.models import catalog, store
from pipeline.models.sessions import CatalogSession
from pipeline.settings import Settings
from pipeline.types import Face, Frame

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser
    from pipeline.faces.classify import FairFace
    from pipeline.faces.landmark68 import Landmarker68


def sessions_of(objects: Iterable[object]) -> list[CatalogSession]:
    """The onnxruntime-backed models among ``objects`` (each a session, or holding one as ``runner``)."""
    found: list[CatalogSession] = []
    for obj in objects:
        for candidate in (obj, getattr(obj, "runner", None)):
            if isinstance(candidate, CatalogSession) and candidate not in found:
                found.append(candidate)
    return found


def give_budget(models: Iterable[object], settings: Settings) -> None:
    """Every session among ``models`` loads within ``execution.model_memory`` of ``settings``."""
    for session in sessions_of(models):
        session.memory = settings.execution.model_memory


@dataclass
class FaceModels:
    """The shared models of a swap with ``settings``; ``notices`` collects what the user should know."""

    settings: Settings
    detector: Detector
    occluder: Occluder | None = None
    parser: FaceParser | None = None
    landmarker: Landmarker68 | None = None
    classifier: FairFace | None = None  # the selector's filters read each face found with it
    turned_away: int = 0  # the faces the selector's filters left alone so far
    notices: list[str] = field(default_factory=list)
    _recogniser: Recogniser | None = None

    @classmethod
    def build(cls, settings: Settings, masks: Sequence[str] = (), landmarker: str | None = None,
              classifier: str | None = None) -> FaceModels:
        """``masks``/``landmarker``/``classifier``: the plan's (catalog names)."""
        models = cls(settings, families.build(settings.detector.model, settings, "detector"))
        for name in masks:
            entry = catalog.get(name)
            if entry.role == "parser":
                from pipeline.blend.region import region_classes

                region_classes(settings.mask.regions)
            store.model_path(entry)  # a missing model fails now, not mid-render
            setattr(models, entry.role, families.build(name, settings, entry.role))
        if landmarker is not None:
            models.landmarker = families.build(landmarker, settings, "landmarker")
        if classifier is not None:
            store.model_path(catalog.get(classifier))  # a missing model fails now, not mid-render
            models.classifier = families.build(classifier, settings, "classifier")
        give_budget(models.all(), settings)
        return models

    def all(self) -> list[Any]:
        """The models built so far."""
        return [m for m in (self.detector, self.landmarker, self.occluder, self.parser, self._recogniser,
                            self.classifier) if m is not None]

    @property
    def recogniser(self) -> Recogniser:
        """SFace, loaded the first time a face is compared with a reference."""
        if self._recogniser is None:
            self._recogniser = families.build("sface", self.settings, "recogniser")
            give_budget([self._recogniser], self.settings)
        return self._recogniser

    def admitted(self, frame: Frame, faces: Sequence[Face]) -> list[Face]:
        """The faces of ``frame`` that pass the selector's gender, race and age filters (all of them without
        a classifier: no filter set)."""
        if self.classifier is None or not faces:
            return list(faces)
        s = self.settings.selector
        traits = self.classifier.traits(self.classifier.crops(frame, faces))
        kept = [f for f, t in zip(faces, traits, strict=True)
                if t.passes(s.gender, s.race, s.age_min, s.age_max)]
        self.turned_away += len(faces) - len(kept)
        return kept

    def embed(self, frame: Frame, faces: Sequence[Face]) -> np.ndarray:
        """One identity embedding per face of ``frame``."""
        from pipeline.faces.recognise import embed_faces

        return embed_faces(self.recogniser, frame, list(faces))
