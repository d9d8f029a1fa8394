"""Names of files: which file a path names (through symlinks and hard links), and the temporary names a
writer uses before renaming its output into place (within the file system's name limit, unique per writer).
"""

from __future__ import annotations

import os
from pathlib import Path

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
