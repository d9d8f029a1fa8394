"""``facestation presets list | show NAME | save NAME [--set …] [--marker …] | delete NAME | export |
import``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cli.common import add_marker_option, require_subcommand
from pipeline import presets
from pipeline.markers import with_markers
from pipeline.settings import to_json


def register(sub: Any) -> None:
    p = sub.add_parser("presets", help="list, show, save or delete settings presets")
    ps = p.add_subparsers(dest="presets_cmd", parser_class=type(p))
    pl = ps.add_parser("list")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(handler=cmd_list)
    show = ps.add_parser("show")
    show.add_argument("name")
    show.set_defaults(handler=cmd_show)
    save = ps.add_parser("save")
    save.add_argument("name")
    save.add_argument("--from", dest="base", metavar="PRESET",
                      help="start from this preset (default: defaults)")
    save.add_argument("--set", action="append", metavar="section.key=value")
    add_marker_option(save)
    save.add_argument("--description")
    save.set_defaults(handler=cmd_save)
    delete = ps.add_parser("delete")
    delete.add_argument("name")
    delete.set_defaults(handler=cmd_delete)
    ex = ps.add_parser("export")
    ex.add_argument("name")
    ex.add_argument("destination")
    ex.add_argument("--force", action="store_true", help="replace an existing file")
    ex.set_defaults(handler=cmd_export)
    im = ps.add_parser("import")
    im.add_argument("file")
    im.add_argument("--name")
    im.set_defaults(handler=cmd_import)

    require_subcommand(p, ps)


def cmd_list(args: argparse.Namespace) -> int:
    rows = presets.list_presets()
    if args.json:
        print(json.dumps([{"name": r.name, "builtin": r.builtin, "description": r.description} for r in rows],
                         indent=2))
        return 0
    for r in rows:
        print(f"{r.name:24} {'built-in' if r.builtin else 'user':8}  {r.description}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    print(to_json(presets.load(args.name)))
    return 0


def cmd_save(args: argparse.Namespace) -> int:
    path = presets.save(args.name, with_markers(presets.settings_from(args.base, args.set), args.marker),
                        args.description or "")
    print(f"saved preset '{path.stem}' to {path}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    presets.delete(args.name)
    print(f"deleted preset '{args.name}'")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    print(f"exported to {presets.export(args.name, args.destination, overwrite=args.force)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    path = presets.import_file(args.file, args.name)
    print(f"imported preset '{path.stem}'")
    return 0
