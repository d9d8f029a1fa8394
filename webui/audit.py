"""The audit log: who signed in and who did what to which job, one JSON line per event.

``{"time": "2026-11-30T14:00:00Z", "user": "alice", "action": "delete", "job": 3}``, appended to
``audit.log`` in the data folder (next to the queue) and echoed to the ``webui.audit`` logger.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("webui.audit")


class AuditLog:
    """Append-only JSON lines; ``path`` None keeps events in the log output only."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def record(self, user: str, action: str, **details: Any) -> None:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "user": user or "local",
                 "action": action, **details}
        line = json.dumps(entry, ensure_ascii=False, default=str)
        log.info("audit: %s", line)
        if self.path is None:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def entries(self) -> list[dict[str, Any]]:
        if self.path is None or not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]
