"""NeuralSwapper and OnnxRecogniser on surrogate models installed in the per-test models folder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline import families, processors
from pipeline.errors import ModelMismatch, NoFaceFound, UserError
from pipeline.faces.arcface import OnnxRecogniser
from pipeline.models import catalog, store
from pipeline.processors.face_swapper.neural import NeuralSwapper, SourceIdentity, read_emap
from pipeline.settings import Settings
from tests.surrogates import install_surrogate
from tests.synthetic import random_crops as _crops
from tests.synthetic import textured_face as _source

SWAPPERS = [e.name for e in catalog.by_role("swapper")]




def _install(name: str, **options: Any) -> NeuralSwapper:
    install_surrogate(name, **options)
    install_surrogate(catalog.get(name).recogniser or "")
    return families.build(name, Settings(), "swapper", processors.families())  # type: ignore[no-any-return]


class _Recorder:
    """Wraps a session and keeps what each run was fed."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.feeds: list[dict[str, np.ndarray]] = []

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def get_providers(self) -> Any:
        return self.session.get_providers()

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.feeds.append(feeds)
        return self.session.run(names, feeds)


@pytest.mark.parametrize("name", SWAPPERS)
def test_identity_surrogate_round_trips_the_crop(name: str) -> None:
    swapper = _install(name, identity=True)
    entry = catalog.get(name)
    assert (swapper.crop_size, swapper.template, swapper.builtin) == (entry.input_size, entry.template, False)
    crops = _crops(2, swapper.crop_size)
    out = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    assert out.shape == crops.shape and out.dtype == np.uint8
    tolerance = 1 if "fp16" not in name else 2  # normalise -> de-normalise is exact up to rounding
    assert np.abs(out.astype(int) - crops.astype(int)).max() <= tolerance


@pytest.mark.parametrize("name", ["inswapper_128", "hyperswap_1a_256", "simswap_256", "ghost_2_256"])
def test_changing_the_source_changes_the_output(name: str) -> None:
    swapper = _install(name)
    crops = _crops(3, swapper.crop_size)
    a = swapper.swap(crops, swapper.prepare_source([_source(1)]))
    b = swapper.swap(crops, swapper.prepare_source([_source(2)]))
    assert np.abs(a.astype(int) - b.astype(int)).mean() > 2.0
    assert np.corrcoef(a[0].ravel(), crops[0].ravel())[0, 1] > 0.5  # the target is still underneath


def test_inswapper_latent_is_normalised_embedding_times_emap_and_reaches_the_model() -> None:
    swapper = _install("inswapper_128", emap="permutation")
    identity = swapper.prepare_source([_source(1), _source(2)])
    emap = read_emap(store.model_path(swapper.entry))
    embeddings = swapper.recogniser.embed_faces([_source(1), _source(2)])
    mean = embeddings.mean(axis=0)
    expected = (mean / np.linalg.norm(mean)) @ emap
    np.testing.assert_allclose(identity.latent, expected / np.linalg.norm(expected), atol=1e-6)
    assert identity.count == 2 and not np.allclose(identity.latent, identity.embedding)
    recorder = _Recorder(swapper.session)
    swapper._session = recorder
    swapper.swap(_crops(4, 128), identity)
    fed = np.concatenate([f["source"] for f in recorder.feeds])
    np.testing.assert_allclose(fed, np.repeat(identity.latent[None], 4, axis=0))


def test_identity_versus_permutation_emap_gives_different_swaps(isolated_dirs: dict[str, Any]) -> None:
    crops = _crops(2, 128)
    plain = _install("inswapper_128", emap="identity")
    with_identity = plain.swap(crops, plain.prepare_source([_source(1)]))
    np.testing.assert_allclose(plain.prepare_source([_source(1)]).latent,
                               plain.prepare_source([_source(1)]).embedding, atol=1e-6)
    permuted = _install("inswapper_128", emap="permutation")
    with_permutation = permuted.swap(crops, permuted.prepare_source([_source(1)]))
    assert np.abs(with_identity.astype(int) - with_permutation.astype(int)).mean() > 2.0


