"""What the command modules share."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.errors import UserError


def add_marker_option(parser: argparse.ArgumentParser) -> None:
    """``--marker`` as ``swap``, ``queue add`` and ``presets save`` take it (read by ``with_markers``)."""
    parser.add_argument("--marker", action="append", metavar="PLACE=section.key=value[,...]",
                        help="settings that change from a frame (120) or a time (80s, 00:01:20) of the video "
                        "on (repeatable; README \"Markers\")")


def require_subcommand(group: argparse.ArgumentParser, subcommands: Any) -> None:
    """``facestation GROUP`` alone is a user error that lists the group's sub-commands (read when it happens,
    so every sub-command added after this call is listed too)."""

    def no_command(args: argparse.Namespace) -> int:
        names = list(subcommands.choices)
        listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        raise UserError(f"{group.prog.split()[-1]}: choose {listed}")

    group.set_defaults(handler=no_command)
