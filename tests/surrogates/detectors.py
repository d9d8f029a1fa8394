"""Face detectors (the SCRFD family, YOLO face): exactly the faces given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    FaceSpec,
    Graph,
    Signature,
    channel,
    dims_of,
    info,
    name_of,
)

# --- detectors ---------------------------------------------------------------------------------------

def scrfd_arrays(faces: Sequence[FaceSpec], size: int, background: float, duplicate: bool,
                  ) -> list[npt.NDArray[np.float32]]:
    """Per-anchor outputs (score, bbox, kps per stride 8/16/32, 2 anchors a cell) that decode to ``faces``."""
    scores, boxes, kpss = [], [], []
    for stride in (8, 16, 32):
        n = size // stride
        scores.append(np.full((n * n * 2, 1), background, np.float32))
        boxes.append(np.ones((n * n * 2, 4), np.float32))  # small boxes, scored as background
        kpss.append(np.zeros((n * n * 2, 10), np.float32))
    for i, (x1, y1, x2, y2, kps, *rest) in enumerate(faces):
        score = float(rest[0]) if rest else 0.9 - 0.01 * i
        side = max(x2 - x1, y2 - y1)
        level = 0 if side < 64 else 1 if side < 160 else 2
        stride, n = (8, 16, 32)[level], size // (8, 16, 32)[level]
        col = int(np.clip(round((x1 + x2) / 2 / stride), 0, n - 1))
        row = int(np.clip(round((y1 + y2) / 2 / stride), 0, n - 1))
        ax, ay = col * stride, row * stride
        k = np.asarray(kps, np.float32).reshape(5, 2)
        for a, s in ((0, score), (1, score - 0.05)) if duplicate else ((0, score),):
            idx = (row * n + col) * 2 + a
            scores[level][idx] = s
            boxes[level][idx] = np.array([ax - x1, ay - y1, x2 - ax, y2 - ay]) / stride
            kpss[level][idx] = ((k - [ax, ay]) / stride).reshape(-1)
    return scores + boxes + kpss


def _scrfd(entry: ModelEntry, g: Graph, *, faces: Sequence[FaceSpec] = (), size: int = 640,
           background: float = 0.02, duplicate: bool = True, channel_gate: bool = False,
           ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Outputs computed at build time for a ``size``×``size`` input; faces in input pixels."""
    image = entry.inputs[0]
    x = name_of(image, "input.1")
    zero = g.zero_of(x, "float32")
    gate = _channel_gate(g, x) if channel_gate else None
    fallback = [f"{k}_{s}" for k in ("score", "bbox", "kps") for s in (8, 16, 32)]
    outputs = []
    arrays = scrfd_arrays(faces, size, background, duplicate)
    for i, (spec, arr) in enumerate(zip(entry.outputs, arrays, strict=True)):
        name = name_of(spec, fallback[i])
        if gate is not None and i < 3:  # the scores
            g.op("Mul", g.op("Add", g.const(arr), zero), gate, out=name)
        else:
            g.op("Add", g.const(arr), zero, out=name)
        outputs.append(info(name, "float32", dims_of(spec, prefix=f"anchors_{name}_")))
    return [info(x, "float32", dims_of(image, 1, prefix="side"))], outputs


def _channel_gate(g: Graph, x: str) -> str:
    """1.0 where the mean of channel 0 of the (N, 3, H, W) input ``x`` exceeds that of channel 2, else 0.0."""
    difference = g.op("Sub", g.op("ReduceMean", channel(g, x, 0), keepdims=0),
                      g.op("ReduceMean", channel(g, x, 2), keepdims=0))
    return g.op("Cast", g.op("Greater", difference, g.const(0.0)), to=TensorProto.FLOAT)


def _yolo(entry: ModelEntry, g: Graph, *, faces: Sequence[FaceSpec] = (), duplicate: bool = True,
          ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """[1, 20, 8400]: cx, cy, w, h, score, 5 × (x, y, conf) in 640-input pixels."""
    out = np.zeros((20, 8400), np.float32)
    out[2:4] = 4.0
    for i, (x1, y1, x2, y2, kps, *rest) in enumerate(faces):
        score = float(rest[0]) if rest else 0.9 - 0.01 * i
        col = int(round((y1 + y2) / 2 / 8)) * 80 + int(round((x1 + x2) / 2 / 8))
        k = np.asarray(kps, np.float32).reshape(5, 2)
        kc = np.concatenate([k, np.full((5, 1), 0.95, np.float32)], axis=1).reshape(-1)
        hits = [(col % 8400, score)]
        if duplicate:
            hits.append(((col + 1) % 8400, score - 0.05))
        for j, s in hits:
            out[:, j] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, s, *kc]
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = name_of(image, "images"), name_of(output, "output0")
    g.op("Add", g.const(out[None]), g.zero_of(x, "float32"), out=y)
    return [info(x, "float32", dims_of(image))], [info(y, "float32", dims_of(output))]


def _detector(entry: ModelEntry, g: Graph, **options: Any) -> Signature:
    return (_yolo if entry.name == "yolo_face" else _scrfd)(entry, g, **options)


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "detector": _detector}
