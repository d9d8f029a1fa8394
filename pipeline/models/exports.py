"""Another export of a catalog network: what a file fits by its structure, how an installed file is bound,
and which installed files came in on their structure alone ("unverified source").

A file's structure is read off its graph records (``onnxfile.graph_io``: no session, no weights parsed) and
bound as a session would bind it (``validate.bind``, the one rule). ``models adopt --trust-structure``
installs a file nothing on record verifies only when it fits and passes ``models check``; it is recorded
here (``unverified.json`` in the models folder) so that ``models list`` says so, until a verified file
replaces it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ModelMismatch
from pipeline.models import catalog
from pipeline.models.catalog import ModelEntry, TensorSpec
from pipeline.models.onnxfile import graph_io
from pipeline.models.validate import Binding, bind
from pipeline.paths import models_dir

log = logging.getLogger(__name__)

RECORD = "unverified.json"
_bound: dict[tuple[str, int, int, str], Binding | None] = {}  # (file, size, mtime_ns, model) -> binding


@dataclass(frozen=True)
class Fit:
    entry: ModelEntry
    binding: Binding


def structure(path: Path) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The file's inputs and outputs; ValueError where it is no ONNX graph."""
    return graph_io(path)


def fits(path: Path, entries: list[ModelEntry] | None = None) -> list[Fit]:
    """The catalog models (all downloadable ones, or ``entries``) whose inputs and outputs the file at
    ``path`` fits, each with its binding; a model it fits two ways is left out. ValueError: no ONNX graph."""
    inputs, outputs = structure(path)
    found = []
    for entry in entries if entries is not None else downloadable():
        try:
            found.append(Fit(entry, bind(entry, inputs, outputs, path)))
        except ModelMismatch:
            continue
    return found


def downloadable() -> list[ModelEntry]:
    return [e for e in catalog.CATALOG.values() if not e.builtin]


def installed_binding(entry: ModelEntry, path: Path) -> Binding | None:
    """How the installed file of ``entry`` at ``path`` binds (None where it cannot be read or does not fit:
    loading it says why); cached by the file's size and time."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns, entry.name)
    if key not in _bound:
        try:
            _bound[key] = bind(entry, *structure(path), path)
        except (ModelMismatch, ValueError, OSError) as exc:
            log.info("%s: %s", path.name, exc)
            _bound[key] = None
    return _bound[key]


def export_note(entry: ModelEntry, path: Path) -> str:
    """"another export of NAME (bound by structure: input.1 as input)" for an installed file whose names
    differ from the catalog's; "" for the catalog's own export."""
    binding = installed_binding(entry, path)
    if binding is None or not binding.by_structure:
        return ""
    return f"another export of {entry.name} ({binding.describe()})"


def _record_path() -> Path:
    return models_dir() / RECORD


def unverified() -> dict[str, str]:
    """Installed file name -> where it came from, for the files adopted on their structure alone."""
    try:
        data = json.loads(_record_path().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def mark_unverified(entry: ModelEntry, source: Path) -> None:
    records = unverified()
    records[entry.file] = str(source)
    _write(records)


def clear_unverified(entry: ModelEntry) -> None:
    """A verified file replaced this entry's (or it was removed): no longer an unverified source."""
    records = unverified()
    if records.pop(entry.file, None) is not None:
        _write(records)


def _write(records: dict[str, str]) -> None:
    path = _record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(records, indent=1, sort_keys=True))
    tmp.replace(path)
