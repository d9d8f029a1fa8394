"""What reads or redraws a face crop: recognisers, face enhancers, occluders, parsers, landmarkers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    RAW_NORM,
    Graph,
    Signature,
    channel,
    dims_of,
    ellipse,
    info,
    io_dtype,
    name_of,
    or_entry,
)

# --- recognisers, enhancers, masks, landmarks -----------------------------------------------------------

def _recogniser(entry: ModelEntry, g: Graph, *, seed: int = 0, batch: int | None = None,
                norm: float = RAW_NORM, constant: bool = False,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """A fixed projection of the pooled, mean-centred image, scaled to the norm ``norm``
    (``constant``: of a fixed vector, whatever the image)."""
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = name_of(image, "input.1"), name_of(output, "embedding")
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
    return [info(x, "float32", dims_of(image, b))], [info(y, "float32", dims_of(output, b))]


def _enhancer(entry: ModelEntry, g: Graph, *, sharpen: float = 0.5, dtype: str | None = None,
              decoys: Sequence[str] = (), swap_channels: bool = False, nhwc: bool = False,
              constant: float | None = None,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """An unsharp mask of the image input; a second input (CodeFormer's ``w``, as the entry declares it)
    scales it; ``decoys``: outputs of the image's shape (the negated input) listed before the image."""
    image, out_spec = next(s for s in entry.inputs if len(s.shape) == 4), entry.outputs[0]
    name, out_name = name_of(image, "input"), name_of(out_spec, "output")
    i_dtype = io_dtype(entry, image, dtype)
    o_dtype = io_dtype(entry, out_spec, dtype)
    x = g.to_float(name, i_dtype)
    if nhwc:  # a file that reads its NCHW input's memory as (N, H, W, C): the pixels come out scrambled
        side = image.shape[-1]
        x = g.op("Transpose", g.op("Reshape", x, g.const([-1, side, side, 3], np.int64)), perm=[0, 3, 1, 2])
    blur = g.op("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    gain = g.const(sharpen)
    inputs = []
    for spec in entry.inputs:  # in the entry's order; codeformer's fidelity weight scales the effect
        if spec is image:
            inputs.append(info(name, i_dtype, dims_of(image)))
            continue
        w_name, w_dtype = name_of(spec, "w"), spec.dtype or "double"
        gain = g.op("Mul", gain, g.op("Cast", w_name, to=TensorProto.FLOAT))
        inputs.append(info(w_name, w_dtype, dims_of(spec)))
    outputs = []
    for decoy in decoys:
        g.from_float(g.op("Neg", x), o_dtype, decoy)
        outputs.append(info(decoy, o_dtype, dims_of(out_spec)))
    y = g.op("Add", x, g.op("Mul", g.op("Sub", x, blur), gain))
    if swap_channels:
        y = g.op("Concat", *(channel(g, y, c) for c in (2, 1, 0)), axis=1)
    if constant is not None:
        y = g.op("Add", g.op("Mul", y, g.const(0.0)), g.const(constant))
    y = g.op("Clip", y, g.const(-1.0), g.const(1.0))
    g.from_float(y, o_dtype, out_name)
    return inputs, [*outputs, info(out_name, o_dtype, dims_of(out_spec))]


def _occluder(entry: ModelEntry, g: Graph, *, mask: npt.ArrayLike | None = None, skin: bool = False,
              logits: bool | None = None, invert: bool = False,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """[1, 1, S, S] from [1, 3, S, S] RGB /255 (the entry's layout and names), 1 / > 0 = face visible.

    ``mask`` (S×S in [0, 1], default a central ellipse) is fixed; ``skin=True`` sees the face where red
    is above blue (R − B of the input). ``logits`` (default: the entry's ``mask_output``): logits with a
    magnitude below 1 (mask 1 -> 0.4, 0 -> −0.4; skin: R − B itself), so that reading them as a
    probability gives a measurably weaker mask; else probabilities (skin: sigmoid(8·(R − B)))."""
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = name_of(image, "input"), name_of(output, "output")
    as_logits = or_entry(logits, lambda: entry.mask_output == "logits")
    s = entry.input_size
    if skin:
        redness = g.op("Sub", channel(g, x, 0), channel(g, x, 2))
        if as_logits:
            g.op("Identity", redness, out=y)
        else:
            g.op("Sigmoid", g.op("Mul", redness, g.const(8.0)), out=y)
    else:
        m = ellipse(s, s / 2, s * 0.55, s * 0.35, s * 0.42) if mask is None else np.asarray(mask, np.float32)
        m = 1.0 - np.clip(m, 0, 1) if invert else m
        quantised = np.round(np.clip(m, 0, 1) * 255).astype(np.uint8).reshape(1, 1, s, s)
        stored = g.op("Cast", g.const(quantised, np.uint8), to=TensorProto.FLOAT)
        values = g.op("Mul", stored, g.const(1 / 255))
        if as_logits:
            values = g.op("Mul", g.op("Sub", values, g.const(0.5)), g.const(0.8))
        g.op("Add", values, g.zero_of(x, "float32"), out=y)
    return [info(x, "float32", dims_of(image))], [info(y, "float32", dims_of(output))]


def default_classes(size: int = 512) -> npt.NDArray[np.uint8]:
    """A plausible face layout for the parser: skin, brows, eyes, nose, mouth, lips, on background 0."""
    c = np.zeros((size, size), np.uint8)
    u = size / 512
    c[ellipse(size, 256 * u, 280 * u, 170 * u, 220 * u)] = 1
    for cls, cx in ((2, 185), (3, 327)):
        c[int(170 * u):int(185 * u), int((cx - 45) * u):int((cx + 45) * u)] = cls
    for cls, cx in ((4, 185), (5, 327)):
        c[ellipse(size, cx * u, 220 * u, 35 * u, 15 * u)] = cls
    c[int(230 * u):int(330 * u), int(230 * u):int(282 * u)] = 10
    c[int(365 * u):int(380 * u), int(200 * u):int(312 * u)] = 12
    c[int(380 * u):int(390 * u), int(200 * u):int(312 * u)] = 11
    c[int(390 * u):int(405 * u), int(200 * u):int(312 * u)] = 13
    return c


def _parser(entry: ModelEntry, g: Graph, *, classes: npt.ArrayLike | None = None,
            ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Logits [1, 19, S, S] where the class in ``classes`` (S×S ints, default ``default_classes``) wins."""
    s = entry.input_size
    cmap = default_classes(s) if classes is None else np.asarray(classes, np.uint8)
    cmap_f = g.op("Cast", g.const(cmap.reshape(1, 1, s, s), np.uint8), to=TensorProto.FLOAT)
    classes_19 = g.const(np.arange(19).reshape(1, 19, 1, 1))
    hit = g.op("Cast", g.op("Equal", cmap_f, classes_19), to=TensorProto.FLOAT)
    logits = g.op("Sub", g.op("Mul", hit, g.const(8.0)), g.const(4.0))
    image, output = entry.inputs[0], entry.outputs[0]
    x, y = name_of(image, "input"), name_of(output, "output")
    g.op("Add", logits, g.zero_of(x, "float32"), out=y)
    return [info(x, "float32", dims_of(image))], [info(y, "float32", dims_of(output))]


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


def _landmarker(entry: ModelEntry, g: Graph, *, landmarks: npt.ArrayLike | None = None,
                confidence: float = 0.9,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """[1, 68, 3] = (x, y) on the 64-px heatmap grid + confidence, and Gaussian heatmaps [1, 68, 64, 64]."""
    s = entry.input_size
    pts = (default_landmarks68(s) if landmarks is None else np.asarray(landmarks, np.float32)) * 64 / s
    coords = np.concatenate([pts, np.full((68, 1), confidence)], 1)[None].astype(np.float32)
    yy, xx = np.mgrid[0:64, 0:64]
    heat = confidence * np.exp(-((xx[None] - pts[:, :1, None]) ** 2 + (yy[None] - pts[:, 1:, None]) ** 2) / 2)
    image, (points, heatmaps) = entry.inputs[0], entry.outputs
    x, p_name, h_name = name_of(image, "input"), name_of(points, "landmarks"), name_of(heatmaps, "heatmaps")
    zero = g.zero_of(x, "float32")
    g.op("Add", g.const(coords), zero, out=p_name)
    g.op("Add", g.op("Cast", g.const(heat[None], np.float16), to=TensorProto.FLOAT), zero, out=h_name)
    return ([info(x, "float32", dims_of(image))],
            [info(p_name, "float32", dims_of(points)), info(h_name, "float32", dims_of(heatmaps))])


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "recogniser": _recogniser, "enhancer": _enhancer, "occluder": _occluder, "parser": _parser,
    "landmarker": _landmarker}
