"""The app's own files: uploads kept under their content hash, safe names, fresh output paths.

Names a user gives (file names, account names) are reduced to ``[A-Za-z0-9_-]`` before they become part
of a path, so they can never leave the folder they are meant for.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Sequence
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


def output_path(folder: Path, target: str | Path, owner: str = "", transparent: bool = False) -> Path:
    """A fresh output file for ``target`` inside ``folder/owner`` (the owner's name made safe); a
    ``transparent`` one in a format that keeps alpha (a still's own .png/.webp, else .png; a video .webm)."""
    target = Path(target)
    sub = folder / safe_stem(owner or "local")
    sub.mkdir(parents=True, exist_ok=True)
    suffix = output_suffix(target, transparent)
    stashed = re.match(r"^[0-9a-f]{16}-", target.stem)  # a stashed upload: drop the hash again
    stem = safe_stem(target.stem.split("-", 1)[-1] if stashed else target.stem)
    # a random part: jobs queued in the same second must not share a name (their files appear only when done)
    for _ in range(100):
        candidate = sub / f"{stem}-swap-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}{suffix}"
        if not candidate.exists():
            return candidate
    raise UserError(f"could not find a free output name for {stem} in {sub}")


def output_suffix(target: str | Path, transparent: bool = False) -> str:
    """The suffix of ``target``'s output: an image keeps its format where it can be written (else .png), a
    video becomes .mp4; a ``transparent`` one a format that keeps alpha (a still's own .png/.webp, else .png;
    a video .webm)."""
    target = Path(target)
    if kind_of(target) == "image":
        keeps = ALPHA_IMAGES if transparent else IMAGE_OUTPUTS
        return target.suffix.lower() if target.suffix.lower() in keeps else ".png"
    return ".webm" if transparent else ".mp4"


def remove_download_copies() -> None:
    """Remove the private copies of outputs that versions before per-user links left in the temp folder."""
    shutil.rmtree(Path(tempfile.gettempdir()) / "facestation-downloads", ignore_errors=True)
