"""Surrogate ONNX models with the exact I/O of the catalog, generated at test time.

No real swapper, detector or enhancer weights can be downloaded where the tests run, so each
non-builtin catalog entry gets a tiny graph built with ``onnx.helper``. Its inputs and outputs are
built from the entry's declarations (names, ranks, fixed dims, dtypes: nothing restated here; a tensor
the catalog leaves unnamed gets a name of ours, and is bound by position), and its value ranges follow
the entry's conventions (input and output normalisation, raw or normalised source embedding, logits or
probabilities). ``signature=(inputs, outputs)`` builds it with another signature instead: a test of
a real file's facts gives them from shared/MODELS.md, so that it checks the catalog instead of echoing
it. Behaviour is simple but useful:

- swappers: in [0, 1] pixels, ``out = target·(1−a) + a·colour(tanh(source @ W))`` per channel, where
  ``a = alpha·min(1, |source| / full_norm)`` (full_norm: the source norm the real file expects, ≈20 for
  GHOST's raw embedding, else 1), so changing the source changes the output and a too-weak source
  barely does; ``bank=[(key, crop)…]`` instead pastes the face crop (3×S×S RGB in [0, 1], aligned as the
  model's crops are) whose key is nearest the source vector, at the target's mean colour: a surrogate that
  really carries an identity; inswapper also carries a 512×512 ``emap`` as its last initializer;
  ``identity=True`` returns the target; batch fixed to 1 as exported (``batch=None`` for a dynamic axis;
  ``hardcode_batch=True`` adds a Reshape to a literal batch of 1);
- detectors (SCRFD family, YOLO face): emit exactly the ``faces`` given (input-pixel coordinates);
  ``channel_gate=True``: only where channel 0 of the input is on average above channel 2 (skin, fed
  RGB as the real files were trained), like a model that finds no face in a blue-cast image;
- recognisers: a fixed random projection of an 8×8 pooled, mean-centred image, of norm ``norm`` (≈20,
  as ArcFace's raw outputs); ``constant=True``: the same vector whatever the face;
- enhancers: an unsharp mask in [−1, 1] (codeformer scales it by its double ``w``); ``decoys``: other
  outputs of the image's shape listed before it (as RestoreFormer++ has); wrong files for ``models check``:
  ``swap_channels=True`` (returns BGR), ``nhwc=True`` (reads its NCHW input as if NHWC), ``constant=v``;
- frame enhancers: the tile resized ``scale`` × (nearest or linear), ``pattern``: plus a fixed pattern over
  the output tile's own pixels (a misplaced tile shows), ``blur``: a zero-padded 3×3 mean first (a kept
  overlap shows as a seam); ``swap_channels=True`` for ``models check``;
- LivePortrait (one builder per part, by the entry's name): the feature extractor carries the 4×-pooled RGB
  image in channels 0-2 of its volume; the motion extractor returns the fixed motion given (``motions``: one,
  or two: the first for a dark input, mean < 0.5, the second for a bright one; angles as rank-0 scalars with
  ``scalar_angles=True``); the generator returns that image upsampled to 512, plus
  ``GENERATOR_GAIN·mean(source − target)`` (so its output moves with the keypoints it is given;
  ``invert=True``: the negative image); the
  retargeters are ``input @ retargeter_weights(width)``; the stitcher is
  ``source + STITCH_PULL·(target − source) + stitch_offset()``;
- occluders: a fixed mask (``mask``; ``invert=True``: 1 − mask), or ``skin=True``: face where red is above
  blue (R − B), as logits or probabilities per the entry; parser / 2dfan4: fixed class maps and landmarks;
- colourisers: colour as an affine function of the grey input (DDColor's Lab a/b, DeOldify's RGB);
  ``invert=True`` gives the opposite hue, ``constant=v`` a constant;
- lip syncers: the face input back (wav2lip: its full copy, channels 3..5, BGR in [0, 1]; edtalk: its RGB
  face), the lower half (rows ≥ ½) moved by ``gain``·tanh(⟨audio, W_c⟩) per channel (W fixed, seeded),
  edtalk's times its ``weight``; so the mouth follows the audio values and the upper face does not; voice
  extractors: their spectrogram input × ``scale`` (1: the voice is the whole sound);
- deep swapper (DFM, NHWC BGR [0, 1]): ``celeb = DFM_KEEP·in_face + (1 − DFM_KEEP)·morph`` for an AMP file
  (``amp=True``, the default: it has ``morph_value:0``), ``celeb = in_face`` without it; ``face_mask`` and
  ``celeb_mask`` are fixed arrays (``face_mask=``, ``celeb_mask=``: S×S; default ellipses); ``size``: the
  resolution of a file whose catalog entry leaves it open (custom files); ``nchw=True``: a wrong layout;
  ``open_size=True``: H and W left dynamic (the input itself back, its mean as both masks);
- age modifiers: fran brightens its crop by the age change it is fed, styleganex_age its extend by its
  direction; ``encode=True`` writes the direction into the output (fran: a constant colour, styleganex_age: a
  checkerboard's amplitude); fairface returns the ids it is given (``age=``).

Nothing here is committed as a binary: tests call ``make_surrogate``/``install_surrogate``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.models import catalog, sessions
from pipeline.models.catalog import ModelEntry, TensorSpec
from pipeline.paths import models_dir

OPSET = 17
IR_VERSION = 8
_DTYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE}
_NP = {"float32": np.float32, "float16": np.float16, "double": np.float64}

FaceSpec = tuple[float, float, float, float, Any]  # x1, y1, x2, y2, kps (5, 2)
Signature = tuple[Sequence[TensorSpec], Sequence[TensorSpec]]  # (inputs, outputs)
RAW_NORM = 20.0  # the norm of an ArcFace's raw output (GHOST's swappers take it so)


class _Graph:
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
        return self.op("Cast", x, out=out, to=_DTYPES[dtype])

    def zero_of(self, x: str, dtype: str) -> str:
        """A float scalar 0 that depends on ``x`` (so constant-output graphs still consume their input)."""
        mean = self.op("ReduceMean", self.to_float(x, dtype), keepdims=0)
        return self.op("Mul", mean, self.const(0.0))


def _vi(name: str, dtype: str, shape: Sequence[int | str | None]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, _DTYPES[dtype], list(shape))


def _dims(spec: TensorSpec, batch: int | str | None = None, prefix: str = "d") -> list[int | str]:
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


def _name(spec: TensorSpec, fallback: str) -> str:
    """The catalog's name of a tensor, or ours where the catalog leaves it open (bound by position)."""
    return spec.name if spec.name is not None else fallback


