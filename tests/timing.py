"""One scale for every wait of the tests: ``FACESTATION_TEST_TIMEOUT_SCALE`` (default 1) multiplies the
seconds a test is ready to wait for something, so that a slow or busy machine can be given more time without
any test being loosened for it. A wait is never a measurement: no test asserts how long something took."""

from __future__ import annotations

import os


def scaled(seconds: float) -> float:
    """``seconds`` times ``$FACESTATION_TEST_TIMEOUT_SCALE``."""
    return seconds * float(os.environ.get("FACESTATION_TEST_TIMEOUT_SCALE", "1"))
