"""Check an ONNX graph's inputs and outputs against a catalog entry."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import ModelMismatch
from pipeline.models.catalog import Dim, ModelEntry, TensorSpec

_ONNX_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "double",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(uint8)": "uint8",
}


def _fmt(specs: Sequence[TensorSpec]) -> str:
    def dim(d: Dim) -> str:
        return "?" if d is None or isinstance(d, str) else str(d)

    def one(s: TensorSpec) -> str:
        return f"{s.name or '*'}[{','.join(dim(d) for d in s.shape)}]{'' if not s.dtype else ':' + s.dtype}"

    return ", ".join(one(s) for s in specs)


def _dim_ok(expected: Dim, actual: Dim) -> bool:
    if expected is None or isinstance(expected, str):
        return True
    if actual is None or isinstance(actual, str):
        return True  # a dynamic axis accepts the fixed size we will feed
    return expected == actual


def _spec_ok(expected: TensorSpec, actual: TensorSpec) -> bool:
    if expected.name is not None and expected.name != actual.name:
        return False
    if expected.dtype is not None and actual.dtype is not None and expected.dtype != actual.dtype:
        return False
    if len(expected.shape) != len(actual.shape):
        return False
    return all(_dim_ok(e, a) for e, a in zip(expected.shape, actual.shape, strict=True))


def check_io(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             path: Path | str) -> None:
    """Raise ModelMismatch naming expected vs actual where the graph does not fit the entry.

    Inputs must match one for one. Outputs: the catalog's outputs must be the graph's first ones;
    extra trailing outputs (e.g. a mask some exports add) are allowed.
    """
    ok = len(inputs) == len(entry.inputs)
    ok = ok and all(_spec_ok(e, a) for e, a in zip(entry.inputs, inputs, strict=True))
    ok = ok and len(outputs) >= len(entry.outputs)
    ok = ok and all(_spec_ok(e, a) for e, a in zip(entry.outputs, outputs, strict=False))
    if not ok:
        raise ModelMismatch(
            f"{Path(path).name} does not look like {entry.name}: expected inputs {_fmt(entry.inputs)} -> "
            f"outputs {_fmt(entry.outputs)}; the file has inputs {_fmt(inputs)} -> outputs {_fmt(outputs)}"
        )


def session_io(session: object) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The I/O of an onnxruntime session as TensorSpecs."""

    def conv(args: Sequence[object]) -> list[TensorSpec]:
        out = []
        for a in args:
            shape = tuple(d if isinstance(d, int) else None for d in a.shape)  # type: ignore[attr-defined]
            out.append(TensorSpec(a.name, shape, _ONNX_TYPES.get(a.type, a.type)))  # type: ignore[attr-defined]
        return out

    return conv(session.get_inputs()), conv(session.get_outputs())  # type: ignore[attr-defined]