def _default(value: Any, from_entry: Callable[[], Any]) -> Any:
    """An option as given, else what the catalog entry says (read only when needed)."""
    return from_entry() if value is None else value


def _io_dtype(entry: ModelEntry, spec: TensorSpec, override: str | None) -> str:
    if spec.dtype is not None:
        return spec.dtype
    if override is not None:
        return override
    return "float16" if "fp16" in entry.name or "fp16" in entry.file else "float32"


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


def _to_pixels(g: _Graph, x: str, mean: Any, std: Any, inverse: bool = False) -> str:
    """x·std + mean (normalised -> [0, 1] pixels), or with ``inverse`` (x − mean)/std, per channel."""
    m = g.const(np.asarray(mean, np.float64).reshape(1, 3, 1, 1))
    s = g.const(np.asarray(std, np.float64).reshape(1, 3, 1, 1))
    return g.op("Div", g.op("Sub", x, m), s) if inverse else g.op("Add", g.op("Mul", x, s), m)


def _swapper(entry: ModelEntry, g: _Graph, *, identity: bool = False, alpha: float = 0.5,
             dtype: str | None = None, batch: int | None = 1, hardcode_batch: bool = False,
             emap: Any = "random", seed: int = 0, input_norm: tuple[Any, Any] | None = None,
             output_norm: tuple[Any, Any] | None = None, full_norm: float | None = None,
             bank: Sequence[tuple[Any, Any]] = (),
             ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Target = the entry's image input (rank 4), source = its vector input (rank 2), by the entry's names.

    ``input_norm`` and ``output_norm`` (mean, std) and ``full_norm`` default to the entry's (``mean``/``std``,
    ``output_norm()``; 20 where it takes a raw embedding, else 1)."""
    target = next(s for s in entry.inputs if len(s.shape) == 4)
    source = next(s for s in entry.inputs if len(s.shape) == 2)
    t_name, s_name = _name(target, "target"), _name(source, "source")
    b: int | str = "batch" if batch is None else batch
    t_dtype, s_dtype = _io_dtype(entry, target, dtype), _io_dtype(entry, source, dtype)
    out_spec = entry.outputs[0]
    out_name = _name(out_spec, "output")
    o_dtype = _io_dtype(entry, out_spec, dtype)
    in_mean, in_std = _default(input_norm, lambda: (entry.mean, entry.std))
    out_mean, out_std = _default(output_norm, lambda: entry.output_norm())
    inputs = {t_name: _vi(t_name, t_dtype, _dims(target, b)), s_name: _vi(s_name, s_dtype, _dims(source, b))}
    outputs = [_vi(out_name, o_dtype, _dims(out_spec, b))]
    same_range = np.allclose(in_mean, out_mean) and np.allclose(in_std, out_std)
    if identity and same_range:
        g.from_float(g.to_float(t_name, t_dtype), o_dtype, out_name)
    else:
        pixels = _to_pixels(g, g.to_float(t_name, t_dtype), in_mean, in_std)  # the target in [0, 1]
        if not identity and bank:
            pixels = _paste_from_bank(g, pixels, g.to_float(s_name, s_dtype), bank, alpha)
        elif not identity:
            full = _default(full_norm, lambda: RAW_NORM if entry.source_embedding == "raw" else 1.0)
            pixels = _mix_identity(g, pixels, g.to_float(s_name, s_dtype), alpha, full, hardcode_batch, seed)
        g.from_float(_to_pixels(g, pixels, out_mean, out_std, inverse=True), o_dtype, out_name)
    if entry.name.startswith("inswapper"):  # the emap must be the LAST initializer
        e_dtype = np.float16 if t_dtype == "float16" else np.float32
        g.const(_emap(emap, seed), e_dtype, name="emap")
    return [inputs[t_name] if spec is target else inputs[s_name] for spec in entry.inputs], outputs


def _mix_identity(g: _Graph, pixels: str, source: str, alpha: float, full_norm: float, hardcode_batch: bool,
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


def _paste_from_bank(g: _Graph, pixels: str, source: str, bank: Sequence[tuple[Any, Any]],
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
    centre = _ellipse(side, side * 0.5, side * 0.56, side * 0.3, side * 0.36).astype(np.float64)
    weights_px = g.const((centre / centre.sum()).reshape(1, 1, side, side))

    def skin_tone(x: str) -> str:  # the mean colour of the face's centre, per channel
        return g.op("ReduceSum", g.op("Mul", x, weights_px), g.const([2, 3], np.int64), keepdims=1)

    shift = g.op("Sub", skin_tone(pixels), skin_tone(face))
    face = g.op("Add", face, shift)
    return g.op("Add", g.op("Mul", pixels, g.const(1.0 - alpha)), g.op("Mul", face, g.const(alpha)))


# --- detectors ---------------------------------------------------------------------------------------

def _scrfd_arrays(faces: Sequence[FaceSpec], size: int, background: float, duplicate: bool,
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


def _scrfd(entry: ModelEntry, g: _Graph, *, faces: Sequence[FaceSpec] = (), size: int = 640,
           background: float = 0.02, duplicate: bool = True, channel_gate: bool = False,
           ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Outputs computed at build time for a ``size``×``size`` input; faces in input pixels."""
    image = entry.inputs[0]
    x = _name(image, "input.1")
    zero = g.zero_of(x, "float32")
    gate = _channel_gate(g, x) if channel_gate else None
    fallback = [f"{k}_{s}" for k in ("score", "bbox", "kps") for s in (8, 16, 32)]
    outputs = []
    arrays = _scrfd_arrays(faces, size, background, duplicate)
    for i, (spec, arr) in enumerate(zip(entry.outputs, arrays, strict=True)):
        name = _name(spec, fallback[i])
        if gate is not None and i < 3:  # the scores
            g.op("Mul", g.op("Add", g.const(arr), zero), gate, out=name)
        else:
            g.op("Add", g.const(arr), zero, out=name)
        outputs.append(_vi(name, "float32", _dims(spec, prefix=f"anchors_{name}_")))
    return [_vi(x, "float32", _dims(image, 1, prefix="side"))], outputs


