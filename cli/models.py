"""``facestation models list | fetch NAME… | import FILE | adopt DIR | verify | check [NAME…]``: the model
files, their state, and whether each installed one gives sound results on real photos."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.common import require_subcommand
from pipeline import adopt, modelcheck
from pipeline.errors import UserError
from pipeline.models import store


def register(sub: Any) -> None:
    models = sub.add_parser("models", help="list, fetch, import or verify model files")
    msub = models.add_subparsers(dest="models_cmd", parser_class=type(models))
    ml = msub.add_parser("list")
    ml.add_argument("--json", action="store_true")
    ml.set_defaults(handler=cmd_list)
    mf = msub.add_parser("fetch")
    mf.add_argument("names", nargs="+", metavar="NAME")
    mf.add_argument("--json", action="store_true")
    mf.set_defaults(handler=cmd_fetch)
    mi = msub.add_parser("import")
    mi.add_argument("file", metavar="FILE")
    mi.add_argument("--name", help="catalog name, when the file name differs")
    mi.add_argument("--crc32", metavar="HEX", help="expected CRC32 (the model's published .hash file), for a "
                    "model with no pinned sha256")
    mi.set_defaults(handler=cmd_import)
    ma = msub.add_parser("adopt", help="install the models another tool keeps (FaceFusion, VisoMaster, "
                         "rembg, insightface, ComfyUI, Deep-Live-Cam, roop, Rope, DeepFaceLive) or any "
                         "folder has (linked, verified offline)")
    ma.add_argument("folder", metavar="DIR")
    ma.add_argument("--trust-structure", action="store_true",
                    help="also adopt a file nothing on record verifies when its structure fits one model and "
                    "models check passes it (marked 'unverified source')")
    ma.add_argument("--json", action="store_true")
    ma.set_defaults(handler=cmd_adopt)
    msub.add_parser("verify").set_defaults(handler=cmd_verify)
    register_check(msub)

    require_subcommand(models, msub)


def cmd_list(args: argparse.Namespace) -> int:
    rows = store.status()
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    table = []
    for r in rows:
        state = "built-in" if r.builtin else ("installed" if r.installed else "missing")
        size = f"{r.size / 1e6:.1f} MB" if r.size else UNKNOWN_SIZE
        notes = [f"needs {', '.join(r.needs)}: fetched with it"] if r.needs else []
        notes += [n for n in (r.export, r.source) if n]
        notes += [f"not yet checked against the real file: {r.unverified}"] if r.unverified else []
        table.append([r.name, r.role, state, size, r.licence + "".join(f"  ({n})" for n in notes)])
    print_table(["model", "role", "state", "size", "licence"], table, right={3})
    unknown = sum(not r.size for r in rows)
    if unknown:
        print(f"{UNKNOWN_SIZE}: size unknown ({unknown} models: no size is published for their files; "
              "an installed file shows its own)")
    return 0


UNKNOWN_SIZE = "?"  # a model's size where none is known: the footnote under `models list` says so once


def cmd_fetch(args: argparse.Namespace) -> int:
    """Fetch each model with the models it needs (a swapper's recogniser) first."""
    for asked in args.names:
        for name in store.fetch_order(asked):
            path = store.fetch(name, progress=None) if args.json else _fetch_with_bar(name)
            print(f"installed {name}: {path}" + (f" (needed by {asked})" if name != asked else ""))
    return 0


def _fetch_with_bar(name: str) -> Path:
    drawn: list[int] = []

    def bar(done: int, total: int) -> None:
        drawn.append(done)
        download_bar(done, total)

    path = store.fetch(name, progress=bar)
    if drawn:
        print(file=sys.stderr)  # ends the bar's line (the size may be unknown: the bar cannot tell)
    return path


def download_bar(done: int, total: int) -> None:
    """Megabytes so far and the percentage, redrawn in place on stderr (``total`` 0: unknown)."""
    pct = f"{100 * done / total:5.1f}%" if total else ""
    print(f"\r  {done / 1e6:8.1f} MB {pct}", end="", file=sys.stderr, flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    entry = store.import_file(Path(args.file), args.name, crc32=args.crc32)
    print(f"imported {args.file} as {entry.name}")
    return 0


def cmd_adopt(args: argparse.Namespace) -> int:
    report = adopt.adopt(Path(args.folder), trust_structure=args.trust_structure)
    if args.json:
        print(json.dumps({"folders": [{"folder": f, "layout": t} for f, t in report.folders],
                          "adopted": [a.__dict__ for a in report.adopted],
                          "skipped": [k.__dict__ for k in report.skipped]}, indent=2))
        return 0
    print("looked in: " + ", ".join(f"{f} ({t})" for f, t in report.folders))
    adopted = [[a.file, a.model, a.by, a.how, a.note] for a in report.adopted]
    print_table(["adopted", "as", "identified by", "installed as", "note"], adopted)
    print_table(["skipped", "why"], [[k.file, k.reason] for k in report.skipped])
    print(f"{len(report.adopted)} adopted, {len(report.skipped)} skipped from {report.folder}")
    return 0


def print_table(headers: list[str], rows: list[list[str]],
                right: set[int] | frozenset[int] = frozenset()) -> None:
    """Columns as wide as their widest cell (the last one left as long as it is; those of ``right``
    right-aligned); nothing without rows."""
    if not rows:
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers[:-1])]
    for row in [headers, *rows]:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        print("  ".join([*cells, row[-1]]).rstrip())


def cmd_verify(args: argparse.Namespace) -> int:
    results = store.verify_installed()
    bad = [r for r in results if r[1] != "ok" and not r[1].startswith("sha256 ")]
    for name, state in results:
        print(f"{name}: {state}")
    if not results:
        print("no downloaded models installed")
    if bad:
        raise UserError(f"{len(bad)} installed model(s) failed verification: {', '.join(n for n, _ in bad)}")
    return 0


def register_check(msub: Any) -> None:
    mc = msub.add_parser("check", help="run each installed model (or those named) on real photos and judge "
                         "the results; exit 1 when one fails")
    mc.add_argument("names", nargs="*", metavar="NAME")
    mc.add_argument("--json", action="store_true")
    mc.set_defaults(handler=cmd_check)


def figures_text(figures: dict[str, float]) -> str:
    return " ".join(f"{k}={v:g}" for k, v in figures.items())


def cmd_check(args: argparse.Namespace) -> int:
    results = modelcheck.check(args.names)
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        print_table(["model", "role", "verdict", "ran on", "figures", "reason"],
                    [[r.model, r.role, r.verdict, r.ran_on or "-", figures_text(r.figures), r.reason]
                     for r in results])
    failed = [r.model for r in results if r.verdict == "FAIL"]
    if failed and not args.json:
        print(f"{len(failed)} model(s) failed the check: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
