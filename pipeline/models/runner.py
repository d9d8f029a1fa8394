"""Catalog image models on batches of crops: normalise in, one batch-aware run, de-normalise out.

Enhancers, occluders, the face parser, the 68-point landmarker and the neural swappers share this.
The session is a ``sessions.CatalogSession`` with the batch-aware loader (a batch-1 export gets a
dynamic batch where that checks out, otherwise the crops run in chunks of the fixed batch). Tensors are
fed and read by the names the catalog binds (``CatalogSession.io``), outputs in the catalog's order.
Inputs are cast to the dtype the file declares (fp16 exports take float16), parameters (CodeFormer's
``w``) shaped as the file declares them; every output comes back float32. ``normalise`` applies a catalog
entry's channel order, mean and std; ``denormalise`` its output's (``ModelEntry.output_norm``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.catalog import ModelEntry
from pipeline.models.runtime import NP_TYPES, ort
from pipeline.models.sessions import CatalogSession
from pipeline.types import ModelRole, Provider


def normalise(crops: npt.NDArray[np.uint8], entry: ModelEntry) -> npt.NDArray[np.float32]:
    """(N,H,W,3) BGR uint8 -> (N,3,H,W) float32 in the entry's channel order, mean and std.

    One fused pass: x/255 − mean)/std = x·scale − offset, read straight from the transposed view.
    """
    chw = crops.transpose(0, 3, 1, 2)
    if entry.channels == "rgb":
        chw = chw[:, ::-1]
    std = np.asarray(entry.std, np.float64)
    scale = (1.0 / (255.0 * std)).astype(np.float32).reshape(1, 3, 1, 1)
    offset = (np.asarray(entry.mean, np.float64) / std).astype(np.float32).reshape(1, 3, 1, 1)
    out = np.multiply(chw, scale, dtype=np.float32)
    out -= offset
    return out


def denormalise(y: npt.NDArray[np.float32], entry: ModelEntry) -> npt.NDArray[np.uint8]:
    """(N,3,S,S) model output in the entry's output normalisation -> (N,S,S,3) BGR uint8 (clipped,
    rounded)."""
    out_mean, out_std = entry.output_norm()
    std = np.asarray(out_std, np.float32).reshape(1, 3, 1, 1)
    mean = np.asarray(out_mean, np.float32).reshape(1, 3, 1, 1)
    y = np.array(y, dtype=np.float32)  # a private copy to work in place
    y *= 255.0 * std
    y += 255.0 * mean + 0.5  # + 0.5 then truncate = round half up on non-negative values
    np.clip(y, 0.0, 255.5, out=y)
    hwc = y.transpose(0, 2, 3, 1)
    if entry.channels == "rgb":
        hwc = hwc[..., ::-1]
    return np.ascontiguousarray(hwc.astype(np.uint8))


def input_dtype(arg: Any) -> type[np.generic]:
    """The numpy dtype to feed an onnxruntime input (float32 where its type is not a known tensor type)."""
    return NP_TYPES.get(arg.type, np.float32)


def parameter(arg: Any, value: float) -> npt.NDArray[Any]:
    """``value`` as the file declares the input ``arg``: its dtype, its rank (an open dim gets 1)."""
    shape = [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
    return np.full(shape, value, dtype=input_dtype(arg))


class ModelRunner(CatalogSession):
    """A lazily loaded catalog model of one role, run over (N, …) blobs in as few runs as the file allows.

    The role is checked at construction: a name of another role lists the valid ones.
    """

    batched = True
    io_binding: bool | None = None  # bind inputs and outputs on the session's device (None: on a GPU)

    def __init__(self, name: str, role: ModelRole, providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> None:
        if catalog.get(name).role != role:
            valid = [e.name for e in catalog.by_role(role)]
            raise UserError(f"'{name}' is not a {role} model (choose from: {', '.join(valid)})")
        super().__init__(name, providers, threads)

    def run(self, blob: npt.NDArray[np.float32],
            params: Mapping[str, float] | None = None) -> list[npt.NDArray[np.float32]]:
        """Feed ``blob`` (N, …) to the entry's first input, its other inputs (parameters) from ``params``
        by catalog name.

        Returns the entry's outputs (by name, in the catalog's order) as float32, the runs of each chunk
        concatenated.
        """
        input_names, output_names = self.io
        declared = {a.name: a for a in self.session.get_inputs()}
        feeds_fixed: dict[str, Any] = {}
        for spec, name in zip(self.entry.inputs[1:], input_names[1:], strict=True):
            value = (params or {}).get(spec.name or name)
            if value is None:
                raise ValueError(f"{self.name} needs a value for its input '{name}'")
            feeds_fixed[name] = parameter(declared[name], value)
        image = input_names[0]
        blob = blob.astype(input_dtype(declared[image]), copy=False)
        step = self.batch or max(len(blob), 1)
        chunks: list[list[npt.NDArray[np.float32]]] = []
        for start in range(0, len(blob), step):
            outputs = self.run_feeds({image: blob[start:start + step], **feeds_fixed}, output_names)
            chunks.append([np.asarray(o, dtype=np.float32) for o in outputs])
        return [np.concatenate(parts) for parts in zip(*chunks, strict=True)]

    @property
    def device(self) -> str:
        """Where the session's tensors live: "cuda" on the CUDA and TensorRT providers, else "cpu"."""
        first = self.session.get_providers()[0]
        return "cuda" if first in ("CUDAExecutionProvider", "TensorrtExecutionProvider") else "cpu"

    def run_feeds(self, feeds: Mapping[str, npt.NDArray[Any]],
                  outputs: Sequence[str] | None = None) -> list[npt.NDArray[Any]]:
        """One run of the session on ``feeds``; the outputs named (default: the entry's, by name) as
        numpy arrays, in that order.

        With IO binding (``io_binding``, by default on a GPU) the inputs are copied to the device once
        as OrtValues and the outputs are allocated there and copied back after the run, instead of
        onnxruntime staging both through host buffers of its own on every run.
        """
        session = self.session
        names = list(outputs if outputs is not None else self.io[1])
        device = self.device
        bind = self.io_binding if self.io_binding is not None else device != "cpu"
        if not bind:
            return list(session.run(names, dict(feeds)))
        rt = ort()
        binding = session.io_binding()
        for name, value in feeds.items():
            value = np.ascontiguousarray(value)
            binding.bind_ortvalue_input(name, rt.OrtValue.ortvalue_from_numpy(value, device, 0))
        for name in names:
            binding.bind_output(name, device)
        session.run_with_iobinding(binding)
        return list(binding.copy_outputs_to_cpu())
