"""onnxruntime itself: imported in this one place, with an error a user can act on, and its tensor types.

Everything that runs a graph (sessions, the batch check of a rewritten export, the conversion of the
built-in models) gets the module from ``ort()``; ``NP_TYPES`` maps the type names onnxruntime reports
for inputs and outputs to the numpy dtypes to feed them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.errors import UserError

NP_TYPES: dict[str, type[np.generic]] = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
}


def ort() -> Any:
    """The onnxruntime module (CPU or GPU package, whichever is installed)."""
    try:
        import onnxruntime
    except ImportError as exc:  # neither extra installed, or a broken switch between them
        raise UserError(
            "onnxruntime is not installed: run scripts/setup.sh (or pip install 'facestation[cpu]' / '[gpu]')"
        ) from exc
    return onnxruntime
