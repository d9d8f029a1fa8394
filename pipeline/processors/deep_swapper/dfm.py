"""DeepFaceLive's DFM models (the deep swapper): a face swapped into one identity baked into the file.

A ``.dfm`` is a plain ONNX graph (docs/processors.md §8.2): input ``in_face:0`` NHWC float32 BGR in [0, 1]
at the model's resolution (read from the file: H = W), ``morph_value:0`` (1,) only in AMP models; outputs, in
order, the input face's mask, the swapped (celeb) face and the celeb's mask (NHW1 / NHW3, [0, 1]). Any other
input layout is refused at load with one line. The maths around the run (§8.3) are pure functions here:
:func:`presharpen` (the crop before the model) and :func:`output_mask` (the two masks, eroded and blurred).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.errors import ModelMismatch
from pipeline.models.sessions import CatalogSession
from pipeline.types import Frame, Mask, Provider, Template

SHARPEN_SIGMA = 2.0  # pre-sharpen: 1.75·crop − 0.75·GaussianBlur(crop, σ 2)
SHARPEN_GAIN = 1.75
MASK_ERODE = 2  # iterations of a 3×3 ellipse
MASK_SIGMA = 6.25


def presharpen(crop: Frame) -> npt.NDArray[np.float32]:
    """The crop sharpened (uint8, saturated) as the model takes it: BGR float32 in [0, 1], no channel flip."""
    blurred = cv2.GaussianBlur(crop, (0, 0), SHARPEN_SIGMA)
    sharp = cv2.addWeighted(crop, SHARPEN_GAIN, blurred, 1.0 - SHARPEN_GAIN, 0)
    return np.asarray(sharp, np.float32) / np.float32(255.0)


def output_mask(face_mask: np.ndarray, celeb_mask: np.ndarray) -> Mask:
    """min of the two masks (H×W, clipped to [0, 1]), eroded (3×3 ellipse, twice), blurred (σ 6.25)."""
    size = face_mask.shape[:2]
    m = np.clip(np.minimum(face_mask.reshape(size), celeb_mask.reshape(size)), 0.0, 1.0).astype(np.float32)
    m = cv2.erode(m, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)), iterations=MASK_ERODE)
    return np.asarray(cv2.GaussianBlur(m, (0, 0), MASK_SIGMA), np.float32)


class DfmModel(CatalogSession):
    """One DFM file (a catalog entry or ``custom/<stem>``): crops in, swapped faces and their masks out."""

    batched = True  # an export that fixes batch 1 is rewritten to a dynamic batch where that checks out
    template: Template = "dfl_whole_face"

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, providers, threads)
        self._size = self.entry.input_size or None

    @property
    def crop_size(self) -> int:
        """The model's resolution: the catalog's, else ``in_face:0``'s H = W read from the file."""
        if self._size is None:
            self._size = self._resolution()
        return self._size

    def _resolution(self) -> int:
        face = next(a for a in self.session.get_inputs() if a.name == self.io[0][0])
        h, w = face.shape[1], face.shape[2]
        if not (isinstance(h, int) and isinstance(w, int) and h == w and h > 0):
            raise ModelMismatch(f"{self.entry.file}: in_face:0 must give the model's resolution as H = W, "
                                f"the file has {list(face.shape)}")
        return h

    @property
    def amp(self) -> bool:
        """Whether the file takes a morph value (an AMP model)."""
        return bool(self.io[0][1])

    def swap(self, crops: npt.NDArray[np.uint8], morph: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N, S, S, 3) BGR crops -> (face masks (N, S, S), celeb faces (N, S, S, 3) BGR uint8, celeb masks
        (N, S, S)). ``morph`` (0..1) is fed only to an AMP model."""
        (face_in, morph_in), outputs = self.io
        faces, masks, celeb_masks = [], [], []
        step = self.batch or len(crops)
        for i in range(0, len(crops), step):
            feeds = {face_in: np.stack([presharpen(c) for c in crops[i:i + step]])}
            if morph_in:
                feeds[morph_in] = np.array([morph], np.float32)
            mask, face, celeb_mask = self.session.run(list(outputs), feeds)
            masks.append(mask)
            faces.append(face)
            celeb_masks.append(celeb_mask)
        face_arr = np.concatenate(faces)
        celeb = np.clip(face_arr * 255.0, 0, 255).astype(np.uint8)
        n, size = len(crops), self.crop_size
        return (np.concatenate(masks).reshape(n, size, size), celeb,
                np.concatenate(celeb_masks).reshape(n, size, size))
