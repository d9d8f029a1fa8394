"""``facestation ui``: start the web UI on this machine, or on the LAN with a password.

``--listen`` binds every interface only when a login is configured; without one it exits with
code 2 and says how to set it. Passwords come from ``--auth USER:PASS`` (repeated, one per user)
or ``--auth-file FILE`` (one ``USER:PASS`` per line, ``#`` comments, ``admin USER:PASS`` for an
admin). Only users named admin there or by ``--admin`` see (and act on) every user's jobs; nobody
else is admin.
On the network the UI speaks HTTPS: with ``--ssl-certfile/--ssl-keyfile``, else with a self-signed
certificate made once (its fingerprint is logged at start-up); plain HTTP only with ``--insecure``.
"""

from __future__ import annotations

import argparse
import errno
import logging
import re
import socket
from pathlib import Path
from typing import Any

from pipeline import env
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
    auth.add_argument("--auth", action="append", metavar="USER:PASS",
                      help="a login the UI accepts; repeat it for each user (--auth ann:pw1 --auth bob:pw2)")
    auth.add_argument("--auth-file", metavar="FILE", help="logins, one USER:PASS per line")
    p.add_argument("--admin", action="append", metavar="USER",
                   help="user who sees and manages every job and publishes studio presets (default: nobody)")
    p.add_argument("--ssl-certfile", metavar="FILE", help="HTTPS certificate (PEM); with --ssl-keyfile")
    p.add_argument("--ssl-keyfile", metavar="FILE", help="HTTPS private key (PEM); with --ssl-certfile")
    p.add_argument("--insecure", action="store_true",
                   help="with --listen: plain HTTP (passwords readable on the network)")
    p.add_argument("--bind", default="0.0.0.0", metavar="ADDR",  # noqa: S104 - --listen means the network
                   help="with --listen: the address to serve on (default: all interfaces)")
    p.add_argument("--max-upload", default="2gb", metavar="SIZE",
                   help="largest upload accepted, e.g. 500mb, 2gb")
    p.add_argument("--no-worker", action="store_true", help="queue jobs without running them in this process")
    p.add_argument("--worker-id", metavar="NAME",
                   help="this UI's render worker's name (default host/device, or host/device-2 ... when "
                        "another UI or `queue run` on this queue has it)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab on start")
    p.set_defaults(handler=cmd_ui)


ROLES = ("admin", "user")
_USER_RE = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")


def parse_login(text: str, where: str) -> tuple[str, str]:
    user, sep, password = text.strip().partition(":")
    if not sep or not user.strip() or not password:
        raise UserError(f"{where}: expected USER:PASS with a non-empty user and password")
    if not _USER_RE.fullmatch(user.strip()):
        raise UserError(f"{where}: a user name is 1-64 letters, digits or . _ @ + -")
    return user.strip(), password


def parse_auth_line(line: str, where: str) -> tuple[str, str, str]:
    """``USER:PASS`` or ``ROLE USER:PASS`` (ROLE: admin or user) -> (user, password, role)."""
    first, *rest = line.strip().split(None, 1)
    if ":" not in first and rest:
        if first not in ROLES:
            raise UserError(f"{where}: unknown role '{first}' (valid: {', '.join(ROLES)})")
        return (*parse_login(rest[0], where), first)
    return (*parse_login(line, where), "user")


