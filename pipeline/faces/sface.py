"""SFace recogniser (built in, OpenCV Zoo, Apache-2.0): 112×112 aligned face -> 128-d identity.

The graph takes RGB 0..255 (it normalises inside) and was checked against cv2.FaceRecognizerSF,
which swaps BGR to RGB before the network. Cosine ≥ 0.363 between two embeddings means the same person.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.models.sessions import CatalogSession
from pipeline.types import Provider, Template

SAME_PERSON_COSINE = 0.363


def l2_normalise(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class SFaceRecogniser(CatalogSession):
    """The built-in SFace recogniser behind the faces.base.Recogniser protocol."""

    template: Template = "arcface_112_v2"
    size = 112

    def __init__(self, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__("sface", providers, threads)

    def embed(self, crops: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """(N, 112, 112, 3) BGR uint8 aligned crops -> (N, 128) L2-normalised embeddings."""
        crops = np.asarray(crops)
        if crops.ndim == 3:
            crops = crops[None]
        if crops.ndim != 4 or crops.shape[1:] != (self.size, self.size, 3):
            raise ValueError(f"sface takes (N, {self.size}, {self.size}, 3) crops, got {crops.shape}")
        if len(crops) == 0:
            return np.zeros((0, 128), dtype=np.float32)
        # BGR -> RGB, NCHW
        blob = np.ascontiguousarray(crops[..., ::-1].transpose(0, 3, 1, 2), dtype=np.float32)
        spec = self.session.get_inputs()[0]
        step = self.batch or len(blob)
        out = [self.session.run(None, {spec.name: blob[i:i + step]})[0] for i in range(0, len(blob), step)]
        return l2_normalise(np.concatenate(out, axis=0).reshape(len(blob), -1))
