"""One timeout scale for every wait in the tests.

A wait (a server coming up, a preview showing, a child process being reaped) is given a generous deadline
on an idle machine; ``FACESTATION_TEST_TIMEOUT_SCALE`` (a positive number, default 1) multiplies every one
of them for a slower or busier machine. A deadline is only ever how long to keep waiting for something that
will happen: no test asserts on how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pipeline import env

T = TypeVar("T")

SCALE_VARIABLE = env.TEST_TIMEOUT_SCALE.name


def timeout_scale() -> float:
    """The factor every test wait is multiplied by (``FACESTATION_TEST_TIMEOUT_SCALE``, default 1); a bad
    value is a ValueError naming the variable and what it accepts."""
    try:
        return float(env.TEST_TIMEOUT_SCALE.get())
    except env.BadEnvironment as exc:
        raise ValueError(str(exc)) from None


def scaled(seconds: float) -> float:
    """``seconds`` of waiting, times the machine's timeout scale."""
    return seconds * timeout_scale()


def scaled_ms(seconds: float) -> float:
    """:func:`scaled` in milliseconds (Playwright's unit)."""
    return scaled(seconds) * 1000.0


def wait_until(predicate: Callable[[], T], seconds: float, what: str, *, every: float = 0.1) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that; after ``scaled(seconds)``
    fail naming ``what`` was waited for (and the last value seen)."""
    limit = scaled(seconds)
    end = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"gave up after {limit:.0f} s waiting for {what} (last value: {value!r}; "
                                 f"a slow machine may set {SCALE_VARIABLE})")
        time.sleep(every)