def read_auth_file(path: str | Path) -> list[tuple[str, str, str]]:
    """(user, password, role) for every login line of an auth file."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read --auth-file {path}: {exc.strerror}") from None
    logins = [parse_auth_line(line, f"{path.name} line {n}") for n, line in enumerate(text.splitlines(), 1)
              if line.strip() and not line.lstrip().startswith("#")]
    if not logins:
        raise UserError(f"--auth-file {path} holds no USER:PASS line")
    names = [u for u, _, _ in logins]
    twice = sorted({u for u in names if names.count(u) > 1})
    if twice:
        raise UserError(f"--auth-file {path}: user {twice[0]} appears twice")
    return logins


def auth_logins(given: list[str]) -> list[tuple[str, str, str]]:
    """(user, password, "user") for every ``--auth USER:PASS``; a user named twice is refused."""
    logins = [(*parse_login(text, "--auth"), "user") for text in given]
    seen: set[str] = set()
    for user, _, _ in logins:
        if user in seen:
            raise UserError(f"--auth: user {user} is given twice (one --auth per user)")
        seen.add(user)
    return logins


def _tls_options(args: argparse.Namespace) -> dict[str, Any]:
    if bool(args.ssl_certfile) != bool(args.ssl_keyfile):
        raise UserError("give both --ssl-certfile and --ssl-keyfile, or neither")
    if args.ssl_certfile:
        for option, value in (("--ssl-certfile", args.ssl_certfile), ("--ssl-keyfile", args.ssl_keyfile)):
            if not Path(value).expanduser().is_file():
                raise UserError(f"{option} {value}: no such file")
        return {"ssl_certfile": Path(args.ssl_certfile).expanduser(),
                "ssl_keyfile": Path(args.ssl_keyfile).expanduser()}
    return {"self_signed": bool(args.listen and not args.insecure), "insecure": bool(args.insecure)}


def urls(scheme: str, host: str, port: int) -> list[str]:
    """The addresses a colleague can open: every IPv4 address of this machine when bound to all of them
    (loopback last), else the one bound."""
    if host not in ("0.0.0.0", "::", ""):
        return [f"{scheme}://{host}:{port}"]
    import psutil

    found = {a.address for addrs in psutil.net_if_addrs().values() for a in addrs
             if a.family.name == "AF_INET" and a.address}
    lan = sorted(a for a in found if not a.startswith("127."))
    return [f"{scheme}://{a}:{port}" for a in [*lan, "127.0.0.1"]]


def config_from_args(args: argparse.Namespace) -> Any:
    from webui.common import UiConfig

    logins: list[tuple[str, str, str]] = []
    if args.auth:
        logins = auth_logins(args.auth)
    elif args.auth_file:
        logins = read_auth_file(args.auth_file)
    if args.listen and not logins:
        raise UserError(NO_AUTH)
    if args.worker_id is not None and (args.no_worker or not args.worker_id.strip()):
        raise UserError("--worker-id names this UI's render worker: give a name, and not with --no-worker")
    if not 1 <= args.port <= 65535:
        raise UserError(f"--port must be between 1 and 65535, got {args.port}")
    if not _SIZE_RE.fullmatch(args.max_upload.strip()):
        raise UserError(f"--max-upload: expected a size such as 500mb or 2gb, got {args.max_upload!r}")
    names = [u for u, _, _ in logins]
    admins = set(args.admin or []) | {u for u, _, role in logins if role == "admin"}
    unknown = sorted(a for a in admins if a not in names)
    if unknown:
        configured = ", ".join(names) or "none"
        raise UserError(f"--admin {unknown[0]} is not one of the configured users ({configured})")
    return UiConfig(
        host=args.bind if args.listen else "127.0.0.1",
        port=args.port,
        users=tuple((u, p) for u, p, _ in logins),
        admins=frozenset(admins),
        max_upload=args.max_upload.strip().lower().replace(" ", ""),
        worker=not args.no_worker,
        worker_id=args.worker_id,
        open_browser=not args.no_browser,
        **_tls_options(args),
    )


def check_port(host: str, port: int) -> None:
    """Refuse a port another program holds (or one this user may not serve on), in our words, before
    Gradio starts (its own message is about GRADIO_SERVER_PORT)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server binds: TIME_WAIT is fine
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UserError(f"port {port} on {host} is already in use (another facestation UI?): stop "
                                "that program, or choose another port with --port N") from None
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise UserError(f"port {port} needs administrator rights on this system: choose one above "
                                "1023 with --port N") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise UserError(f"--bind {host} is not an address of this machine") from None
            raise


def cmd_ui(args: argparse.Namespace) -> int:
    env.check()  # refuse a bad FACESTATION_* value, and bad options, before importing Gradio (slow)
    config = config_from_args(args)
    check_port(config.host, config.port)
    from webui.app import serve

    scheme = "https" if config.tls else "http"
    where = "the network" if args.listen else "this machine only"
    for url in urls(scheme, config.host, config.port):
        log.warning("facestation UI on %s (%s)", url, where)
    serve(config, block=True)
    return 0