def test_hyperswap_takes_the_normalised_embedding_in_its_own_input_order() -> None:
    swapper = _install("hyperswap_1b_256")
    assert [a.name for a in swapper.session.get_inputs()] == ["source", "target"]
    identity = swapper.prepare_source([_source(3)])
    np.testing.assert_allclose(identity.latent, identity.embedding)
    assert np.linalg.norm(identity.latent) == pytest.approx(1.0, abs=1e-5)


def test_batched_swap_equals_one_crop_at_a_time() -> None:
    swapper = _install("inswapper_128")
    assert swapper.batch is None  # the fixed batch-1 export was rewritten
    identity = swapper.prepare_source([_source(1)])
    crops = _crops(8, 128)
    together = swapper.swap(crops, identity)
    recorder = _Recorder(swapper.session)
    swapper._session = recorder
    one_by_one = np.concatenate([swapper.swap(c[None], identity) for c in crops])
    assert np.abs(together.astype(int) - one_by_one.astype(int)).max() <= 1
    assert [f["target"].shape[0] for f in recorder.feeds] == [1] * 8


def test_a_hard_coded_batch_falls_back_to_one_crop_per_run() -> None:
    swapper = _install("ghost_1_256", hardcode_batch=True)
    assert swapper.batch == 1
    recorder = _Recorder(swapper.session)
    swapper._session = recorder
    out = swapper.swap(_crops(3, 256), swapper.prepare_source([_source(1)]))
    assert out.shape == (3, 256, 256, 3)
    assert [f["target"].shape[0] for f in recorder.feeds] == [1, 1, 1]


def test_source_averaging_and_errors() -> None:
    swapper = _install("simswap_512_unoff")
    one, two = swapper.prepare_source([_source(1)]), swapper.prepare_source([_source(2)])
    both = swapper.prepare_source([_source(1), _source(2)])
    mean = one.embedding + two.embedding
    np.testing.assert_allclose(both.embedding, mean / np.linalg.norm(mean), atol=1e-6)
    with pytest.raises(NoFaceFound):
        swapper.prepare_source([])
    with pytest.raises(TypeError):
        swapper.swap(_crops(1, 512), SourceIdentity("inswapper_128", one.latent, one.embedding, 1))
    with pytest.raises(ValueError, match="512"):
        swapper.swap(_crops(1, 256), one)
    with pytest.raises(UserError, match="inswapper_128"):
        NeuralSwapper("gfpgan_1.4")


def test_an_inswapper_without_a_512_emap_is_refused() -> None:
    swapper = _install("hyperswap_1a_256")  # its last initializer is no emap
    with pytest.raises(ModelMismatch, match="512×512 emap"):
        read_emap(store.model_path(swapper.entry))


def test_recogniser_embeds_batches_normalised_and_deterministic() -> None:
    install_surrogate("arcface_ghost")
    recogniser = OnnxRecogniser("arcface_ghost")
    assert (recogniser.template, recogniser.size) == ("arcface_112_v1", 112)
    crops = _crops(4, 112)
    out = recogniser.embed(crops)
    assert out.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(recogniser.embed(crops[2:3])[0], out[2], atol=1e-5)
    assert float(out[0] @ out[1]) < 0.9
    with pytest.raises(UserError, match="arcface_w600k_r50"):
        OnnxRecogniser("sface")


def test_io_binding_gives_the_same_swap_through_the_same_api_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU path binds inputs and outputs on the device; on CPU the same IOBinding calls run on "cpu"."""
    swapper = _install("inswapper_128")
    identity = swapper.prepare_source([_source(1)])
    crops = _crops(3, 128)
    plain = swapper.swap(crops, identity)
    assert swapper.device == "cpu" and swapper.io_binding is None  # off by default on a CPU
    calls: list[str] = []
    real = type(swapper.session).run_with_iobinding
    monkeypatch.setattr(type(swapper.session), "run_with_iobinding",
                        lambda self, binding, *a: calls.append("bound") or real(self, binding, *a))
    swapper.io_binding = True
    bound = swapper.swap(crops, identity)
    assert calls == ["bound"]  # one bound run for the batch of three
    assert np.array_equal(plain, bound)
