"""The age modifier (fran, styleganex_age) and the face classifier (fairface: the age modifier's age
estimate, the face selector's filters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    Graph,
    Signature,
    channel,
    dims_of,
    info,
    name_of,
)

# --- age modifier (fran, styleganex_age) and its age estimate (fairface) ----------------------------------
AGE_SHIFT = 0.25  # fran: the image brightened by AGE_SHIFT·(new age − age) (both /100, as it is fed)
FRAN_BLUE = 0.25  # fran, ``encode=True``: the constant image (R, G, B) = (direction[0], direction[1], this)
STYLEGANEX_SHIFT = 0.05  # styleganex_age: the extend brightened by this·direction (in [−1, 1] units)
STYLEGANEX_ENCODE = 0.2  # ``encode=True``: R = this·direction·(a 1 px checkerboard ±1), G = B = 0, at 1024²
STYLEGANEX_ENCODE_SIZE = 1024


def _batch_zero(g: Graph, x: str) -> str:
    """0 of shape (N, 1, 1, 1) that depends on the image ``x``: a constant output still follows the batch."""
    return g.op("Mul", g.op("ReduceMean", x, axes=[1, 2, 3], keepdims=1), g.const(0.0))


def _fran(entry: ModelEntry, g: Graph, *, encode: bool = False, swap_channels: bool = False) -> Signature:
    """``target`` brightened by AGE_SHIFT·(direction[1] − direction[0]); ``encode=True``: a constant image
    (direction[0], direction[1], FRAN_BLUE) as RGB; ``swap_channels=True`` returns BGR (for models check)."""
    image_spec, direction_spec = entry.inputs
    x, d = name_of(image_spec, "target"), name_of(direction_spec, "direction")
    first = g.op("Gather", d, g.const(0, np.int64), axis=0)
    second = g.op("Gather", d, g.const(1, np.int64), axis=0)
    if encode:
        rgb = g.op("Concat", *(g.op("Reshape", v, g.const([1, 1, 1, 1], np.int64))
                               for v in (first, second, g.const(FRAN_BLUE))), axis=1)
        y = g.op("Expand", g.op("Add", rgb, _batch_zero(g, x)), g.const([1, 3, 1024, 1024], np.int64))
    else:
        shift = g.op("Mul", g.op("Sub", second, first), g.const(AGE_SHIFT))
        y = g.op("Clip", g.op("Add", x, shift), g.const(0.0), g.const(1.0))
        if swap_channels:
            y = g.op("Concat", *(channel(g, y, c) for c in (2, 1, 0)), axis=1)
    out = entry.outputs[0]
    name = name_of(out, "output")
    g.op("Identity", y, out=name)
    return ([info(x, "float32", dims_of(image_spec)), info(d, "float32", dims_of(direction_spec))],
            [info(name, "float32", dims_of(out))])


def _styleganex(entry: ModelEntry, g: Graph, *, encode: bool = False, swap_channels: bool = False,
                ) -> Signature:
    """The extend (``target_with_background``, 384²) brightened by STYLEGANEX_SHIFT·direction;
    ``encode=True``: at 1024², R = STYLEGANEX_ENCODE·direction·checkerboard (G = B = 0), a pattern that
    match_frame_color keeps; ``swap_channels=True`` returns BGR."""
    fallbacks = ("target", "target_with_background", "direction")
    names = [name_of(spec, n) for spec, n in zip(entry.inputs, fallbacks, strict=True)]
    crop, extend, d = names
    if encode:
        cell = g.const([[[[1.0, -1.0], [-1.0, 1.0]]]])
        half = STYLEGANEX_ENCODE_SIZE // 2
        checker = g.op("Tile", cell, g.const([1, 1, half, half], np.int64))
        red = g.op("Mul", checker, g.op("Mul", d, g.const(STYLEGANEX_ENCODE)))
        zero = g.op("Mul", checker, g.const(0.0))
        y = g.op("Add", g.op("Concat", red, zero, zero, axis=1), _batch_zero(g, extend))
        y = g.op("Add", y, _batch_zero(g, crop))
    else:
        y = g.op("Clip", g.op("Add", extend, g.op("Mul", d, g.const(STYLEGANEX_SHIFT))), g.const(-1.0),
                 g.const(1.0))
        y = g.op("Add", y, _batch_zero(g, crop))
        if swap_channels:
            y = g.op("Concat", *(channel(g, y, c) for c in (2, 1, 0)), axis=1)
    out = entry.outputs[0]
    name = name_of(out, "output")
    g.op("Identity", y, out=name)
    side: list[int | str] = (["n", 3, STYLEGANEX_ENCODE_SIZE, STYLEGANEX_ENCODE_SIZE] if encode
                             else dims_of(out))
    return ([info(n, "float32", dims_of(spec)) for n, spec in zip(names, entry.inputs, strict=True)],
            [info(name, "float32", side)])


def _age_modifier(entry: ModelEntry, g: Graph, **options: Any) -> Signature:
    return (_fran if entry.family == "fran" else _styleganex)(entry, g, **options)


def _classifier(entry: ModelEntry, g: Graph, *, age: int = 3, race: int = 0, gender: int = 1,
                logits: bool = False) -> Signature:
    """FairFace: the ids (race, gender, age) given, int64 of shape (N,); ``logits=True``: the age as (N, 9)
    scores, highest at ``age``."""
    spec = entry.inputs[0]
    x = name_of(spec, "input")
    zero = g.op("ReduceMean", x, axes=[1, 2, 3], keepdims=0)  # (N,)
    zero = g.op("Mul", zero, g.const(0.0))
    outputs = []
    for out_spec, fallback, value in zip(entry.outputs, ("race", "gender", "age"), (race, gender, age),
                                         strict=True):
        name = name_of(out_spec, fallback)
        if logits and fallback == "age":
            scores = np.eye(9, dtype=np.float32)[value][None] * 5.0
            g.op("Add", g.op("Unsqueeze", zero, g.const([1], np.int64)), g.const(scores), out=name)
            outputs.append(info(name, "float32", ["n", 9]))
            continue
        g.op("Cast", g.op("Add", zero, g.const(float(value))), out=name, to=TensorProto.INT64)
        outputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, ["n"]))
    return [info(x, "float32", dims_of(spec))], outputs


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "age_modifier": _age_modifier, "classifier": _classifier}
