"""The single-slot handoff between a camera and the processing loop: the newest frame always wins.

A frame put while another waits replaces it (the replaced one is counted as dropped); nothing queues up, so
the frame processed next is never older than one capture interval plus one processing time."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Latest(Generic[T]):
    """One waiting item at most; :meth:`put` replaces it, :meth:`take` waits for one (None once closed and
    empty)."""

    def __init__(self) -> None:
        self._item: T | None = None
        self._closed = False
        self._cond = threading.Condition()
        self.offered = 0  # items put
        self.dropped = 0  # items replaced before they were taken

    def put(self, item: T) -> bool:
        """Offer ``item``; True when it replaced one that was waiting (that one is dropped)."""
        with self._cond:
            replaced = self._item is not None
            self._item = item
            self.offered += 1
            self.dropped += replaced
            self._cond.notify_all()
            return replaced

    def take(self) -> T | None:
        """The waiting item (waits for one); None when the handoff is closed and nothing waits."""
        with self._cond:
            while self._item is None and not self._closed:
                self._cond.wait()
            item, self._item = self._item, None
            return item

    def close(self) -> None:
        """No more items: :meth:`take` returns the one waiting, if any, then None."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
