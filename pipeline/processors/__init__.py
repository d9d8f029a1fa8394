"""The processors and their registry: a name of ``processors.order`` -> the class that does it, and its facts.

A processor is one folder here, ``pipeline/processors/<name>/``, holding everything it is: its class (with
its facts as class data: see ``base.py``), the model code only it runs and the model families that build it,
and its ``models check`` judges (``judge.py``). Its package exports the class as ``PROCESSOR``. The registry
imports each folder by name below (a broken folder fails loudly at the first use of the registry), so adding a
processor is one new folder + its line in :func:`_discovered` (and in :func:`judges` if it has a judge) + its
settings section and its catalog rows: nothing else names it. Generic code (the plan, the chain, checks,
live mode, the UI) asks the registry (:data:`PROCESSORS`, :func:`judges`, :func:`families`) and never names a
processor.

What the processors share lives beside the registry:

- ``base.py``   the contract every processor declares (its facts and methods) and how each kind is run
- ``crops.py``  the face item and its layers: framing a face at a processor's template, the paste masks, the
                blend
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pipeline.processors.base import STILL, FaceProcessorBase, FrameProcessorBase, Media, Processor

if TYPE_CHECKING:
    from pipeline.families import Family


@functools.cache
def _discovered() -> dict[str, type[Processor]]:
    """Every processor by name, in the order of the settings' sections (the order the UI shows them). The
    folders are imported here, on first use: they import the engine's lower layers."""
    from pipeline.processors import (
        age_modifier,
        background_remover,
        deep_swapper,
        expression_restorer,
        face_editor,
        face_enhancer,
        face_swapper,
        frame_colorizer,
        frame_enhancer,
        frame_sharpener,
        lip_syncer,
    )
    from pipeline.settings import Settings

    found: dict[str, type[Processor]] = {}
    for module in (age_modifier, background_remover, deep_swapper, expression_restorer, face_editor,
                   face_enhancer, face_swapper, frame_colorizer, frame_enhancer, frame_sharpener, lip_syncer):
        folder = module.__name__.rpartition(".")[2]
        cls = getattr(module, "PROCESSOR", None)
        if not (isinstance(cls, type) and issubclass(cls, Processor)) or cls.name != folder:
            raise RuntimeError(f"pipeline/processors/{folder}/ must export its processor class as PROCESSOR, "
                               f"named {folder!r}")
        found[folder] = cls
    sections = list(Settings.model_fields)
    return dict(sorted(found.items(), key=lambda kv: sections.index(kv[1].section)))


class _Registry(Mapping[str, type[Processor]]):
    """The processors by name, found on first use (the folders import the engine's lower layers)."""

    def __getitem__(self, name: str) -> type[Processor]:
        try:
            return _discovered()[name]
        except KeyError:
            raise KeyError(f"no processor {name!r} (known: {', '.join(_discovered())})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(_discovered())

    def __len__(self) -> int:
        return len(_discovered())


PROCESSORS: Mapping[str, type[Processor]] = _Registry()


@functools.cache
def families() -> dict[str, Family]:
    """The model families the processors run themselves (catalog ``family`` -> the code), all together."""
    out: dict[str, Family] = {}
    for cls in PROCESSORS.values():
        out |= cls.families
    return out


def code_only(name: str) -> bool:
    """Whether model ``name`` has no file (a family of its own name, e.g. the classic swapper): nothing to
    fetch, load or check."""
    family = families().get(name)
    return family is not None and family.code_only


@functools.cache
def judges() -> dict[str, Callable[..., Any]]:
    """The processors' own ``models check`` judges (a family's, or a role's), from each folder's judge.py
    (each a ``checking.judging.Judge``)."""
    from pipeline.processors.age_modifier import judge as age_modifier
    from pipeline.processors.background_remover import judge as background_remover
    from pipeline.processors.deep_swapper import judge as deep_swapper
    from pipeline.processors.face_enhancer import judge as face_enhancer
    from pipeline.processors.face_swapper import judge as face_swapper
    from pipeline.processors.frame_colorizer import judge as frame_colorizer
    from pipeline.processors.frame_enhancer import judge as frame_enhancer
    from pipeline.processors.lip_syncer import judge as lip_syncer

    out: dict[str, Callable[..., Any]] = {}
    for module in (age_modifier, background_remover, deep_swapper, face_enhancer, face_swapper,
                   frame_colorizer, frame_enhancer, lip_syncer):
        out |= module.JUDGES
    return out


__all__ = ["PROCESSORS", "STILL", "FaceProcessorBase", "FrameProcessorBase", "Media", "Processor",
           "code_only", "families", "judges"]
