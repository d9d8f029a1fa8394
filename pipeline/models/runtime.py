"""onnxruntime itself: imported in this one place, with an error a user can act on, and its tensor types.

Everything that runs a graph (sessions, the batch check of a rewritten export, the conversion of the
built-in models) gets the module from ``ort()``; ``NP_TYPES`` maps the type names onnxruntime reports
for inputs and outputs to the numpy dtypes to feed them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

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


def random_feeds(session: Any, rng: np.random.Generator, batch: int = 1,
                 free: int = 1) -> dict[str, npt.NDArray[Any]]:
    """Random inputs in [0, 1) for every input of ``session``: ``batch`` items, ``free`` for each other
    dimension the model leaves open, 0.5 for a parameter (a scalar, or a rank-1 input such as CodeFormer's
    ``w`` [1], whose open dims get 1): to time a model or compare its batched runs."""
    feeds: dict[str, npt.NDArray[Any]] = {}
    for arg in session.get_inputs():
        dtype = NP_TYPES.get(arg.type)
        if dtype is None:
            raise ValueError(f"input {arg.name} has unsupported type {arg.type}")
        if not carries_batch(arg):
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
            feeds[arg.name] = np.full(shape, 0.5, dtype)
            continue
        shape = [batch, *(d if isinstance(d, int) and d > 0 else free for d in arg.shape[1:])]
        feeds[arg.name] = rng.uniform(0.0, 1.0, size=shape).astype(dtype)
    return feeds


def carries_batch(arg: Any) -> bool:
    """Whether an onnxruntime input (or output) has a batch axis: rank ≥ 2 (images, embeddings), not a
    parameter such as a scalar or CodeFormer's ``w`` [1]."""
    return len(arg.shape) >= 2
