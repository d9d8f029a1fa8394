"""``facestation presets list | show NAME | save NAME [--set …] | delete NAME | export | import``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline import presets
from pipeline.errors import UserError
from pipeline.settings import Settings, apply_overrides, to_json


def cmd_presets(args: argparse.Namespace) -> int:
    action = args.presets_cmd
    if action == "list":
        rows = presets.list_presets()
        if args.json:
            print(json.dumps([{"name": r.name, "builtin": r.builtin, "description": r.description} for r in rows], indent=2))
        for r in [] if args.json else rows:
            print(f"{r.name:24} {'built-in' if r.builtin else 'user':8}  {r.description}")
        return 0
    if action == "show":
        print(to_json(presets.load(args.name)))
        return 0
    if action == "save":
        base = presets.load(args.base) if args.base else Settings()
        path = presets.save(args.name, apply_overrides(base, list(args.set or [])), args.description or "")
        print(f"saved preset '{path.stem}' to {path}")
        return 0
    if action == "delete":
        presets.delete(args.name)
        print(f"deleted preset '{args.name}'")
        return 0
    if action == "export":
        print(f"exported to {presets.export(args.name, args.destination)}")
        return 0
    if action == "import":
        path = presets.import_file(args.file, args.name)
        print(f"imported preset '{path.stem}'")
        return 0
    raise UserError("presets: choose list, show, save, delete, export or import")


def register(sub: Any) -> None:
    p = sub.add_parser("presets", help="list, show, save or delete settings presets")
    ps = p.add_subparsers(dest="presets_cmd", parser_class=type(p))
    pl = ps.add_parser("list")
    pl.add_argument("--json", action="store_true")
    ps.add_parser("show").add_argument("name")
    save = ps.add_parser("save")
    save.add_argument("name")
    save.add_argument("--from", dest="base", metavar="PRESET", help="start from this preset (default: defaults)")
    save.add_argument("--set", action="append", metavar="section.key=value")
    save.add_argument("--description")
    ps.add_parser("delete").add_argument("name")
    ex = ps.add_parser("export")
    ex.add_argument("name")
    ex.add_argument("destination")
    im = ps.add_parser("import")
    im.add_argument("file")
    im.add_argument("--name")
    p.set_defaults(handler=cmd_presets)
