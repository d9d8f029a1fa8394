"""The graph a twin is drawn on (``Net``), its streaming writer and the cost counter."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pipeline.models.onnxfile import field_key

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

