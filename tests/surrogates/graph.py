"""The kit every surrogate is drawn with: ``Graph`` (nodes and initializers), the catalog's tensors as
value infos, the options a builder reads from its catalog entry, a few shared pieces."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.models.catalog import ModelEntry, TensorSpec

OPSET = 17
IR_VERSION = 8
DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE}
NP_DTYPES = {"float32": np.float32, "float16": np.float16, "double": np.float64}

FaceSpec = tuple[float, float, float, float, Any]  # x1, y1, x2, y2, kps (5, 2)
Signature = tuple[Sequence[TensorSpec], Sequence[TensorSpec]]  # (inputs, outputs)
RAW_NORM = 20.0  # the norm of an ArcFace's raw output (GHOST's swappers take it so)


class Graph:
    """Collects nodes and initializers; names are generated where not given."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, value: npt.ArrayLike, dtype: Any = np.float32, name: str | None = None) -> str:
        self._n += 1
        name = name or f"c{self._n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        self._n += 1
        out = out or f"t{self._n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def to_float(self, x: str, dtype: str) -> str:
        return x if dtype == "float32" else self.op("Cast", x, to=TensorProto.FLOAT)

    def from_float(self, x: str, dtype: str, out: str) -> str:
        if dtype == "float32":
            return self.op("Identity", x, out=out)
        return self.op("Cast", x, out=out, to=DTYPES[dtype])

    def zero_of(self, x: str, dtype: str) -> str:
        """A float scalar 0 that depends on ``x`` (so constant-output graphs still consume their input)."""
        mean = self.op("ReduceMean", self.to_float(x, dtype), keepdims=0)
        return self.op("Mul", mean, self.const(0.0))


def info(name: str, dtype: str, shape: Sequence[int | str | None]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, DTYPES[dtype], list(shape))


def dims_of(spec: TensorSpec, batch: int | str | None = None, prefix: str = "d") -> list[int | str]:
    """The spec's shape with dynamic dims named; ``batch`` overrides dim 0 when given."""
    dims: list[int | str] = []
    for i, d in enumerate(spec.shape):
        if i == 0 and batch is not None:
            dims.append(batch)
        elif isinstance(d, int):
            dims.append(d)
        else:
            dims.append(d if isinstance(d, str) else f"{prefix}{i}")
    return dims


def name_of(spec: TensorSpec, fallback: str) -> str:
    """The catalog's name of a tensor, or ours where the catalog leaves it open (bound by position)."""
    return spec.name if spec.name is not None else fallback


def or_entry(value: Any, from_entry: Callable[[], Any]) -> Any:
    """An option as given, else what the catalog entry says (read only when needed)."""
    return from_entry() if value is None else value


def io_dtype(entry: ModelEntry, spec: TensorSpec, override: str | None) -> str:
    if spec.dtype is not None:
        return spec.dtype
    if override is not None:
        return override
    return "float16" if "fp16" in entry.name or "fp16" in entry.file else "float32"


def channel(g: Graph, x: str, c: int) -> str:
    """Channel ``c`` of the (N, 3, H, W) tensor ``x``, as (N, 1, H, W)."""
    return g.op("Slice", x, g.const([c], np.int64), g.const([c + 1], np.int64), g.const([1], np.int64))


def ellipse(size: int, cx: float, cy: float, rx: float, ry: float) -> npt.NDArray[np.bool_]:
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    return np.asarray(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0)
