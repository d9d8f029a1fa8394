"""``facestation ui``: start the web UI on this machine, or on the LAN with a password.

``--listen`` binds every interface only when a login is configured; without one it exits with
code 2 and says how to set it. Passwords come from ``--auth USER:PASS`` or ``--auth-file FILE``
(one ``USER:PASS`` per line, ``#`` comments); the first user (or those named by ``--admin``) sees
every user's jobs.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path
from typing import Any

from pipeline.errors import UserError

log = logging.getLogger(__name__)

_SIZE_RE = re.compile(r"\d+(\.\d+)?\s*(b|kb|mb|gb|tb)", re.IGNORECASE)
NO_AUTH = (
    "--listen shares the UI with every machine on the network, so it needs a password: "
    "add --auth USER:PASS or --auth-file FILE (one USER:PASS per line)"
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ui", help="open the web UI (http://127.0.0.1:7860)")
    p.add_argument("--listen", action="store_true",
                   help="serve on all interfaces (needs --auth or --auth-file)")
    p.add_argument("--port", type=int, default=7860, metavar="N")
    auth = p.add_mutually_exclusive_group()
    auth.add_argument("--auth", metavar="USER:PASS", help="require this login")
    auth.add_argument("--auth-file", metavar="FILE", help="logins, one USER:PASS per line")
    p.add_argument("--admin", action="append", metavar="USER",
                   help="user who sees every job (default: the first)")
    p.add_argument("--max-upload", default="2gb", metavar="SIZE",
                   help="largest upload accepted, e.g. 500mb, 2gb")
    p.add_argument("--no-worker", action="store_true", help="queue jobs without running them in this process")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab on start")
    p.set_defaults(handler=cmd_ui)


def parse_login(text: str, where: str) -> tuple[str, str]:
    user, sep, password = text.strip().partition(":")
    if not sep or not user.strip() or not password:
        raise UserError(f"{where}: expected USER:PASS with a non-empty user and password")
    return user.strip(), password


def read_auth_file(path: str | Path) -> list[tuple[str, str]]:
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read --auth-file {path}: {exc.strerror}") from None
    logins = [parse_login(line, f"{path.name} line {n}") for n, line in enumerate(text.splitlines(), 1)
              if line.strip() and not line.lstrip().startswith("#")]
    if not logins:
        raise UserError(f"--auth-file {path} holds no USER:PASS line")
    return logins


def config_from_args(args: argparse.Namespace) -> Any:
    from webui.common import UiConfig

    users: list[tuple[str, str]] = []
    if args.auth:
        users = [parse_login(args.auth, "--auth")]
    elif args.auth_file:
        users = read_auth_file(args.auth_file)
    if args.listen and not users:
        raise UserError(NO_AUTH)
    if not 1 <= args.port <= 65535:
        raise UserError(f"--port must be between 1 and 65535, got {args.port}")
    if not _SIZE_RE.fullmatch(args.max_upload.strip()):
        raise UserError(f"--max-upload: expected a size such as 500mb or 2gb, got {args.max_upload!r}")
    names = [u for u, _ in users]
    admins = args.admin or names[:1]
    unknown = [a for a in admins if a not in names]
    if unknown:
        configured = ", ".join(names) or "none"
        raise UserError(f"--admin {unknown[0]} is not one of the configured users ({configured})")
    return UiConfig(
        host="0.0.0.0" if args.listen else "127.0.0.1",  # noqa: S104 - only with a login, checked above
        port=args.port,
        users=tuple(users),
        admins=frozenset(admins),
        max_upload=args.max_upload.strip().lower().replace(" ", ""),
        worker=not args.no_worker,
        open_browser=not args.no_browser,
    )


def cmd_ui(args: argparse.Namespace) -> int:
    config = config_from_args(args)  # refuse bad options before importing Gradio (slow)
    from webui.app import serve

    where = "all interfaces" if args.listen else "this machine only"
    log.warning("facestation UI on http://%s:%d (%s)", "127.0.0.1" if not args.listen else "<this host>",
                config.port, where)
    serve(config, block=True)
    return 0
