"""Convert an fp32 ONNX file to fp16, holding one initializer in memory at a time.

``onnx.load`` of a 554 MB model builds the whole protobuf, and a converter working on it holds a second
copy of the weights. Here the file is walked as protobuf records (``ModelProto.graph`` is field 7,
``GraphProto.initializer`` field 5): the graph without its initializers (nodes, inputs, outputs: small) is
parsed and rewritten, then each initializer is read, converted and written on its own, in its original
order (the inswapper emap stays the last initializer).

What changes:
- float initializers, ``Constant`` and ``ConstantOfShape`` values, ``Cast`` to float, ``dtype`` attributes
  and the float tensors of ``value_info`` become float16 (values beyond ±65504 are clipped to it);
- inputs that ONNX requires in float32 (``FLOAT32_INPUTS``: Resize's roi and scales, Upsample's scales)
  stay float32: an initializer or constant used only there is kept as it is, anything else reaches them
  through a Cast;
- graph inputs and outputs keep float32 (``keep_io``, the default: a Cast at each edge, as the published
  fp16 inswapper is bound with float32 buffers) or become float16.
Subgraphs (If/Loop/Scan), sparse initializers and external data are refused (ValueError). onnxruntime's CPU
provider runs the result by casting around the kernels it lacks in float16.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from pipeline.models.onnxfile import GRAPH_INITIALIZER, MODEL_GRAPH, field_key

FORMAT = 1  # bump when the conversion changes what it writes
GRAPH_SPARSE_INITIALIZER = 15
TENSOR_FLOAT_DATA, TENSOR_RAW_DATA = 4, 9
_TENSOR_VALUES = {4, 5, 6, 7, 9, 10, 11, 13}  # TensorProto's value fields (13: external_data)
FLOAT32_INPUTS = {"Resize": (1, 2), "Upsample": (1,)}  # (op type: input positions that stay float32)
HALF_MAX = float(np.finfo(np.float16).max)
FP16, FP32 = "__fp16", "__fp32"  # suffixes of the tensors the conversion adds
FLOAT, FLOAT16 = 1, 10  # onnx.TensorProto.FLOAT, .FLOAT16


# --- protobuf records --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Field:
    """One field of a protobuf message in the file: bytes [start, end) are key and value, the value
    (for a length-delimited field, its payload) starts at ``value``."""

    number: int
    start: int
    value: int
    end: int


def _read_varint(fh: IO[bytes], pos: int) -> tuple[int, int]:
    fh.seek(pos)
    value = shift = 0
    for i, byte in enumerate(fh.read(10)):
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError(f"bad varint at byte {pos}")


def fields(fh: IO[bytes], start: int, end: int) -> Iterator[Field]:
    """The fields of the message at bytes [start, end) of ``fh``, in file order."""
    pos = start
    while pos < end:
        key, value = _read_varint(fh, pos)
        wire = key & 7
        if wire == 0:
            stop = _read_varint(fh, value)[1]
        elif wire in (1, 5):
            stop = value + (8 if wire == 1 else 4)
        elif wire == 2:
            length, value = _read_varint(fh, value)
            stop = value + length
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} at byte {pos}")
        if stop > end:
            raise ValueError(f"truncated protobuf field at byte {pos}")
        yield Field(key >> 3, pos, value, stop)
        pos = stop


def _raw(fh: IO[bytes], f: Field) -> bytes:
    fh.seek(f.start)
    return fh.read(f.end - f.start)


# --- the source file's layout --------------------------------------------------------------------------

@dataclass
class Initializer:
    header: Any  # onnx.TensorProto with every field but its values
    record: Field  # the whole tensor record in the source file
    raw: Field | None  # its raw_data field, where the values are stored that way


@dataclass
class Layout:
    head: bytes  # the model's fields other than its graph, as in the file
    graph: Any  # onnx.GraphProto without its initializers
    initializers: list[Initializer]


def _initializer(fh: IO[bytes], record: Field) -> Initializer:
    import onnx

    parts, raw = [], None
    for f in fields(fh, record.value, record.end):
        if f.number == TENSOR_RAW_DATA:
            raw = f
        elif f.number not in _TENSOR_VALUES:
            parts.append(_raw(fh, f))
    header = onnx.TensorProto.FromString(b"".join(parts))
    if header.data_location == onnx.TensorProto.EXTERNAL:
        raise ValueError(f"initializer {header.name} is stored outside the file (external data)")
    return Initializer(header, record, raw)


def read_layout(fh: IO[bytes]) -> Layout:
    """The model's head, its graph without initializers and where each initializer lies."""
    import onnx

    size = fh.seek(0, os.SEEK_END)
    head, rest, inits = bytearray(), bytearray(), []
    for f in fields(fh, 0, size):
        if f.number != MODEL_GRAPH:
            head += _raw(fh, f)
            continue
        for g in fields(fh, f.value, f.end):  # a graph split over records is one graph (protobuf merges)
            if g.number == GRAPH_INITIALIZER:
                inits.append(_initializer(fh, g))
            elif g.number == GRAPH_SPARSE_INITIALIZER:
                raise ValueError("sparse initializers are not supported")
            else:
                rest += _raw(fh, g)
    return Layout(bytes(head), onnx.GraphProto.FromString(bytes(rest)), inits)


# --- the graph -----------------------------------------------------------------------------------------

class GraphConversion:
    """Rewrites a graph without its initializers for float16; ``keep`` names the float tensors that stay
    float32 (initializers among them are written unchanged)."""

    def __init__(self, graph: Any, float_inits: Iterable[str], keep_io: bool = True) -> None:
        self.graph, self.keep_io = graph, keep_io
        self.float_inits = set(float_inits)
        self._check(graph)
        self.slots = [(n, i) for n in graph.node for i in FLOAT32_INPUTS.get(n.op_type, ())
                      if i < len(n.input) and n.input[i] and n.domain in ("", "ai.onnx")]
        in_slot = {(id(n), i) for n, i in self.slots}
        self.slot_names = {n.input[i] for n, i in self.slots}
        self.other_uses = {x for n in graph.node for i, x in enumerate(n.input) if (id(n), i) not in in_slot}
        self.other_uses |= {o.name for o in graph.output}
        self.keep: set[str] = set()

    @staticmethod
    def _check(graph: Any) -> None:
        import onnx

        for node in graph.node:
            for a in node.attribute:
                if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    raise ValueError(f"{node.op_type} node {node.name or node.output[0]} has a subgraph: "
                                     "subgraphs are not supported")

    def only_float32(self, name: str) -> bool:
        """Whether ``name`` is read only where float32 is required."""
        return name in self.slot_names and name not in self.other_uses

    def run(self) -> set[str]:
        """Rewrite the graph in place; the names that stay float32."""
        self.keep = {n for n in self.float_inits if self.only_float32(n)}
        if self.keep_io:  # an initializer that is a graph output keeps the output's type
            self.keep |= {o.name for o in self.graph.output if o.name in self.float_inits}
        for node in self.graph.node:
            self._node(node)
        first, last = self._edges()
        nodes = [*first, *self._slot_casts(), *last]
        del self.graph.node[:]
        self.graph.node.extend(nodes)
        for vi in self.graph.value_info:
            self._retype(vi)
        for vi in self.graph.input:  # initializers listed as inputs (IR < 4) follow their new type
            if vi.name in self.float_inits:
                self._retype(vi)
        return self.keep

    def _retype(self, vi: Any) -> None:
        tensor = vi.type.tensor_type
        if tensor.elem_type == FLOAT and vi.name not in self.keep:
            tensor.elem_type = FLOAT16

    def _node(self, node: Any) -> None:
        """Constants, casts and dtype attributes that make float32 tensors make float16 ones instead."""
        from onnx import helper

        out = node.output[0] if node.output else ""
        if node.op_type in ("Constant", "Cast") and self.only_float32(out):
            self.keep.add(out)
            return
        if node.op_type in ("Constant", "ConstantOfShape"):
            if node.op_type == "ConstantOfShape" and not node.attribute:  # its default is a float32 zero
                zero = half_tensor(np.zeros(1, np.float32), "")
                node.attribute.append(helper.make_attribute("value", zero))
            for a in node.attribute:
                if a.name in ("value_float", "value_floats"):  # float32 by definition: a float16 tensor
                    value = np.asarray(helper.get_attribute_value(a), np.float32)
                    a.CopyFrom(helper.make_attribute("value", half_tensor(value, "")))
                elif a.name == "value" and a.t.data_type == FLOAT:
                    a.t.CopyFrom(half_tensor(_array(a.t), a.t.name))
        for a in node.attribute:
            if a.name in ("to", "dtype") and a.type == a.INT and a.i == FLOAT:
                a.i = FLOAT16

    def _edges(self) -> tuple[list[Any], list[Any]]:
        """(Casts of the float32 graph inputs, Casts to the float32 graph outputs)."""
        from onnx import helper

        graph, first, last = self.graph, [], []
        floats_in = [vi for vi in graph.input if vi.name not in self.float_inits
                     and vi.type.tensor_type.elem_type == FLOAT]
        floats_out = [vi for vi in graph.output if vi.type.tensor_type.elem_type == FLOAT]
        if not self.keep_io:
            for vi in [*floats_in, *floats_out]:
                vi.type.tensor_type.elem_type = FLOAT16
            return [], []
        slot_ids = {(id(n), i) for n, i in self.slots}
        for vi in floats_in:
            self.keep.add(vi.name)
            if vi.name in self.other_uses:
                first.append(helper.make_node("Cast", [vi.name], [vi.name + FP16], to=FLOAT16))
                _rename_inputs(graph.node, vi.name, vi.name + FP16, skip=slot_ids)
        produced = {x for n in graph.node for x in n.output}
        for vi in floats_out:
            if vi.name in produced:
                self.keep.add(vi.name)
                _rename_everywhere(graph.node, vi.name, vi.name + FP16)
                last.append(helper.make_node("Cast", [vi.name + FP16], [vi.name], to=FLOAT))
        return first, last

    def _slot_casts(self) -> list[Any]:
        """The graph's nodes, a Cast to float32 in front of each float32-only input that is float16 now."""
        from onnx import helper

        needs: dict[int, list[int]] = {}
        for node, i in self.slots:
            if node.input[i] not in self.keep:
                needs.setdefault(id(node), []).append(i)
        nodes, made = [], set()
        for node in self.graph.node:
            for i in needs.get(id(node), []):
                name = node.input[i]
                if name not in made:
                    nodes.append(helper.make_node("Cast", [name], [name + FP32], to=FLOAT))
                    made.add(name)
                node.input[i] = name + FP32
            nodes.append(node)
        return nodes


def _rename_inputs(nodes: Iterable[Any], old: str, new: str, skip: set[tuple[int, int]]) -> None:
    for node in nodes:
        for i, x in enumerate(node.input):
            if x == old and (id(node), i) not in skip:
                node.input[i] = new


def _rename_everywhere(nodes: Iterable[Any], old: str, new: str) -> None:
    _rename_inputs(nodes, old, new, set())
    for node in nodes:
        for i, x in enumerate(node.output):
            if x == old:
                node.output[i] = new


# --- tensors -------------------------------------------------------------------------------------------

def _array(tensor: Any) -> np.ndarray:
    from onnx import numpy_helper

    return np.asarray(numpy_helper.to_array(tensor), dtype=np.float32)


def half_tensor(array: np.ndarray, name: str) -> Any:
    """``array`` as a float16 TensorProto, clipped to the float16 range."""
    from onnx import numpy_helper

    return numpy_helper.from_array(np.clip(array, -HALF_MAX, HALF_MAX).astype(np.float16), name)


def _half_record(header: Any) -> tuple[bytes, int]:
    """(tensor record up to its values, value bytes) of the float16 version of a float tensor."""
    import onnx

    half = onnx.TensorProto()
    half.CopyFrom(header)
    half.data_type = onnx.TensorProto.FLOAT16
    n = 2 * math.prod(header.dims)
    return half.SerializeToString() + field_key(TENSOR_RAW_DATA, n), n


def _half_values(fh: IO[bytes], init: Initializer) -> bytes | memoryview:
    """The initializer's values as little-endian float16 bytes (one tensor in memory)."""
    import onnx

    count = math.prod(init.header.dims)
    if init.raw is not None:
        if init.raw.end - init.raw.value != 4 * count:
            raise ValueError(f"initializer {init.header.name}: raw data does not match its shape")
        buf = bytearray(4 * count)
        fh.seek(init.raw.value)
        fh.readinto(buf)  # type: ignore[attr-defined]
        values = np.frombuffer(buf, dtype="<f4")
    else:
        tensor = onnx.TensorProto.FromString(_raw(fh, init.record)[init.record.value - init.record.start:])
        values = _array(tensor).reshape(-1)
    np.clip(values, -HALF_MAX, HALF_MAX, out=values)
    return values.astype("<f2").tobytes()


# --- the file ------------------------------------------------------------------------------------------

def convert_file(src: Path, dst: Path, keep_io: bool = True) -> tuple[int, str]:
    """Write ``src`` converted to float16 at ``dst`` (atomically); (bytes written, sha256)."""
    import onnx

    if sys.byteorder != "little":
        raise RuntimeError("raw_data is little-endian; this converter needs a little-endian machine")
    src, dst = Path(src), Path(dst)
    with open(src, "rb") as fh:
        layout = read_layout(fh)
        floats = {i.header.name for i in layout.initializers if i.header.data_type == onnx.TensorProto.FLOAT}
        keep = GraphConversion(layout.graph, floats, keep_io).run()
        graph = layout.graph.SerializeToString()
        plan: list[tuple[Initializer, bytes | None, int]] = []  # (source, new head, new length)
        for init in layout.initializers:
            if init.header.name in floats and init.header.name not in keep:
                head, n = _half_record(init.header)
                plan.append((init, head, len(head) + n))
            else:
                plan.append((init, None, init.record.end - init.record.value))
        graph_len = len(graph) + sum(len(field_key(GRAPH_INITIALIZER, n)) + n for _, _, n in plan)
        return _write(fh, dst, layout.head + field_key(MODEL_GRAPH, graph_len) + graph, plan)


def _write(fh: IO[bytes], dst: Path, start: bytes,
           plan: list[tuple[Initializer, bytes | None, int]]) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.part")
    try:
        with open(tmp, "wb") as out:
            def put(chunk: bytes | memoryview) -> None:
                nonlocal size
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)

            put(start)
            for init, head, length in plan:
                put(field_key(GRAPH_INITIALIZER, length))
                if head is None:  # written as it is, in slices
                    for pos in range(init.record.value, init.record.end, 1 << 24):
                        fh.seek(pos)
                        put(fh.read(min(1 << 24, init.record.end - pos)))
                else:
                    put(head)
                    put(_half_values(fh, init))
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return size, digest.hexdigest()
