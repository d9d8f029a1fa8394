"""The model plan: which models a swap with given settings runs, decided once.

``ModelPlan.from_settings(settings)`` resolves ``swapper.model=auto`` (the first installed of
:data:`AUTO_ORDER`, else the classic swapper), asks each processor of ``processors.order`` which models it
needs, adds the mask models, the optional landmark model (when installed) and SFace where faces are picked by
identity. Everything that asks "which models?" reads it: the pre-check (``checks``), model building
(``process.models``, ``process.processor``), the provenance tag, the render's stages, the farm's shipping and
the UI's "missing models".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline import families
from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.processors import PROCESSORS
from pipeline.settings import Settings
from pipeline.types import ProcessorName, Provider

# ``auto`` takes the first installed of these, else the built-in classic swapper.
AUTO_ORDER = ("hyperswap_1a_256", "inswapper_128", "inswapper_128_fp16", "hyperswap_1b_256",
              "hyperswap_1c_256", "simswap_256", "ghost_2_256")

CLASSIC_NOTICE = ("no neural swapper is installed: using the built-in classic swapper (lower quality); "
                  "see `facestation models list` to install one")


def _on_gpu(providers: Sequence[Provider]) -> bool:
    from pipeline.models import sessions

    return sessions.resolve_providers(providers)[0] != "CPUExecutionProvider"


def resolve_swapper(name: str, providers: Sequence[Provider] = ("cpu",)) -> tuple[str, str | None]:
    """(swapper name to use, notice for the user or None).

    ``auto`` takes the first installed swapper of AUTO_ORDER (with its recogniser installed); on a GPU
    provider a half-precision file is preferred to its full-precision twin when both are installed
    (near-identical output, half the memory traffic).
    """
    if name != "auto":
        return name, None
    gpu = _on_gpu(providers)
    for preferred in AUTO_ORDER:
        half = f"{preferred}_fp16"
        twins = (half, preferred) if gpu and half in catalog.CATALOG else (preferred,)
        for candidate in twins:
            entry = catalog.get(candidate)
            if store.is_installed(entry) and (entry.recogniser is None
                                              or store.is_installed(catalog.get(entry.recogniser))):
                return candidate, None
    return "classic", CLASSIC_NOTICE


@dataclass(frozen=True)
class ProcessorModels:
    """One processor of the order that does something with these settings, and the models it runs."""

    name: ProcessorName
    models: tuple[str, ...]


@dataclass(frozen=True)
class ModelPlan:
    settings: Settings
    swapper: str  # resolved: a catalog name or "classic" (the swapper's, even where face_swapper is not run)
    processors: tuple[ProcessorModels, ...]  # in processors.order
    masks: tuple[str, ...] = ()  # occluder / parser, run on the first face processor's crop
    landmarker: str | None = None  # the 68-point model, where set and installed
    references: str | None = None  # "sface" where faces are picked by identity (reference, mapping)
    notices: tuple[str, ...] = field(default=())

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelPlan:
        swapper, notice = resolve_swapper(settings.swapper.model, settings.execution.providers)
        chosen = [PROCESSORS[name] for name in settings.processors.order]
        processors = tuple(ProcessorModels(p.name, p.models(settings, swapper)) for p in chosen
                           if p.active(settings))
        runs_swapper = any(p.name == "face_swapper" for p in processors)
        kinds = (("occlusion", settings.mask.occluder), ("region", settings.mask.parser))
        masks = tuple(name for kind, name in kinds if kind in settings.mask.types)
        notices = [notice] if notice and runs_swapper else []
        landmarker = None
        if settings.landmarks.model != "none":
            entry = catalog.get(settings.landmarks.model)
            if store.is_installed(entry):
                landmarker = entry.name
            else:
                notices.append(f"landmarks.model={entry.name} is not installed: using the detector's "
                               f"five points (facestation models fetch {entry.name})")
        by_identity = settings.selector.mode == "reference" or bool(settings.selector.mapping)
        return cls(settings, swapper, processors, masks if processors else (), landmarker,
                   "sface" if by_identity else None, tuple(notices))

    @property
    def runs_swapper(self) -> bool:
        return any(p.name == "face_swapper" for p in self.processors)

    @property
    def classic(self) -> bool:
        """Whether the swap runs the built-in classic swapper (a notice: lower quality)."""
        return self.runs_swapper and families.code_only(self.swapper)

    def _ordered(self, classic: list[str]) -> tuple[str, ...]:
        """detector, the swapper (``classic``: what stands for the classic one) and its recogniser, SFace, the
        landmarker, the masks, then the other processors' models, each once."""
        swapper = self.models_of("face_swapper")
        names = [self.settings.detector.model, *(swapper or ()), *(classic if swapper == () else []),
                 *([self.references] if self.references else []),
                 *([self.landmarker] if self.landmarker else []), *self.masks]
        for p in self.processors:
            if p.name != "face_swapper":
                names += p.models
        return tuple(dict.fromkeys(names))

    @property
    def models(self) -> tuple[str, ...]:
        """Every catalog model the swap loads, once each."""
        return self._ordered([])

    @property
    def names(self) -> list[str]:
        """What the provenance tag and summaries list: the models, and the classic swapper where it runs."""
        return list(self._ordered([self.swapper] if self.classic else []))

    @property
    def scale(self) -> int:
        """How many times larger the output's frames are than the target's (the frame enhancers' factors)."""
        out = 1
        for p in self.processors:
            for name in p.models:
                out *= catalog.get(name).scale
        return out

    def required(self) -> list[ModelEntry]:
        """Every catalog entry the swap needs installed (all of :attr:`models`)."""
        return [catalog.get(n) for n in self.models]

    def missing(self) -> list[ModelEntry]:
        return [e for e in self.required() if not store.is_installed(e)]

    def models_of(self, processor: ProcessorName) -> tuple[str, ...] | None:
        """The models of one processor of the order (None where it does not run)."""
        return next((p.models for p in self.processors if p.name == processor), None)
