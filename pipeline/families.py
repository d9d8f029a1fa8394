"""The model-family registry: a catalog entry's ``family`` -> the code that runs it.

Every model the settings name is built here, by :func:`build`, from its catalog entry: the entry says which
family it belongs to (``ModelEntry.family``), the family says which class runs it and what it reads from the
settings. No other module tests a model's name to decide how to run it. The classic swapper, which has no
weights and no catalog entry, is the one model built by name (:data:`CODE_ONLY`).

Adding a family: a class implementing its role's Protocol (``faces/base.py``, ``swap/base.py``,
``enhance/base.py``), one factory below, its key in :data:`FAMILIES`, and ``family=`` on its catalog entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.audio.voice import VoiceExtractor
from pipeline.blend import mask as masks
from pipeline.blend.occlusion import Occluder
from pipeline.blend.region import FaceParser
from pipeline.enhance.age import FairFace, Fran, StyleGanExAge
from pipeline.enhance.background import BackgroundRemover, ClothRemover, CorridorKey
from pipeline.enhance.colorize import DDColor, DeOldify, parse_size
from pipeline.enhance.frame import TiledUpscaler
from pipeline.enhance.onnx import OnnxEnhancer
from pipeline.errors import UserError
from pipeline.faces.arcface import OnnxRecogniser
from pipeline.faces.landmark68 import Landmarker68
from pipeline.faces.scrfd import ScrfdDetector
from pipeline.faces.sface import SFaceRecogniser
from pipeline.faces.yolo import YoloFaceDetector
from pipeline.faces.yunet import YuNetDetector
from pipeline.lipsync.base import CROP
from pipeline.lipsync.edtalk import EdTalk
from pipeline.lipsync.wav2lip import Wav2Lip
from pipeline.liveportrait.network import LivePortraitPart
from pipeline.models import catalog
from pipeline.settings import Settings
from pipeline.swap.classic import ClassicSwapper
from pipeline.swap.dfm import DfmModel
from pipeline.swap.neural import InswapperSwapper, NeuralSwapper
from pipeline.types import ModelRole

Factory = Callable[[str, Settings], Any]


@dataclass(frozen=True)
class Family:
    role: ModelRole
    make: Factory  # (catalog name, settings) -> the model object


def _run(settings: Settings) -> dict[str, Any]:
    """Where every model runs: the execution settings' providers and threads."""
    return {"providers": tuple(settings.execution.providers), "threads": settings.execution.threads}


def _detection(settings: Settings) -> dict[str, Any]:
    d = settings.detector
    return {"score": d.score, "nms": d.nms, "size": d.size, **_run(settings)}


def _neural_swapper(name: str, s: Settings) -> NeuralSwapper:
    return NeuralSwapper(name, **_run(s))


def _enhancer(name: str, s: Settings) -> OnnxEnhancer:
    return OnnxEnhancer(name, fidelity=s.enhancer.fidelity, **_run(s))


def _colorizer(kind: type[DDColor] | type[DeOldify]) -> Factory:
    return lambda name, s: kind(name, parse_size(s.frame_colorizer.size), **_run(s))


def _occluder(name: str, s: Settings) -> Occluder:
    return Occluder(name, **_run(s))  # type: ignore[arg-type]


def _edtalk(name: str, s: Settings) -> EdTalk:
    return EdTalk(name, masks.box_mask(CROP, s.mask.blur, s.mask.padding), **_run(s))


FAMILIES: dict[str, Family] = {
    "yunet": Family("detector", lambda name, s: YuNetDetector(**_detection(s))),
    "scrfd": Family("detector", lambda name, s: ScrfdDetector(name, **_detection(s))),
    "yolo_face": Family("detector", lambda name, s: YoloFaceDetector(name, **_detection(s))),
    "sface": Family("recogniser", lambda name, s: SFaceRecogniser(**_run(s))),
    "arcface": Family("recogniser", lambda name, s: OnnxRecogniser(name, **_run(s))),
    "inswapper": Family("swapper", lambda name, s: InswapperSwapper(name, **_run(s))),
    "hyperswap": Family("swapper", _neural_swapper),
    "simswap": Family("swapper", _neural_swapper),
    "ghost": Family("swapper", _neural_swapper),
    "gfpgan": Family("enhancer", _enhancer),
    "gpen": Family("enhancer", _enhancer),
    "restoreformer": Family("enhancer", _enhancer),
    "codeformer": Family("enhancer", _enhancer),
    "ddcolor": Family("colorizer", _colorizer(DDColor)),
    "deoldify": Family("colorizer", _colorizer(DeOldify)),
    "xseg": Family("occluder", _occluder),
    "occluder": Family("occluder", _occluder),
    "bisenet": Family("parser", lambda name, s: FaceParser(name, **_run(s))),  # type: ignore[arg-type]
    "2dfan4": Family("landmarker", lambda name, s: Landmarker68(name, **_run(s))),  # type: ignore[arg-type]
    "frame_enhancer": Family("frame_enhancer", lambda name, s: TiledUpscaler(name, **_run(s))),
    "live_portrait": Family("liveportrait", lambda name, s: LivePortraitPart(name, **_run(s))),
    "wav2lip": Family("lip_syncer", lambda name, s: Wav2Lip(name, **_run(s))),
    "edtalk": Family("lip_syncer", _edtalk),
    "mdxnet": Family("voice_extractor", lambda name, s: VoiceExtractor(name, **_run(s))),
    "dfm": Family("deep_swapper", lambda name, s: DfmModel(name, **_run(s))),
    "fran": Family("age_modifier", lambda name, s: Fran(name, **_run(s))),
    "styleganex_age": Family("age_modifier", lambda name, s: StyleGanExAge(name, **_run(s))),
    "fairface": Family("classifier", lambda name, s: FairFace(name, **_run(s))),
    "background_remover": Family("background_remover", lambda name, s: BackgroundRemover(name, **_run(s))),
    "u2net_cloth": Family("background_remover", lambda name, s: ClothRemover(name, **_run(s))),
    "corridor_key": Family("background_remover", lambda name, s: CorridorKey(name, **_run(s))),
}

CODE_ONLY: dict[str, Family] = {
    "classic": Family("swapper", lambda name, s: ClassicSwapper(poisson=s.swapper.poisson)),
}


def code_only(name: str) -> bool:
    """Whether ``name`` is a model with no file (the classic swapper): nothing to fetch, no session."""
    return name in CODE_ONLY


def family_of(name: str) -> Family:
    """The family that runs model ``name`` (an unknown name lists the known ones)."""
    if name in CODE_ONLY:
        return CODE_ONLY[name]
    entry = catalog.get(name)
    try:
        return FAMILIES[entry.family]
    except KeyError:
        raise UserError(f"model '{name}' has no known family ({entry.family!r}; known: "
                        f"{', '.join(FAMILIES)})") from None


def build(name: str, settings: Settings, role: ModelRole) -> Any:
    """The object that runs model ``name`` as a ``role`` (detector, swapper…) with ``settings``."""
    family = family_of(name)
    if family.role != role:
        valid = [e.name for e in catalog.by_role(role)] + [n for n, f in CODE_ONLY.items() if f.role == role]
        raise UserError(f"'{name}' is not a {role} (choose from: {', '.join(valid)})")
    return family.make(name, settings)
