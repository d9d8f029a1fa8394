"""Adopt the model files a user already has, from the folders of the tools they come with: FaceFusion's
``.assets/models``, VisoMaster's ``model_assets``, rembg's ``~/.u2net``, insightface's
``~/.insightface/models/<pack>/``, ComfyUI's ``models/insightface``, ``facerestore_models``,
``upscale_models``, ``reactor``, ``facedetection``, Deep-Live-Cam's, roop's and Rope's ``models/``,
DeepFaceLive's ``dfm_models`` (models.layouts), or any folder. Never touches the network.

Each ONNX file is identified by its sha256 (the catalog's own file, or another export on record), by its
name (ours, FaceFusion's, another tool's) verified by the CRC32 in the FaceFusion ``.hash`` beside it, by a
pinned size, or by its structure (models.exports). A file nothing on record verifies is adopted only with
``trust_structure`` (``--trust-structure``), and only when it fits one model and passes ``models check``: it
is then an "unverified source". What matches is linked into the models folder as ``models import`` installs a
file (hard link, else symlink, else copy; a link is followed to the file it names); every other file is
listed with why it was skipped: what it is (a PyTorch checkpoint, another model than its name says, a link
loop, a file that cannot be read…). One bad file never stops the rest.

DeepFaceLive's models: the ``.dfm`` files found are adopted as ``custom/<stem>`` (the models folder's
``custom/``); nothing is pinned for them, their I/O is checked when they load.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import BadMedia, UserError
from pipeline.models import catalog, exports, layouts, store
from pipeline.models.catalog import ModelEntry
from pipeline.sniff import what_is

log = logging.getLogger(__name__)

HASH_SUFFIX = ".hash"
MODEL_SUFFIX = ".onnx"
BY_SHA = "sha256"
BY_EXPORT = "sha256 (another export on record)"
BY_CRC = "CRC32 (FaceFusion .hash)"  # after its name or pinned size told which model it is
BY_STRUCTURE = "structure + models check (unverified source)"
DFM_BY = "a DeepFaceLive .dfm (custom model; its I/O is checked when it loads)"


@dataclass(frozen=True)
class Adopted:
    file: str  # the file's path in the folder adopted
    model: str  # the catalog model it is
    by: str  # how it was identified: sha256, CRC32, structure…
    how: str  # how it was installed: "hard link", "symlink" or "copy"
    note: str = ""  # "another export of NAME (bound by structure: …)" where its names differ


@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str


@dataclass
class AdoptReport:
    folder: Path
    adopted: list[Adopted] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    folders: list[tuple[str, str]] = field(default_factory=list)  # (folder looked in, whose layout)


class _Skip(Exception):
    """Why a file is not adopted (one line)."""


def adopt(folder: Path, trust_structure: bool = False) -> AdoptReport:
    """Install every file of ``folder``'s model folders that is a catalog model's; report the rest."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BadMedia(f"no such folder: {folder}")
    report = AdoptReport(folder)
    places = layouts.model_folders(folder)
    report.folders = [(_shown(p, folder) or ".", tool) for p, tool in places]
    _adopt_dfm(folder, report)
    done: dict[str, str] = {}  # model -> the file adopted for it
    known = {n for e in catalog.CATALOG.values() for n in catalog.file_names(e)}
    for where, _tool in places:
        for path in sorted(_entries(where, report, folder), key=lambda p: (p.name not in known, p.name)):
            shown = _shown(path, folder)
            try:
                _one(path, shown, done, report, trust_structure)
            except _Skip as why:
                report.skipped.append(Skipped(shown, str(why)))
            except OSError as exc:  # a file that vanished or cannot be read midway: that file only
                report.skipped.append(Skipped(shown, f"cannot be read ({exc.strerror or exc})"))
    return report


def _shown(path: Path, root: Path) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel


def _entries(where: Path, report: AdoptReport, root: Path) -> list[Path]:
    try:
        return list(where.iterdir())
    except OSError as exc:
        report.skipped.append(Skipped(_shown(where, root) or ".", f"cannot be listed ({exc.strerror})"))
        return []


