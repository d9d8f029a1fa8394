"""The app's own files: uploads kept under their content hash, safe names, fresh output paths.

Names a user gives (file names, account names) are reduced to ``[A-Za-z0-9_-]`` before they become part
of a path, so they can never leave the folder they are meant for.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import paths
from pipeline.alpha import ALPHA_IMAGES
from pipeline.errors import UserError
from pipeline.media import IMAGE_OUTPUTS, MediaKind, check_media, kind_of


def stash(path: str | Path, kind: Sequence[MediaKind] | None = ("image", "video")) -> Path:
    """Check an uploaded file and copy it into the app's uploads folder under its content hash (``kind``
    None: checked already, e.g. a voice by ``checks.check_audio``).

    Jobs refer to the stashed copy, which outlives the web server's temporary upload cache. The
    user-given file name is reduced to a safe stem, so it cannot leave the folder.
    """
    src = Path(path)
    if kind is not None:
        check_media(src, kind)
    digest = hashlib.sha256()
    with open(src, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    folder = paths.data_dir() / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"{digest.hexdigest()[:16]}-{safe_stem(src.stem)}{src.suffix.lower()}"
    if not dest.exists():
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(src, tmp)
        tmp.replace(dest)
    return dest


def safe_stem(name: str, limit: int = 48) -> str:
    """A file-name stem made only of ``[A-Za-z0-9_-]`` (never empty, never a path)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:limit]
    return cleaned or "file"


def output_path(folder: Path, target: str | Path, owner: str = "", transparent: bool = False,
                video: str | None = None) -> Path:
    """A fresh output file for ``target`` inside ``folder/owner`` (the owner's name made safe); a
    ``transparent`` one in a format that keeps alpha (a still's own .png/.webp, else .png; a video .webm)."""
    sub = folder / safe_stem(owner or "local")
    sub.mkdir(parents=True, exist_ok=True)
    return fresh_output(sub, target, transparent, video)


STASHED = re.compile(r"^[0-9a-f]{16}-")  # the content-hash prefix of a stashed upload's name


def shown_name(path: str | Path) -> str:
    """A job's input file as its user named it: a stashed upload's name without its content hash."""
    return STASHED.sub("", Path(path).name)


def fresh_output(folder: Path, target: str | Path, transparent: bool = False,
                 video: str | None = None) -> Path:
    """A new file name for ``target``'s output in ``folder`` (which exists): its name, ``-swap``, the time
    and a random part (a stashed upload's hash dropped); ``video``: a video's extension (see
    :func:`output_suffix`)."""
    target = Path(target)
    suffix = output_suffix(target, transparent, video)
    stem = safe_stem(Path(shown_name(target)).stem)  # a stashed upload: its hash dropped again
    # a random part: jobs queued in the same second must not share a name (their files appear only when done)
    for _ in range(100):
        candidate = folder / f"{stem}-swap-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}{suffix}"
        if not candidate.exists():
            return candidate
    raise UserError(f"could not find a free output name for {stem} in {folder}")


@dataclass(frozen=True)
class OutputFolder:
    """The folder a user's jobs are written to, and whether choosing it made it."""

    path: Path
    created: bool = False


def output_folder(outputs: Path, owner: str = "", asked: str = "", shared: bool = False,
                  make: bool = True) -> OutputFolder:
    """The folder ``owner``'s jobs write to: ``outputs/<owner>`` (or ``outputs/local``) unless ``asked``.

    On a local UI (``shared`` False) any folder: ``~`` expanded, a relative one taken inside the owner's
    folder. On a shared UI only a folder inside ``outputs/<owner>``: a relative path (``holiday``, or
    ``outputs/<owner>/holiday`` as the queue shows it), or an absolute one that lies inside it; ``..`` and
    any other place are refused (symlinks followed). The folder is made if missing and must be writable
    (``make`` False: only named, as a page shows the default before anything is queued)."""
    own = outputs / safe_stem(owner or "local")
    text = asked.strip()
    if not text:
        folder = own
    elif shared:
        folder = _inside(own, Path(text), text)
    else:
        given = Path(text).expanduser()
        folder = given if given.is_absolute() else own / given
    if folder.exists() and not folder.is_dir():
        raise UserError(f"the output folder {text} is a file, not a folder")
    created = not folder.exists()
    if not make:
        return OutputFolder(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"the output folder {text or folder} cannot be made: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"the output folder {text or folder} is not writable: choose another one")
    return OutputFolder(folder, created)


def _inside(own: Path, given: Path, text: str) -> Path:
    """``given`` (relative to ``own``, or absolute) as a folder inside ``own``, else UserError."""
    where = f"outputs/{own.name}"
    if ".." in given.parts:
        raise UserError(f"the output folder {text!r} may not use '..': give a folder inside your {where}")
    parts = given.parts
    if not given.is_absolute() and parts[:2] == ("outputs", own.name):  # as the queue shows folders
        given = Path(*parts[2:]) if len(parts) > 2 else Path()
    folder = given if given.is_absolute() else own / given
    try:
        Path(os.path.realpath(folder)).relative_to(os.path.realpath(own))
    except ValueError:
        raise UserError(f"the output folder {text!r} is not yours: on this shared UI jobs are saved "
                        f"inside your {where} (give a sub-folder name such as 'holiday')") from None
    return folder


def output_suffix(target: str | Path, transparent: bool = False, video: str | None = None) -> str:
    """The suffix of ``target``'s output: an image keeps its format where it can be written (else .png), a
    video becomes ``video`` (the settings' choice, ``video.formats.suffix_for``), else .mp4; a
    ``transparent`` one a format that keeps alpha (a still's own .png/.webp, else .png; a video .webm)."""
    target = Path(target)
    if kind_of(target) == "image":
        keeps = ALPHA_IMAGES if transparent else IMAGE_OUTPUTS
        return target.suffix.lower() if target.suffix.lower() in keeps else ".png"
    return video or (".webm" if transparent else ".mp4")


def remove_download_copies() -> None:
    """Remove the private copies of outputs that versions before per-user links left in the temp folder."""
    shutil.rmtree(Path(tempfile.gettempdir()) / "facestation-downloads", ignore_errors=True)
