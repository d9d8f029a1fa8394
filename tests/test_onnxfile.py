"""Reading one initializer straight off an ONNX file (the inswapper emap) without parsing the rest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from pipeline.models.onnxfile import last_initializer
from tests.surrogates import install_surrogate


def test_the_last_initializer_read_off_the_file_equals_onnx_load() -> None:
    path = install_surrogate("inswapper_128", emap="permutation")
    model = onnx.load(str(path))
    expected = numpy_helper.to_array(model.graph.initializer[-1])
    got = last_initializer(path)
    assert got.shape == (512, 512) and np.array_equal(got, expected)


def test_a_graph_without_initializers_is_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path / "empty.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(ValueError, match="no initializers"):
        last_initializer(path)
