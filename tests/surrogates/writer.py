"""Writing a surrogate: the builder of an entry's role, the ONNX file, where the store looks for it;
the installers of a set (a face-pasting swapper, every LivePortrait part, a DFM)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from pipeline.models import catalog, sessions
from pipeline.paths import models_dir
from tests.surrogates import age, detectors, faces, frames, liveportrait, sound, swappers
from tests.surrogates.graph import (
    IR_VERSION,
    OPSET,
    Graph,
    Signature,
)

BUILDERS = {**age.BUILDERS, **detectors.BUILDERS, **faces.BUILDERS, **frames.BUILDERS,
            **liveportrait.BUILDERS, **sound.BUILDERS, **swappers.BUILDERS}  # an entry's role -> its builder


def make_surrogate(name: str, path: Path, *, signature: Signature | None = None, **options: Any) -> Path:
    """Write a surrogate for catalog model ``name`` to ``path`` (options: see each family's builder).

    Its I/O is the catalog entry's, or ``signature`` (inputs, outputs) where given (a real file's facts)."""
    entry = catalog.get(name)
    if entry.builtin:
        raise ValueError(f"{name} is built in: use the real model")
    if signature is not None:
        entry = dataclasses.replace(entry, inputs=tuple(signature[0]), outputs=tuple(signature[1]))
    g = Graph()
    inputs, outputs = BUILDERS[entry.role](entry, g, **options)
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
    """Write the surrogate where the store looks for ``name`` (``directory / entry.file``); options as
    make_surrogate's."""
    entry = catalog.get(name)
    return make_surrogate(name, Path(directory or models_dir()) / entry.file, **options)


SURROGATE_NAMES = tuple(e.name for e in catalog.CATALOG.values() if not e.builtin)


def install_face_swapper(name: str, image: Any = None, **options: Any) -> Path:
    """A swapper surrogate that pastes one fixed face whatever the source: ``image``'s (default grace_hopper),
    aligned as the model's crops are, at the target's skin tone (a swap that changes the face's shape, which
    colour matching keeps)."""
    from pipeline.faces import align
    from pipeline.faces.yunet import YuNetDetector
    from tests import photos

    entry = catalog.get(name)
    picture = photos.grace_hopper() if image is None else image
    face = max(YuNetDetector().detect([picture])[0], key=lambda f: f.area)
    assert entry.template is not None and entry.input_size
    crop, _ = align.align(picture, face.landmarks, entry.template, entry.input_size)
    source = next(s for s in entry.inputs if len(s.shape) == 2)
    key = np.ones(int(source.shape[1] or 512))
    return install_surrogate(name, bank=[(key, crop[..., ::-1].transpose(2, 0, 1) / 255.0)], alpha=1.0,
                             **options)


def install_live_portrait(parts: Sequence[str] | None = None, generator: dict[str, Any] | None = None,
                          **motion: Any) -> None:
    """Every LivePortrait part's surrogate (``motion``: the motion extractor's options; ``generator``: the
    generator's)."""
    from pipeline.liveportrait.network import PARTS, model_name

    for part in parts or PARTS:
        options = motion if part == "motion_extractor" else (generator or {}) if part == "generator" else {}
        install_surrogate(model_name(part), **options)


def install_dfm(name: str, **options: Any) -> Path:
    """A DFM surrogate where the store looks for ``name`` (a catalog name or ``custom/<stem>``)."""
    return install_surrogate(name, **options)
