"""The model families: a catalog entry's ``family`` -> the code that runs it.

Every model the settings name is built by :func:`build`, from its catalog entry: the entry says which family
it belongs to (``ModelEntry.family``), the family says which class runs it and what it reads from the
settings.
No other module tests a model's name to decide how to run it. The families here are those the engine shares
(detectors, recognisers, masks, landmarks, LivePortrait's parts); a processor keeps the families only it runs
in its own folder (``Processor.families``) and builds them with the same :func:`build`. A model with no file
(the classic swapper) is a family of its own name (``Family.code_only``).

Adding a family: a class implementing its role's Protocol, a factory in the table of whoever runs it (here,
or its processor's folder), and ``family=`` on its catalog entries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.blend.occlusion import Occluder
from pipeline.blend.region import FaceParser
from pipeline.errors import UserError
from pipeline.faces.arcface import OnnxRecogniser
from pipeline.faces.classify import FairFace
from pipeline.faces.landmark68 import Landmarker68
from pipeline.faces.scrfd import ScrfdDetector
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yolo import YoloFaceDetector
from pipeline.faces.yunet import YuNetDetector
from pipeline.liveportrait.network import LivePortraitPart
from pipeline.models import catalog
from pipeline.settings import Settings
from pipeline.types import ModelRole

Factory = Callable[[str, Settings], Any]


@dataclass(frozen=True)
class Family:
    role: ModelRole
    make: Factory  # (catalog name, settings) -> the model object
    code_only: bool = False  # a model with no file and no catalog entry, named by its family's key


def run_options(settings: Settings) -> dict[str, Any]:
    """Where every model runs: the execution settings' providers and threads (the one place the threads
    setting is read: > 0 fixes every model's; 0 leaves them to a render's plan, pipeline/renderplan.py)."""
    return {"providers": tuple(settings.execution.providers), "threads": settings.execution.threads}


def _detection(settings: Settings) -> dict[str, Any]:
    d = settings.detector
    return {"score": d.score, "nms": d.nms, "size": d.size, **run_options(settings)}


def _occluder(name: str, s: Settings) -> Occluder:
    return Occluder(name, **run_options(s))  # type: ignore[arg-type]


FAMILIES: dict[str, Family] = {
    "yunet": Family("detector", lambda name, s: YuNetDetector(**_detection(s))),
    "scrfd": Family("detector", lambda name, s: ScrfdDetector(name, **_detection(s))),
    "yolo_face": Family("detector", lambda name, s: YoloFaceDetector(name, **_detection(s))),
    "sface": Family("recogniser", lambda name, s: SFaceRecogniser(**run_options(s))),
    "arcface": Family("recogniser", lambda name, s: OnnxRecogniser(name, **run_options(s))),
    "xseg": Family("occluder", _occluder),
    "occluder": Family("occluder", _occluder),
    "bisenet": Family("parser", lambda name, s: FaceParser(name, **run_options(s))),  # type: ignore[arg-type]
    "fairface": Family("classifier", lambda name, s: FairFace(name, **run_options(s))),
    "2dfan4": Family("landmarker",
                     lambda name, s: Landmarker68(name, **run_options(s))),  # type: ignore[arg-type]
    "live_portrait": Family("liveportrait", lambda name, s: LivePortraitPart(name, **run_options(s))),
}


def family_of(name: str, table: Mapping[str, Family] = FAMILIES) -> Family:
    """The family of ``table`` that runs model ``name`` (an unknown name lists the known ones)."""
    own = table.get(name)
    if own is not None and own.code_only:
        return own
    entry = catalog.get(name)
    try:
        return table[entry.family]
    except KeyError:
        raise UserError(f"model '{name}' has no known family ({entry.family!r}; known: "
                        f"{', '.join(table)})") from None


def build(name: str, settings: Settings, role: ModelRole, table: Mapping[str, Family] = FAMILIES) -> Any:
    """The object that runs model ``name`` as a ``role`` (detector, swapper…) with ``settings``, by the
    families of ``table`` (a processor's own, or the shared ones)."""
    family = family_of(name, table)
    if family.role != role:
        valid = [e.name for e in catalog.by_role(role)] + [n for n, f in table.items()
                                                          if f.code_only and f.role == role]
        raise UserError(f"'{name}' is not a {role} (choose from: {', '.join(valid)})")
    return family.make(name, settings)
