"""LivePortrait's parts (expression restorer, face editor): one builder per part."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    Graph,
    Signature,
    dims_of,
    info,
    name_of,
)

# --- LivePortrait ------------------------------------------------------------------------------------------

GENERATOR_GAIN = 4.0
STITCH_PULL = 0.25


def default_motion(seed: int = 0) -> dict[str, Any]:
    """A plausible motion: small angles, scale ≈ 1.5, keypoints in [−0.5, 0.5], an expression within half of
    FaceFusion's limits."""
    from pipeline.liveportrait.kinematics import EXPRESSION_MAX, EXPRESSION_MIN

    rng = np.random.default_rng(500 + seed)
    return {"pitch": float(rng.uniform(-8, 8)), "yaw": float(rng.uniform(-12, 12)),
            "roll": float(rng.uniform(-5, 5)), "scale": float(rng.uniform(1.3, 1.7)),
            "translation": rng.uniform(-0.05, 0.05, 3).astype(np.float32),
            "expression": rng.uniform(0.5 * EXPRESSION_MIN, 0.5 * EXPRESSION_MAX).astype(np.float32),
            "points": rng.uniform(-0.5, 0.5, (21, 3)).astype(np.float32)}


def retargeter_weights(width: int) -> npt.NDArray[np.float32]:
    """The surrogate retargeter's (width, 63) matrix."""
    return (np.random.default_rng(600 + width).standard_normal((width, 63)) * 0.01).astype(np.float32)


def stitch_offset() -> npt.NDArray[np.float32]:
    return (np.random.default_rng(700).standard_normal((1, 21, 3)) * 0.01).astype(np.float32)


def _lp_image(entry: ModelEntry) -> tuple[str, onnx.ValueInfoProto]:
    spec = entry.inputs[0]
    name = name_of(spec, "input")
    return name, info(name, "float32", dims_of(spec))


def _lp_features(entry: ModelEntry, g: Graph) -> Signature:
    x, vi = _lp_image(entry)
    out = entry.outputs[0]
    pooled = g.op("AveragePool", x, kernel_shape=[4, 4], strides=[4, 4])  # (1, 3, 64, 64)
    volume = g.op("Tile", g.op("Unsqueeze", pooled, g.const([2], np.int64)),
                  g.const([1, 11, 16, 1, 1], np.int64))
    volume = g.op("Slice", volume, g.const([0], np.int64), g.const([32], np.int64), g.const([1], np.int64))
    keep = np.zeros((1, 32, 1, 1, 1), np.float32)
    keep[0, :3] = 1.0
    name = name_of(out, "features")
    g.op("Mul", volume, g.const(keep), out=name)
    return [vi], [info(name, "float32", dims_of(out))]


_MOTION_KEYS = ("pitch", "yaw", "roll", "scale", "translation", "expression", "points")


def _lp_motion(entry: ModelEntry, g: Graph, *, motions: Sequence[dict[str, Any]] | None = None,
               scalar_angles: bool = False, follow: float = 0.0) -> Signature:
    x, vi = _lp_image(entry)
    chosen = list(motions or [default_motion()])
    dark, bright = chosen[0], chosen[-1]
    bright_input = g.op("Greater", g.op("ReduceMean", x, keepdims=0), g.const(0.5))
    outputs = []
    for i, (key, spec) in enumerate(zip(_MOTION_KEYS, entry.outputs, strict=True)):
        shape: list[int | str] = [] if scalar_angles and i < 3 else dims_of(spec)
        values = [np.asarray(m[key], np.float32).reshape(shape) for m in (dark, bright)]
        name = name_of(spec, f"motion_{key}")
        picked = g.op("Where", bright_input, g.const(values[1]), g.const(values[0]))
        if key == "expression" and follow:  # plus follow × the image's mean absolute deviation (its texture)
            spread = g.op("ReduceMean", g.op("Abs", g.op("Sub", x, g.op("ReduceMean", x, keepdims=1))),
                          keepdims=0)
            picked = g.op("Add", picked, g.op("Mul", spread, g.const(follow)))
        g.op("Identity", picked, out=name)
        outputs.append(info(name, "float32", shape))
    return [vi], outputs


def _lp_generator(entry: ModelEntry, g: Graph, *, invert: bool = False,
                  constant: Sequence[float] | None = None) -> Signature:
    volume, source, target = entry.inputs
    names = [name_of(spec, n)
             for spec, n in zip(entry.inputs, ("feature_volume", "source", "target"), strict=True)]
    image = g.op("Slice", names[0], g.const([0, 0], np.int64), g.const([3, 1], np.int64),
                 g.const([1, 2], np.int64))
    image = g.op("Squeeze", image, g.const([2], np.int64))  # (1, 3, 64, 64)
    big = g.op("Resize", image, "", g.const([1.0, 1.0, 8.0, 8.0]), mode="nearest")
    shift = g.op("Mul", g.op("ReduceMean", g.op("Sub", names[1], names[2]), keepdims=0),
                 g.const(GENERATOR_GAIN))
    out = entry.outputs[0]
    name = name_of(out, "image")
    if invert:  # a wrong file for ``models check``: the negative image
        big = g.op("Sub", g.const(1.0), big)
    if constant is not None:  # the image a constant RGB colour (the keypoints' shift still added)
        big = g.op("Add", g.op("Mul", big, g.const(0.0)), g.const(np.reshape(constant, (1, 3, 1, 1))))
    g.op("Clip", g.op("Add", big, shift), g.const(0.0), g.const(1.0), out=name)
    return ([info(n, "float32", dims_of(spec)) for n, spec in zip(names, entry.inputs, strict=True)],
            [info(name, "float32", dims_of(out))])


def _lp_retargeter(entry: ModelEntry, g: Graph) -> Signature:
    x, vi = _lp_image(entry)
    out = entry.outputs[0]
    name = name_of(out, "delta")
    g.op("MatMul", x, g.const(retargeter_weights(int(entry.inputs[0].shape[-1]))), out=name)  # type: ignore[arg-type]
    return [vi], [info(name, "float32", dims_of(out))]


def _lp_stitcher(entry: ModelEntry, g: Graph) -> Signature:
    source, target = (name_of(spec, n) for spec, n in zip(entry.inputs, ("source", "target"), strict=True))
    pulled = g.op("Add", source, g.op("Mul", g.op("Sub", target, source), g.const(STITCH_PULL)))
    out = entry.outputs[0]
    name = name_of(out, "stitched")
    g.op("Add", pulled, g.const(stitch_offset()), out=name)
    return ([info(n, "float32", dims_of(spec))
             for n, spec in zip((source, target), entry.inputs, strict=True)],
            [info(name, "float32", dims_of(out))])


def _live_portrait(entry: ModelEntry, g: Graph, **options: Any) -> Signature:
    part = entry.name.removeprefix("live_portrait_")
    builders: dict[str, Callable[..., Signature]] = {
        "feature_extractor": _lp_features, "motion_extractor": _lp_motion, "generator": _lp_generator,
        "eye_retargeter": _lp_retargeter, "lip_retargeter": _lp_retargeter, "stitcher": _lp_stitcher}
    return builders[part](entry, g, **options)


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "liveportrait": _live_portrait}
