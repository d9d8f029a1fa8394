"""The facts the code cites live in the repository: every ``docs/<file>.md §N`` names a file of docs/ and a
section heading in it, a bare ``§N`` in a file that cites one docs file is a section of that file, and no
path outside the repository is cited. Read from the source text only (nothing imported)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".json", ".txt", ".cfg", ".yml", ".yaml", ".js", ".css",
                 ".html"}
SKIP_DIRS = {"__pycache__", "build", "dist", "test-artifacts", "node_modules"}
THIS = Path(__file__).resolve()

SECTION = r"§\d+(?:\.\d+)*(?:\s*[-–]\s*\d+(?:\.\d+)*)?"  # §1.3, or a range §1.1-1.2 / §2.4–2.5
CITATION = re.compile(rf"docs/([A-Za-z0-9_-]+)\.md((?:[\s,;]*(?:and\s+)?{SECTION})*)")
SECTION_RE = re.compile(SECTION)
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?(?:\s|$)", re.MULTILINE)
# the paths of the notes these docs were written from: a folder beside the repository, and their old names
OUTSIDE = re.compile("|".join([r"shared/", r"(?<![\w/.-])(?:MODELS|PROCESSORS|STACK|DESIGN|STYLE)\.md"]))


def _files() -> list[Path]:
    """The repository's text files (not hidden folders, virtual environments, build output or downloaded
    models), this test left out: it spells the patterns it looks for."""
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(folder, name)
            parts = path.relative_to(ROOT).parts
            if parts[0] == "models" and name != "README.md":
                continue
            if path.suffix in TEXT_SUFFIXES and path.resolve() != THIS:
                found.append(path)
    return found


def _sections(text: str) -> list[str]:
    """The section numbers a run of ``§…`` names (both ends of a range)."""
    numbers = []
    for ref in SECTION_RE.findall(text):
        numbers += re.findall(r"\d+(?:\.\d+)*", ref)
    return numbers


def _headings(name: str) -> set[str]:
    return set(HEADING.findall((DOCS / f"{name}.md").read_text(encoding="utf-8")))


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def test_the_docs_exist() -> None:
    for name in ("README", "models", "processors", "stack"):
        assert (DOCS / f"{name}.md").is_file(), f"docs/{name}.md is missing"
    assert {"0.4", "1.3", "3.2", "7.2", "8.3"} <= _headings("processors")
    assert {"1", "5"} <= _headings("models")


def _problems(path: Path) -> list[str]:
    """What is wrong with one file's citations: a docs file or a section that does not exist."""
    text = path.read_text(encoding="utf-8", errors="replace")
    rel = path.relative_to(ROOT)
    problems, cited, spans = [], set(), []
    for m in CITATION.finditer(text):
        name, where = m.group(1), f"{rel}:{_line(text, m.start())}"
        spans.append(m.span())
        if not (DOCS / f"{name}.md").is_file():
            problems.append(f"{where}: docs/{name}.md does not exist")
            continue
        cited.add(name)
        problems += [f"{where}: docs/{name}.md has no section {n}"
                     for n in _sections(m.group(2)) if n not in _headings(name)]
    # a bare §N is a section of the one docs file this file cites (in docs/ itself: of that file)
    in_docs = path.parent == DOCS
    home = path.stem if in_docs and path.stem != "README" else (min(cited) if len(cited) == 1 else None)
    for m in SECTION_RE.finditer(text):
        where = f"{rel}:{_line(text, m.start())}"
        if any(a <= m.start() < b for a, b in spans):
            continue
        if home is not None:
            problems += [f"{where}: {m.group()} is no section of docs/{home}.md"
                         for n in _sections(m.group()) if n not in _headings(home)]
        elif not cited and not in_docs:
            problems.append(f"{where}: {m.group()} names no docs file (cite it as docs/<file>.md §N)")
    return problems


def test_every_docs_citation_names_a_file_and_a_section_that_exist() -> None:
    problems = [p for path in _files() for p in _problems(path)]
    assert not problems, "\n".join(problems)


def test_no_path_outside_the_repository_is_cited() -> None:
    problems = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in OUTSIDE.finditer(text):
            problems.append(f"{path.relative_to(ROOT)}:{_line(text, m.start())}: {m.group()!r}")
    assert not problems, "a file outside the repository is cited (write the fact into docs/):\n" + "\n".join(
        problems)


@pytest.mark.parametrize("text, sections", [
    ("docs/processors.md §3.3, §4.2", ["3.3", "4.2"]),
    ("docs/processors.md §1.1-1.2", ["1.1", "1.2"]),
    ("docs/processors.md §2.4–2.5", ["2.4", "2.5"]),
    ("docs/models.md §1 and §5", ["1", "5"]),
    ("docs/processors.md §5, and §0.4's match_frame_color", ["5", "0.4"]),
])
def test_a_citation_is_read_with_all_its_sections(text: str, sections: list[str]) -> None:
    m = CITATION.search(text)
    assert m is not None
    assert _sections(m.group(2)) == sections
