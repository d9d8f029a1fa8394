"""Neural swappers of the catalog: inswapper, HyperSwap, SimSwap, GHOST.

Each takes an aligned target crop and a source identity vector:
- inswapper: ``latent = mean ArcFace embedding @ emap`` (emap = the model's last graph initializer,
  512×512), divided by its L2 norm;
- HyperSwap: the L2-normalised ArcFace (w600k) embedding;
- SimSwap: its own recogniser's embedding, L2-normalised; GHOST: its backbone's raw (mean) output,
  not normalised (catalog ``source_embedding``).
Crops are normalised per the catalog entry (channel order, mean, std); outputs are de-normalised
with the entry's output mean/std (``ModelEntry.output_norm``: SimSwap 256 takes ImageNet-normalised
crops and returns [0, 1]) and clipped to [0, 1]. Target, source and output are bound by the catalog's
names (SimSwap 512's are ``input`` and ``onnx::Gemm_1``). Exports that fix batch = 1
are rewritten to a dynamic batch where that checks out (models.batching); otherwise crops run one
at a time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.errors import ModelMismatch, NoFaceFound, UserError
from pipeline.faces.arcface import OnnxRecogniser, l2_normalise
from pipeline.models import catalog, store
from pipeline.models.runner import ModelRunner, denormalise, input_dtype, normalise
from pipeline.types import Face, Frame, Provider, Template

log = logging.getLogger(__name__)

@dataclass(frozen=True, eq=False)
class SourceIdentity:
    """What prepare_source builds: the vector fed to the model and the averaged embedding it came from."""

    swapper: str
    latent: npt.NDArray[np.float32]  # (D,) what the model's source input receives
    embedding: npt.NDArray[np.float32]  # (D,) L2-normalised mean recogniser embedding
    count: int  # how many source faces were averaged


@functools.lru_cache(maxsize=4)
def _read_emap(path: str, size: int, mtime_ns: int) -> npt.NDArray[np.float32]:
    from pipeline.models.onnxfile import last_initializer

    try:  # read off the file: parsing the whole 554 MB protobuf would hold it twice more in memory
        emap = last_initializer(path).astype(np.float32)
    except ValueError as exc:
        raise ModelMismatch(f"{Path(path).name}: {exc}: no inswapper emap to read") from None
    if emap.shape != (512, 512):
        raise ModelMismatch(f"{Path(path).name}: the last initializer is {emap.shape}, "
                            "expected the 512×512 emap")
    return emap


def read_emap(path: Path) -> npt.NDArray[np.float32]:
    """The inswapper emap (last graph initializer), read once per file."""
    stat = Path(path).stat()
    return _read_emap(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


class NeuralSwapper(ModelRunner):
    """swap.base.Swapper for every ONNX swapper in the catalog (lazy, batch-aware session: ModelRunner)."""

    builtin = False

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, "swapper", providers, threads)
        if self.entry.template is None or self.entry.recogniser is None:
            valid = [e.name for e in catalog.by_role("swapper")]
            raise UserError(f"'{name}' is not a neural swapper (choose from: {', '.join(valid)})")
        if self.entry.family not in self.families:
            raise UserError(f"'{name}' ({self.entry.family}) is not run by {type(self).__name__}: build it "
                            "with the face swapper's families")
        self.crop_size = self.entry.input_size
        self.template: Template = self.entry.template
        self.recogniser = OnnxRecogniser(self.entry.recogniser, providers, threads)

    uses_emap = False  # InswapperSwapper: the latent is the embedding through the model's own emap
    families: tuple[str, ...] = ("hyperswap", "simswap", "ghost")  # the catalog families this class runs

    def prepare_source(self, sources: Sequence[tuple[Frame, Face]]) -> SourceIdentity:
        """Average the embeddings of the source faces into the vector this model takes."""
        if not sources:
            raise NoFaceFound("no source face to swap in: give at least one source image with a face")
        self.session  # noqa: B018 - load and validate the swapper itself first: its problems are the ones to report
        if self.entry.source_embedding == "raw":
            latent = self.recogniser.raw_embeddings(sources).mean(axis=0).astype(np.float32)
            embedding = l2_normalise(latent)
        else:
            embedding = l2_normalise(self.recogniser.embed_faces(sources).mean(axis=0))
            latent = embedding
        if self.uses_emap:
            latent = l2_normalise(embedding @ read_emap(store.model_path(self.entry)))
        return SourceIdentity(self.name, latent, embedding, len(sources))

    def _inputs(self) -> tuple[Any, Any]:
        """The graph's target (the catalog's image input) and source (its vector input), bound by name."""
        declared = {a.name: a for a in self.session.get_inputs()}
        named = dict(zip((len(s.shape) for s in self.entry.inputs), self.io[0], strict=True))
        return declared[named[4]], declared[named[2]]

    def swap(self, crops: npt.NDArray[np.uint8], identity: object) -> npt.NDArray[np.uint8]:
        """(N, S, S, 3) BGR uint8 aligned target crops -> swapped crops, same shape."""
        if not isinstance(identity, SourceIdentity) or identity.swapper != self.name:
            raise TypeError(f"{self.name}.swap needs the identity made by its own prepare_source")
        crops = np.asarray(crops)
        size = self.crop_size
        if crops.ndim != 4 or crops.shape[1:] != (size, size, 3) or crops.dtype != np.uint8:
            raise ValueError(f"{self.name} takes (N,{size},{size},3) uint8 crops, "
                             f"got {crops.shape} {crops.dtype}")
        if len(crops) == 0:
            return crops.copy()
        target, source = self._inputs()
        image_out = self.io[1][:1]
        blob = normalise(crops, self.entry).astype(input_dtype(target))
        latent = identity.latent.astype(input_dtype(source))[None]
        step = self.batch or len(blob)
        out = []
        for start in range(0, len(blob), step):
            chunk = blob[start:start + step]
            feeds = {target.name: chunk, source.name: np.repeat(latent, len(chunk), axis=0)}
            out.append(np.asarray(self.run_feeds(feeds, image_out)[0], dtype=np.float32))  # IO-bound on a GPU
        return denormalise(np.concatenate(out), self.entry)


class InswapperSwapper(NeuralSwapper):
    """inswapper_128 (and its fp16 file): takes ``embedding @ emap``, renormalised (docs/models.md §5)."""

    uses_emap = True
    families = ("inswapper",)
