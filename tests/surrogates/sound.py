"""Lip syncers (wav2lip, edtalk) and voice extractors."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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

# --- lip syncers and voice extractors ----------------------------------------------------------------

def _audio_weights(seed: int) -> npt.NDArray[np.float32]:
    """(3, 1280): one fixed direction in the (80 × 16) audio window per output channel."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((3, 80 * 16)) / np.sqrt(80 * 16 * 4.0)).astype(np.float32)


def audio_shift(audio: npt.ArrayLike, seed: int = 5, gain: float = 0.25) -> npt.NDArray[np.float32]:
    """The shift (3,) per channel the lip-sync surrogates add to the lower half for one audio window."""
    a = np.asarray(audio, np.float32).reshape(-1)
    return (gain * np.tanh(_audio_weights(seed) @ a)).astype(np.float32)


def _lip_syncer(entry: ModelEntry, g: Graph, *, seed: int = 5, gain: float = 0.25,
                constant: Sequence[float] | None = None,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    audio, face = entry.inputs[0], entry.inputs[1]
    out_spec = entry.outputs[0]
    a_name, f_name, y_name = name_of(audio, "source"), name_of(face, "target"), name_of(out_spec, "output")
    channels, side = int(face.shape[1]), int(face.shape[-1])
    image = g.op("Slice", f_name, g.const([channels - 3], np.int64), g.const([channels], np.int64),
                 g.const([1], np.int64))  # wav2lip: the full copy (3..5); edtalk: the face
    flat = g.op("Reshape", a_name, g.const([-1, 80 * 16], np.int64))
    shift = g.op("Mul", g.op("Tanh", g.op("MatMul", flat, g.const(_audio_weights(seed).T))), g.const(gain))
    inputs = [info(a_name, "float32", dims_of(audio)), info(f_name, "float32", dims_of(face))]
    if len(entry.inputs) > 2:  # edtalk's weight scales the effect
        w_spec = entry.inputs[2]
        w_name = name_of(w_spec, "weight")
        shift = g.op("Mul", shift, w_name)
        inputs.append(info(w_name, "float32", dims_of(w_spec)))
    lower = np.zeros((1, 1, side, 1), np.float32)
    lower[:, :, side // 2:] = 1.0
    moved = g.op("Mul", g.op("Reshape", shift, g.const([-1, 3, 1, 1], np.int64)), g.const(lower))
    if constant is not None:  # every pixel this colour (the model's channel order, [0, 1])
        image = g.op("Add", g.op("Mul", image, g.const(0.0)), g.const(np.reshape(constant, (1, 3, 1, 1))))
        moved = g.op("Mul", moved, g.const(0.0))
    g.op("Clip", g.op("Add", image, moved), g.const(0.0), g.const(1.0), out=y_name)
    return inputs, [info(y_name, "float32", dims_of(out_spec))]


def _voice_extractor(entry: ModelEntry, g: Graph, *, scale: float = 1.0,
                     ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    spec, out_spec = entry.inputs[0], entry.outputs[0]
    x, y = name_of(spec, "input"), name_of(out_spec, "output")
    g.op("Mul", x, g.const(scale), out=y)
    return [info(x, "float32", dims_of(spec))], [info(y, "float32", dims_of(out_spec))]


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "lip_syncer": _lip_syncer, "voice_extractor": _voice_extractor}
