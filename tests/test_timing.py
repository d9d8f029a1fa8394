"""The tests' one timeout scale (FACESTATION_TEST_TIMEOUT_SCALE) and their one way to wait."""

from __future__ import annotations

import re

import pytest

from tests import timing


def test_every_wait_is_scaled_by_one_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timing.SCALE_VARIABLE, raising=False)
    assert timing.scaled(30) == 30 and timing.scaled_ms(2) == 2000
    monkeypatch.setenv(timing.SCALE_VARIABLE, "2.5")
    assert timing.scaled(30) == 75
    for bad in ("fast", "0", "-1", "inf", "nan"):
        monkeypatch.setenv(timing.SCALE_VARIABLE, bad)
        expected = re.escape(f"{timing.SCALE_VARIABLE} must be a number > 0 (got '{bad}')")
        with pytest.raises(ValueError, match=expected):
            timing.scaled(1)


def test_wait_until_returns_the_value_or_names_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timing.SCALE_VARIABLE, raising=False)
    calls = iter([0, [], "ready"])
    assert timing.wait_until(lambda: next(calls), 30, "the third call", every=0.0) == "ready"
    with pytest.raises(AssertionError, match="waiting for the door to open .*last value: False"):
        timing.wait_until(lambda: False, 0.0, "the door to open")
