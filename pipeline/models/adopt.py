"""Adopt the model files a user already has: a FaceFusion ``.assets/models`` folder, a VisoMaster
``model_assets`` folder, or any folder.

Each file is identified by its sha256 against the catalog, or, for a model with no pinned sha256, by its
name (ours or FaceFusion's) or a pinned size, and verified by the CRC32 in the FaceFusion ``.hash`` file
beside it. What matches is linked into the models folder as ``models import`` installs a file (hard link,
else symlink, else copy); everything else is listed with the reason it was skipped. Never touches the
network.

DeepFaceLive's models: the ``.dfm`` files in the folder, in its ``dfm_models`` folder (DeepFaceLive's
userdata) or its ``model_assets/dfm_models`` (VisoMaster) are adopted as ``custom/<stem>`` (the models
folder's ``custom/``); nothing is pinned for them, their I/O is checked when they load.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import BadMedia, ModelMismatch, UserError
from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry

log = logging.getLogger(__name__)

HASH_SUFFIX = ".hash"
MODEL_SUFFIX = ".onnx"


@dataclass(frozen=True)
class Adopted:
    file: str  # the file's name in the folder adopted
    model: str  # the catalog model it is
    by: str  # how it was identified: "sha256" or "CRC32 (FaceFusion .hash)"
    how: str  # how it was installed: "hard link", "symlink" or "copy"


@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str


@dataclass
class AdoptReport:
    folder: Path
    adopted: list[Adopted] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def adopt(folder: Path) -> AdoptReport:
    """Install every file directly inside ``folder`` that is a catalog model's; report the rest."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BadMedia(f"no such folder: {folder}")
    report = AdoptReport(folder)
    done: dict[str, str] = {}  # model -> the file adopted for it
    known = {n for e in catalog.CATALOG.values() for n in catalog.file_names(e)}
    dfm_folders = _adopt_dfm(folder, report)
    for path in sorted(folder.iterdir(), key=lambda p: (p.name not in known, p.name)):  # own names first
        if path in dfm_folders or path.suffix == catalog.DFM_SUFFIX:
            continue  # adopted above
        if path.suffix == HASH_SUFFIX and path.with_suffix(MODEL_SUFFIX).is_file():
            continue  # read with its file
        reason = _refusal(path)
        if reason:
            report.skipped.append(Skipped(path.name, reason))
            continue
        try:
            entry, by = _identify(path)
        except ModelMismatch as exc:
            report.skipped.append(Skipped(path.name, str(exc)))
            continue
        if entry.name in done:
            report.skipped.append(Skipped(path.name, f"{entry.name} already adopted from {done[entry.name]}"))
        elif store.is_installed(entry):
            report.skipped.append(Skipped(path.name, f"{entry.name} is already installed"))
        else:
            how = store.install(path, entry, link=True)
            done[entry.name] = path.name
            report.adopted.append(Adopted(path.name, entry.name, by, how))
            log.info("adopted %s as %s (%s)", path, entry.name, how)
    return report


DFM_FOLDERS = ("dfm_models", "model_assets/dfm_models")  # DeepFaceLive's userdata, VisoMaster's root
DFM_BY = "a DeepFaceLive .dfm (custom model; its I/O is checked when it loads)"


def _adopt_dfm(folder: Path, report: AdoptReport) -> set[Path]:
    """Adopt the .dfm files of ``folder`` and its DFM folders as custom models; the DFM folders found."""
    found = {folder / sub for sub in DFM_FOLDERS if (folder / sub).is_dir()}
    for where in (folder, *sorted(found)):
        for path in sorted(where.glob("*" + catalog.DFM_SUFFIX)):
            shown = str(path.relative_to(folder))
            try:
                entry = catalog.get(f"{catalog.CUSTOM_SCOPE}/{path.stem}")
            except UserError as exc:
                report.skipped.append(Skipped(shown, str(exc)))
                continue
            if not path.is_file():
                report.skipped.append(Skipped(shown, "not a regular file"))
            elif store.is_installed(entry):
                report.skipped.append(Skipped(shown, f"{entry.name} is already installed"))
            else:
                how = store.install(path, entry, link=True)
                report.adopted.append(Adopted(shown, entry.name, DFM_BY, how))
                log.info("adopted %s as %s (%s)", path, entry.name, how)
    return {f for f in found if f.parent == folder}


def _refusal(path: Path) -> str:
    """Why ``path`` is not even looked at ("" when it is a candidate)."""
    if path.is_dir():
        return "a folder (adopt looks at the files directly inside the folder given)"
    if path.suffix == HASH_SUFFIX:
        return f"a .hash without its file (no {path.with_suffix(MODEL_SUFFIX).name} beside it)"
    if not path.is_file():
        return "not a regular file"
    if path.suffix != MODEL_SUFFIX:
        return "not an .onnx model file"
    return ""


def _identify(path: Path) -> tuple[ModelEntry, str]:
    """The catalog model ``path`` is and how that was told; ModelMismatch with the reason when none."""
    named = _named(path)
    if named is not None and not named.sha256:
        return named, _by_crc(named, path)
    digest = store.sha256_of(path)
    found = store.identify(path, digest)
    if found is not None and found.sha256 == digest:
        return found, "sha256"
    if found is not None:  # no sha256 of its own: told by its pinned size, verified by the .hash
        return found, _by_crc(found, path)
    if named is not None:
        raise ModelMismatch(f"hash mismatch: named like {named.name}'s file but its sha256 is {digest}, "
                            f"expected {named.sha256} (another export of the model, or a damaged file)")
    raise ModelMismatch(f"unknown file: its sha256 {digest[:12]}… is no catalog model's")


def _named(path: Path) -> ModelEntry | None:
    for entry in catalog.CATALOG.values():
        if not entry.builtin and path.name in catalog.file_names(entry):
            return entry
    return None


def _by_crc(entry: ModelEntry, path: Path) -> str:
    """Verify ``path`` by the CRC32 in the FaceFusion .hash file beside it."""
    sibling = path.with_suffix(HASH_SUFFIX)
    if not sibling.is_file():
        raise ModelMismatch(f"{entry.name} has no pinned sha256 and there is no {sibling.name} beside it: "
                            "cannot verify it offline (import it with --crc32, or fetch it)")
    expected = sibling.read_text(errors="replace").strip().lower()[:8]
    actual = store.crc32_of(path)
    if actual != expected:
        raise ModelMismatch(f"hash mismatch: CRC32 {actual}, expected {expected} (from {sibling.name}) "
                            f"for {entry.name}")
    return "CRC32 (FaceFusion .hash)"
