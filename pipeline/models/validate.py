"""Check an ONNX graph's inputs and outputs against a catalog entry, and bind them: the one rule.

A named spec is the graph tensor of that name wherever it stands; an unnamed one (a file whose names say
nothing) is the tensor at its own position. Where a file is another export of the same network (rembg's
u2netp names its input ``input.1`` where FaceFusion's says ``input``), a named spec the graph lacks is
bound by structure: the one graph tensor that fits its rank, fixed dims and dtype and that no other spec
claims by name. An unnamed spec whose position does not fit takes the first tensor that does (the first
output of the declared shape). Two ways to bind a named spec are refused, naming both candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Binding:
    """The graph's names of an entry's inputs and outputs, in the entry's order ("" for an optional input
    the file lacks), and which of them were bound by structure: (the catalog's name of the tensor, the
    file's name) for each."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    by_structure: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.inputs, self.outputs

    def describe(self) -> str:
        """How the file is bound, in words: "by name", or each tensor bound by structure."""
        if not self.by_structure:
            return "bound by name"
        return "bound by structure: " + ", ".join(f"{file} as {ours}" for ours, file in self.by_structure)


class _Ambiguous(Exception):
    def __init__(self, label: str, first: str, second: str) -> None:
        super().__init__(label)
        self.label, self.first, self.second = label, first, second


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


def fits(expected: TensorSpec, actual: TensorSpec) -> bool:
    """Whether graph tensor ``actual`` has the structure of ``expected``: dtype, rank, fixed dims."""
    if expected.dtype is not None and actual.dtype is not None and expected.dtype != actual.dtype:
        return False
    if expected.rank_open:
        return True
    if len(expected.shape) != len(actual.shape):
        return False
    return all(_dim_ok(e, a) for e, a in zip(expected.shape, actual.shape, strict=True))


def _label(spec: TensorSpec, i: int, kind: str) -> str:
    return spec.name if spec.name is not None else f"{kind} {i + 1}"


def _candidates(spec: TensorSpec, i: int, actual: Sequence[TensorSpec], claimed: set[str],
                taken: Sequence[str]) -> list[TensorSpec]:
    """The graph tensors spec ``i`` may be, best first ([] where none fits); ``claimed``: names other specs
    have by name, ``taken``: names bound already."""
    if spec.name is not None:
        named = [a for a in actual if a.name == spec.name]
        if named:
            return named if fits(spec, named[0]) else []
        if spec.optional:
            return []
        return [a for a in actual if a.name not in claimed and a.name not in taken and fits(spec, a)]
    if i < len(actual) and actual[i].name not in taken and fits(spec, actual[i]):
        return [actual[i]]
    return [a for a in actual if a.name not in claimed and a.name not in taken and fits(spec, a)]


def _bind(expected: Sequence[TensorSpec], actual: Sequence[TensorSpec], extra_ok: bool,
          kind: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    """The graph's names of ``expected`` and the ones bound by structure; None where they do not fit.

    ``extra_ok``: the graph may have more tensors. An ``optional`` spec the graph lacks gets "". Raises
    _Ambiguous where a named spec could be two graph tensors."""
    required = [s for s in expected if not s.optional]
    if len(actual) < len(required) or (not extra_ok and len(actual) > len(expected)):
        return None
    claimed = {s.name for s in expected if s.name is not None and any(a.name == s.name for a in actual)}
    names: list[str] = []
    structural: list[tuple[str, str]] = []
    for i, spec in enumerate(expected):
        options = _candidates(spec, i, actual, claimed, names)
        if not options and spec.optional:
            names.append("")
            continue
        if not options:
            return None
        label = _label(spec, i, kind)
        renamed = spec.name is not None and options[0].name != spec.name
        if renamed and len(options) > 1:
            raise _Ambiguous(label, str(options[0].name), str(options[1].name))
        if renamed or (spec.name is None and (i >= len(actual) or options[0] is not actual[i])):
            structural.append((label, str(options[0].name)))
        names.append(str(options[0].name))
    if not extra_ok and len([n for n in names if n]) != len(actual):
        return None
    return names, structural


def bind(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
         path: Path | str) -> Binding:
    """How the graph's tensors are the entry's: ModelMismatch naming expected vs actual where the graph
    does not fit the entry, or naming both candidates where a tensor could be bound two ways.

    Inputs must match one for one. Outputs: the graph may have more than the catalog lists (e.g. a mask
    some exports add, U²-Net's side outputs, or RestoreFormer++'s intermediate tensors)."""
    file = Path(path).name
    try:
        found_in = _bind(entry.inputs, inputs, extra_ok=False, kind="input")
        found_out = _bind(entry.outputs, outputs, extra_ok=True, kind="output")
    except _Ambiguous as exc:
        raise ModelMismatch(
            f"{file} fits {entry.name} two ways: its {exc.label} could be {exc.first} or {exc.second}; "
            f"refused (import {entry.name}'s own file: facestation models fetch {entry.name})") from None
    if found_in is None or found_out is None:
        raise ModelMismatch(
            f"{file} does not look like {entry.name}: expected inputs {_fmt(entry.inputs)} -> "
            f"outputs {_fmt(entry.outputs)}; the file has inputs {_fmt(inputs)} -> outputs {_fmt(outputs)}"
        )
    return Binding(tuple(found_in[0]), tuple(found_out[0]), tuple(found_in[1] + found_out[1]))


def bind_io(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
            path: Path | str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The graph's names of the entry's inputs and outputs, in the entry's order (see :func:`bind`)."""
    return bind(entry, inputs, outputs, path).names


def check_io(entry: ModelEntry, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             path: Path | str) -> None:
    """Raise ModelMismatch where the graph does not fit the entry (see :func:`bind`)."""
    bind(entry, inputs, outputs, path)


def onnx_dtype(type_name: str) -> str:
    """Our dtype name for onnxruntime's type name (``tensor(float)`` -> ``float32``)."""
    return _ONNX_TYPES.get(type_name, type_name)


def session_io(session: object) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The I/O of an onnxruntime session as TensorSpecs."""

    def conv(args: Sequence[object]) -> list[TensorSpec]:
        out = []
        for a in args:
            shape = tuple(d if isinstance(d, int) else None for d in a.shape)  # type: ignore[attr-defined]
            out.append(TensorSpec(a.name, shape, onnx_dtype(a.type)))  # type: ignore[attr-defined]
        return out

    return conv(session.get_inputs()), conv(session.get_outputs())  # type: ignore[attr-defined]
