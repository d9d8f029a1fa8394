"""The one binding rule (models.validate.bind, used by every CatalogSession): by name, else by structure for
another export of the same network, refused in one line where a tensor could be bound two ways."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.errors import ModelMismatch
from pipeline.models import catalog
from pipeline.models.catalog import TensorSpec
from pipeline.models.validate import bind


def _t(name: str | None, *shape: int | None, dtype: str | None = "float32") -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype)


def test_names_win_over_order() -> None:
    entry = catalog.get("simswap_256")  # target [1,3,256,256], source [1,512]
    found = bind(entry, [_t("source", 1, 512), _t("target", 1, 3, 256, 256)], [_t("out", 1, 3, 256, 256)],
                 "simswap_256.onnx")
    assert found.inputs == ("target", "source") and found.by_structure == ()
    assert found.describe() == "bound by name"


def test_rembgs_u2netp_export_binds_its_input_and_first_output() -> None:
    """rembg's u2netp: input.1 [1,3,320,320], seven side outputs 1959…1965 [1,1,320,320]; the matte first."""
    outputs = [_t(str(n), 1, 1, 320, 320) for n in range(1959, 1966)]
    found = bind(catalog.get("u2netp"), [_t("input.1", 1, 3, 320, 320)], outputs, "u2netp.onnx")
    assert found.inputs == ("input.1",) and found.outputs == ("1959",)
    assert found.by_structure == (("input", "input.1"),)
    assert found.describe() == "bound by structure: input.1 as input"


def test_a_swapper_export_with_other_names_binds_each_input_by_its_shape() -> None:
    entry = catalog.get("inswapper_128")
    found = bind(entry, [_t("emb", 1, 512), _t("img", 1, 3, 128, 128)], [_t("y", 1, 3, 128, 128)], "x.onnx")
    assert found.inputs == ("img", "emb") and found.outputs == ("y",)
    assert found.by_structure == (("target", "img"), ("source", "emb"), ("output", "y"))


def test_two_tensors_that_fit_one_name_are_refused_naming_both() -> None:
    entry = dataclasses.replace(catalog.get("inswapper_128"), inputs=(
        TensorSpec("target", (1, 3, 128, 128)), TensorSpec("reference", (1, 3, 128, 128))))
    with pytest.raises(ModelMismatch) as err:
        bind(entry, [_t("a", 1, 3, 128, 128), _t("b", 1, 3, 128, 128)], [_t("output", 1, 3, 128, 128)],
             "two.onnx")
    message = str(err.value)
    assert "\n" not in message and "two.onnx fits inswapper_128 two ways" in message
    assert "its target could be a or b" in message


def test_restoreformers_image_among_decoys_is_never_guessed() -> None:
    """RestoreFormer++'s image output is named 2359 because position lies: without the name, refused."""
    outputs = [_t(n, 1, 3, 512, 512, dtype=None) for n in ("1483", "2357", "9999")]
    with pytest.raises(ModelMismatch, match="its 2359 could be 1483 or 2357"):
        bind(catalog.get("restoreformer_plus_plus"), [_t("input", 1, 3, 512, 512)], outputs, "r.onnx")


def test_another_network_is_refused_with_both_signatures() -> None:
    with pytest.raises(ModelMismatch, match=r"not look like u2netp: expected inputs input\[1,3,320,320\]"):
        bind(catalog.get("u2netp"), [_t("input.1", 1, 3, 512, 512)], [_t("o", 1, 1, 512, 512)], "m.onnx")
