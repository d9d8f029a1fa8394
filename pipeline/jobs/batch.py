"""A batch: one source (or several) and one set of settings on many targets, queued as one job each.

Targets are files, or folders whose images and videos (not their sub-folders) are taken in name order. Each
job's output goes in one folder, named by a pattern with the fields ``{target}`` (the target's name without
its suffix), ``{source}`` (the first source's) and ``{n}`` (1, 2, ... in the batch's order); the suffix is
the pattern's own where it names one the target's kind is written as (``{target}-alpha.mov``), else the
kind's (an image keeps its format where it can be written, a video becomes .mp4). A job that
cannot be queued (a bad file, an output another job of the batch or the queue already writes) is refused
with its own line and the others are queued. ::

    for item in add_batch(store, [me], [clip_a, folder], out_dir, settings, "{target}-{source}"):
        print(item.job.id if item.job else f"{item.target.name}: {item.error}")
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.alpha import ALPHA_VIDEOS
from pipeline.errors import UserError
from pipeline.jobs.model import Job
from pipeline.media import IMAGE_INPUTS, IMAGE_OUTPUTS, VIDEO_INPUTS, VIDEO_OUTPUTS
from pipeline.workspace import kind_of, output_suffix, safe_stem

DEFAULT_NAME = "{target}-swap"
FIELDS = ("target", "source", "n")


@dataclass(frozen=True)
class BatchItem:
    """One target of a batch: the job queued for it, or why it was refused."""

    target: Path
    output: Path | None
    job: Job | None = None
    error: str | None = None


def expand_targets(given: Sequence[str | Path]) -> list[Path]:
    """The target files: each file as given, each folder's images and videos in name order."""
    out: list[Path] = []
    for item in map(Path, given):
        if not item.is_dir():
            out.append(item)
            continue
        media = sorted(p for p in item.iterdir() if p.is_file() and not p.name.startswith(".")
                       and p.suffix.lower() in (*IMAGE_INPUTS, *VIDEO_INPUTS))
        if not media:
            raise UserError(f"the target folder {item} has no image or video in it")
        out += media
    return out


def check_pattern(pattern: str) -> None:
    """Refuse an empty name pattern, one with an unknown or malformed field, or one that names a folder."""
    if not pattern.strip():
        raise UserError(f"the name pattern is empty: give one such as {DEFAULT_NAME!r} "
                        f"(fields: {', '.join('{' + f + '}' for f in FIELDS)})")
    if "/" in pattern or "\\" in pattern:
        raise UserError(f"the name pattern {pattern!r} is a file name, not a path "
                        "(the folder is chosen apart)")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
    except ValueError as exc:
        raise UserError(f"the name pattern {pattern!r}: {exc} "
                        f"(fields: {', '.join('{' + f + '}' for f in FIELDS)})") from None
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        raise UserError(f"the name pattern {pattern!r}: unknown field {{{unknown[0]}}} "
                        f"(valid: {', '.join('{' + f + '}' for f in FIELDS)})")
    try:  # a format the field cannot take ({target:d})
        pattern.format(target="target", source="source", n=1)
    except (ValueError, IndexError) as exc:
        raise UserError(f"the name pattern {pattern!r}: {exc}") from None


def output_for(pattern: str, folder: Path, target: Path, source: Path, n: int,
               transparent: bool = False, video: str | None = None) -> Path:
    """The output of the batch's ``n``-th target (``pattern`` checked by :func:`check_pattern`). A pattern
    that ends in a suffix the target's kind can be written as keeps it (``{target}-alpha.mov``: a .mov;
    whether it holds what is made is the request's check); else the kind's own (a ``transparent`` one in
    a format that keeps alpha; ``video``: a video's, as the settings choose it)."""
    name = pattern.format(target=target.stem, source=source.stem, n=n)
    named = Path(name).suffix.lower()
    kept = IMAGE_OUTPUTS if kind_of(target) == "image" else (*VIDEO_OUTPUTS, *ALPHA_VIDEOS)
    if named in kept:
        return folder / (safe_stem(name[:-len(named)], limit=120) + named)
    return folder / (safe_stem(name, limit=120) + output_suffix(target, transparent, video))


def add_batch(add: Callable[[Path, Path], Job], sources: Sequence[str | Path], targets: Sequence[str | Path],
              folder: str | Path, pattern: str = DEFAULT_NAME, transparent: bool = False,
              video: str | None = None) -> list[BatchItem]:
    """Queue one job per target with ``add(target, output)`` (the service's checked add); each target's
    result, in order. Two targets of the batch named alike get the first one's output and a refusal."""
    check_pattern(pattern)
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"--output {folder} must be an existing folder when several targets are queued")
    first_source = Path(sources[0])
    items: list[BatchItem] = []
    taken: dict[Path, Path] = {}
    for n, target in enumerate(expand_targets(targets), 1):
        output = output_for(pattern, folder, target, first_source, n, transparent, video)
        if output in taken:
            items.append(BatchItem(target, output, error=f"its output {output.name} is also the output of "
                                   f"{taken[output].name} in this batch: add {{n}} or {{target}} to --name"))
            continue
        taken[output] = target
        try:
            items.append(BatchItem(target, output, job=add(target, output)))
        except UserError as exc:
            items.append(BatchItem(target, output, error=str(exc)))
    return items
