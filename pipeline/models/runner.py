"""Run one catalog image model over a batch of crops, whatever batch its export fixes.

Enhancers, occluders, the face parser and the 68-point landmarker share this: the session comes from
the store (validated against the catalog), a batch-1 export gets a dynamic batch where that checks
out (models.batching), and otherwise the crops run one at a time. Inputs are cast to the dtype the
file declares (fp16 exports take float16).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.types import ModelRole, Provider

log = logging.getLogger(__name__)

_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}


class ModelRunner:
    """A lazily loaded catalog model of one role, run over (N, …) blobs in as few runs as the file allows."""

    def __init__(self, name: str, role: ModelRole, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        entry = catalog.get(name)
        if entry.role != role:
            valid = [e.name for e in catalog.by_role(role)]
            from pipeline.errors import UserError

            raise UserError(f"'{name}' is not a {role} model (choose from: {', '.join(valid)})")
        self.name = name
        self.entry: ModelEntry = entry
        self.providers = tuple(providers)
        self.threads = threads
        self._session: Any = None
        self._batch: int | None = None

    @property
    def session(self) -> Any:
        if self._session is None:
            self._session, self._batch = self._load()
        return self._session

    @property
    def batch(self) -> int | None:
        """Items per run: None = all at once (dynamic batch axis)."""
        _ = self.session
        return self._batch

    def _load(self) -> tuple[Any, int | None]:
        return store.load_batched(self.entry, self.providers, self.threads)

    def run(self, blob: npt.NDArray[np.float32], scalars: Mapping[str, float] | None = None) -> list[npt.NDArray[np.float32]]:
        """Feed ``blob`` (N, …) to the model's batched input (scalar inputs from ``scalars``); every output, float32."""
        args = self.session.get_inputs()
        image = next(a for a in args if len(a.shape) > 0)
        feeds_fixed: dict[str, Any] = {}
        for arg in args:
            if len(arg.shape) == 0:
                value = (scalars or {}).get(arg.name)
                if value is None:
                    raise ValueError(f"{self.name} needs a value for its scalar input '{arg.name}'")
                feeds_fixed[arg.name] = np.array(value, dtype=_NP_TYPES.get(arg.type, np.float32))
        blob = blob.astype(_NP_TYPES.get(image.type, np.float32), copy=False)
        step = self.batch or max(len(blob), 1)
        chunks: list[list[npt.NDArray[np.float32]]] = []
        for start in range(0, len(blob), step):
            outputs = self.session.run(None, {image.name: blob[start:start + step], **feeds_fixed})
            chunks.append([np.asarray(o, dtype=np.float32) for o in outputs])
        return [np.concatenate(parts) for parts in zip(*chunks, strict=True)]


def denormalise(y: npt.NDArray[np.float32], entry: ModelEntry) -> npt.NDArray[np.uint8]:
    """(N,3,S,S) model output in the entry's normalisation -> (N,S,S,3) BGR uint8 (clipped, rounded)."""
    std = np.asarray(entry.std, np.float32).reshape(1, 3, 1, 1)
    mean = np.asarray(entry.mean, np.float32).reshape(1, 3, 1, 1)
    y = np.array(y, dtype=np.float32)
    y *= 255.0 * std
    y += 255.0 * mean + 0.5
    np.clip(y, 0.0, 255.5, out=y)
    hwc = y.transpose(0, 2, 3, 1)
    if entry.channels == "rgb":
        hwc = hwc[..., ::-1]
    return np.ascontiguousarray(hwc.astype(np.uint8))
