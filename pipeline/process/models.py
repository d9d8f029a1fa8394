"""The models one face swap uses, built once from the settings: detector, swapper, recogniser (on first
use), enhancer, and the mask and landmark models. A model file that is missing fails here, not mid-render."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pipeline.enhance.base import Enhancer
from pipeline.enhance.registry import make_enhancer
from pipeline.faces.base import Detector, Recogniser
from pipeline.faces.registry import make_detector, make_recogniser
from pipeline.models import catalog, sessions, store
from pipeline.settings import Settings
from pipeline.swap.base import Swapper
from pipeline.swap.registry import make_swapper, resolve_name
from pipeline.types import Face, Frame

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser
    from pipeline.faces.landmark68 import Landmarker68


@dataclass
class FaceModels:
    """Every model a face swap with ``settings`` runs; ``notices`` collects what the user should know
    (a swapper chosen for them, a landmark model that is not installed)."""

    settings: Settings
    detector: Detector
    swapper: Swapper
    swapper_name: str
    enhancer: Enhancer | None = None
    occluder: Occluder | None = None
    parser: FaceParser | None = None
    landmarker: Landmarker68 | None = None
    notices: list[str] = field(default_factory=list)
    _recogniser: Recogniser | None = None

    @classmethod
    def build(cls, settings: Settings) -> FaceModels:
        providers, threads = settings.execution.providers, settings.execution.threads
        sessions.set_memory_budget(settings.execution.model_memory)  # before any of them loads
        swapper_name, notice = resolve_name(settings.swapper.model, providers)
        models = cls(settings, make_detector(settings.detector, providers, threads),
                     make_swapper(settings.swapper, providers, threads, name=swapper_name), swapper_name,
                     notices=[notice] if notice else [])
        models.enhancer = make_enhancer(settings.enhancer, providers, threads)
        if models.enhancer is not None:
            store.model_path(catalog.get(models.enhancer.name))  # a missing model fails now, not mid-render
        models._load_mask_models()
        return models

    def _load_mask_models(self) -> None:
        s = self.settings
        providers, threads = s.execution.providers, s.execution.threads
        if "occlusion" in s.mask.types:
            from pipeline.blend.occlusion import Occluder

            store.model_path(catalog.get(s.mask.occluder))
            self.occluder = Occluder(s.mask.occluder, providers, threads)
        if "region" in s.mask.types:
            from pipeline.blend.region import FaceParser, region_classes

            region_classes(s.mask.regions)
            store.model_path(catalog.get(s.mask.parser))
            self.parser = FaceParser(s.mask.parser, providers, threads)
        if s.landmarks.model != "none":
            entry = catalog.get(s.landmarks.model)
            if store.is_installed(entry):
                from pipeline.faces.landmark68 import Landmarker68

                self.landmarker = Landmarker68(s.landmarks.model, providers, threads)
            else:
                self.notices.append(f"landmarks.model={entry.name} is not installed: using the detector's "
                                    f"five points (facestation models fetch {entry.name})")

    @property
    def recogniser(self) -> Recogniser:
        """SFace, loaded the first time a face is compared with a reference."""
        if self._recogniser is None:
            execution = self.settings.execution
            self._recogniser = make_recogniser("sface", execution.providers, execution.threads)
        return self._recogniser

    def embed(self, frame: Frame, faces: Sequence[Face]) -> np.ndarray:
        """One identity embedding per face of ``frame``."""
        from pipeline.faces.recognise import embed_faces

        return embed_faces(self.recogniser, frame, list(faces))

    @property
    def names(self) -> list[str]:
        """The catalog names of the models this swap uses (for the provenance tag and the summary)."""
        s = self.settings
        used = [s.detector.model, self.swapper_name]
        if s.selector.mode == "reference" or s.selector.mapping:
            used.append("sface")
        for model in (self.landmarker, self.occluder, self.parser, self.enhancer):
            if model is not None:
                used.append(model.name)
        return used
