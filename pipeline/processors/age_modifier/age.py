"""The age modifier's models and maths (docs/processors.md §5, and §0.4's match_frame_color).

- what each model is fed as its ``direction`` (the age estimate: FairFace, pipeline/faces/classify.py):
  fran takes ``clip([age, age + d] / 100, 0, 1)`` (the face's estimated age and the age wanted),
  styleganex_age the scalar ``−d / 40`` (``d`` = ``age_modifier.direction``, −100..100);
- styleganex_age's output takes the colours of the crop it was fed by ``match_frame_color``
  (pipeline/blend/frame_color.py);
- the two files as catalog sessions, their tensors fed by the catalog's names: :class:`Fran` (one face per
  run: its direction has no batch axis) and :class:`StyleGanExAge`
  (the faces of a batch in one run where its batch axis is, or can be made, dynamic).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.models.runner import ModelRunner, denormalise, input_dtype, normalise, parameter
from pipeline.types import Frame, Provider

FRAN_SIZE = 1024  # fran's crop, and the size styleganex_age's output is resized to
STYLEGANEX_CROP = 256  # styleganex_age's ``target`` (ffhq_512)
STYLEGANEX_EXTEND = 384  # its ``target_with_background`` (styleganex_384)
STYLEGANEX_ZOOM = 0.875  # the extend's landmarks scaled about the nose tip


def fran_direction(age: float, direction: int) -> npt.NDArray[np.float32]:
    """fran's ``direction``, shape (2,): [age, age + direction] / 100, clipped to [0, 1]."""
    return np.clip(np.array([age, age + direction], np.float64) / 100.0, 0.0, 1.0).astype(np.float32)


def styleganex_direction(direction: int) -> float:
    """styleganex_age's ``direction``: −100..100 mapped onto 2.5..−2.5 (= −direction / 40)."""
    return float(np.interp(direction, [-100.0, 100.0], [2.5, -2.5]))


class Fran(ModelRunner):
    """fran on ffhq_512 crops at 1024: each face with its own direction, so one face per run."""

    batched = False  # its direction (2,) has no batch axis: a dynamic batch would give every face the same

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, "age_modifier", providers, threads)

    def modify(self, crops: npt.NDArray[np.uint8],
               directions: Sequence[npt.NDArray[np.float32]]) -> list[Frame]:
        """(N, 1024, 1024, 3) BGR crops and N directions -> the aged crops (BGR uint8, 1024²)."""
        (target, direction), (output,) = self.io
        declared = {a.name: a for a in self.session.get_inputs()}
        results = []
        for crop, d in zip(crops, directions, strict=True):
            feeds = {target: normalise(crop[None], self.entry).astype(input_dtype(declared[target])),
                     direction: np.asarray(d, input_dtype(declared[direction]))}
            y = np.asarray(self.run_feeds(feeds, [output])[0], np.float32)
            aged = denormalise(y.reshape(1, 3, *y.shape[-2:]), self.entry)[0]  # ·std + mean, [0, 1], BGR
            if aged.shape[:2] != (FRAN_SIZE, FRAN_SIZE):
                aged = cv2.resize(aged, (FRAN_SIZE, FRAN_SIZE), interpolation=cv2.INTER_AREA)
            results.append(np.ascontiguousarray(aged))
        return results


class StyleGanExAge(ModelRunner):
    """styleganex_age on (256 crop, 384 extend) pairs, one direction for all: batched where it can be."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, "age_modifier", providers, threads)

    def modify(self, crops: npt.NDArray[np.uint8], extends: npt.NDArray[np.uint8],
               direction: float) -> list[Frame]:
        """(N, 256, 256, 3) and (N, 384, 384, 3) BGR -> the model's N images as it gives them (BGR uint8,
        its own size): clipped to [−1, 1], (x + 1) / 2 · 255, truncated, as FaceFusion does."""
        (target, background, scalar), (output,) = self.io
        declared = {a.name: a for a in self.session.get_inputs()}
        blobs = {target: normalise(np.asarray(crops), self.entry),
                 background: normalise(np.asarray(extends), self.entry)}
        fixed = parameter(declared[scalar], direction)  # as the file declares it: a scalar, or [1]
        step = self.batch or max(len(crops), 1)
        results: list[Frame] = []
        for start in range(0, len(crops), step):
            feeds = {name: blob[start:start + step].astype(input_dtype(declared[name]))
                     for name, blob in blobs.items()}
            y = np.asarray(self.run_feeds({**feeds, scalar: fixed}, [output])[0], np.float32)
            y = y.reshape(-1, 3, *y.shape[-2:])
            rgb = ((np.clip(y, -1.0, 1.0) + 1.0) / 2.0 * 255.0).astype(np.uint8).transpose(0, 2, 3, 1)
            results.extend(np.ascontiguousarray(image[..., ::-1]) for image in rgb)
        return results
