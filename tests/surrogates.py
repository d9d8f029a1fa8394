"""Surrogate ONNX models with the exact I/O of the catalog, generated at test time.

No real swapper, detector or enhancer weights can be downloaded where the tests run, so each
non-builtin catalog entry gets a tiny graph built with ``onnx.helper`` whose inputs and outputs
match the entry (names, ranks, fixed dims, dtypes) and whose behaviour is simple but useful:

- swappers: ``out = target·(1−a) + a·colour(tanh(source @ W))`` per channel, so changing the source
  changes the output; inswapper also carries a 512×512 ``emap`` as its last initializer;
  ``identity=True`` returns the target unchanged; batch fixed to 1 as exported (``batch=None``
  for a dynamic axis; ``hardcode_batch=True`` adds a Reshape to a literal batch of 1);
- detectors (SCRFD family, YOLO face): emit exactly the ``faces`` given (input-pixel coordinates);
- recognisers: a fixed random projection of an 8×8 pooled, mean-centred image;
- enhancers: an unsharp mask in [−1, 1] (codeformer scales it by its double ``w``);
- occluders / parser / 2dfan4: fixed masks, class maps and landmarks chosen by options.

Nothing here is committed as a binary: tests call ``make_surrogate``/``install_surrogate``.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _swapper(entry: ModelEntry, g: _Graph, *, identity: bool = False, alpha: float = 0.5,
             dtype: str | None = None, batch: int | None = 1, hardcode_batch: bool = False,
             emap: Any = "random", seed: int = 0,
             ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    specs = {s.name: s for s in entry.inputs}
    target, source = specs["target"], specs["source"]
    b: int | str = "batch" if batch is None else batch
    t_dtype, s_dtype = _io_dtype(entry, target, dtype), _io_dtype(entry, source, dtype)
    out_spec = entry.outputs[0]
    out_name = out_spec.name or "output"
    o_dtype = _io_dtype(entry, out_spec, dtype)
    inputs = {"target": _vi("target", t_dtype, _dims(target, b)),
              "source": _vi("source", s_dtype, _dims(source, b))}
    outputs = [_vi(out_name, o_dtype, _dims(out_spec, b))]
    if identity:
        g.from_float(g.to_float("target", t_dtype), o_dtype, out_name)
    else:
        rng = np.random.default_rng(seed)
        latent = g.op("MatMul", g.to_float("source", s_dtype), g.const(rng.standard_normal((512, 3))))
        colour = g.op("Tanh", latent)
        if hardcode_batch:  # what some exports do: a Reshape to a literal batch of 1
            colour = g.op("Reshape", colour, g.const([1, 3, 1, 1], np.int64))
        else:
            colour = g.op("Unsqueeze", colour, g.const([2, 3], np.int64))
        # map tanh's [-1, 1] onto the model's normalised output range of [0, 1] pixels
        mean, std = np.array(entry.mean), np.array(entry.std)
        lo, hi = (0 - mean) / std, (1 - mean) / std
        colour = g.op("Add", g.op("Mul", colour, g.const(((hi - lo) / 2).reshape(1, 3, 1, 1))),
                      g.const(((hi + lo) / 2).reshape(1, 3, 1, 1)))
        kept = g.op("Mul", g.to_float("target", t_dtype), g.const(1.0 - alpha))
        mixed = g.op("Add", kept, g.op("Mul", colour, g.const(alpha)))
        g.from_float(mixed, o_dtype, out_name)
    if entry.name.startswith("inswapper"):  # the emap must be the LAST initializer
        e_dtype = np.float16 if t_dtype == "float16" else np.float32
        g.const(_emap(emap, seed), e_dtype, name="emap")
    return [inputs[s.name] for s in entry.inputs if s.name], outputs  # type: ignore[index]


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
           background: float = 0.02, duplicate: bool = True,
           ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Outputs computed at build time for a ``size``×``size`` input; faces in input pixels."""
    zero = g.zero_of("input.1", "float32")
    names = [f"{k}_{s}" for k in ("score", "bbox", "kps") for s in (8, 16, 32)]
    outputs = []
    for name, arr in zip(names, _scrfd_arrays(faces, size, background, duplicate), strict=True):
        g.op("Add", g.const(arr), zero, out=name)
        outputs.append(_vi(name, "float32", [f"anchors_{name}", arr.shape[1]]))
    return [_vi("input.1", "float32", [1, 3, "height", "width"])], outputs


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
    g.op("Add", g.const(out[None]), g.zero_of("images", "float32"), out="output0")
    return [_vi("images", "float32", [1, 3, 640, 640])], [_vi("output0", "float32", [1, 20, 8400])]


# --- recognisers, enhancers, masks, landmarks -----------------------------------------------------------

def _recogniser(entry: ModelEntry, g: _Graph, *, seed: int = 0, batch: int | None = None,
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    size = entry.input_size
    pooled = g.op("AveragePool", "input.1", kernel_shape=[size // 8] * 2, strides=[size // 8] * 2)
    flat = g.op("Flatten", pooled, axis=1)
    centred = g.op("Sub", flat, g.op("ReduceMean", flat, axes=[1], keepdims=1))
    weights = np.random.default_rng(1000 + seed).standard_normal((3 * 64, 512))
    g.op("MatMul", centred, g.const(weights), out="embedding")
    b: int | str = "N" if batch is None else batch
    return [_vi("input.1", "float32", [b, 3, size, size])], [_vi("embedding", "float32", [b, 512])]


def _enhancer(entry: ModelEntry, g: _Graph, *, sharpen: float = 0.5, dtype: str | None = None,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    image = entry.inputs[0]
    name = image.name or "input"
    i_dtype = _io_dtype(entry, image, dtype)
    o_dtype = _io_dtype(entry, entry.outputs[0], dtype)
    x = g.to_float(name, i_dtype)
    blur = g.op("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    gain = g.const(sharpen)
    inputs = [_vi(name, i_dtype, _dims(image))]
    if len(entry.inputs) > 1:  # codeformer's fidelity weight scales the effect
        gain = g.op("Mul", gain, g.op("Cast", entry.inputs[1].name or "w", to=TensorProto.FLOAT))
        inputs.append(_vi(entry.inputs[1].name or "w", "double", []))
    y = g.op("Add", x, g.op("Mul", g.op("Sub", x, blur), gain))
    y = g.op("Clip", y, g.const(-1.0), g.const(1.0))
    g.from_float(y, o_dtype, "output")
    return inputs, [_vi("output", o_dtype, _dims(entry.outputs[0]))]


def _ellipse(size: int, cx: float, cy: float, rx: float, ry: float) -> npt.NDArray[np.bool_]:
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    return np.asarray(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0)


def _occluder(entry: ModelEntry, g: _Graph, *, mask: npt.ArrayLike | None = None,
              ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """A fixed [0, 1] mask (1 = face visible); default a central ellipse."""
    s = entry.input_size
    m = _ellipse(s, s / 2, s * 0.55, s * 0.35, s * 0.42) if mask is None else np.asarray(mask, np.float32)
    quantised = np.round(np.clip(m, 0, 1) * 255).astype(np.uint8).reshape(1, s, s, 1)
    values = g.op("Mul", g.op("Cast", g.const(quantised, np.uint8), to=TensorProto.FLOAT), g.const(1 / 255))
    g.op("Add", values, g.zero_of("input", "float32"), out="output")
    return [_vi("input", "float32", [1, s, s, 3])], [_vi("output", "float32", [1, s, s, 1])]


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
    g.op("Add", logits, g.zero_of("input", "float32"), out="output")
    return [_vi("input", "float32", [1, 3, s, s])], [_vi("output", "float32", [1, 19, s, s])]


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
    ang = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    outer = np.stack([0.5 + 0.14 * np.cos(ang), 0.76 + 0.05 * np.sin(ang)], 1)
    ang = np.linspace(0, 2 * np.pi, 8, endpoint=False)
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
    zero = g.zero_of("input", "float32")
    g.op("Add", g.const(coords), zero, out="landmarks")
    g.op("Add", g.op("Cast", g.const(heat[None], np.float16), to=TensorProto.FLOAT), zero, out="heatmaps")
    return ([_vi("input", "float32", [1, 3, s, s])],
            [_vi("landmarks", "float32", [1, 68, 3]), _vi("heatmaps", "float32", [1, 68, 64, 64])])


def _builder(entry: ModelEntry) -> Any:
    if entry.role == "detector":
        return _yolo if entry.name == "yolo_face" else _scrfd
    return {"swapper": _swapper, "recogniser": _recogniser, "enhancer": _enhancer, "occluder": _occluder,
            "parser": _parser, "landmarker": _landmarker}[entry.role]


def make_surrogate(name: str, path: Path, **options: Any) -> Path:
    """Write a surrogate for catalog model ``name`` to ``path`` (options: see each family's builder)."""
    entry = catalog.get(name)
    if entry.builtin:
        raise ValueError(f"{name} is built in: use the real model")
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
    """Write the surrogate where the store looks for ``name`` (``directory / entry.file``)."""
    entry = catalog.get(name)
    return make_surrogate(name, Path(directory or models_dir()) / entry.file, **options)


SURROGATE_NAMES = tuple(e.name for e in catalog.CATALOG.values() if not e.builtin)
