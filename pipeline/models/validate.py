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
        name = f"{s.name or '*'}{'(optional)' if s.optional else ''}"
        return f"{name}[{','.join(dim(d) for d in s.shape)}]{'' if not s.dtype else ':' + s.dtype}"

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
    if expected.rank_open:
        return True
    if len(expected.shape) != len(actual.shape):
        return False
    return all(_dim_ok(e, a) for e, a in zip(expected.shape, actual.shape, strict=True))


def _bind(expected: Sequence[TensorSpec], actual: Sequence[TensorSpec], extra_ok: bool) -> list[str] | None:
    """The graph's names of ``expected``, in its order; None where they do not fit.

    A named spec is the graph tensor of that name wherever it stands; an unnamed one (a file whose names
    say nothing) is the graph tensor at its own position. ``extra_ok``: the graph may have more. An
    ``optional`` spec (always named) the graph lacks gets the name "".
    """
    required = [s for s in expected if not s.optional]
    if len(actual) < len(required) or (not extra_ok and len(actual) > len(expected)):
        return None
    by_name = {a.name: a for a in actual}
    names = []
    for i, spec in enumerate(expected):
        found = by_name.get(spec.name) if spec.name is not None else actual[i]
        if found is None and spec.optional:  # a named input this file lacks: "" in its place
            names.append("")
            continue
        if found is None or not _spec_ok(spec, found) or found.name in names:
            return None
        names.append(str(found.name))
    if not extra_ok and len([n for n in names if n]) != len(actual):
        return None
    return names


def bind_io(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
            path: Path | str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The graph's names of the entry's inputs and outputs, in the entry's order; ModelMismatch naming
    expected vs actual where the graph does not fit the entry.

    Inputs must match one for one. Outputs: the graph may have more than the catalog lists (e.g. a mask
    some exports add, or RestoreFormer++'s intermediate tensors); the catalog's are picked by name.
    """
    input_names = _bind(entry.inputs, inputs, extra_ok=False)
    output_names = _bind(entry.outputs, outputs, extra_ok=True)
    if input_names is None or output_names is None:
        raise ModelMismatch(
            f"{Path(path).name} does not look like {entry.name}: expected inputs {_fmt(entry.inputs)} -> "
            f"outputs {_fmt(entry.outputs)}; the file has inputs {_fmt(inputs)} -> outputs {_fmt(outputs)}"
        )
    return tuple(input_names), tuple(output_names)


def check_io(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             path: Path | str) -> None:
    """Raise ModelMismatch naming expected vs actual where the graph does not fit the entry (see bind_io)."""
    bind_io(entry, inputs, outputs, path)


def session_io(session: object) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The I/O of an onnxruntime session as TensorSpecs."""

    def conv(args: Sequence[object]) -> list[TensorSpec]:
        out = []
        for a in args:
            shape = tuple(d if isinstance(d, int) else None for d in a.shape)  # type: ignore[attr-defined]
            out.append(TensorSpec(a.name, shape, _ONNX_TYPES.get(a.type, a.type)))  # type: ignore[attr-defined]
        return out

    return conv(session.get_inputs()), conv(session.get_outputs())  # type: ignore[attr-defined]
