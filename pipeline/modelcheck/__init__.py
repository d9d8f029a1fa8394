"""``facestation models check``: each installed model run on real photos and judged by independent means.

No real weights reach the machines this project is tested on, so a file a user downloads is checked on
theirs: detectors against the built-in YuNet, recognisers by ranking the same person above another, swappers
by the built-in SFace, enhancers by SSIM and sharpness, masks by where they cover (:mod:`.judges`). Each
model gets a :class:`ModelCheck` (its figures and PASS, FAIL or SKIP with a one-line reason); a model that
is not installed is SKIP, or :class:`ModelMissing` when it was asked for by name.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline import families
from pipeline.checking import photos
from pipeline.checking.judging import Context, Finding, Verdict
from pipeline.errors import ModelMissing, UserError
from pipeline.modelcheck.judges import JUDGES, judge_for
from pipeline.models import batching, catalog, sessions, store
from pipeline.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["JUDGES", "ModelCheck", "check"]


@dataclass(frozen=True)
class ModelCheck:
    model: str
    role: str
    verdict: Verdict
    reason: str  # one line
    figures: dict[str, float] = field(default_factory=dict)
    ran_on: str = ""  # the provider its session really ran on (CPUExecutionProvider…); "" where none ran

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _how_to_get(entry: catalog.ModelEntry) -> str:
    how = f"fetch {entry.name}" if entry.url else f"import {entry.file}"
    return f"facestation models {how}"


def _targets(names: Sequence[str]) -> list[catalog.ModelEntry]:
    """The models to check: those named (each must be installed), else the whole catalog."""
    if not names:
        return list(catalog.CATALOG.values())
    entries = [catalog.get(n) for n in dict.fromkeys(names)]
    missing = [e for e in entries if not store.is_installed(e)]
    if missing:
        how = "; ".join(f"{e.name}: run {_how_to_get(e)}" for e in missing)
        raise ModelMissing(f"not installed, so not checked: {how}")
    return entries


def _context(settings: Settings) -> Context:
    detector = families.build("yunet", settings, "detector")
    return Context(settings, photos.load(detector), families.build("sface", settings, "recogniser"))


def _judge(entry: catalog.ModelEntry, ctx: Context) -> Finding:
    if not store.is_installed(entry):
        return Finding("SKIP", f"not installed (run {_how_to_get(entry)})")
    judge = judge_for(entry)
    if judge is None:
        return Finding("SKIP", f"no judge for the {entry.family} family ({entry.role})")
    try:
        return judge(entry.name, ctx)
    except UserError as exc:  # refused at load (wrong file, wrong I/O): the message says which
        return Finding("FAIL", str(exc).splitlines()[0])
    except Exception as exc:  # noqa: BLE001 - a broken file may fail in any way: that is the verdict
        log.debug("checking %s", entry.name, exc_info=True)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return Finding("FAIL", f"does not run: {type(exc).__name__}: {first}")


def check(names: Sequence[str] = (), settings: Settings | None = None) -> list[ModelCheck]:
    """Check the models ``names`` (all of the catalog when empty) on the real photos, one row each."""
    entries = _targets(names)
    held = sessions.loaded_files()  # what was loaded before (a preview's models) stays loaded
    try:
        ctx = _context(settings or Settings())
        out = []
        for entry in entries:
            reference = sessions.loaded_files()
            found = _judge(entry, ctx)
            after = sessions.loaded_files()
            loaded = after - reference - held
            ran = sessions.ran_on(_files_of(entry) & after or loaded)
            _release(loaded)  # one model's memory at a time
            out.append(ModelCheck(entry.name, entry.role, found.verdict, found.reason, found.figures,
                                  ", ".join(dict.fromkeys(ran.values()))))
    finally:
        _release(sessions.loaded_files() - held)
    return out


def _files_of(entry: catalog.ModelEntry) -> set[Path]:
    """The files a session of ``entry`` may be loaded from: its own, and its batched rewrite."""
    path = store.installed_path(entry)
    if entry.builtin or not path.is_file():
        return set()
    _known, batched = batching.lookup(path)
    return {p.resolve() for p in (path, batched) if p is not None}


def _release(files: set[Path]) -> None:
    for path in files:
        sessions.release(path)
