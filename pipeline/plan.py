"""The model plan: which models a swap with given settings runs, decided once.

``ModelPlan.from_settings(settings)`` asks each processor of ``processors.order`` that does something with
these settings which models it needs (a processor resolves its own "auto" choices, and says what the user
should know about them: :meth:`~pipeline.processors.Processor.planned`), adds the mask models its processors
paste under, the optional landmark model (when installed), SFace where faces are picked by identity and the
face classifier where the selector filters faces by gender, race or age.
Everything that asks "which models?" reads it: the pre-check (``checks``), model building
(``process.models``, ``process.processor``), the provenance tag, the render's stages, the farm's shipping and
the UI's "missing models".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.blend import area
from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.processors import PROCESSORS, code_only
from pipeline.settings import Settings


@dataclass(frozen=True)
class ProcessorModels:
    """One processor of the order that does something with these settings, and the models it runs."""

    name: str
    models: tuple[str, ...]


@dataclass(frozen=True)
class ModelPlan:
    settings: Settings
    processors: tuple[ProcessorModels, ...]  # in processors.order
    masks: tuple[str, ...] = ()  # occluder / parser, where a processor pastes under their mask type
    landmarker: str | None = None  # the 68-point model, where set and installed
    references: str | None = None  # "sface" where faces are picked by identity (reference, mapping)
    notices: tuple[str, ...] = field(default=())  # what the user should know (the processors' first)
    planned: tuple[str, ...] = field(default=())  # the processors' own notices about their models
    classifier: str | None = None  # the face classifier, where the selector filters faces (gender, race, age)
    judge: str | None = None  # "sface" where the quality report judges identity (loaded; makes no pixel)

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelPlan:
        chosen = [PROCESSORS[name] for name in settings.processors.order]
        active = [p for p in chosen if p.active(settings)]
        processors = tuple(ProcessorModels(p.name, p.models(settings)) for p in active)
        planned = [n for p in active for n in p.planned(settings)]
        honoured = {k for p in active for k in p.pastes_under} & set(settings.mask.types)
        kinds = (("occlusion", settings.mask.occluder), ("region", settings.mask.parser))
        masks = tuple(name for kind, name in kinds if kind in honoured)
        notices = list(planned)
        landmarker = None
        if settings.landmarks.model != "none":
            entry = catalog.get(settings.landmarks.model)
            if store.is_installed(entry):
                landmarker = entry.name
            else:
                notices.append(f"landmarks.model={entry.name} is not installed: using the detector's "
                               f"five points (facestation models fetch {entry.name})")
        if "area" in honoured and landmarker is None:
            notices.append(area.ESTIMATED)
        by_identity = settings.selector.mode == "reference" or bool(settings.selector.mapping)
        classifier = settings.selector.classifier if settings.selector.filters and processors else None
        return cls(settings, processors, masks if processors else (), landmarker,
                   "sface" if by_identity else None, tuple(notices), tuple(planned), classifier,
                   "sface" if settings.report.identity and processors else None)

    def _ordered(self, with_code: bool) -> tuple[str, ...]:
        """detector, the first processor's models, SFace, the classifier, the landmarker, the masks, then the
        other processors' models, each once (``with_code``: with the models that have no file, e.g. the
        classic swapper, which stand where their processor's would)."""
        def kept(names: tuple[str, ...]) -> list[str]:
            return [n for n in names if with_code or not code_only(n)]

        first, *rest = self.processors or (ProcessorModels("", ()),)
        names = [self.settings.detector.model, *kept(first.models),
                 *([self.references] if self.references else []),
                 *([self.classifier] if self.classifier else []),
                 *([self.landmarker] if self.landmarker else []), *self.masks]
        for p in rest:
            names += kept(p.models)
        return tuple(dict.fromkeys(names))

    @property
    def models(self) -> tuple[str, ...]:
        """Every catalog model the chain loads, once each (a render's and a still's quality report load
        :attr:`judge` beside them: it makes no pixel, not here nor in the tag's :attr:`names`)."""
        return self._ordered(False)

    @property
    def names(self) -> list[str]:
        """What the provenance tag and summaries list: the models, and those with no file where they run."""
        return list(self._ordered(True))

    @property
    def scale(self) -> int:
        """How many times larger the output's frames are than the target's (the frame enhancers' factors)."""
        out = 1
        for p in self.processors:
            for name in p.models:
                if not code_only(name):
                    out *= catalog.get(name).scale
        return out

    def required(self) -> list[ModelEntry]:
        """Every catalog entry the swap needs installed (all of :attr:`models`; the report's judge is
        built in)."""
        return [catalog.get(n) for n in self.models]

    def missing(self) -> list[ModelEntry]:
        return [e for e in self.required() if not store.is_installed(e)]

    def models_of(self, processor: str) -> tuple[str, ...] | None:
        """The models of one processor of the order (None where it does not run)."""
        return next((p.models for p in self.processors if p.name == processor), None)

    @property
    def needs_sources(self) -> bool:
        """Whether a processor that runs puts the source photos' face in (each must show one)."""
        return any(PROCESSORS[p.name].needs_sources for p in self.processors)

    @property
    def needs_sound(self) -> bool:
        """Whether a processor that runs follows a sound (the target's, or a new voice)."""
        return any(PROCESSORS[p.name].needs_sound for p in self.processors)
