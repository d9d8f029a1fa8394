"""What the command modules share."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.errors import UserError


def require_subcommand(group: argparse.ArgumentParser, subcommands: Any) -> None:
    """``facestation GROUP`` alone is a user error that lists the group's sub-commands (read when it happens,
    so every sub-command added after this call is listed too)."""

    def no_command(args: argparse.Namespace) -> int:
        names = list(subcommands.choices)
        listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        raise UserError(f"{group.prog.split()[-1]}: choose {listed}")

    group.set_defaults(handler=no_command)
