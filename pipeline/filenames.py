"""Names of files: which file a path names (through symlinks and hard links), and the temporary names a
writer uses before renaming its output into place (within the file system's name limit, unique per writer).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pipeline.errors import UserError

Key = str | tuple[int, int]


def keys(path: str | Path) -> frozenset[Key]:
    """What names the file at ``path``: its real path (symlinks resolved, the last one too), its folder's real
    path joined with its name (the entry a rename replaces) and, for a file that exists, its device and inode
    (a hard link). Two paths name the same file when they share a key."""
    p = Path(path)
    found: set[Key] = {os.path.realpath(p), os.path.join(os.path.realpath(p.parent), p.name)}
    try:
        st = os.stat(p)
    except OSError:
        pass  # not there (yet): its names say it
    else:
        found.add((st.st_dev, st.st_ino))
    return frozenset(found)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file (through symlinks, ``..`` or a hard link)."""
    return bool(keys(a) & keys(b))


def name_max(folder: str | Path) -> int:
    """The longest file name ``folder``'s file system takes, in bytes (255 where it cannot say)."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def fitted_stem(stem: str, reserved: int, folder: str | Path) -> str:
    """``stem`` as it goes into a temporary name with ``reserved`` more bytes around it: itself when it fits
    the folder's name limit, else cut (on a character boundary) and marked with a hash of the whole stem, so
    that two long names never share a temporary name and one name always gets the same stem."""
    room = name_max(folder) - reserved
    data = stem.encode("utf-8", "surrogateescape")
    if len(data) <= room:
        return stem
    mark = "~" + hashlib.sha1(data).hexdigest()[:10]
    cut = data[: max(0, room - len(mark))].decode("utf-8", "ignore")
    return cut + mark


def temp_name(output: Path, middle: str, end: str = "") -> Path:
    """``.STEM.MIDDLE.EXT`` + ``end`` beside ``output``, the stem shortened to keep the name within the file
    system's limit (an output of 250 bytes has a longer partial)."""
    rest = f"..{middle}{output.suffix}{end}"
    return output.with_name(f".{fitted_stem(output.stem, len(rest.encode()), output.parent)}.{middle}"
                            f"{output.suffix}{end}")


def check_name_length(output: Path) -> None:
    """A UserError for an output name longer than its file system takes."""
    size, limit = len(output.name.encode("utf-8", "surrogateescape")), name_max(_existing(output.parent))
    if size > limit:
        raise UserError(f"the output name {output.name[:40]}… is {size} bytes long; the file system of "
                        f"{output.parent} takes at most {limit}: choose a shorter name")


def _existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder
