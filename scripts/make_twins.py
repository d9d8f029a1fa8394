#!/usr/bin/env python
"""Cost twins: random-weight ONNX models with a real model's I/O, structure, size and cost.

Usage: .venv/bin/python scripts/make_twins.py DIR [--only NAME ...] [--force] [--no-run]

No machine of this project can download the real weights, so speed and memory are measured on twins:
graphs built here with ``onnx.helper`` whose inputs and outputs are those of the real files (names,
shapes including the batch dims as exported, dtypes), whose layers follow the published architecture,
and whose weights are random (fixed seeds: the same file on every machine with the same numpy). Each
twin is written under its catalog file name (``DIR/inswapper_128.onnx``…), so DIR can serve as a models
folder. Twins are generated, never committed; ``DIR/twins.json`` records each file's spec digest, size
and sha256, and a twin whose file still matches is not rebuilt (``--force`` rebuilds). Weights are
streamed to disk one tensor at a time (the protobuf is written field by field), so building the 554 MB
swapper holds one layer in memory, never the model.

Cost convention: MAC = one multiply-accumulate of a Conv, ConvTranspose, Gemm or MatMul, read off the built
graph with ONNX shape inference; GFLOP = 2 × GMAC. Element-wise ops, norms, resizes and activations are not
counted (< 1 %). Published figures are quoted in their own convention (mmcv's and ptflops' "FLOPs" count
multiply-adds, i.e. MACs).

Twins, targets and sources:
- inswapper_128 (catalog ``inswapper_128``; real ``inswapper_128.onnx`` ≈ 554 MB fp32). Structure as
  given in issue 10: encoder 7×7 reflect-padded 3→128, 3×3 128→256, stride-2 256→512, stride-2 512→1024;
  six residual style blocks of two 3×3 1024→1024 convs, each followed by instance norm and an AdaIN
  scale/shift (two Gemms 512→1024) from the 512-d latent, ReLU after the first; decoder bilinear ×2 +
  3×3 1024→512, bilinear ×2 + 3×3 512→256, 3×3 256→128, 7×7 reflect-padded 128→3, tanh mapped to [0, 1].
  The 512×512 ``emap`` is the last initializer and, as in the real file, used by no node. Targets:
  554 MB and 350 GFLOP per face (issue 10, from the published layer structure). Batch fixed to 1 as
  exported; no node hard-codes it, so the loader's dynamic-batch rewrite applies.
- inswapper_128_fp16 (catalog ``inswapper_128_fp16``, real ``inswapper_128.fp16.onnx`` ≈ 277 MB): the
  inswapper_128 twin's file (built first where needed) converted by ``pipeline.models.fp16``, one weight in
  memory at a time: float16 weights, Resize scales in float32, float32 inputs and outputs (the published
  fp16 file is bound with float32 buffers in Rope's ``run_swapper``), the emap still the last initializer.
- arcface_w600k_r50 (``w600k_r50.onnx``): IResNet-50 at 112² (insightface ``iresnet.py``: 3×3 stem +
  PReLU, IBasicBlocks [3, 4, 14, 3] at 64/128/256/512 channels, each stage starting with stride 2,
  BN → Flatten → FC 25088→512 → BN). I/O as the real file reports it: ``input.1`` ['None', 3, 112, 112]
  → ``683`` [1, 512] (insightface's model_zoo log ``w600k_r50.onnx recognition ['None', 3, 112, 112]``;
  the output is noted as ``683: [1, 512]`` in public wrappers). Targets: 43.6 M parameters (≈ 174 MB
  file); 6.3 GMAC per face (insightface ``recognition/arcface_torch/README.md``, table "ViT For Face
  Recognition", row r50: FLOPs 6.3 G).
- gfpgan_1.4 (``GFPGANv1.4.onnx``): GFPGANv1Clean at 512, channel multiplier 2, num_style_feat 512,
  different_w, sft_half, input_is_latent (TencentARC/GFPGAN ``gfpgan/archs/gfpganv1_clean_arch.py`` and
  ``stylegan2_clean_arch.py``): U-Net of bilinear ResBlocks (32→256 channels, 512→4 px and back), a
  Linear 4096→16×512 style code, SFT scale/shift branches per level, a StyleGAN2 decoder of modulated
  convs (512…64 channels, 4→512 px) with noise and ToRGB skips. Modulated convs are written as a batch-1
  export traces them (the style multiplies the weight, which is demodulated and reshaped with a literal
  batch of 1), so this twin, like such an export, keeps batch 1. I/O: ``input`` [1, 3, 512, 512] →
  ``output`` the same. Targets: 85.0 M parameters (real ONNX ≈ 340 MB; the v1.4 checkpoint has 87,143,276
  params_ema per the mlx-community/GFPGANv1.4-fp32 model card, of which the 8-layer style MLP, 2,101,248,
  is unused when the input is latent). No published FLOPs figure was found (searched docs, code, pages
  and issues): the target is the multiply-adds of the published layer table, counted in closed form by
  ``gfpgan_reference_gmac`` (independently of the graph counter).
- scrfd_10g (catalog ``retinaface``, real ``det_10g.onnx`` = SCRFD-10GF with keypoints): insightface
  ``detection/scrfd/configs/scrfd/scrfd_10g_bnkps.py``: ResNetV1e deep stem (28/28/56) + max-pool,
  BasicBlocks (3, 4, 2, 3) at (56, 88, 88, 224) with average-pool shortcuts; PAFPN over strides 8–32 at
  56 channels; per-stride heads of three 3×3 convs at 80 channels (BN folded) and 3×3 cls (2) / bbox (8)
  / kps (20) convs, 2 anchors. I/O as the real file: ``input.1`` [1, 3, '?', '?'] → nine outputs
  ``448, 471, 494`` scores [N, 1], ``451, 474, 497`` boxes [N, 4], ``454, 477, 500`` keypoints [N, 10]
  (batch folded into N, as exported). Scores are biased to ≈ 0: the twin finds no faces; it is for cost,
  not detection. Targets (insightface ``detection/scrfd/README.md``, "SCRFD_10G_KPS | … | 10G | 4.23",
  evaluated at VGA 640×480): 4.23 M parameters, 10 GMAC at 640×480 (mmcv's counter, multiply-adds).
  A 640×640 frame costs 4/3 of that.
- real_esrgan_x4 / real_esrgan_x2 (frame_enhancer; ``real_esrgan_x4.onnx`` / ``real_esrgan_x2.onnx``):
  RRDBNet, 23 RRDB, 64 features, growth 32 (xinntao/Real-ESRGAN ``basicsr/archs/rrdbnet_arch.py``, the
  configuration of ``RealESRGAN_x4plus`` and ``RealESRGAN_x2plus``; the ×2 model pixel-unshuffles its input by
  2 first), layers in ``twins_processors.py``. I/O as the catalog: ``input`` [1, 3, 256, 256] (the catalog's
  tile) → ``output`` [1, 3, 1024, 1024] (×4) / [1, 3, 512, 512] (×2), float32. Targets: parameters ≈ 16.7 M
  (Real-ESRGAN's documentation, model table: RealESRGAN_x4plus ~16.7 M), exactly 16,697,987 (×4) and
  16,703,171 (×2: conv_first takes 12 channels) by the layer table; file 4 bytes a parameter (no size of
  FaceFusion's x2/x4 files is published; its x8 file, one conv more, is 69.6 MB). No FLOPs figure at a
  256² tile is published: the target is the layer table counted in closed form (``rrdbnet_reference``):
  1,174.9 GMAC per 256² tile at ×4, 293.8 at ×2 (the trunk runs at 128²). A 1080p frame is 45 such tiles.
- wav2lip_gan_96 (lip_syncer; ``wav2lip_gan_96.onnx``, the same generator as wav2lip_96): Rudrabha/Wav2Lip
  ``models/wav2lip.py`` (face encoder 96 → 1 px, audio encoder of the mel window, face decoder of transposed
  convs with the encoder's features concatenated, sigmoid output; ``models/conv.py``: conv + BatchNorm +
  ReLU, folded here as an eval-mode export folds it). I/O as the catalog: ``source`` [1, 1, 80, 16] and
  ``target`` [1, 6, 96, 96] → ``output`` [1, 3, 96, 96]. Targets: ≈ 36 M parameters (the figure the task
  gives; no published count was found: the layer table gives 36,275,283, BatchNorm folded), ≈ 144 MB; no
  published multiply-adds either: the layer table in closed form (``wav2lip_reference``), 3.97 GMAC a face.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # twins_processors beside this file, also when loaded from elsewhere (tests)
    sys.path.insert(0, HERE)

import twins_processors as processor_twins  # noqa: E402

from pipeline.models import catalog, fp16  # noqa: E402
from pipeline.models.onnxfile import field_key  # noqa: E402
from pipeline.models.store import sha256_of  # noqa: E402
from pipeline.models.validate import check_io, session_io  # noqa: E402

OPSET = 17
IR_VERSION = 8
MANIFEST = "twins.json"
FORMAT = 1  # bump when the writer or a builder changes what a twin file holds
Dims = Sequence[int | str]
Shapes = Mapping[str, Sequence[int]]  # input name -> concrete shape


@dataclass(frozen=True)
class Weight:
    """A float32 initializer whose values are drawn only when written: N(mean, std²) (std 0: constant)."""

    name: str
    shape: tuple[int, ...]
    std: float
    mean: float = 0.0

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class Net:
    """A graph's nodes, small constants and lazily drawn weights; written without materialising it."""

    def __init__(self, name: str, seed: int, width: float = 1.0) -> None:
        self.name, self.seed, self.width = name, seed, width
        self.nodes: list[onnx.NodeProto] = []
        self.consts: list[onnx.TensorProto] = []
        self.weights: list[Weight] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._n = 0

    # --- graph pieces -------------------------------------------------------------------------------
    def ch(self, channels: int) -> int:
        """A channel count scaled by ``width`` (even, at least 2)."""
        return max(2, 2 * round(channels * self.width / 2))

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def input(self, name: str, dims: Dims) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims)))
        return name

    def output(self, x: str, name: str, dims: Dims) -> None:
        self.op("Identity", x, out=name)
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims)))

    def weight(self, shape: Sequence[int], std: float, mean: float = 0.0, name: str | None = None) -> str:
        w = Weight(name or self._name("w"), tuple(int(d) for d in shape), float(std), float(mean))
        self.weights.append(w)
        return w.name

    def const(self, value: Any, dtype: Any = np.int64) -> str:
        name = self._name("k")
        self.consts.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        out = out or self._name("t")
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    # --- layers -------------------------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int | tuple[int, int] = 1,
             pad: int | None = None, bias: bool = True, gain: float = math.sqrt(2.0),
             bias_mean: float = 0.0) -> str:
        """Conv with He-style init (std = gain / sqrt(fan_in)); ``pad`` defaults to k // 2 (zeros);
        ``stride`` one for both axes or (rows, columns)."""
        p = k // 2 if pad is None else pad
        strides = [stride, stride] if isinstance(stride, int) else list(stride)
        args = [x, self.weight((cout, cin, k, k), gain / math.sqrt(cin * k * k))]
        if bias:
            args.append(self.weight((cout,), 0.0, bias_mean))
        return self.op("Conv", *args, kernel_shape=[k, k], strides=strides, pads=[p] * 4)

    def gemm(self, x: str, fin: int, fout: int, gain: float = 1.0, bias_mean: float = 0.0) -> str:
        w = self.weight((fout, fin), gain / math.sqrt(fin))
        return self.op("Gemm", x, w, self.weight((fout,), 0.0, bias_mean), transB=1)

    def leaky(self, x: str) -> str:
        return self.op("LeakyRelu", x, alpha=0.2)

    def relu(self, x: str) -> str:
        return self.op("Relu", x)

    def prelu(self, x: str, c: int) -> str:
        return self.op("PRelu", x, self.weight((c, 1, 1), 0.0, 0.25))

    def batch_norm(self, x: str, c: int) -> str:
        """Inference BN with identity statistics (scale 1, bias 0, mean 0, variance 1)."""
        scale, bias = self.weight((c,), 0.0, 1.0), self.weight((c,), 0.0)
        mean, var = self.weight((c,), 0.0), self.weight((c,), 0.0, 1.0)
        return self.op("BatchNormalization", x, scale, bias, mean, var, epsilon=1e-5)

    def instance_norm(self, x: str, c: int) -> str:
        scale, bias = self.weight((c,), 0.0, 1.0), self.weight((c,), 0.0)
        return self.op("InstanceNormalization", x, scale, bias, epsilon=1e-5)

    def resize(self, x: str, factor: float, mode: str = "linear") -> str:
        scales = self.const([1.0, 1.0, factor, factor], np.float32)
        return self.op("Resize", x, "", scales, mode=mode, coordinate_transformation_mode="half_pixel"
                       if mode == "linear" else "asymmetric", nearest_mode="floor")

    def reflect_pad(self, x: str, p: int) -> str:
        return self.op("Pad", x, self.const([0, 0, p, p, 0, 0, p, p]), mode="reflect")

    def split(self, x: str, sizes: Sequence[int], axis: int = 1) -> list[str]:
        outs = [self._name("t") for _ in sizes]
        self.nodes.append(helper.make_node("Split", [x, self.const(list(sizes))], outs, axis=axis))
        return outs

    def unsqueeze_hw(self, x: str) -> str:
        """(N, C) -> (N, C, 1, 1)."""
        return self.op("Unsqueeze", x, self.const([2, 3]))

    # --- the model ----------------------------------------------------------------------------------
    def skeleton(self, lazy: bool = True) -> onnx.ModelProto:
        """The model with every weight as a data-less initializer (``lazy=False``: weights left out)."""
        inits = list(self.consts)
        if lazy:
            inits += [_header(w) for w in self.weights]
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="facestation-make_twins")
        model.ir_version = IR_VERSION
        return model

    @property
    def params(self) -> int:
        return sum(w.size for w in self.weights)

    def spec_digest(self) -> str:
        """Names what the file will hold: graph, weight shapes and init, seed, writer format."""
        digest = hashlib.sha256(self.skeleton().SerializeToString())
        digest.update(json.dumps([[w.name, w.shape, w.std, w.mean] for w in self.weights]).encode())
        digest.update(f"{self.seed}/{FORMAT}".encode())
        return digest.hexdigest()

    def draw(self, index: int) -> np.ndarray:
        w = self.weights[index]
        if w.std == 0.0:
            return np.full(w.shape, w.mean, dtype=np.float32)
        rng = np.random.default_rng([self.seed, index])
        arr = rng.standard_normal(w.shape, dtype=np.float32)
        arr *= np.float32(w.std)
        if w.mean:
            arr += np.float32(w.mean)
        return arr


# --- streaming protobuf writer -------------------------------------------------------------------------
# ModelProto.graph is field 7, GraphProto.initializer 5, TensorProto.raw_data 9 (all length-delimited).
# Protobuf parsers accept fields in any order and append repeated ones, so the file is: the model without its
# graph, then the graph's header, then the graph's serialised fields, then one initializer record per weight.

def _header(w: Weight) -> onnx.TensorProto:
    t = onnx.TensorProto()
    t.name, t.data_type = w.name, TensorProto.FLOAT
    t.dims.extend(w.shape)
    return t


def _layout(net: Net) -> tuple[bytes, bytes, list[tuple[bytes, int]]]:
    """(model without graph, graph without weights, per weight: (tensor header, tensor length))."""
    model = net.skeleton(lazy=False)
    graph = model.graph.SerializeToString()
    model.ClearField("graph")
    records = []
    for w in net.weights:
        head = _header(w).SerializeToString()
        data = 4 * w.size
        records.append((head, len(head) + len(field_key(9, data)) + data))
    return model.SerializeToString(), graph, records


def file_size(net: Net) -> int:
    """The exact size of the file ``write_model`` produces, without drawing a weight."""
    head, graph, records = _layout(net)
    graph_len = len(graph) + sum(len(field_key(5, n)) + n for _, n in records)
    return len(head) + len(field_key(7, graph_len)) + graph_len


