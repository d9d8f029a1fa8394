"""The ``facestation`` entry point: one parser, the command modules imported by name, exit codes.

Exit codes: 0 success, 2 user error (one clear line on stderr: bad input, or a disk that is full, read-only
or not ours to write), 1 internal error, 130 cancelled or interrupted (Ctrl-C), 143/129 ``swap`` stopped by
SIGTERM/SIGHUP (``live`` ends on them as on Ctrl-C, its recording kept). A command module that fails to
import is an error here, never a missing command.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from cli import bench, live, models, presets, queue, report, swap, ui
from pipeline import __version__, env
from pipeline.errors import Cancelled, UserError, memory_fault, os_fault
from pipeline.models.gpu import gpu_problem
from pipeline.writer import Stopped

# in the order `facestation --help` lists them
COMMANDS = (swap, live, models, presets, queue, report, bench, ui)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors are user errors too
        raise UserError(f"{self.prog}: {message}")


def build_parser() -> Parser:
    parser = Parser(prog="facestation", description="Local AI face-swap workstation.")
    parser.add_argument("--version", action="version", version=f"facestation {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="facestation: %(message)s")
    debug = False
    try:
        debug = env.DEBUG.get()  # every command reads it, so a bad value is refused before any runs
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        gpu_notice(args)
        return int(args.handler(args))
    except Cancelled as exc:
        print(f"facestation: cancelled: {exc}", file=sys.stderr)
        return 130
    except UserError as exc:
        print(f"facestation: error: {exc}", file=sys.stderr)
        return 2
    except Stopped as exc:
        print(f"facestation: stopped by {exc}", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("facestation: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a full or read-only disk, a missing permission, no memory: the user's to fix
        fault = (os_fault(exc) if isinstance(exc, OSError) else None) or memory_fault(exc)
        if fault is None:
            return _internal(exc, debug)
        print(f"facestation: error: {fault}", file=sys.stderr)
        return 2


RUNS_MODELS = {"swap", "live", "bench", "ui", "queue run", "models check"}  # the commands that load models


def gpu_notice(args: argparse.Namespace) -> None:
    """One line on stderr where a command that runs models will not run them on the GPU that is here."""
    sub = getattr(args, f"{args.command}_cmd", None)
    if args.command not in RUNS_MODELS and f"{args.command} {sub}" not in RUNS_MODELS:
        return
    problem = gpu_problem()
    if problem is not None:
        print(f"facestation: warning: {problem.line()}", file=sys.stderr)


def _internal(exc: Exception, debug: bool) -> int:
    """An internal error: one line, the traceback on request."""
    if debug:
        raise exc
    print(f"facestation: internal error: {type(exc).__name__}: {exc} "
          "(set FACESTATION_DEBUG=1 for details)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
