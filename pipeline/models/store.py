"""Model files: where they are, fetch (resuming) with verification, import, verify, list.

Files only: onnxruntime sessions are made in models.sessions.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import BadMedia, FetchFailed, ModelMismatch, ModelMissing, UserError
from pipeline.models import catalog, download_errors, exports
from pipeline.models.catalog import ModelEntry
from pipeline.paths import models_dir

log = logging.getLogger(__name__)


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def crc32_of(path: Path, chunk: int = 1 << 20) -> str:
    value = 0
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            value = zlib.crc32(block, value)
    return f"{value & 0xFFFFFFFF:08x}"


def installed_path(entry: ModelEntry) -> Path:
    return models_dir() / entry.file


def custom_models() -> list[ModelEntry]:
    """The user's own DeepFaceLive models: every ``custom/<stem>.dfm`` in the models folder."""
    folder = models_dir() / catalog.CUSTOM_SCOPE
    files = sorted(folder.glob("*" + catalog.DFM_SUFFIX)) if folder.is_dir() else []
    return [catalog.get(f"{catalog.CUSTOM_SCOPE}/{f.stem}") for f in files if f.is_file()]


def is_installed(entry: ModelEntry) -> bool:
    return entry.builtin or installed_path(entry).is_file()


def model_path(entry: ModelEntry) -> Path:
    """The file to load for ``entry``; built-in models are converted on first use."""
    if entry.builtin:
        from pipeline.models.builtin import builtin_path

        return builtin_path(entry)
    path = installed_path(entry)
    if not path.is_file() and catalog.is_custom(entry.name):
        raise ModelMissing(f"model '{entry.name}' is not installed ({path.name} not in {path.parent}): put "
                           f"the .dfm file there, or run: facestation models adopt FOLDER")
    if not path.is_file():
        how = f"fetch {entry.name}" if entry.url else f"import {entry.file}"
        raise ModelMissing(f"model '{entry.name}' is not installed ({path.name} not in {path.parent}); "
                           f"run: facestation models {how}")
    return path


@dataclass(frozen=True)
class ModelStatus:
    name: str
    role: str
    installed: bool
    builtin: bool
    size: int | None
    licence: str
    file: str
    unverified: str = ""  # what is not yet checked against the real file ("" = nothing)
    needs: tuple[str, ...] = ()  # models fetched with it (a swapper's recogniser)
    export: str = ""  # "another export of NAME (bound by structure: …)" for an installed file of other names
    source: str = ""  # "unverified source: PATH" for a file adopted on its structure (--trust-structure)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def status() -> list[ModelStatus]:
    out = []
    trusted = exports.unverified()
    for entry in [*catalog.CATALOG.values(), *custom_models()]:
        path = installed_path(entry)
        here = path.is_file() and not entry.builtin
        size = path.stat().st_size if path.is_file() else catalog.download_size(entry)
        export = exports.export_note(entry, path) if here and not catalog.is_custom(entry.name) else ""
        source = f"unverified source: {trusted[entry.file]}" if here and entry.file in trusted else ""
        out.append(ModelStatus(entry.name, entry.role, is_installed(entry), entry.builtin, size,
                               entry.licence, entry.file, entry.unverified, catalog.needs(entry), export,
                               source))
    return out


def known_export(entry: ModelEntry, digest: str) -> str | None:
    """Where the file of sha256 ``digest`` comes from, when it is another export of ``entry`` known by hash
    (``ModelEntry.exports``); None otherwise."""
    return next((where for sha, _size, where in entry.exports if sha == digest), None)


def identify(path: Path, digest: str | None = None) -> ModelEntry | None:
    """The catalog model whose file ``path`` is, by sha256 (``digest``, when already computed: the entry's
    own or another export's on record) or, for a model with no sha256, by a pinned size no other model has;
    None when it is none of them."""
    digest = digest or sha256_of(path)
    for entry in catalog.CATALOG.values():
        if entry.sha256 == digest or known_export(entry, digest):
            return entry
    size = path.stat().st_size
    sized = [e for e in catalog.CATALOG.values() if e.size == size and not e.builtin]
    return sized[0] if len(sized) == 1 and not sized[0].sha256 else None


def where_from(entry: ModelEntry) -> str:
    """Where ``entry``'s right file comes from, for a message: its name, size and download URL."""
    size = catalog.download_size(entry)
    about = f", about {size / 1e6:.0f} MB" if size else ""
    source = f" from {entry.url}" if entry.url else ""
    return f"{entry.name}'s file is {entry.file}{about}{source}"


