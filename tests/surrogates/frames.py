"""Frame processors' models: colourisers, frame enhancers (upscalers), background removers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import onnx

from pipeline.models.catalog import ModelEntry
from tests.surrogates.graph import (
    Graph,
    Signature,
    channel,
    dims_of,
    info,
    io_dtype,
    name_of,
)

# DDColor's a, b (Lab units) and DeOldify's R, G, B (0..255) as gain·grey + offset of the input's channel 0
DDCOLOR_AB = ((20.0, 10.0), (25.0, 15.0))  # grey in [0, 1]: a warm (red-yellow) tint
DEOLDIFY_RGB = ((0.9, 30.0), (0.8, 10.0), (0.6, 0.0))  # grey in 0..255: a sepia tint


def _colorizer(entry: ModelEntry, g: Graph, *, invert: bool = False, constant: float | None = None,
               ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Colour as an affine function of the grey input (DDCOLOR_AB / DEOLDIFY_RGB); wrong files for
    ``models check``: ``invert=True`` (the opposite hue: blue-green), ``constant=v`` (every value v)."""
    spec, out_spec = entry.inputs[0], entry.outputs[0]
    name, out_name = name_of(spec, "input"), name_of(out_spec, "output")
    grey = channel(g, name, 0)
    terms = DDCOLOR_AB if entry.family == "ddcolor" else DEOLDIFY_RGB
    channels = [g.op("Add", g.op("Mul", grey, g.const(gain)), g.const(offset)) for gain, offset in terms]
    if invert:
        channels = ([g.op("Neg", c) for c in channels] if entry.family == "ddcolor" else channels[::-1])
    y = g.op("Concat", *channels, axis=1)
    if constant is not None:
        y = g.op("Add", g.op("Mul", y, g.const(0.0)), g.const(constant))
    g.op("Identity", y, out=out_name)
    return [info(name, "float32", dims_of(spec))], [info(out_name, "float32", dims_of(out_spec))]


def _frame_enhancer(entry: ModelEntry, g: Graph, *, mode: str = "nearest",
                    pattern: npt.ArrayLike | None = None, blur: bool = False, dtype: str | None = None,
                    swap_channels: bool = False, shift: float = 0.0,
                    ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """An upscaler: the tile resized ``entry.scale`` × (``mode`` nearest: each pixel repeated; linear:
    half-pixel), plus ``pattern`` (S·scale × S·scale, in [0, 1] units, on every channel) over the output
    tile's own pixels: a tile's output shows where in the tile each pixel was, so a wrong placement or overlap
    shows; ``blur``: a 3×3 mean with zero padding first (a tile's border darkens: a kept overlap is a seam);
    ``swap_channels``: BGR out (a wrong file for ``models check``)."""
    image, out_spec = entry.inputs[0], entry.outputs[0]
    name, out_name = name_of(image, "input"), name_of(out_spec, "output")
    i_dtype, o_dtype = io_dtype(entry, image, dtype), io_dtype(entry, out_spec, dtype)
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
    if shift:  # every output pixel brighter (darker) by this, in [0, 1] units: a known effect
        y = g.op("Add", y, g.const(shift))
    if swap_channels:
        y = g.op("Concat", *(channel(g, y, c) for c in (2, 1, 0)), axis=1)
    g.from_float(y, o_dtype, out_name)
    return [info(name, i_dtype, dims_of(image))], [info(out_name, o_dtype, dims_of(out_spec))]


# --- background removers (docs/processors.md §7) ----------------------------------------------------------


def _denormalised(g: Graph, x: str, entry: ModelEntry, c: int) -> str:
    """Input channel ``c`` back in [0, 1] by the entry's mean/std (fed wrongly, it comes out wrong)."""
    return g.op("Add", g.op("Mul", channel(g, x, c), g.const(entry.std[c])), g.const(entry.mean[c]))


def _background_remover(entry: ModelEntry, g: Graph, *, invert: bool = False, gain: float = 1.0,
                        ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """The foreground is the input's RED (RGB channel 0, mean/std undone): a red region is the person, a
    region without red the background, a level in between that level (so a wrong channel order, mean or
    std shows). u2net_cloth: class scores (0.5, red, 0, 0) (foreground where red > 0.5); corridor_key:
    alpha = its 4th input channel (the coarse key, fed un-normalised), foreground = 1 − RGB. ``invert``:
    the background marked (a wrong file for ``models check``); ``gain``: red's contrast about 0.5, clipped
    to [0, 1] (4: a red level below 0.375 is surely background, above 0.625 surely foreground)."""
    spec = entry.inputs[0]
    name = name_of(spec, "input")
    red = _denormalised(g, name, entry, 0)
    if invert:
        red = g.op("Sub", g.const(1.0), red)
    if gain != 1.0:
        red = g.op("Clip", g.op("Add", g.op("Mul", g.op("Sub", red, g.const(0.5)), g.const(gain)),
                                g.const(0.5)), g.const(0.0), g.const(1.0))
    outs = [name_of(o, f"output{i}") for i, o in enumerate(entry.outputs)]
    if entry.family == "u2net_cloth":
        half = g.op("Add", g.op("Mul", red, g.const(0.0)), g.const(0.5))
        zero = g.op("Mul", red, g.const(0.0))
        g.op("Concat", half, red, zero, zero, axis=1, out=outs[0])
    elif entry.family == "corridor_key":
        g.op("Identity", channel(g, name, 3), out=outs[0])
        rgb = g.op("Concat", *(_denormalised(g, name, entry, c) for c in range(3)), axis=1)
        g.op("Sub", g.const(1.0), rgb, out=outs[1])
    else:
        for out in outs:  # the matte; an export with U²-Net's side outputs (rembg's) has it in each
            g.op("Identity", red, out=out)
    return ([info(name, "float32", dims_of(spec))],
            [info(n, "float32", dims_of(o)) for n, o in zip(outs, entry.outputs, strict=True)])


BUILDERS: dict[str, Callable[..., Signature]] = {  # role -> builder
    "colorizer": _colorizer, "frame_enhancer": _frame_enhancer, "background_remover": _background_remover}
