"""What every tab needs: the app's configuration, the job store, who is asking, and error display."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from pipeline import api
from webui.audit import AuditLog
from webui.auth import Guard
from webui.files import ResultLinks

log = logging.getLogger("webui")

F = TypeVar("F", bound=Callable[..., Any])

# Gradio's "always_last" listener, when its run ends with a trigger held meanwhile, sends that trigger's
# event again to *every* listener of the event: two always_last listeners on one event set each other off
# for ever (each one's end finds the other running and holds a trigger for it), a request every few hundred
# ms on an idle page. So an event has one always_last listener on the server, the preview where it has one;
# every other listener of it hears it through beside(). tests/test_webui_events.py holds the app to it.


def beside(triggers: list[Any], fn: Callable[..., Any], inputs: Any, outputs: Any, **kwargs: Any) -> Any:
    """Listen with ``fn`` to ``triggers`` that another listener (the preview) also hears, through a hidden
    relay of its own: the page sets it on each trigger (a js step, no request), and ``fn`` is the relay's one
    always_last listener: the newest trigger after the one running, one run at a time, so its replies are
    shown in the order they were made (with "multiple" two runs' replies can be shown the wrong way round: a
    full run once showed no line for a trim start typed past the clip's end)."""
    relay = gr.Textbox("", elem_classes=["fs-hidden"], show_label=False, container=False)
    gr.on(triggers, None, None, relay, js="() => String(performance.now())", api_visibility="private")
    return relay.change(fn, inputs, outputs, trigger_mode="always_last", **kwargs)


@dataclass(frozen=True)
class UiConfig:
    """How the UI runs. ``users`` empty = no login (localhost only); ``admins`` see every user's jobs."""

    host: str = "127.0.0.1"
    port: int = 7860
    users: tuple[tuple[str, str], ...] = ()
    admins: frozenset[str] = field(default_factory=frozenset)
    max_upload: str = "2gb"
    outputs: Path | None = None  # default api.outputs_dir() at start
    data: Path | None = None  # where the queue database lives; default the data folder (FACESTATION_DATA)
    worker: bool = True  # start a background render worker in this process
    worker_id: str | None = None  # its name; None: the first free one of host/device, host/device-2 ...
    poll_s: float = 1.0  # how often the Queue tab asks the store for progress
    open_browser: bool = False  # open a browser tab on the app once it is up (the CLI's default)
    ssl_certfile: Path | None = None  # HTTPS with the host's own certificate
    ssl_keyfile: Path | None = None
    self_signed: bool = False  # HTTPS with a certificate made once and kept in the data folder
    insecure: bool = False  # plain HTTP on the network, asked for explicitly

    @property
    def tls(self) -> bool:
        return self.self_signed or self.ssl_certfile is not None


@dataclass
class Ctx:
    """Shared by the tab builders of one app."""

    config: UiConfig
    outputs: Path
    store: api.JobStore  # opened with api.open_store, as the CLI opens it
    bench: api.BackgroundBench | None = None  # the last benchmark started from the System tab
    audit: AuditLog = field(default_factory=lambda: AuditLog(None))
    guard: Guard = field(default_factory=lambda: Guard(frozenset(), AuditLog(None)))  # who is signed in
    links: ResultLinks = field(default_factory=ResultLinks)  # results handed out by link
    live: api.LiveRuns = field(default_factory=api.LiveRuns)  # the Live tab's runs, each its owner's

    def owner(self, request: gr.Request | None) -> str:
        return (getattr(request, "username", None) or "") if request is not None else ""

    def session(self, request: gr.Request | None) -> str:
        """The caller's login session token ("" without a login)."""
        if request is None or not self.config.users:
            return ""
        found = self.guard.sessions.find(dict(getattr(request, "cookies", None) or {}))
        return found[0] if found and found[1] == self.owner(request) else ""

    def is_admin(self, request: gr.Request | None) -> bool:
        return not self.config.users or self.owner(request) in self.config.admins


_SHELL_HINT = re.compile(r"[;:(]?\s*\(?(run|see|try):?\s+`?(facestation|pip|scripts/)[^)]*\)?", re.I)
_PATH = re.compile(r"(?<![\w.:/])(/[\w.@+-]+)+/([\w.@+-]+)")  # not inside a URL (https://host/...)


def browser_message(text: str) -> str:
    """An engine message as a browser user should read it: no shell commands, no server paths (a path is
    cut to its file name; a URL is kept whole)."""
    text = _SHELL_HINT.sub("", text)
    text = _PATH.sub(lambda m: m.group(2), text)
    return " ".join(text.split()).rstrip(" ;,:")


def user_errors(fn: F) -> F:
    """Turn the engine's UserError into a Gradio error toast the user can act on (and log it)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except api.UserError as exc:
            log.info("%s: %s", fn.__name__, exc)
            raise gr.Error(browser_message(str(exc)), print_exception=False) from None
        except Exception as exc:  # memory that ran out (a preview on a big frame) is the user's to fix too
            fault = api.memory_fault(exc)
            if fault is None:
                raise
            log.warning("%s: %s", fn.__name__, fault)
            raise gr.Error(browser_message(str(fault)), print_exception=False) from None

    return wrapper  # type: ignore[return-value]