def _expected_crc(entry: ModelEntry, downloader: Callable[[str], str] | None = None) -> str | None:
    if not entry.crc32_url:
        return None
    import urllib.request

    def default(url: str) -> str:
        with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - catalog URLs are https
            return str(resp.read().decode().strip())

    return (downloader or default)(entry.crc32_url).strip().lower()[:8]


def verify_file(entry: ModelEntry, path: Path, expected_crc: str | None = None) -> None:
    """Raise ModelMismatch unless ``path`` has the entry's pinned size and sha256.

    Where only a CRC32 is published, ``expected_crc`` is checked instead of the sha256. Another export of
    the network on record by its sha256 (``ModelEntry.exports``) is verified by that.
    """
    if entry.exports and known_export(entry, sha256_of(path)):
        return
    if entry.size is not None and not entry.builtin and path.stat().st_size != entry.size:
        raise ModelMismatch(f"{path.name}: size {path.stat().st_size} bytes, expected {entry.size} "
                            f"for {entry.name}")
    if entry.sha256:
        actual = sha256_of(path)
        if actual != entry.sha256:
            raise ModelMismatch(f"{path.name}: sha256 {actual} does not match {entry.name}'s {entry.sha256}")
    elif expected_crc:
        actual = crc32_of(path)
        if actual != expected_crc:
            raise ModelMismatch(f"{path.name}: CRC32 {actual} does not match {entry.name}'s {expected_crc}")


def _entry_for_file(path: Path) -> ModelEntry:
    matches = [e for e in catalog.CATALOG.values() if e.file == path.name and not e.builtin]
    if not matches:
        digest = sha256_of(path)
        matches = [e for e in catalog.CATALOG.values() if e.sha256 == digest]
    if not matches:
        raise UserError(f"{path.name} is not a file of any catalog model (see: facestation models list)")
    return matches[0]


def import_file(src: Path, name: str | None = None, crc32: str | None = None) -> ModelEntry:
    """Adopt a local model file after verifying it; nothing is installed when verification fails.

    Never touches the network: a model with a pinned sha256 is checked against it; one that only has a CRC32
    published next to its download (``crc32_url``) needs that CRC32 given as ``crc32`` (8 hex digits, from the
    ``.hash`` file), else the import is refused with a line saying how to get it.
    """
    src = Path(src)
    if not src.is_file():
        raise BadMedia(f"no such file: {src}")
    entry = catalog.get(name) if name else _entry_for_file(src)
    if entry.builtin:
        raise UserError(f"{entry.name} is built in; nothing to import")
    expected_crc = None
    if not entry.sha256 and not (entry.exports and known_export(entry, sha256_of(src))):
        expected_crc = _given_crc(entry, src, crc32)
    try:
        verify_file(entry, src, expected_crc)
    except ModelMismatch as exc:
        raise ModelMismatch(wrong_file(entry, src, str(exc))) from None
    install(src, entry)
    log.info("imported %s as %s", src, installed_path(entry))
    return entry


def wrong_file(entry: ModelEntry, src: Path, why: str) -> str:
    """The line for a file that is not ``entry``'s: what it is instead (if any model), and where the right
    one comes from."""
    digest = sha256_of(src)
    other = identify(src, digest)
    if other is not None and other.name != entry.name:
        what = (f"it is {other.name}'s file ({other.file}): import it as {other.name}")
    else:
        what = f"it is no file the catalog knows (sha256 {digest[:12]}…)"
    fix = f"run: facestation models fetch {entry.name}" if entry.url else "see: facestation models list"
    why = why.split(": ", 1)[-1]
    return f"{src.name} is not {entry.name}'s file ({why}); {what}. {where_from(entry)}; {fix}"


def install(src: Path, entry: ModelEntry, link: bool = False) -> str:
    """Put a verified file in place as ``entry``'s; nothing is left half-written. With ``link`` the file is
    hard-linked, else symlinked, else copied where neither is possible. Returns which: "copy", "hard link"
    or "symlink"."""
    dest = installed_path(entry)
    dest.parent.mkdir(parents=True, exist_ok=True)  # a DFM's scope folder (custom/, iperov/…)
    tmp = dest.with_name(dest.name + ".part-import")
    tmp.unlink(missing_ok=True)
    src = Path(src).resolve(strict=True)  # a link (relative ones too) is installed as the file it names
    how = _link(src, tmp) if link else "copy"
    if how == "copy":
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)
    exports.clear_unverified(entry)
    return how


def _link(src: Path, tmp: Path) -> str:
    try:
        os.link(src, tmp)
        return "hard link"
    except OSError as exc:  # another file system, or links not allowed there
        log.info("cannot hard-link %s (%s); trying a symlink", src, exc)
    try:
        os.symlink(src, tmp)
        return "symlink"
    except OSError as exc:
        log.info("cannot symlink %s (%s); copying", src, exc)
    return "copy"


