"""Detector and recogniser registries: a model name from the settings -> an object."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.faces.base import Detector, Recogniser
from pipeline.settings import DetectorSettings
from pipeline.types import Provider


def make_detector(settings: DetectorSettings, providers: Sequence[Provider] = ("cpu",),
                  threads: int = 0) -> Detector:
    kw = dict(score=settings.score, nms=settings.nms, size=settings.size, providers=tuple(providers),
              threads=threads)
    if settings.model == "yunet":
        from pipeline.faces.yunet import YuNetDetector

        return YuNetDetector(**kw)  # type: ignore[arg-type]
    if settings.model in ("retinaface", "scrfd"):
        from pipeline.faces.scrfd import ScrfdDetector

        return ScrfdDetector(settings.model, **kw)  # type: ignore[arg-type]
    if settings.model == "yolo_face":
        from pipeline.faces.yolo import YoloFaceDetector

        return YoloFaceDetector(**kw)  # type: ignore[arg-type]
    raise ValueError(f"unknown detector {settings.model!r}")  # unreachable: settings validated the name


def make_recogniser(name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> Recogniser:
    if name == "sface":
        from pipeline.faces.sface import SFaceRecogniser

        return SFaceRecogniser(providers=tuple(providers), threads=threads)
    from pipeline.faces.arcface import OnnxRecogniser

    return OnnxRecogniser(name, providers=tuple(providers), threads=threads)