def _one(path: Path, shown: str, done: dict[str, str], report: AdoptReport, trust: bool) -> None:
    real = _real(path)
    if real.is_dir():
        return  # a folder: looked in where it is a tool's model folder (models.layouts), else passed over
    if path.suffix == catalog.DFM_SUFFIX:
        _adopt_dfm_file(path, real, shown, report)
        return
    if path.suffix == HASH_SUFFIX:
        if path.with_suffix(MODEL_SUFFIX).exists():
            return  # read with its file
        raise _Skip(f"a .hash without its file (no {path.with_suffix(MODEL_SUFFIX).name} beside it)")
    _refuse(path, real)
    entry, by, note = _identify(path, real, trust)
    if entry.name in done:
        raise _Skip(f"{entry.name} already adopted from {done[entry.name]}")
    if store.is_installed(entry):
        raise _Skip(f"{entry.name} is already installed")
    # on trust: installed, kept only where models check passes it (else _Skip with its reason)
    how = _adopt_checked(real, entry) if by == BY_STRUCTURE else store.install(real, entry, link=True)
    done[entry.name] = shown
    report.adopted.append(Adopted(shown, entry.name, by, how, note))
    log.info("adopted %s as %s (%s)", path, entry.name, how)


def _real(path: Path) -> Path:
    """The file ``path`` names (a link followed, relative ones too); _Skip for a loop or a dangling link."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:  # Python's word for a symlink loop
        raise _Skip("a symlink loop (it never reaches a file)") from None
    except FileNotFoundError:
        raise _Skip(f"a symlink to {os.readlink(path)}, which does not exist") from None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise _Skip("a symlink loop (it never reaches a file)") from None
        raise


def _refuse(path: Path, real: Path) -> None:
    """_Skip for what is no candidate: not a regular file, unreadable, no ONNX file."""
    if not real.is_file():
        raise _Skip("not a regular file")
    what = layouts.foreign(path)
    if what:
        raise _Skip(what)
    if path.suffix.lower() != MODEL_SUFFIX:
        raise _Skip("not an .onnx model file")
    try:
        with open(real, "rb") as fh:
            fh.read(1)
    except PermissionError:
        raise _Skip("cannot be read (permission denied)") from None


def _identify(path: Path, real: Path, trust: bool) -> tuple[ModelEntry, str, str]:
    """(the catalog model ``path`` is, how that was told, "another export" note); _Skip with the reason."""
    named = _named(path)
    crc_file = path.with_suffix(HASH_SUFFIX)
    if named is not None and not named.sha256 and not named.exports and crc_file.is_file():
        return named, f"name + {_by_crc(named, path, real)}", ""
    digest = store.sha256_of(real)
    found = store.identify(real, digest)
    if found is not None and (found.sha256 == digest or store.known_export(found, digest)):
        note = exports.export_note(found, real)
        return found, (BY_SHA if found.sha256 == digest else BY_EXPORT), note
    if found is not None and path.with_suffix(HASH_SUFFIX).is_file():  # told by its pinned size
        return found, f"size + {_by_crc(found, path, real)}", ""
    return _by_structure(path, real, named, digest, trust)


def _by_structure(path: Path, real: Path, named: ModelEntry | None, digest: str,
                  trust: bool) -> tuple[ModelEntry, str, str]:
    try:
        fitting = exports.fits(real)
    except ValueError:
        what = _not_onnx(real)
        if named is not None and named.sha256:
            raise _Skip(f"hash mismatch: named like {named.name}'s file but its sha256 is {digest}, expected "
                        f"{named.sha256}; it is {what}") from None
        if named is not None:
            raise _Skip(f"{named.name} has no pinned sha256 and there is no "
                        f"{path.with_suffix(HASH_SUFFIX).name} beside it to verify it offline; and it is "
                        f"{what}") from None
        raise _Skip(f"unknown file: its sha256 {digest[:12]}… is no catalog model's, and it is "
                    f"{what}") from None
    fit = {f.entry.name: f for f in fitting}
    if named is not None and named.name in fit:
        return _named_export(path, real, fit[named.name], trust)
    if named is not None:
        other = f"it is built like {_names(fitting)}" if fitting else "its structure is no catalog model's"
        raise _Skip(f"named like {named.name}'s file, but {other} (sha256 {digest[:12]}…): another model "
                    f"than its name says" + (f"; import it as such: facestation models import FILE --name "
                                               f"{fitting[0].entry.name}" if len(fitting) == 1 else ""))
    if len(fitting) > 1:
        raise _Skip(f"fits {_names(fitting)} alike by its structure: import it by name "
                    f"(facestation models import FILE --name {fitting[0].entry.name})")
    if fitting:
        return _trusted(fitting[0], trust, f"built like {fitting[0].entry.name}")
    raise _Skip(f"unknown file: its sha256 {digest[:12]}… is no catalog model's, nor is its structure")


def _named_export(path: Path, real: Path, fit: exports.Fit, trust: bool) -> tuple[ModelEntry, str, str]:
    """A file named like ``fit``'s model and built like it, but not the file pinned (or none is): verified
    by the CRC32 of the FaceFusion .hash beside it (FaceFusion's own export, intact), else only on trust."""
    entry, crc_file = fit.entry, path.with_suffix(HASH_SUFFIX)
    if crc_file.is_file():
        note = f"another export of {entry.name} ({fit.binding.describe()})" if entry.sha256 else ""
        return entry, f"name + {_by_crc(entry, path, real)} + structure", note
    why = (f"; its sha256 is not {entry.name}'s pinned one and there is no {crc_file.name} beside it"
           if entry.sha256 else f"; no {crc_file.name} beside it")
    return _trusted(fit, trust, f"named like {entry.name}'s file and built like it", why)


def _names(fitting: list[exports.Fit]) -> str:
    names = [f.entry.name for f in fitting]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _not_onnx(real: Path) -> str:
    """What a file that is no ONNX graph is, by its first bytes."""
    kind = what_is(real)
    if kind == "a ZIP archive":
        return "a PyTorch checkpoint (a ZIP archive) named .onnx: it needs converting to ONNX first"
    return f"{kind} named .onnx" if kind else "not an ONNX model (damaged, or another format)"


def _trusted(fit: exports.Fit, trust: bool, why: str, extra: str = "") -> tuple[ModelEntry, str, str]:
    binding = fit.binding
    note = f"another export of {fit.entry.name} ({binding.describe()})" if binding.by_structure else ""
    if not trust:
        raise _Skip(f"{why} ({note or 'bound by name'}), but no sha256 or CRC32 on record verifies it"
                    f"{extra}: adopt it with --trust-structure (models check runs it first)")
    return fit.entry, BY_STRUCTURE, note


def _adopt_checked(real: Path, entry: ModelEntry) -> str:
    """Install ``real`` as ``entry``'s file on trust and keep it only when ``models check`` passes it; how it
    was installed."""
    from pipeline import modelcheck

    how = store.install(real, entry, link=True)
    try:
        result = modelcheck.check([entry.name])[0]
    except UserError as exc:
        result = None
        reason = str(exc)
    if result is not None and result.verdict == "PASS":
        exports.mark_unverified(entry, real)
        return how
    store.installed_path(entry).unlink(missing_ok=True)
    reason = f"{result.verdict}: {result.reason}" if result is not None else reason
    raise _Skip(f"fits {entry.name} but models check did not pass it ({reason}): not adopted")


def _adopt_dfm(folder: Path, report: AdoptReport) -> None:
    """Adopt the .dfm files of ``folder``'s DFM folders (DeepFaceLive's, VisoMaster's) as custom models."""
    for where in (folder / sub for sub in layouts.DFM_FOLDERS if (folder / sub).is_dir()):
        for path in sorted(where.glob("*" + catalog.DFM_SUFFIX)):
            shown = _shown(path, folder)
            try:
                _adopt_dfm_file(path, _real(path), shown, report)
            except _Skip as why:
                report.skipped.append(Skipped(shown, str(why)))


def _adopt_dfm_file(path: Path, real: Path, shown: str, report: AdoptReport) -> None:
    """One .dfm file as the custom model of its stem; _Skip with why not."""
    try:
        entry = catalog.get(f"{catalog.CUSTOM_SCOPE}/{path.stem}")
    except UserError as exc:
        raise _Skip(str(exc)) from None
    if not real.is_file():
        raise _Skip("not a regular file")
    if store.is_installed(entry):
        raise _Skip(f"{entry.name} is already installed")
    how = store.install(real, entry, link=True)
    report.adopted.append(Adopted(shown, entry.name, DFM_BY, how))
    log.info("adopted %s as %s (%s)", path, entry.name, how)


def _named(path: Path) -> ModelEntry | None:
    for entry in catalog.CATALOG.values():
        if not entry.builtin and path.name in catalog.file_names(entry):
            return entry
    return None


def _by_crc(entry: ModelEntry, path: Path, real: Path) -> str:
    """Verify ``path`` by the CRC32 in the FaceFusion .hash file beside it."""
    sibling = path.with_suffix(HASH_SUFFIX)
    expected = sibling.read_text(errors="replace").strip().lower()[:8]
    actual = store.crc32_of(real)
    if actual != expected:
        raise _Skip(f"hash mismatch: CRC32 {actual}, expected {expected} (from {sibling.name}) for "
                    f"{entry.name}")
    return BY_CRC