def _channel(g: _Graph, x: str, c: int) -> str:
    """Channel ``c`` of the (N, 3, H, W) tensor ``x``, as (N, 1, H, W)."""
    return g.op("Slice", x, g.const([c], np.int64), g.const([c + 1], np.int64), g.const([1], np.int64))


def _channel_gate(g: _Graph, x: str) -> str:
    """1.0 where the mean of channel 0 of the (N, 3, H, W) input ``x`` exceeds that of channel 2, else 0.0."""
    difference = g.op("Sub", g.op("ReduceMean", _channel(g, x, 0), keepdims=0),
                      g.op("ReduceMean", _channel(g, x, 2), keepdims=0))
    return g.op("Cast", g.op("Greater", difference, g.const(0.0)), to=TensorProto.FLOAT)


def _yolo(entry: ModelEntry, g: _Graph, *, faces: Sequence[FaceSpec] = (), duplicate: bool = True,
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
    x, y = _name(image, "images"), _name(output, "output0")
    g.op("Add", g.const(out[None]), g.zero_of(x, "float32"), out=y)
    return [_vi(x, "float32", _dims(image))], [_vi(y, "float32", _dims(output))]


# --- recognisers, enhancers, masks, landmarks -----------------------------------------------------------

def _recogniser(entry: ModelEntry, g: _Graph, *, seed: int = 0, batch: int | None = None,
                norm: float = RAW_NORM, constant: bool = False,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """A fixed projection of the pooled, mean-centred image, scaled to the norm ``norm``
    (``constant``: of a fixed vector, whatever the image)."""
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = _name(image, "input.1"), _name(output, "embedding")
    size = entry.input_size
    pooled = g.op("AveragePool", x, kernel_shape=[size // 8] * 2, strides=[size // 8] * 2)
    flat = g.op("Flatten", pooled, axis=1)
    centred = g.op("Sub", flat, g.op("ReduceMean", flat, axes=[1], keepdims=1))
    weights = np.random.default_rng(1000 + seed).standard_normal((3 * 64, output.shape[-1]))
    raw = g.op("MatMul", centred, g.const(weights))
    if constant:  # the first weight row, broadcast over the batch (still consuming the input)
        raw = g.op("Add", g.op("Mul", raw, g.const(0.0)), g.const(weights[:1] + 1.0))
    length = g.op("Max", g.op("ReduceL2", raw, axes=[1], keepdims=1), g.const(1e-6))
    g.op("Mul", g.op("Div", raw, length), g.const(norm), out=y)
    b: int | str = "N" if batch is None else batch
    return [_vi(x, "float32", _dims(image, b))], [_vi(y, "float32", _dims(output, b))]


def _enhancer(entry: ModelEntry, g: _Graph, *, sharpen: float = 0.5, dtype: str | None = None,
              decoys: Sequence[str] = (), swap_channels: bool = False, nhwc: bool = False,
              constant: float | None = None,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """An unsharp mask of the image input; a second input (CodeFormer's ``w``, as the entry declares it)
    scales it; ``decoys``: outputs of the image's shape (the negated input) listed before the image."""
    image, out_spec = next(s for s in entry.inputs if len(s.shape) == 4), entry.outputs[0]
    name, out_name = _name(image, "input"), _name(out_spec, "output")
    i_dtype = _io_dtype(entry, image, dtype)
    o_dtype = _io_dtype(entry, out_spec, dtype)
    x = g.to_float(name, i_dtype)
    if nhwc:  # a file that reads its NCHW input's memory as (N, H, W, C): the pixels come out scrambled
        side = image.shape[-1]
        x = g.op("Transpose", g.op("Reshape", x, g.const([-1, side, side, 3], np.int64)), perm=[0, 3, 1, 2])
    blur = g.op("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    gain = g.const(sharpen)
    inputs = []
    for spec in entry.inputs:  # in the entry's order; codeformer's fidelity weight scales the effect
        if spec is image:
            inputs.append(_vi(name, i_dtype, _dims(image)))
            continue
        w_name, w_dtype = _name(spec, "w"), spec.dtype or "double"
        gain = g.op("Mul", gain, g.op("Cast", w_name, to=TensorProto.FLOAT))
        inputs.append(_vi(w_name, w_dtype, _dims(spec)))
    outputs = []
    for decoy in decoys:
        g.from_float(g.op("Neg", x), o_dtype, decoy)
        outputs.append(_vi(decoy, o_dtype, _dims(out_spec)))
    y = g.op("Add", x, g.op("Mul", g.op("Sub", x, blur), gain))
    if swap_channels:
        y = g.op("Concat", *(_channel(g, y, c) for c in (2, 1, 0)), axis=1)
    if constant is not None:
        y = g.op("Add", g.op("Mul", y, g.const(0.0)), g.const(constant))
    y = g.op("Clip", y, g.const(-1.0), g.const(1.0))
    g.from_float(y, o_dtype, out_name)
    return inputs, [*outputs, _vi(out_name, o_dtype, _dims(out_spec))]


def _ellipse(size: int, cx: float, cy: float, rx: float, ry: float) -> npt.NDArray[np.bool_]:
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    return np.asarray(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0)


def _occluder(entry: ModelEntry, g: _Graph, *, mask: npt.ArrayLike | None = None, skin: bool = False,
              logits: bool | None = None, invert: bool = False,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """[1, 1, S, S] from [1, 3, S, S] RGB /255 (the entry's layout and names), 1 / > 0 = face visible.

    ``mask`` (S×S in [0, 1], default a central ellipse) is fixed; ``skin=True`` sees the face where red
    is above blue (R − B of the input). ``logits`` (default: the entry's ``mask_output``): logits with a
    magnitude below 1 (mask 1 -> 0.4, 0 -> −0.4; skin: R − B itself), so that reading them as a
    probability gives a measurably weaker mask; else probabilities (skin: sigmoid(8·(R − B)))."""
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = _name(image, "input"), _name(output, "output")
    as_logits = _default(logits, lambda: entry.mask_output == "logits")
    s = entry.input_size
    if skin:
        redness = g.op("Sub", _channel(g, x, 0), _channel(g, x, 2))
        if as_logits:
            g.op("Identity", redness, out=y)
        else:
            g.op("Sigmoid", g.op("Mul", redness, g.const(8.0)), out=y)
    else:
        m = _ellipse(s, s / 2, s * 0.55, s * 0.35, s * 0.42) if mask is None else np.asarray(mask, np.float32)
        m = 1.0 - np.clip(m, 0, 1) if invert else m
        quantised = np.round(np.clip(m, 0, 1) * 255).astype(np.uint8).reshape(1, 1, s, s)
        stored = g.op("Cast", g.const(quantised, np.uint8), to=TensorProto.FLOAT)
        values = g.op("Mul", stored, g.const(1 / 255))
        if as_logits:
            values = g.op("Mul", g.op("Sub", values, g.const(0.5)), g.const(0.8))
        g.op("Add", values, g.zero_of(x, "float32"), out=y)
    return [_vi(x, "float32", _dims(image))], [_vi(y, "float32", _dims(output))]


def default_classes(size: int = 512) -> npt.NDArray[np.uint8]:
    """A plausible face layout for the parser: skin, brows, eyes, nose, mouth, lips, on background 0."""
    c = np.zeros((size, size), np.uint8)
    u = size / 512
    c[_ellipse(size, 256 * u, 280 * u, 170 * u, 220 * u)] = 1
    for cls, cx in ((2, 185), (3, 327)):
        c[int(170 * u):int(185 * u), int((cx - 45) * u):int((cx + 45) * u)] = cls
    for cls, cx in ((4, 185), (5, 327)):
        c[_ellipse(size, cx * u, 220 * u, 35 * u, 15 * u)] = cls
    c[int(230 * u):int(330 * u), int(230 * u):int(282 * u)] = 10
    c[int(365 * u):int(380 * u), int(200 * u):int(312 * u)] = 12
    c[int(380 * u):int(390 * u), int(200 * u):int(312 * u)] = 11
    c[int(390 * u):int(405 * u), int(200 * u):int(312 * u)] = 13
    return c


def _parser(entry: ModelEntry, g: _Graph, *, classes: npt.ArrayLike | None = None,
            ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Logits [1, 19, S, S] where the class in ``classes`` (S×S ints, default ``default_classes``) wins."""
    s = entry.input_size
    cmap = default_classes(s) if classes is None else np.asarray(classes, np.uint8)
    cmap_f = g.op("Cast", g.const(cmap.reshape(1, 1, s, s), np.uint8), to=TensorProto.FLOAT)
    classes_19 = g.const(np.arange(19).reshape(1, 19, 1, 1))
    hit = g.op("Cast", g.op("Equal", cmap_f, classes_19), to=TensorProto.FLOAT)
    logits = g.op("Sub", g.op("Mul", hit, g.const(8.0)), g.const(4.0))
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = _name(image, "input"), _name(output, "output")
    g.op("Add", logits, g.zero_of(x, "float32"), out=y)
    return [_vi(x, "float32", _dims(image))], [_vi(y, "float32", _dims(output))]


def default_landmarks68(size: int = 256) -> npt.NDArray[np.float32]:
    """68 points in the usual order (jaw 17, brows 10, nose 9, eyes 12, mouth 20) on a ``size`` crop."""
    t = np.linspace(-1, 1, 17)
    jaw = np.stack([0.5 + 0.38 * t, 0.45 + 0.42 * np.sqrt(1 - 0.9 * t**2)], 1)
    brows = np.concatenate([np.stack([np.linspace(a, b, 5), np.full(5, 0.36)], 1)
                            for a, b in ((0.22, 0.44), (0.56, 0.78))])
    nose = np.concatenate([np.stack([np.full(4, 0.5), np.linspace(0.42, 0.58, 4)], 1),
                           np.stack([np.linspace(0.44, 0.56, 5), np.full(5, 0.62)], 1)])
    ang = np.linspace(0, 2 * np.pi, 6, endpoint=False)
    eyes = np.concatenate([np.stack([cx + 0.07 * np.cos(ang), 0.44 + 0.03 * np.sin(ang)], 1)
                           for cx in (0.33, 0.67)])
    ang = np.pi + np.linspace(0, 2 * np.pi, 12, endpoint=False)  # from the left corner (48), upper lip first
    outer = np.stack([0.5 + 0.14 * np.cos(ang), 0.76 + 0.05 * np.sin(ang)], 1)
    ang = np.pi + np.linspace(0, 2 * np.pi, 8, endpoint=False)
    inner = np.stack([0.5 + 0.08 * np.cos(ang), 0.76 + 0.02 * np.sin(ang)], 1)
    return (np.concatenate([jaw, brows, nose, eyes, outer, inner]) * size).astype(np.float32)


def _landmarker(entry: ModelEntry, g: _Graph, *, landmarks: npt.ArrayLike | None = None,
                confidence: float = 0.9,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """[1, 68, 3] = (x, y) on the 64-px heatmap grid + confidence, and Gaussian heatmaps [1, 68, 64, 64]."""
    s = entry.input_size
    pts = (default_landmarks68(s) if landmarks is None else np.asarray(landmarks, np.float32)) * 64 / s
    coords = np.concatenate([pts, np.full((68, 1), confidence)], 1)[None].astype(np.float32)
    yy, xx = np.mgrid[0:64, 0:64]
    heat = confidence * np.exp(-((xx[None] - pts[:, :1, None]) ** 2 + (yy[None] - pts[:, 1:, None]) ** 2) / 2)
    image, (points, heatmaps) = entry.inputs[0], entry.outputs
    x, p_name, h_name = _name(image, "input"), _name(points, "landmarks"), _name(heatmaps, "heatmaps")
    zero = g.zero_of(x, "float32")
    g.op("Add", g.const(coords), zero, out=p_name)
    g.op("Add", g.op("Cast", g.const(heat[None], np.float16), to=TensorProto.FLOAT), zero, out=h_name)
    return ([_vi(x, "float32", _dims(image))],
            [_vi(p_name, "float32", _dims(points)), _vi(h_name, "float32", _dims(heatmaps))])


# DDColor's a, b (Lab units) and DeOldify's R, G, B (0..255) as gain·grey + offset of the input's channel 0
DDCOLOR_AB = ((20.0, 10.0), (25.0, 15.0))  # grey in [0, 1]: a warm (red-yellow) tint
DEOLDIFY_RGB = ((0.9, 30.0), (0.8, 10.0), (0.6, 0.0))  # grey in 0..255: a sepia tint


def _colorizer(entry: ModelEntry, g: _Graph, *, invert: bool = False, constant: float | None = None,
               ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Colour as an affine function of the grey input (DDCOLOR_AB / DEOLDIFY_RGB); wrong files for
    ``models check``: ``invert=True`` (the opposite hue: blue-green), ``constant=v`` (every value v)."""
    spec, out_spec = entry.inputs[0], entry.outputs[0]
    name, out_name = _name(spec, "input"), _name(out_spec, "output")
    grey = _channel(g, name, 0)
    terms = DDCOLOR_AB if entry.family == "ddcolor" else DEOLDIFY_RGB
    channels = [g.op("Add", g.op("Mul", grey, g.const(gain)), g.const(offset)) for gain, offset in terms]
    if invert:
        channels = ([g.op("Neg", c) for c in channels] if entry.family == "ddcolor" else channels[::-1])
    y = g.op("Concat", *channels, axis=1)
    if constant is not None:
        y = g.op("Add", g.op("Mul", y, g.const(0.0)), g.const(constant))
    g.op("Identity", y, out=out_name)
    return [_vi(name, "float32", _dims(spec))], [_vi(out_name, "float32", _dims(out_spec))]


def _frame_enhancer(entry: ModelEntry, g: _Graph, *, mode: str = "nearest",
                    pattern: npt.ArrayLike | None = None, blur: bool = False, dtype: str | None = None,
                    swap_channels: bool = False,
                    ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """An upscaler: the tile resized ``entry.scale`` × (``mode`` nearest: each pixel repeated; linear:
    half-pixel), plus ``pattern`` (S·scale × S·scale, in [0, 1] units, on every channel) over the output
    tile's own pixels: a tile's output shows where in the tile each pixel was, so a wrong placement or overlap
    shows; ``blur``: a 3×3 mean with zero padding first (a tile's border darkens: a kept overlap is a seam);
    ``swap_channels``: BGR out (a wrong file for ``models check``)."""
    image, out_spec = entry.inputs[0], entry.outputs[0]
    name, out_name = _name(image, "input"), _name(out_spec, "output")
    i_dtype, o_dtype = _io_dtype(entry, image, dtype), _io_dtype(entry, out_spec, dtype)
    x = g.to_float(name, i_dtype)
    if blur:
        x = g.op("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    s = float(entry.scale)
    scales = g.const([1.0, 1.0, s, s])
    if mode == "nearest":
        y = g.op("Resize", x, "", scales, mode="nearest", coordinate_transformation_mode="asymmetric",
                 nearest_mode="floor")
    else:
        y = g.op("Resize", x, "", scales, mode="linear", coordinate_transformation_mode="half_pixel")
    if pattern is not None:
        y = g.op("Add", y, g.const(np.asarray(pattern, np.float32)[None, None]))
    if swap_channels:
        y = g.op("Concat", *(_channel(g, y, c) for c in (2, 1, 0)), axis=1)
    g.from_float(y, o_dtype, out_name)
    return [_vi(name, i_dtype, _dims(image))], [_vi(out_name, o_dtype, _dims(out_spec))]
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
    name = _name(spec, "input")
    return name, _vi(name, "float32", _dims(spec))


def _lp_features(entry: ModelEntry, g: _Graph) -> Signature:
    x, vi = _lp_image(entry)
    out = entry.outputs[0]
    pooled = g.op("AveragePool", x, kernel_shape=[4, 4], strides=[4, 4])  # (1, 3, 64, 64)
    volume = g.op("Tile", g.op("Unsqueeze", pooled, g.const([2], np.int64)),
                  g.const([1, 11, 16, 1, 1], np.int64))
    volume = g.op("Slice", volume, g.const([0], np.int64), g.const([32], np.int64), g.const([1], np.int64))
    keep = np.zeros((1, 32, 1, 1, 1), np.float32)
    keep[0, :3] = 1.0
    name = _name(out, "features")
    g.op("Mul", volume, g.const(keep), out=name)
    return [vi], [_vi(name, "float32", _dims(out))]


_MOTION_KEYS = ("pitch", "yaw", "roll", "scale", "translation", "expression", "points")


def _lp_motion(entry: ModelEntry, g: _Graph, *, motions: Sequence[dict[str, Any]] | None = None,
               scalar_angles: bool = False) -> Signature:
    x, vi = _lp_image(entry)
    chosen = list(motions or [default_motion()])
    dark, bright = chosen[0], chosen[-1]
    bright_input = g.op("Greater", g.op("ReduceMean", x, keepdims=0), g.const(0.5))
    outputs = []
    for i, (key, spec) in enumerate(zip(_MOTION_KEYS, entry.outputs, strict=True)):
        shape: list[int | str] = [] if scalar_angles and i < 3 else _dims(spec)
        values = [np.asarray(m[key], np.float32).reshape(shape) for m in (dark, bright)]
        name = _name(spec, f"motion_{key}")
        g.op("Where", bright_input, g.const(values[1]), g.const(values[0]), out=name)
        outputs.append(_vi(name, "float32", shape))
    return [vi], outputs


def _lp_generator(entry: ModelEntry, g: _Graph, *, invert: bool = False) -> Signature:
    volume, source, target = entry.inputs
    names = [_name(spec, n)
             for spec, n in zip(entry.inputs, ("feature_volume", "source", "target"), strict=True)]
    image = g.op("Slice", names[0], g.const([0, 0], np.int64), g.const([3, 1], np.int64),
                 g.const([1, 2], np.int64))
    image = g.op("Squeeze", image, g.const([2], np.int64))  # (1, 3, 64, 64)
    big = g.op("Resize", image, "", g.const([1.0, 1.0, 8.0, 8.0]), mode="nearest")
    shift = g.op("Mul", g.op("ReduceMean", g.op("Sub", names[1], names[2]), keepdims=0),
                 g.const(GENERATOR_GAIN))
    out = entry.outputs[0]
    name = _name(out, "image")
    if invert:  # a wrong file for ``models check``: the negative image
        big = g.op("Sub", g.const(1.0), big)
    g.op("Clip", g.op("Add", big, shift), g.const(0.0), g.const(1.0), out=name)
    return ([_vi(n, "float32", _dims(spec)) for n, spec in zip(names, entry.inputs, strict=True)],
            [_vi(name, "float32", _dims(out))])


def _lp_retargeter(entry: ModelEntry, g: _Graph) -> Signature:
    x, vi = _lp_image(entry)
    out = entry.outputs[0]
    name = _name(out, "delta")
    g.op("MatMul", x, g.const(retargeter_weights(int(entry.inputs[0].shape[-1]))), out=name)  # type: ignore[arg-type]
    return [vi], [_vi(name, "float32", _dims(out))]


def _lp_stitcher(entry: ModelEntry, g: _Graph) -> Signature:
    source, target = (_name(spec, n) for spec, n in zip(entry.inputs, ("source", "target"), strict=True))
    pulled = g.op("Add", source, g.op("Mul", g.op("Sub", target, source), g.const(STITCH_PULL)))
    out = entry.outputs[0]
    name = _name(out, "stitched")
    g.op("Add", pulled, g.const(stitch_offset()), out=name)
    return ([_vi(n, "float32", _dims(spec)) for n, spec in zip((source, target), entry.inputs, strict=True)],
            [_vi(name, "float32", _dims(out))])


def _live_portrait(entry: ModelEntry, g: _Graph, **options: Any) -> Signature:
    part = entry.name.removeprefix("live_portrait_")
    builders: dict[str, Callable[..., Signature]] = {
        "feature_extractor": _lp_features, "motion_extractor": _lp_motion, "generator": _lp_generator,
        "eye_retargeter": _lp_retargeter, "lip_retargeter": _lp_retargeter, "stitcher": _lp_stitcher}
    return builders[part](entry, g, **options)


def install_live_portrait(parts: Sequence[str] | None = None, **motion: Any) -> None:
    """Every LivePortrait part's surrogate (``motion``: the motion extractor's options)."""
    from pipeline.liveportrait.network import PARTS, model_name

    for part in parts or PARTS:
        install_surrogate(model_name(part), **(motion if part == "motion_extractor" else {}))
# --- lip syncers and voice extractors ----------------------------------------------------------------

def _audio_weights(seed: int) -> npt.NDArray[np.float32]:
    """(3, 1280): one fixed direction in the (80 × 16) audio window per output channel."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((3, 80 * 16)) / np.sqrt(80 * 16 * 4.0)).astype(np.float32)


def audio_shift(audio: npt.ArrayLike, seed: int = 5, gain: float = 0.25) -> npt.NDArray[np.float32]:
    """The shift (3,) per channel the lip-sync surrogates add to the lower half for one audio window."""
    a = np.asarray(audio, np.float32).reshape(-1)
    return (gain * np.tanh(_audio_weights(seed) @ a)).astype(np.float32)


def _lip_syncer(entry: ModelEntry, g: _Graph, *, seed: int = 5, gain: float = 0.25,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    audio, face = entry.inputs[0], entry.inputs[1]
    out_spec = entry.outputs[0]
    a_name, f_name, y_name = _name(audio, "source"), _name(face, "target"), _name(out_spec, "output")
    channels, side = int(face.shape[1]), int(face.shape[-1])
    image = g.op("Slice", f_name, g.const([channels - 3], np.int64), g.const([channels], np.int64),
                 g.const([1], np.int64))  # wav2lip: the full copy (3..5); edtalk: the face
    flat = g.op("Reshape", a_name, g.const([-1, 80 * 16], np.int64))
    shift = g.op("Mul", g.op("Tanh", g.op("MatMul", flat, g.const(_audio_weights(seed).T))), g.const(gain))
    inputs = [_vi(a_name, "float32", _dims(audio)), _vi(f_name, "float32", _dims(face))]
    if len(entry.inputs) > 2:  # edtalk's weight scales the effect
        w_spec = entry.inputs[2]
        w_name = _name(w_spec, "weight")
        shift = g.op("Mul", shift, w_name)
        inputs.append(_vi(w_name, "float32", _dims(w_spec)))
    lower = np.zeros((1, 1, side, 1), np.float32)
    lower[:, :, side // 2:] = 1.0
    moved = g.op("Mul", g.op("Reshape", shift, g.const([-1, 3, 1, 1], np.int64)), g.const(lower))
    g.op("Clip", g.op("Add", image, moved), g.const(0.0), g.const(1.0), out=y_name)
    return inputs, [_vi(y_name, "float32", _dims(out_spec))]


def _voice_extractor(entry: ModelEntry, g: _Graph, *, scale: float = 1.0,
                     ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    spec, out_spec = entry.inputs[0], entry.outputs[0]
    x, y = _name(spec, "input"), _name(out_spec, "output")
    g.op("Mul", x, g.const(scale), out=y)
    return [_vi(x, "float32", _dims(spec))], [_vi(y, "float32", _dims(out_spec))]


# --- deep swapper (DFM) ------------------------------------------------------------------------------------

DFM_KEEP = 0.9  # an AMP surrogate's celeb: this much of its input, the rest the morph value


def dfm_masks(size: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Default (face_mask, celeb_mask): two overlapping ellipses, so their minimum is neither."""
    face = _ellipse(size, size * 0.5, size * 0.55, size * 0.36, size * 0.42).astype(np.float32)
    celeb = _ellipse(size, size * 0.5, size * 0.45, size * 0.42, size * 0.36).astype(np.float32)
    return face, celeb


def _dfm(entry: ModelEntry, g: _Graph, *, amp: bool = True, size: int | None = None,
         face_mask: npt.ArrayLike | None = None, celeb_mask: npt.ArrayLike | None = None,
         nchw: bool = False, open_size: bool = False) -> Signature:
    face_spec, morph_spec = entry.inputs
    if open_size:  # H, W left dynamic (a file that does not say its resolution): masks = the input's mean
        x = str(face_spec.name)
        m = g.op("ReduceMean", x, axes=[3], keepdims=1)
        for out in ("out_face_mask", "out_celeb_face_mask"):
            g.op("Identity", m, out=out)
        g.op("Identity", x, out="out_celeb_face")
        dims: list[int | str] = [1, "h", "w"]
        return ([_vi(x, "float32", [*dims, 3])],
                [_vi(n, "float32", [*dims, c]) for n, c in (("out_face_mask", 1), ("out_celeb_face", 3),
                                                           ("out_celeb_face_mask", 1))])
    side = entry.input_size or size or 224
    shape = [1, 3, side, side] if nchw else [1, side, side, 3]
    default_face, default_celeb = dfm_masks(side)
    x = str(face_spec.name)
    inputs = [_vi(x, "float32", shape)]
    if nchw:
        celeb = g.op("Transpose", x, perm=[0, 2, 3, 1])
    elif amp:
        inputs.append(_vi(str(morph_spec.name), "float32", [1]))
        morph = g.op("Mul", str(morph_spec.name), g.const(1.0 - DFM_KEEP))
        celeb = g.op("Add", g.op("Mul", x, g.const(DFM_KEEP)), morph)
    else:
        celeb = g.op("Identity", x)
    zero = g.zero_of(x, "float32")
    names = ("out_face_mask", "out_celeb_face", "out_celeb_face_mask")
    for name, value in ((names[0], face_mask if face_mask is not None else default_face),
                        (names[2], celeb_mask if celeb_mask is not None else default_celeb)):
        g.op("Add", g.const(np.asarray(value, np.float32).reshape(1, side, side, 1)), zero, out=name)
    g.op("Identity", celeb, out=names[1])
    return inputs, [_vi(n, "float32", [1, side, side, c]) for n, c in zip(names, (1, 3, 1), strict=True)]


def install_dfm(name: str, **options: Any) -> Path:
    """A DFM surrogate where the store looks for ``name`` (a catalog name or ``custom/<stem>``)."""
    return install_surrogate(name, **options)


# --- age modifier (fran, styleganex_age) and its age estimate (fairface) ----------------------------------
AGE_SHIFT = 0.25  # fran: the image brightened by AGE_SHIFT·(new age − age) (both /100, as it is fed)
FRAN_BLUE = 0.25  # fran, ``encode=True``: the constant image (R, G, B) = (direction[0], direction[1], this)
STYLEGANEX_SHIFT = 0.05  # styleganex_age: the extend brightened by this·direction (in [−1, 1] units)
STYLEGANEX_ENCODE = 0.2  # ``encode=True``: R = this·direction·(a 1 px checkerboard ±1), G = B = 0, at 1024²
STYLEGANEX_ENCODE_SIZE = 1024


def _batch_zero(g: _Graph, x: str) -> str:
    """0 of shape (N, 1, 1, 1) that depends on the image ``x``: a constant output still follows the batch."""
    return g.op("Mul", g.op("ReduceMean", x, axes=[1, 2, 3], keepdims=1), g.const(0.0))


def _fran(entry: ModelEntry, g: _Graph, *, encode: bool = False, swap_channels: bool = False) -> Signature:
    """``target`` brightened by AGE_SHIFT·(direction[1] − direction[0]); ``encode=True``: a constant image
    (direction[0], direction[1], FRAN_BLUE) as RGB; ``swap_channels=True`` returns BGR (for models check)."""
    image_spec, direction_spec = entry.inputs
    x, d = _name(image_spec, "target"), _name(direction_spec, "direction")
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
            y = g.op("Concat", *(_channel(g, y, c) for c in (2, 1, 0)), axis=1)
    out = entry.outputs[0]
    name = _name(out, "output")
    g.op("Identity", y, out=name)
    return ([_vi(x, "float32", _dims(image_spec)), _vi(d, "float32", _dims(direction_spec))],
            [_vi(name, "float32", _dims(out))])


def _styleganex(entry: ModelEntry, g: _Graph, *, encode: bool = False, swap_channels: bool = False,
                ) -> Signature:
    """The extend (``target_with_background``, 384²) brightened by STYLEGANEX_SHIFT·direction;
    ``encode=True``: at 1024², R = STYLEGANEX_ENCODE·direction·checkerboard (G = B = 0), a pattern that
    match_frame_color keeps; ``swap_channels=True`` returns BGR."""
    fallbacks = ("target", "target_with_background", "direction")
    names = [_name(spec, n) for spec, n in zip(entry.inputs, fallbacks, strict=True)]
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
            y = g.op("Concat", *(_channel(g, y, c) for c in (2, 1, 0)), axis=1)
    out = entry.outputs[0]
    name = _name(out, "output")
    g.op("Identity", y, out=name)
    side: list[int | str] = ["n", 3, STYLEGANEX_ENCODE_SIZE, STYLEGANEX_ENCODE_SIZE] if encode else _dims(out)
    return ([_vi(n, "float32", _dims(spec)) for n, spec in zip(names, entry.inputs, strict=True)],
            [_vi(name, "float32", side)])


def _age_modifier(entry: ModelEntry, g: _Graph, **options: Any) -> Signature:
    return (_fran if entry.family == "fran" else _styleganex)(entry, g, **options)


def _classifier(entry: ModelEntry, g: _Graph, *, age: int = 3, race: int = 0, gender: int = 1,
                logits: bool = False) -> Signature:
    """FairFace: the ids (race, gender, age) given, int64 of shape (N,); ``logits=True``: the age as (N, 9)
    scores, highest at ``age``."""
    spec = entry.inputs[0]
    x = _name(spec, "input")
    zero = g.op("ReduceMean", x, axes=[1, 2, 3], keepdims=0)  # (N,)
    zero = g.op("Mul", zero, g.const(0.0))
    outputs = []
    for out_spec, fallback, value in zip(entry.outputs, ("race", "gender", "age"), (race, gender, age),
                                         strict=True):
        name = _name(out_spec, fallback)
        if logits and fallback == "age":
            scores = np.eye(9, dtype=np.float32)[value][None] * 5.0
            g.op("Add", g.op("Unsqueeze", zero, g.const([1], np.int64)), g.const(scores), out=name)
            outputs.append(_vi(name, "float32", ["n", 9]))
            continue
        g.op("Cast", g.op("Add", zero, g.const(float(value))), out=name, to=TensorProto.INT64)
        outputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, ["n"]))
    return [_vi(x, "float32", _dims(spec))], outputs


# --- background removers (shared/PROCESSORS.md §7) ----------------------------------------------------------


def _denormalised(g: _Graph, x: str, entry: ModelEntry, c: int) -> str:
    """Input channel ``c`` back in [0, 1] by the entry's mean/std (fed wrongly, it comes out wrong)."""
    return g.op("Add", g.op("Mul", _channel(g, x, c), g.const(entry.std[c])), g.const(entry.mean[c]))


def _background_remover(entry: ModelEntry, g: _Graph, *, invert: bool = False, gain: float = 1.0,
                        ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """The foreground is the input's RED (RGB channel 0, mean/std undone): a red region is the person, a
    region without red the background, a level in between that level (so a wrong channel order, mean or
    std shows). u2net_cloth: class scores (0.5, red, 0, 0) (foreground where red > 0.5); corridor_key:
    alpha = its 4th input channel (the coarse key, fed un-normalised), foreground = 1 − RGB. ``invert``:
    the background marked (a wrong file for ``models check``); ``gain``: red's contrast about 0.5, clipped
    to [0, 1] (4: a red level below 0.375 is surely background, above 0.625 surely foreground)."""
    spec = entry.inputs[0]
    name = _name(spec, "input")
    red = _denormalised(g, name, entry, 0)
    if invert:
        red = g.op("Sub", g.const(1.0), red)
    if gain != 1.0:
        red = g.op("Clip", g.op("Add", g.op("Mul", g.op("Sub", red, g.const(0.5)), g.const(gain)),
                                g.const(0.5)), g.const(0.0), g.const(1.0))
    outs = [_name(o, f"output{i}") for i, o in enumerate(entry.outputs)]
    if entry.family == "u2net_cloth":
        half = g.op("Add", g.op("Mul", red, g.const(0.0)), g.const(0.5))
        zero = g.op("Mul", red, g.const(0.0))
        g.op("Concat", half, red, zero, zero, axis=1, out=outs[0])
    elif entry.family == "corridor_key":
        g.op("Identity", _channel(g, name, 3), out=outs[0])
        rgb = g.op("Concat", *(_denormalised(g, name, entry, c) for c in range(3)), axis=1)
        g.op("Sub", g.const(1.0), rgb, out=outs[1])
    else:
        g.op("Identity", red, out=outs[0])
    return ([_vi(name, "float32", _dims(spec))],
            [_vi(n, "float32", _dims(o)) for n, o in zip(outs, entry.outputs, strict=True)])


def _builder(entry: ModelEntry) -> Any:
    if entry.role == "detector":
        return _yolo if entry.name == "yolo_face" else _scrfd
    return {"swapper": _swapper, "recogniser": _recogniser, "enhancer": _enhancer, "occluder": _occluder,
            "parser": _parser, "landmarker": _landmarker, "colorizer": _colorizer,
            "frame_enhancer": _frame_enhancer, "liveportrait": _live_portrait, "lip_syncer": _lip_syncer,
            "voice_extractor": _voice_extractor, "deep_swapper": _dfm, "age_modifier": _age_modifier,
            "classifier": _classifier, "background_remover": _background_remover}[entry.role]


def make_surrogate(name: str, path: Path, *, signature: Signature | None = None, **options: Any) -> Path:
    """Write a surrogate for catalog model ``name`` to ``path`` (options: see each family's builder).

    Its I/O is the catalog entry's, or ``signature`` (inputs, outputs) where given (a real file's facts)."""
    entry = catalog.get(name)
    if entry.builtin:
        raise ValueError(f"{name} is built in: use the real model")
    if signature is not None:
        entry = dataclasses.replace(entry, inputs=tuple(signature[0]), outputs=tuple(signature[1]))
    g = _Graph()
    inputs, outputs = _builder(entry)(entry, g, **options)
    graph = helper.make_graph(g.nodes, f"surrogate_{entry.name}", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="facestation-tests-surrogate")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    sessions.release(path)  # a cached session of an earlier surrogate at this path is stale now
    return path


def install_surrogate(name: str, directory: Path | None = None, **options: Any) -> Path:
    """Write the surrogate where the store looks for ``name`` (``directory / entry.file``); options as
    make_surrogate's."""
    entry = catalog.get(name)
    return make_surrogate(name, Path(directory or models_dir()) / entry.file, **options)


SURROGATE_NAMES = tuple(e.name for e in catalog.CATALOG.values() if not e.builtin)