def write_model(net: Net, path: Path) -> tuple[int, str]:
    """Write ``net`` to ``path`` (atomically), one weight in memory at a time; (bytes, sha256)."""
    if sys.byteorder != "little":
        raise RuntimeError("raw_data is little-endian; this writer needs a little-endian machine")
    head, graph, records = _layout(net)
    graph_len = len(graph) + sum(len(field_key(5, n)) + n for _, n in records)
    digest = hashlib.sha256()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with open(tmp, "wb") as fh:
            def put(chunk: bytes | memoryview) -> None:
                fh.write(chunk)
                digest.update(chunk)

            put(head + field_key(7, graph_len) + graph)
            for index, (tensor_head, tensor_len) in enumerate(records):
                data = net.draw(index)
                put(field_key(5, tensor_len) + tensor_head + field_key(9, data.nbytes))
                put(data.data.cast("B"))
                del data
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.stat().st_size, digest.hexdigest()


# --- cost read off the graph ---------------------------------------------------------------------------

def count_macs(net: Net, dims: Shapes) -> int:
    """Multiply-accumulates of every Conv, ConvTranspose, Gemm and MatMul for inputs of the given shapes."""
    model = net.skeleton()
    for vi in model.graph.input:
        if vi.name in dims:
            shape = vi.type.tensor_type.shape
            shape.ClearField("dim")
            for d in dims[vi.name]:
                shape.dim.add().dim_value = int(d)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    shapes = {t.name: list(t.dims) for t in inferred.graph.initializer}
    for vi in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    total = 0
    for node in inferred.graph.node:
        out = shapes[node.output[0]]
        if node.op_type == "Conv":  # each output element: C_in/groups × kH × kW
            total += math.prod(out) * math.prod(shapes[node.input[1]][1:])
        elif node.op_type == "ConvTranspose":  # each input element spreads over C_out/groups × kH × kW
            total += math.prod(shapes[node.input[0]]) * math.prod(shapes[node.input[1]][1:])
        elif node.op_type == "Gemm":
            trans_a = any(a.name == "transA" and a.i for a in node.attribute)
            a = shapes[node.input[0]]
            total += math.prod(out) * (a[0] if trans_a else a[1])
        elif node.op_type == "MatMul":
            total += math.prod(out) * shapes[node.input[0]][-1]
    return total


