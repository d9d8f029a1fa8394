"""The ``facestation`` command line.

Exit codes: 0 success, 2 user error (one clear line on stderr), 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pipeline import __version__
from pipeline.errors import Cancelled, FacestationError, UserError

log = logging.getLogger("pipeline")

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors are user errors too
        raise UserError(f"{self.prog}: {message}")


def _load_settings(args: argparse.Namespace) -> Any:
    from pipeline import settings as settings_mod

    base = settings_mod.Settings()
    if getattr(args, "preset", None):
        from pipeline import presets

        base = presets.load(args.preset)
    return settings_mod.apply_overrides(base, list(getattr(args, "set", None) or []))


def _check_output(output: Path, inputs: Sequence[Path]) -> None:
    for p in inputs:
        if p.exists() and output.exists() and output.resolve() == p.resolve():
            raise UserError(f"--output {output} is one of the inputs; refusing to overwrite it")
    if output.exists() and output.is_dir():
        raise UserError(f"--output {output} is a folder; give a file name")
    if not output.parent.exists():
        raise UserError(f"the folder of --output does not exist: {output.parent}")


def _emit(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(f"wrote {summary['output']}")


def cmd_swap(args: argparse.Namespace) -> int:
    from pipeline.image import is_image_path

    target = Path(args.target)
    output = Path(args.output)
    sources = [Path(s) for s in args.source]
    settings = _load_settings(args)
    _check_output(output, [target, *sources])
    if is_image_path(target):
        from pipeline.process import swap_image

        summary = swap_image(settings, sources, target, output)
    else:
        summary = _swap_video(settings, sources, target, output, args)
    for notice in summary.get("notices", []):
        print(f"facestation: note: {notice}", file=sys.stderr)
    _emit(args, summary)
    return 0


def _swap_video(settings: Any, sources: list[Path], target: Path, output: Path, args: argparse.Namespace) -> dict[str, Any]:
    from pipeline.render import render_cli

    return render_cli(settings, sources, target, output, json_mode=args.json)


def cmd_models(args: argparse.Namespace) -> int:
    from pipeline.models import store

    if args.models_cmd == "list":
        rows = store.status()
        if args.json:
            print(json.dumps([r.as_dict() for r in rows], indent=2))
            return 0
        print(f"{'model':26} {'role':11} {'state':10} {'size':>9}  licence")
        for r in rows:
            state = "built-in" if r.builtin else ("installed" if r.installed else "missing")
            size = f"{r.size / 1e6:.1f} MB" if r.size else "?"
            print(f"{r.name:26} {r.role:11} {state:10} {size:>9}  {r.licence}")
        return 0
    if args.models_cmd == "fetch":
        for name in args.names:
            print(f"installed {name}: {store.fetch(name, progress=not args.json)}")
        return 0
    if args.models_cmd == "import":
        entry = store.import_file(Path(args.file), args.name)
        print(f"imported {args.file} as {entry.name}")
        return 0
    if args.models_cmd == "verify":
        results = store.verify_installed()
        bad = [r for r in results if r[1] != "ok" and not r[1].startswith("sha256 ")]
        for name, state in results:
            print(f"{name}: {state}")
        if not results:
            print("no downloaded models installed")
        if bad:
            raise UserError(f"{len(bad)} installed model(s) failed verification: {', '.join(n for n, _ in bad)}")
        return 0
    raise UserError("models: choose list, fetch, import or verify")


def _build_parser(extra: Sequence[Callable[[Any], None]] = ()) -> _Parser:
    parser = _Parser(prog="facestation", description="Local AI face-swap workstation.")
    parser.add_argument("--version", action="version", version=f"facestation {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    swap = sub.add_parser("swap", help="swap faces in an image or a video")
    swap.add_argument("--source", action="append", required=True, metavar="IMG",
                      help="photo of the face to put in (repeat for several photos of one person)")
    swap.add_argument("--target", required=True, metavar="IMG|VIDEO")
    swap.add_argument("--output", required=True, metavar="PATH")
    swap.add_argument("--preset", metavar="NAME|FILE")
    swap.add_argument("--set", action="append", metavar="section.key=value", help="override one setting")
    swap.add_argument("--json", action="store_true", help="print a machine-readable summary")
    swap.set_defaults(handler=cmd_swap)

    models = sub.add_parser("models", help="list, fetch, import or verify model files")
    msub = models.add_subparsers(dest="models_cmd", parser_class=_Parser)
    ml = msub.add_parser("list")
    ml.add_argument("--json", action="store_true")
    mf = msub.add_parser("fetch")
    mf.add_argument("names", nargs="+", metavar="NAME")
    mf.add_argument("--json", action="store_true")
    mi = msub.add_parser("import")
    mi.add_argument("file", metavar="FILE")
    mi.add_argument("--name", help="catalog name, when the file name differs")
    msub.add_parser("verify")
    models.set_defaults(handler=cmd_models)

    for add in extra:
        add(sub)
    return parser


def _extra_commands() -> list[Callable[[Any], None]]:
    """Sub-commands living in their own modules (presets, queue, ui, bench) register themselves here."""
    adders = []
    for module in ("pipeline.presets_cli", "pipeline.jobs.cli", "pipeline.bench", "webui.cli"):
        try:
            mod = __import__(module, fromlist=["register"])
        except ImportError:
            continue
        adders.append(mod.register)
    return adders


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="facestation: %(message)s")
    try:
        parser = _build_parser(_extra_commands())
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        return int(args.handler(args))
    except Cancelled as exc:
        print(f"facestation: cancelled: {exc}", file=sys.stderr)
        return 130
    except UserError as exc:
        print(f"facestation: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("facestation: interrupted", file=sys.stderr)
        return 130
    except (FacestationError, Exception) as exc:  # internal error: one line, traceback on request
        if os.environ.get("FACESTATION_DEBUG"):
            raise
        print(f"facestation: internal error: {type(exc).__name__}: {exc} (set FACESTATION_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
