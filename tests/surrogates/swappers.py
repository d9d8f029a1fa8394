"""Face swappers (a source-driven colour mix, or a pasted face) and the deep swapper (DFM)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    RAW_NORM,
    Graph,
    Signature,
    dims_of,
    ellipse,
    info,
    io_dtype,
    name_of,
    or_entry,
)

# --- swappers ----------------------------------------------------------------------------------------

def _emap(kind: Any, seed: int) -> npt.NDArray[np.float32]:
    if isinstance(kind, np.ndarray):
        return kind.astype(np.float32)
    if kind == "identity":
        return np.eye(512, dtype=np.float32)
    rng = np.random.default_rng(seed + 7)
    if kind == "permutation":
        return np.eye(512, dtype=np.float32)[rng.permutation(512)]
    return (rng.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32)


def _to_pixels(g: Graph, x: str, mean: Any, std: Any, inverse: bool = False) -> str:
    """x·std + mean (normalised -> [0, 1] pixels), or with ``inverse`` (x − mean)/std, per channel."""
    m = g.const(np.asarray(mean, np.float64).reshape(1, 3, 1, 1))
    s = g.const(np.asarray(std, np.float64).reshape(1, 3, 1, 1))
    return g.op("Div", g.op("Sub", x, m), s) if inverse else g.op("Add", g.op("Mul", x, s), m)


def _swapper(entry: ModelEntry, g: Graph, *, identity: bool = False, alpha: float = 0.5,
             dtype: str | None = None, batch: int | None = 1, hardcode_batch: bool = False,
             emap: Any = "random", seed: int = 0, input_norm: tuple[Any, Any] | None = None,
             output_norm: tuple[Any, Any] | None = None, full_norm: float | None = None,
             bank: Sequence[tuple[Any, Any]] = (), constant: Sequence[float] | None = None,
             ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Target = the entry's image input (rank 4), source = its vector input (rank 2), by the entry's names.

    ``input_norm`` and ``output_norm`` (mean, std) and ``full_norm`` default to the entry's (``mean``/``std``,
    ``output_norm()``; 20 where it takes a raw embedding, else 1)."""
    target = next(s for s in entry.inputs if len(s.shape) == 4)
    source = next(s for s in entry.inputs if len(s.shape) == 2)
    t_name, s_name = name_of(target, "target"), name_of(source, "source")
    b: int | str = "batch" if batch is None else batch
    t_dtype, s_dtype = io_dtype(entry, target, dtype), io_dtype(entry, source, dtype)
    out_spec = entry.outputs[0]
    out_name = name_of(out_spec, "output")
    o_dtype = io_dtype(entry, out_spec, dtype)
    in_mean, in_std = or_entry(input_norm, lambda: (entry.mean, entry.std))
    out_mean, out_std = or_entry(output_norm, lambda: entry.output_norm())
    inputs = {t_name: info(t_name, t_dtype, dims_of(target, b)),
              s_name: info(s_name, s_dtype, dims_of(source, b))}
    outputs = [info(out_name, o_dtype, dims_of(out_spec, b))]
    same_range = np.allclose(in_mean, out_mean) and np.allclose(in_std, out_std)
    if identity and same_range:
        g.from_float(g.to_float(t_name, t_dtype), o_dtype, out_name)
    else:
        pixels = _to_pixels(g, g.to_float(t_name, t_dtype), in_mean, in_std)  # the target in [0, 1]
        if constant is not None:
            rgb = g.const(np.asarray(constant, np.float64).reshape(1, 3, 1, 1))
            pixels = g.op("Add", g.op("Mul", pixels, g.const(0.0)), rgb)
        elif not identity and bank:
            pixels = _paste_from_bank(g, pixels, g.to_float(s_name, s_dtype), bank, alpha)
        elif not identity:
            full = or_entry(full_norm, lambda: RAW_NORM if entry.source_embedding == "raw" else 1.0)
            pixels = _mix_identity(g, pixels, g.to_float(s_name, s_dtype), alpha, full, hardcode_batch, seed)
        g.from_float(_to_pixels(g, pixels, out_mean, out_std, inverse=True), o_dtype, out_name)
    if entry.name.startswith("inswapper"):  # the emap must be the LAST initializer
        e_dtype = np.float16 if t_dtype == "float16" else np.float32
        g.const(_emap(emap, seed), e_dtype, name="emap")
    return [inputs[t_name] if spec is target else inputs[s_name] for spec in entry.inputs], outputs


def _mix_identity(g: Graph, pixels: str, source: str, alpha: float, full_norm: float, hardcode_batch: bool,
                  seed: int) -> str:
    """pixels·(1 − a) + colour·a, colour = (tanh(source @ W) + 1)/2 per channel,
    a = alpha·min(1, |source|/full_norm)."""
    rng = np.random.default_rng(seed)
    colour = g.op("Tanh", g.op("MatMul", source, g.const(rng.standard_normal((512, 3)))))
    strength = g.op("Min", g.op("Div", g.op("ReduceL2", source, axes=[1], keepdims=1), g.const(full_norm)),
                    g.const(1.0))
    a = g.op("Mul", strength, g.const(alpha))  # [N, 1]
    if hardcode_batch:  # what some exports do: a Reshape to a literal batch of 1
        colour = g.op("Reshape", colour, g.const([1, 3, 1, 1], np.int64))
        a = g.op("Reshape", a, g.const([1, 1, 1, 1], np.int64))
    else:
        colour = g.op("Unsqueeze", colour, g.const([2, 3], np.int64))
        a = g.op("Unsqueeze", a, g.const([2, 3], np.int64))
    colour = g.op("Add", g.op("Mul", colour, g.const(0.5)), g.const(0.5))
    kept = g.op("Mul", pixels, g.op("Sub", g.const(1.0), a))
    return g.op("Add", kept, g.op("Mul", colour, a))