# --- inswapper_128 -------------------------------------------------------------------------------------

def build_inswapper(width: float = 1.0) -> Net:
    net = Net("inswapper_128_twin", seed=128, width=width)
    c128, c256, c512, c1024 = (net.ch(c) for c in (128, 256, 512, 1024))
    x = net.input("target", [1, 3, 128, 128])
    latent = net.input("source", [1, 512])
    x = net.leaky(net.conv(net.reflect_pad(x, 3), 3, c128, 7, pad=0))
    x = net.leaky(net.conv(x, c128, c256, 3))
    x = net.leaky(net.conv(x, c256, c512, 3, stride=2))
    x = net.leaky(net.conv(x, c512, c1024, 3, stride=2))
    for _ in range(6):
        y = net.relu(_adain(net, net.conv(x, c1024, c1024, 3), latent, c1024))
        y = _adain(net, net.conv(y, c1024, c1024, 3, gain=0.5), latent, c1024)
        x = net.op("Add", x, y)
    x = net.leaky(net.conv(net.resize(x, 2.0), c1024, c512, 3))
    x = net.leaky(net.conv(net.resize(x, 2.0), c512, c256, 3))
    x = net.leaky(net.conv(x, c256, c128, 3))
    x = net.op("Tanh", net.conv(net.reflect_pad(x, 3), c128, 3, 7, pad=0, gain=1.0))
    x = net.op("Mul", net.op("Add", x, net.const(1.0, np.float32)), net.const(0.5, np.float32))
    net.output(x, "output", [1, 3, 128, 128])
    net.weight((512, 512), 1.0 / math.sqrt(512), name="emap")  # last initializer, as the loader expects
    return net


def _adain(net: Net, x: str, latent: str, c: int) -> str:
    """Instance norm, then × scale + shift, both Gemms of the 512-d latent."""
    x = net.instance_norm(x, c)
    scale = net.unsqueeze_hw(net.gemm(latent, 512, c, bias_mean=1.0))
    shift = net.unsqueeze_hw(net.gemm(latent, 512, c))
    return net.op("Add", net.op("Mul", x, scale), shift)


# --- arcface_w600k_r50 (IResNet-50) --------------------------------------------------------------------

def build_arcface(width: float = 1.0) -> Net:
    net = Net("w600k_r50_twin", seed=50, width=width)
    x = net.input("input.1", ["None", 3, 112, 112])
    inplanes = net.ch(64)
    x = net.prelu(net.conv(x, 3, inplanes, 3), inplanes)
    for planes, blocks in ((64, 3), (128, 4), (256, 14), (512, 3)):
        planes = net.ch(planes)
        for b in range(blocks):
            stride = 2 if b == 0 else 1
            y = net.batch_norm(x, inplanes)
            y = net.prelu(net.conv(y, inplanes, planes, 3), planes)
            y = net.conv(y, planes, planes, 3, stride=stride, gain=0.2)
            shortcut = x if b else net.conv(x, inplanes, planes, 1, stride=stride, pad=0, gain=1.0)
            x = net.op("Add", y, shortcut)
            inplanes = planes
    x = net.op("Flatten", net.batch_norm(x, inplanes), axis=1)
    x = net.batch_norm(net.gemm(x, inplanes * 7 * 7, 512), 512)
    net.output(x, "683", [1, 512])
    return net


# --- gfpgan_1.4 (GFPGANv1Clean, 512, channel multiplier 2) ----------------------------------------------

LEVELS = (8, 16, 32, 64, 128, 256, 512)
GFPGAN_CHANNELS = {4: 512, 8: 512, 16: 512, 32: 512, 64: 512, 128: 256, 256: 128, 512: 64}