def _given_crc(entry: ModelEntry, src: Path, crc32: str | None) -> str:
    """The CRC32 an unpinned model's import is checked against: the user's, from the published .hash file."""
    if not entry.crc32_url:
        raise ModelMismatch(f"{entry.name} has no published hash, so {src.name} cannot be verified: refused; "
                            "a file of your own goes in the models folder's custom/ folder and is used as "
                            f"custom/{src.stem} (checked when it loads)")
    if crc32 is None:
        raise ModelMismatch(
            f"{entry.name} has no pinned sha256, so {src.name} cannot be verified offline: add --crc32 with "
            f"the 8 hex digits of {entry.crc32_url} (this file's CRC32 is {crc32_of(src)}), or run: "
            f"facestation models fetch {entry.name}")
    value = crc32.strip().lower()
    if len(value) != 8 or any(c not in "0123456789abcdef" for c in value):
        raise UserError(f"--crc32 must be 8 hex digits (the content of {entry.crc32_url}), got {crc32!r}")
    return value


ProgressFn = Callable[[int, int], None]  # (bytes done, bytes total or 0)


def _resuming_downloader(dest_part: Path, progress: ProgressFn | None) -> Callable[..., None]:
    """A pooch downloader that keeps a partial file beside the target and resumes it with HTTP Range."""
    import urllib.request

    def download(url: str, output_file: str, _pooch: object, check_only: bool = False) -> None:
        if check_only:
            return
        done = dest_part.stat().st_size if dest_part.is_file() else 0
        request = urllib.request.Request(url, headers={"Range": f"bytes={done}-"} if done else {})
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310 - catalog URLs are https
            if done and resp.status != 206:  # server ignored the range: start over
                done = 0
            total = int(resp.headers.get("Content-Length") or 0) + done
            with open(dest_part, "ab" if done else "wb") as fh:
                while block := resp.read(1 << 20):
                    fh.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
        if total and done < total:
            raise OSError(f"download interrupted at {done} of {total} bytes; run the fetch again to resume")
        shutil.copyfile(dest_part, output_file)
        dest_part.unlink()

    return download


def fetch_order(name: str) -> list[str]:
    """What a fetch of ``name`` downloads, in order: the models it needs that are missing, then itself."""
    entry = catalog.get(name)
    return [n for n in catalog.needs(entry) if not is_installed(catalog.get(n))] + [entry.name]


def fetch(name: str, progress: ProgressFn | None = None) -> Path:
    """Download a catalog model (resuming a partial download), verify its hash, install it.

    ``progress(done, total)`` is called as bytes arrive (the CLI draws a bar with it, the UI a progress).
    """
    import pooch

    entry = catalog.get(name)
    if entry.builtin:
        return model_path(entry)
    if not entry.url:
        raise UserError(f"{entry.name} has no download URL; use: facestation models import FILE")
    dest = installed_path(entry)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)  # a DFM's scope folder (iperov/…)
    known_hash = f"sha256:{entry.sha256}" if entry.sha256 else None
    url = entry.crc32_url if not entry.sha256 and entry.crc32_url else entry.url  # what is asked for first
    try:
        expected_crc = None if entry.sha256 else _expected_crc(entry)
        url = entry.url
        downloaded = Path(pooch.retrieve(
            url=url, known_hash=known_hash, fname=entry.file + ".verified", path=models_dir(),
            downloader=_resuming_downloader(dest.with_name(dest.name + ".part"), progress), progressbar=False,
        ))
    except ValueError:  # pooch's hash mismatch; it deletes the file
        raise ModelMismatch(f"{entry.name}: hash mismatch: the downloaded file is not the one pinned "
                            f"(sha256 {entry.sha256}); it was deleted") from None
    except OSError as exc:  # the network, or the disk
        raise FetchFailed(entry.name, download_errors.reason(exc, url), url) from None
    try:
        verify_file(entry, downloaded, expected_crc)
    except ModelMismatch:
        downloaded.unlink(missing_ok=True)
        raise
    os.replace(downloaded, dest)
    return dest


def verify_installed() -> list[tuple[str, str]]:
    """(name, 'ok' | problem) for every installed downloadable model."""
    results = []
    for entry in catalog.CATALOG.values():
        path = installed_path(entry)
        if entry.builtin or not path.is_file():
            continue
        try:
            if entry.sha256:
                verify_file(entry, path)
                results.append((entry.name, "ok"))
            else:
                note = "(no pinned sha256; CRC32 checked at download)"
                results.append((entry.name, f"sha256 {sha256_of(path)} {note}"))
        except ModelMismatch as exc:
            results.append((entry.name, str(exc)))
    return results
