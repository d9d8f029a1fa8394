"""What a file that is not the media it is named for really is, by its first bytes.

Asked only once a reader has refused the file (ffprobe, Pillow), so that a ZIP named ``x.mp4`` is said to be
a ZIP archive, not "truncated or corrupt". A small table of magic numbers, then a look at the text.
"""

from __future__ import annotations

from pathlib import Path

# (offset, magic bytes, what the file is), first match wins
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"PK\x03\x04", "a ZIP archive"),
    (0, b"PK\x05\x06", "a ZIP archive (empty)"),
    (0, b"%PDF-", "a PDF document"),
    (0, b"\x1f\x8b", "a gzip archive"),
    (0, b"BZh", "a bzip2 archive"),
    (0, b"\xfd7zXZ\x00", "an xz archive"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, b"Rar!\x1a\x07", "a RAR archive"),
    (257, b"ustar", "a tar archive"),
    (0, b"SQLite format 3\x00", "an SQLite database"),
    (0, b"\x7fELF", "a program (ELF)"),
    (0, b"MZ", "a Windows program"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office document"),
)
_HEAD = 4096


def what_is(path: str | Path) -> str | None:
    """``"a ZIP archive"``, ``"an HTML page"``, ``"a text file"``...; None when the first bytes say nothing
    (or the file cannot be read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return None
    for offset, magic, kind in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return kind
    return _text_kind(head)


def _text_kind(head: bytes) -> str | None:
    if not head or b"\0" in head:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a character cut at the end of the head
            return None
        text = head[: exc.start].decode("utf-8")
    start = text.lstrip("\ufeff \t\r\n").lower()
    if start.startswith(("<!doctype html", "<html")):
        return "an HTML page"
    if start.startswith("<?xml") or start.startswith("<svg"):
        return "an XML file"
    if start.startswith(("{", "[")):
        return "a JSON or text file"
    printable = sum(ch.isprintable() or ch in "\t\r\n" for ch in text)
    return "a text file" if printable >= 0.95 * len(text) else None