def _paste_from_bank(g: Graph, pixels: str, source: str, bank: Sequence[tuple[Any, Any]],
                     alpha: float) -> str:
    """pixels·(1 − alpha) + alpha·face, face = the bank crop whose key is nearest (cosine) the source,
    shifted to the mean colour of the target's face centre (as a swapper keeps the target's skin tone)."""
    keys = np.stack([np.asarray(k, np.float64).ravel() for k, _ in bank])
    keys /= np.maximum(np.linalg.norm(keys, axis=1, keepdims=True), 1e-12)
    crops = np.stack([np.asarray(c, np.float64) for _, c in bank])  # (K, 3, S, S)
    unit = g.op("Div", source, g.op("Max", g.op("ReduceL2", source, axes=[1], keepdims=1), g.const(1e-12)))
    scores = g.op("Mul", g.op("MatMul", unit, g.const(keys.T)), g.const(50.0))
    weights = g.op("Softmax", scores, axis=1)  # (N, K): one-hot for a source that is a bank key
    flat = g.op("MatMul", weights, g.const(crops.reshape(len(crops), -1)))
    face = g.op("Reshape", flat, g.const([-1, *crops.shape[1:]], np.int64))
    side = crops.shape[-1]
    centre = ellipse(side, side * 0.5, side * 0.56, side * 0.3, side * 0.36).astype(np.float64)
    weights_px = g.const((centre / centre.sum()).reshape(1, 1, side, side))

    def skin_tone(x: str) -> str:  # the mean colour of the face's centre, per channel
        return g.op("ReduceSum", g.op("Mul", x, weights_px), g.const([2, 3], np.int64), keepdims=1)

    shift = g.op("Sub", skin_tone(pixels), skin_tone(face))
    face = g.op("Add", face, shift)
    return g.op("Add", g.op("Mul", pixels, g.const(1.0 - alpha)), g.op("Mul", face, g.const(alpha)))


# --- deep swapper (DFM) ------------------------------------------------------------------------------------

DFM_KEEP = 0.9  # an AMP surrogate's celeb: this much of its input, the rest the morph value


def dfm_masks(size: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Default (face_mask, celeb_mask): two overlapping ellipses, so their minimum is neither."""
    face = ellipse(size, size * 0.5, size * 0.55, size * 0.36, size * 0.42).astype(np.float32)
    celeb = ellipse(size, size * 0.5, size * 0.45, size * 0.42, size * 0.36).astype(np.float32)
    return face, celeb


def _dfm(entry: ModelEntry, g: Graph, *, amp: bool = True, size: int | None = None,
         face_mask: npt.ArrayLike | None = None, celeb_mask: npt.ArrayLike | None = None,
         nchw: bool = False, open_size: bool = False, constant: Sequence[float] | None = None) -> Signature:
    face_spec, morph_spec = entry.inputs
    if open_size:  # H, W left dynamic (a file that does not say its resolution): masks = the input's mean
        x = str(face_spec.name)
        m = g.op("ReduceMean", x, axes=[3], keepdims=1)
        for out in ("out_face_mask", "out_celeb_face_mask"):
            g.op("Identity", m, out=out)
        g.op("Identity", x, out="out_celeb_face")
        dims: list[int | str] = [1, "h", "w"]
        return ([info(x, "float32", [*dims, 3])],
                [info(n, "float32", [*dims, c]) for n, c in (("out_face_mask", 1), ("out_celeb_face", 3),
                                                           ("out_celeb_face_mask", 1))])
    side = entry.input_size or size or 224
    shape = [1, 3, side, side] if nchw else [1, side, side, 3]
    default_face, default_celeb = dfm_masks(side)
    x = str(face_spec.name)
    inputs = [info(x, "float32", shape)]
    if nchw:
        celeb = g.op("Transpose", x, perm=[0, 2, 3, 1])
    elif amp:
        inputs.append(info(str(morph_spec.name), "float32", [1]))
        morph = g.op("Mul", str(morph_spec.name), g.const(1.0 - DFM_KEEP))
        celeb = g.op("Add", g.op("Mul", x, g.const(DFM_KEEP)), morph)
    else:
        celeb = g.op("Identity", x)
    if constant is not None:  # every pixel this BGR colour in [0, 1]
        celeb = g.op("Add", g.op("Mul", celeb, g.const(0.0)), g.const(np.reshape(constant, (1, 1, 1, 3))))
    zero = g.zero_of(x, "float32")
    names = ("out_face_mask", "out_celeb_face", "out_celeb_face_mask")
    for name, value in ((names[0], face_mask if face_mask is not None else default_face),
                        (names[2], celeb_mask if celeb_mask is not None else default_celeb)):
        g.op("Add", g.const(np.asarray(value, np.float32).reshape(1, side, side, 1)), zero, out=name)
    g.op("Identity", celeb, out=names[1])
    return inputs, [info(n, "float32", [1, side, side, c]) for n, c in zip(names, (1, 3, 1), strict=True)]


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "swapper": _swapper, "deep_swapper": _dfm}