def build_gfpgan(width: float = 1.0) -> Net:
    net = Net("gfpgan_1.4_twin", seed=14, width=width)
    dec = {r: net.ch(c) for r, c in GFPGAN_CHANNELS.items()}
    unet = {r: c // 2 for r, c in dec.items()}  # the U-Net runs at half the decoder's channels
    x = net.input("input", [1, 3, 512, 512])
    feat = net.leaky(net.conv(x, 3, unet[512], 1))
    skips: list[str] = []
    for r in reversed((4, *LEVELS[:-1])):  # 256 … 4
        feat = _gfp_resblock(net, feat, unet[2 * r], unet[r], 0.5)
        skips.insert(0, feat)
    feat = net.leaky(net.conv(feat, unet[4], unet[4], 3))
    style = net.gemm(net.op("Flatten", feat, axis=1), unet[4] * 16, 16 * 512)
    conditions = []
    for i, r in enumerate(LEVELS):
        feat = _gfp_resblock(net, net.op("Add", feat, skips[i]), unet[r // 2], unet[r], 2.0)
        c = unet[r]
        scale = net.conv(net.leaky(net.conv(feat, c, c, 3)), c, c, 3, gain=0.1, bias_mean=1.0)
        shift = net.conv(net.leaky(net.conv(feat, c, c, 3)), c, c, 3, gain=0.1)
        conditions.append((scale, shift))
    image = _stylegan_decoder(net, style, dec, conditions)
    net.output(image, "output", [1, 3, 512, 512])
    return net


def _gfp_resblock(net: Net, x: str, cin: int, cout: int, factor: float) -> str:
    out = net.leaky(net.conv(x, cin, cin, 3))
    out = net.leaky(net.conv(net.resize(out, factor), cin, cout, 3, gain=1.0))
    skip = net.conv(net.resize(x, factor), cin, cout, 1, pad=0, bias=False, gain=0.5)
    return net.op("Add", out, skip)


def _latent(net: Net, style: str, i: int) -> str:
    """The i-th 512-d latent of the (N, 16×512) style code."""
    return net.op("Slice", style, net.const([i * 512]), net.const([(i + 1) * 512]), net.const([1]))


def _modconv(net: Net, x: str, latent: str, cin: int, cout: int, k: int, demod: bool = True) -> str:
    """StyleGAN2 modulated conv as a batch-1 export traces it: weight × style, demodulated, reshaped, Conv."""
    style = net.op("Reshape", net.gemm(latent, 512, cin, bias_mean=1.0), net.const([1, 1, cin, 1, 1]))
    weight = net.op("Mul", net.weight((1, cout, cin, k, k), 1.0 / math.sqrt(cin * k * k)), style)
    if demod:
        power = net.op("ReduceSum", net.op("Mul", weight, weight), net.const([2, 3, 4]), keepdims=1)
        norm = net.op("Reciprocal", net.op("Sqrt", net.op("Add", power, net.const(1e-8, np.float32))))
        weight = net.op("Mul", weight, norm)
    weight = net.op("Reshape", weight, net.const([cout, cin, k, k]))
    return net.op("Conv", x, weight, kernel_shape=[k, k], pads=[k // 2] * 4)


def _styleconv(net: Net, x: str, latent: str, cin: int, cout: int, size: int) -> str:
    out = net.op("Mul", _modconv(net, x, latent, cin, cout, 3), net.const(math.sqrt(2.0), np.float32))
    noise = net.op("Mul", net.weight((1, 1, size, size), 1.0), net.weight((1,), 0.0, 0.1))
    out = net.op("Add", net.op("Add", out, noise), net.weight((1, cout, 1, 1), 0.0))
    return net.leaky(out)


def _to_rgb(net: Net, x: str, latent: str, cin: int, skip: str | None) -> str:
    out = net.op("Add", _modconv(net, x, latent, cin, 3, 1, demod=False), net.weight((1, 3, 1, 1), 0.0))
    return out if skip is None else net.op("Add", out, net.resize(skip, 2.0))


def _stylegan_decoder(net: Net, style: str, dec: dict[int, int], conditions: list[tuple[str, str]]) -> str:
    const = net.weight((1, dec[4], 4, 4), 1.0)
    out = _styleconv(net, const, _latent(net, style, 0), dec[4], dec[4], 4)
    skip = _to_rgb(net, out, _latent(net, style, 1), dec[4], None)
    i = 1
    for r, (scale, shift) in zip(LEVELS, conditions, strict=True):
        cin, cout = dec[r // 2], dec[r]
        out = _styleconv(net, net.resize(out, 2.0), _latent(net, style, i), cin, cout, r)
        same, sft = net.split(out, [cout // 2, cout // 2])
        sft = net.op("Add", net.op("Mul", sft, scale), shift)  # channel-split SFT
        out = net.op("Concat", same, sft, axis=1)
        out = _styleconv(net, out, _latent(net, style, i + 1), cout, cout, r)
        skip = _to_rgb(net, out, _latent(net, style, i + 2), cout, skip)
        i += 2
    return skip


def gfpgan_reference_gmac() -> float:
    """Multiply-adds of GFPGANv1Clean (512, ×2) in closed form from its layer table, as the FLOPs target."""
    unet = {r: c // 2 for r, c in GFPGAN_CHANNELS.items()}
    macs = 512 * 512 * 3 * unet[512]  # conv_body_first, 1×1
    for r in (256, 128, 64, 32, 16, 8, 4):  # down ResBlocks: conv1 at 2r, conv2 + 1×1 skip at r
        cin, cout = unet[2 * r], unet[r]
        macs += (2 * r) ** 2 * cin * cin * 9 + r * r * (cin * cout * 9 + cin * cout)
    macs += 16 * unet[4] * unet[4] * 9 + unet[4] * 16 * 16 * 512  # final conv, final linear
    for r in LEVELS:  # up ResBlocks (conv1 at r/2) and the SFT branches (four 3×3 convs at r)
        cin, cout = unet[r // 2], unet[r]
        macs += (r // 2) ** 2 * cin * cin * 9 + r * r * (cin * cout * 9 + cin * cout)
        macs += 4 * r * r * cout * cout * 9
    dec = GFPGAN_CHANNELS
    macs += 16 * dec[4] * dec[4] * 9 + 16 * dec[4] * 3 + 2 * 512 * dec[4]  # style_conv1, to_rgb1, modulations
    for r in LEVELS:
        cin, cout = dec[r // 2], dec[r]
        macs += r * r * (cin * cout * 9 + cout * cout * 9 + cout * 3) + 512 * (cin + 2 * cout)
    return macs / 1e9


# --- scrfd_10g (det_10g) -------------------------------------------------------------------------------

SCRFD_OUTPUTS = (("448", "471", "494"), ("451", "474", "497"), ("454", "477", "500"))


def build_scrfd(width: float = 1.0) -> Net:
    net = Net("det_10g_twin", seed=10, width=width)
    x = net.input("input.1", [1, 3, "?", "?"])
    c28, c56 = net.ch(28), net.ch(56)
    x = net.relu(net.conv(x, 3, c28, 3, stride=2))
    x = net.relu(net.conv(x, c28, c28, 3))
    x = net.relu(net.conv(x, c28, c56, 3))
    x = net.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    levels, cin = [], c56
    for planes, blocks, stride in ((56, 3, 1), (88, 4, 2), (88, 2, 2), (224, 3, 2)):
        planes = net.ch(planes)
        for b in range(blocks):
            x = _basic_block(net, x, cin, planes, stride if b == 0 else 1)
            cin = planes
        levels.append((x, planes))
    feats = _pafpn(net, levels[1:], c56)
    heads = [_scrfd_head(net, f, c56) for f in feats]
    for kind, names in enumerate(SCRFD_OUTPUTS):
        width_out = (1, 4, 10)[kind]
        for s, name in enumerate(names):
            flat = net.op("Reshape", net.op("Transpose", heads[s][kind], perm=[0, 2, 3, 1]),
                          net.const([-1, width_out]))
            net.output(flat, name, [f"anchors_{8 << s}", width_out])
    return net


def _basic_block(net: Net, x: str, cin: int, planes: int, stride: int) -> str:
    y = net.relu(net.conv(x, cin, planes, 3, stride=stride))
    y = net.conv(y, planes, planes, 3, gain=0.2)
    shortcut = x
    if stride != 1 or cin != planes:  # ResNetV1e: average-pool, then a 1×1 conv
        if stride != 1:
            x = net.op("AveragePool", x, kernel_shape=[stride, stride], strides=[stride, stride], ceil_mode=1)
        shortcut = net.conv(x, cin, planes, 1, pad=0, gain=1.0)
    return net.relu(net.op("Add", y, shortcut))


def _pafpn(net: Net, levels: list[tuple[str, int]], c: int) -> list[str]:
    lateral = [net.conv(x, cx, c, 1, pad=0, gain=1.0) for x, cx in levels]
    for i in (1, 0):  # top-down
        lateral[i] = net.op("Add", lateral[i], net.resize(lateral[i + 1], 2.0, mode="nearest"))
    inter = [net.conv(x, c, c, 3, gain=1.0) for x in lateral]
    for i in (0, 1):  # bottom-up
        inter[i + 1] = net.op("Add", inter[i + 1], net.conv(inter[i], c, c, 3, stride=2, gain=0.5))
    return [inter[0]] + [net.conv(x, c, c, 3, gain=1.0) for x in inter[1:]]


def _scrfd_head(net: Net, x: str, c: int) -> tuple[str, str, str]:
    feat = net.ch(80)
    for cin in (c, feat, feat):
        x = net.relu(net.conv(x, cin, feat, 3))
    score = net.op("Sigmoid", net.conv(x, feat, 2, 3, gain=0.01, bias_mean=-8.0))  # no faces
    bbox = net.op("Mul", net.conv(x, feat, 8, 3, gain=0.1, bias_mean=1.0), net.weight((1,), 0.0, 1.0))
    kps = net.conv(x, feat, 20, 3, gain=0.1)
    return score, bbox, kps


# --- the processors' models (layers in twins_processors.py) -----------------------------------------------

ENHANCER_TILE = 256  # the catalog's tile for real_esrgan_x2/x4 (entry.tile[0])


def build_real_esrgan_x4(width: float = 1.0) -> Net:
    return processor_twins.rrdbnet(Net("real_esrgan_x4_twin", seed=44, width=width), 4, ENHANCER_TILE)


def build_real_esrgan_x2(width: float = 1.0) -> Net:
    return processor_twins.rrdbnet(Net("real_esrgan_x2_twin", seed=22, width=width), 2, ENHANCER_TILE)


def build_wav2lip(width: float = 1.0) -> Net:
    return processor_twins.wav2lip(Net("wav2lip_gan_96_twin", seed=96, width=width))


# --- the twins -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Twin:
    name: str
    entry: str  # catalog entry whose I/O and file name the twin takes
    build: Callable[[float], Net]
    run_dims: Shapes  # input shapes of one inference (per face / frame)
    cost_dims: Mapping[str, Shapes]  # label -> input shapes the cost is read at
    target_label: str  # which cost_dims the FLOPs target is for
    target_gmac: float
    target_params: float
    real_size: float  # bytes of the real file
    tolerance: tuple[float, float]  # (parameters / size, FLOPs), relative
    sources: str
    test_width: float = 0.125
    aliases: tuple[str, ...] = field(default=())
    half_of: str | None = None  # the twin whose file this one is, converted to fp16 (models.fp16)


_FACE_128 = {"target": (1, 3, 128, 128), "source": (1, 512)}
_FACE_112 = {"input.1": (1, 3, 112, 112)}
_FACE_512 = {"input": (1, 3, 512, 512)}
_FRAME_640 = {"input.1": (1, 3, 640, 640)}
_TILE_256 = {"input": (1, 3, ENHANCER_TILE, ENHANCER_TILE)}
_MOUTH_96 = {"source": (1, 1, 80, 16), "target": (1, 6, 96, 96)}
_X4, _X2, _W2L = (processor_twins.rrdbnet_reference(4, ENHANCER_TILE),
                  processor_twins.rrdbnet_reference(2, ENHANCER_TILE), processor_twins.wav2lip_reference())
TWINS: dict[str, Twin] = {t.name: t for t in (
    Twin(name="inswapper_128", entry="inswapper_128", build=build_inswapper, run_dims=_FACE_128,
         cost_dims={"1×128² face": _FACE_128}, target_label="1×128² face", target_gmac=175.0,
         target_params=554e6 / 4, real_size=554e6, tolerance=(0.05, 0.05), test_width=1 / 16,
         sources="issue 10: ≈554 MB fp32, ≈350 GFLOP per face from the published layer structure"),
    Twin(name="inswapper_128_fp16", entry="inswapper_128_fp16", build=build_inswapper, run_dims=_FACE_128,
         cost_dims={"1×128² face": _FACE_128}, target_label="1×128² face", target_gmac=175.0,
         target_params=554e6 / 4, real_size=277e6, tolerance=(0.05, 0.05), test_width=1 / 16,
         half_of="inswapper_128",
         sources="the inswapper_128 twin converted by pipeline.models.fp16 (float32 I/O kept); "
                 "real inswapper_128.fp16.onnx ≈ 277 MB"),
    Twin(name="arcface_w600k_r50", entry="arcface_w600k_r50", build=build_arcface, run_dims=_FACE_112,
         cost_dims={"1×112² face": _FACE_112}, target_label="1×112² face", target_gmac=6.3,
         target_params=43.6e6, real_size=174e6, tolerance=(0.10, 0.20),
         sources="insightface arcface_torch README, r50: 6.3 G (multiply-adds); 43.6 M params, ≈174 MB file"),
    Twin(name="gfpgan_1.4", entry="gfpgan_1.4", build=build_gfpgan, run_dims=_FACE_512,
         cost_dims={"1×512² face": _FACE_512}, target_label="1×512² face",
         target_gmac=gfpgan_reference_gmac(),
         target_params=85.04e6, real_size=340e6, tolerance=(0.10, 0.20), test_width=1 / 16,
         sources="params: 87.14 M params_ema (mlx-community/GFPGANv1.4-fp32) − 2.10 M unused style MLP; "
                 "≈340 MB ONNX; GMAC: no published figure, closed form over the published layer table"),
    Twin(name="scrfd_10g", entry="retinaface", build=build_scrfd, run_dims=_FRAME_640,
         cost_dims={"640×640 frame": _FRAME_640, "640×480 (VGA)": {"input.1": (1, 3, 480, 640)}},
         target_label="640×480 (VGA)", target_gmac=10.0, target_params=4.23e6, real_size=4.23e6 * 4,
         tolerance=(0.10, 0.20), test_width=0.25, aliases=("retinaface", "det_10g"),
         sources="insightface SCRFD README: SCRFD_10G_KPS 10 G at VGA (mmcv, multiply-adds), 4.23 M params"),
    Twin(name="real_esrgan_x4", entry="real_esrgan_x4", build=build_real_esrgan_x4, run_dims=_TILE_256,
         cost_dims={"256² tile": _TILE_256}, target_label="256² tile", target_gmac=_X4[1] / 1e9,
         target_params=16.7e6, real_size=4 * _X4[0], tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="RRDBNet 23×64/32 (Real-ESRGAN rrdbnet_arch.py); ~16.7 M params (Real-ESRGAN docs, "
                 "RealESRGAN_x4plus); GMAC: the layer table in closed form at the catalog's 256² tile"),
    Twin(name="real_esrgan_x2", entry="real_esrgan_x2", build=build_real_esrgan_x2, run_dims=_TILE_256,
         cost_dims={"256² tile": _TILE_256}, target_label="256² tile", target_gmac=_X2[1] / 1e9,
         target_params=16.7e6, real_size=4 * _X2[0], tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="RRDBNet x2plus: pixel-unshuffle by 2, then the x4 network (Real-ESRGAN rrdbnet_arch.py); "
                 "~16.7 M params; GMAC: the layer table in closed form at the 256² tile"),
    Twin(name="wav2lip_gan_96", entry="wav2lip_gan_96", build=build_wav2lip, run_dims=_MOUTH_96,
         cost_dims={"1×96² face": _MOUTH_96}, target_label="1×96² face", target_gmac=_W2L[1] / 1e9,
         target_params=36e6, real_size=4 * 36e6, tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="Wav2Lip generator (Rudrabha/Wav2Lip models/wav2lip.py, BatchNorm folded); ~36 M params "
                 "(the task's figure; none published found: 36.28 M by the layer table); GMAC: the layer "
                 "table in closed form"),
)}


def resolve(names: Sequence[str] | None) -> list[Twin]:
    if not names:
        return list(TWINS.values())
    by_alias = {a: t for t in TWINS.values() for a in (t.name, *t.aliases)}
    unknown = [n for n in names if n not in by_alias]
    if unknown:
        raise SystemExit(f"unknown twin {', '.join(unknown)} (known: {', '.join(TWINS)})")
    wanted = [by_alias[n].name for n in names]
    with_bases = [b for w in wanted for b in (TWINS[w].half_of, w) if b]  # a converted twin after its base
    return [TWINS[n] for n in dict.fromkeys(with_bases)]


@dataclass
class Result:
    twin: Twin
    path: Path
    params: int
    size: int
    gmac: dict[str, float]  # label -> GMAC
    built: bool
    seconds: float  # building (measure, cache check, write) or, for an fp16 twin, converting
    run_seconds: float | None = None
    peak_rss: int = 0  # bytes: the process's peak resident memory once the twin was there


def measure(twin: Twin, width: float = 1.0) -> tuple[Net, int, dict[str, float]]:
    """(graph, predicted file size, GMAC per cost label) without drawing a weight.

    An fp16 twin's size is estimated (2 bytes less per weight; its Casts add a few hundred bytes)."""
    net = twin.build(width)
    gmac = {label: count_macs(net, dims) / 1e9 for label, dims in twin.cost_dims.items()}
    size = file_size(net)
    return net, size if twin.half_of is None else size - 2 * net.params, gmac


def read_manifest(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / MANIFEST).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _cached(path: Path, record: Any, spec: str) -> bool:
    """Whether ``path`` is the twin ``record`` describes: same spec, size and modification time as when it
    was written (a file written since is hashed against the record instead: 0.5 GB read on every check
    cost each `bench --twins` a second or two)."""
    if not isinstance(record, dict) or record.get("spec") != spec or not path.is_file():
        return False
    stat = path.stat()
    if stat.st_size != record.get("size"):
        return False
    return stat.st_mtime_ns == record.get("mtime_ns") or sha256_of(path) == record.get("sha256")


def _record(directory: Path, name: str, record: dict[str, Any]) -> None:
    manifest = read_manifest(directory)  # re-read: another twin may have been recorded meanwhile
    manifest[name] = record
    tmp = directory / f".{MANIFEST}.{os.getpid()}.part"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, directory / MANIFEST)


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build_twin(twin: Twin, directory: Path, width: float = 1.0, force: bool = False) -> Result:
    """Write ``twin`` into ``directory`` under its catalog file name unless an identical file is there.

    An fp16 twin is converted from its fp32 twin's file (built first where it is not there)."""
    start = time.perf_counter()
    net, _, gmac = measure(twin, width)
    path = directory / catalog.get(twin.entry).file
    spec = net.spec_digest()
    if twin.half_of is not None:
        spec = hashlib.sha256(f"{spec}/fp16/{fp16.FORMAT}".encode()).hexdigest()
    known = read_manifest(directory).get(path.name)
    built = force or not _cached(path, known, spec)
    if not built and "mtime_ns" not in known:  # recorded before times were: hashed once, now remembered
        _record(directory, path.name, {**known, "mtime_ns": path.stat().st_mtime_ns})
    record: dict[str, Any] = {"twin": twin.name, "width": width, "spec": spec}
    if built and twin.half_of is None:
        record["size"], record["sha256"] = write_model(net, path)
    elif built:
        base = build_twin(TWINS[twin.half_of], directory, width)
        start = time.perf_counter()
        record["size"], record["sha256"] = fp16.convert_file(base.path, path)
        record["from"] = base.path.name
    if built:
        record["mtime_ns"] = path.stat().st_mtime_ns
        _record(directory, path.name, record)
    return Result(twin, path, net.params, path.stat().st_size, gmac, built, time.perf_counter() - start,
                  peak_rss=peak_rss())


def check_twin(twin: Twin, path: Path) -> float:
    """Load ``path`` in onnxruntime (CPU), check its I/O against the catalog, run once; seconds of the run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    inputs, outputs = session_io(session)
    check_io(catalog.get(twin.entry), inputs, outputs, path)
    rng = np.random.default_rng(0)
    feeds = {name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in twin.run_dims.items()}
    start = time.perf_counter()
    results = session.run(None, feeds)
    seconds = time.perf_counter() - start
    bad = [o.name for o, r in zip(session.get_outputs(), results, strict=True) if not np.isfinite(r).all()]
    if bad:
        raise RuntimeError(f"{path.name}: non-finite values in outputs {bad}")
    return seconds


def _verdict(ratio: float, tolerance: float) -> str:
    return "ok" if abs(ratio - 1.0) <= tolerance else "OUT"


def report(result: Result) -> list[str]:
    """Lines that describe one twin against its targets."""
    t = result.twin
    size_tol, flops_tol = t.tolerance
    how = "cached (file and digest match)"
    if result.built:
        made = f"converted to fp16 from the {t.half_of} twin" if t.half_of else "built"
        how = f"{made} in {result.seconds:.1f} s, peak RSS of the process {result.peak_rss / 2**30:.2f} GiB"
    if result.run_seconds is not None:
        how += f"; onnxruntime CPU: I/O matches catalog '{t.entry}', one run {result.run_seconds:.2f} s"
    p_ratio, s_ratio = result.params / t.target_params, result.size / t.real_size
    lines = [f"{t.name} -> {result.path} ({how})",
             f"  parameters  {result.params / 1e6:9.2f} M    target {t.target_params / 1e6:8.2f} M   "
             f"ratio {p_ratio:5.3f}  {_verdict(p_ratio, size_tol)} (±{size_tol:.0%})",
             f"  file size   {result.size / 1e6:9.1f} MB   real   {t.real_size / 1e6:8.1f} MB  "
             f"ratio {s_ratio:5.3f}  {_verdict(s_ratio, size_tol)} (±{size_tol:.0%})"]
    for label, gmac in result.gmac.items():
        line = f"  {label:<14} {2 * gmac:8.2f} GFLOP = {gmac:7.2f} GMAC"
        if label == t.target_label:
            ratio = gmac / t.target_gmac
            line += (f"   target {t.target_gmac:.2f} GMAC ({2 * t.target_gmac:.1f} GFLOP)  "
                     f"ratio {ratio:5.3f}  {_verdict(ratio, flops_tol)} (±{flops_tol:.0%})")
        lines.append(line)
    lines.append(f"  source: {t.sources}")
    return lines


def within_targets(result: Result) -> bool:
    t = result.twin
    size_tol, flops_tol = t.tolerance
    return (abs(result.params / t.target_params - 1) <= size_tol
            and abs(result.size / t.real_size - 1) <= size_tol
            and abs(result.gmac[t.target_label] / t.target_gmac - 1) <= flops_tol)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="where to write the twins (usable as a models folder)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"some of: {', '.join(TWINS)}")
    parser.add_argument("--force", action="store_true", help="rebuild even if an identical file is there")
    parser.add_argument("--no-run", action="store_true", help="skip the onnxruntime load + one-run check")
    args = parser.parse_args(argv)
    ok = True
    print("cost: MAC = multiply-accumulate of Conv/ConvTranspose/Gemm/MatMul from the built graph; "
          "GFLOP = 2 × GMAC")
    for twin in resolve(args.only):
        result = build_twin(twin, args.directory, force=args.force)
        if result.built and not args.no_run:
            result.run_seconds = check_twin(twin, result.path)
        ok = within_targets(result) and ok
        print("\n".join(report(result)), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
