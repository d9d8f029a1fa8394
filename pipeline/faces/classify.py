"""FairFace, the face classifier (FaceFusion's ``fairface``, catalog role ``classifier``): each face's race,
gender and age bucket from its arcface_112_v2 crop at 224. One loader for everyone who asks it: the face
selector's filters (``selector.gender``, ``selector.race``, ``selector.age_min``/``age_max``) and the age
modifier's age estimate (fran).

Its three outputs, in order: race (FairFace's seven classes, :data:`RACES`), gender (0 male, 1 female) and
age (nine buckets: 0–2, 3–9, 10–19 … 60–69, 70+), each as the id or as one score per class (the argmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

import numpy as np
import numpy.typing as npt

from pipeline.faces import align
from pipeline.models.runner import ModelRunner, normalise
from pipeline.types import Face, FaceGender, FaceRace, Frame, Provider

RACES: tuple[FaceRace, ...] = get_args(FaceRace)  # its race ids 0..6 (settings: selector.race)
GENDERS: tuple[FaceGender, ...] = get_args(FaceGender)  # its gender ids 0, 1
# FairFace's age ids 0..8: the years each bucket holds, and its mean as FaceFusion takes it (the mean of a
# Python range, which leaves out its end: range(70, 100) for 70+)
AGE_BUCKETS = ((0, 2), (3, 9), (10, 19), (20, 29), (30, 39), (40, 49), (50, 59), (60, 69), (70, 100))
AGE_BUCKET_MEANS = (0.5, 5.5, 14.0, 24.0, 34.0, 44.0, 54.0, 64.0, 84.5)


def bucket_age(age_id: int) -> float:
    """The age (years) of FairFace's age bucket ``age_id`` (an id past either end counts as that end's)."""
    return AGE_BUCKET_MEANS[min(max(int(age_id), 0), len(AGE_BUCKET_MEANS) - 1)]


@dataclass(frozen=True)
class Traits:
    """What FairFace says of one face: its race (a name of :data:`RACES`), gender, age (years: its bucket's
    mean) and the years its age bucket holds."""

    race: FaceRace
    gender: FaceGender
    age: float
    years: tuple[int, int]

    def passes(self, gender: str, race: str, age_min: int, age_max: int) -> bool:
        """Whether the face passes the face selector's filters (``any``: every gender or race; the age: its
        bucket overlaps ``age_min``..``age_max``)."""
        low, high = self.years
        return (gender in ("any", self.gender) and race in ("any", self.race)
                and low <= age_max and high >= age_min)


def _ids(output: npt.NDArray[np.generic], n: int) -> npt.NDArray[np.int64]:
    """One id per face from an output that gives ids (N,) or one score per class (N, C)."""
    values = np.asarray(output).reshape(n, -1)
    return (values.argmax(axis=1) if values.shape[1] > 1 else np.rint(values[:, 0])).astype(np.int64)


class FairFace(ModelRunner):
    """(N, 224, 224, 3) BGR arcface_112_v2 crops -> each face's race, gender and age."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, "classifier", providers, threads)

    def crops(self, frame: Frame, faces: Sequence[Face]) -> npt.NDArray[np.uint8]:
        """Each face of ``frame`` framed as the model takes it (its template, at its input size)."""
        entry = self.entry
        assert entry.template is not None
        side = entry.input_size or 224
        if not faces:
            return np.zeros((0, side, side, 3), np.uint8)
        return np.stack([align.align(frame, f.landmarks, entry.template, side)[0] for f in faces])

    def traits(self, crops: npt.NDArray[np.uint8]) -> list[Traits]:
        """What it says of each crop."""
        if len(crops) == 0:
            return []
        race, gender, age = self.run(normalise(np.asarray(crops), self.entry))[:3]
        n = len(crops)
        out = []
        for r, g, a in zip(_ids(race, n), _ids(gender, n), _ids(age, n), strict=True):
            bucket = min(max(int(a), 0), len(AGE_BUCKETS) - 1)
            out.append(Traits(RACES[min(max(int(r), 0), len(RACES) - 1)], GENDERS[min(max(int(g), 0), 1)],
                              AGE_BUCKET_MEANS[bucket], AGE_BUCKETS[bucket]))
        return out

    def ages(self, crops: npt.NDArray[np.uint8]) -> list[float]:
        """The age bucket's mean of each crop (the age modifier's estimate)."""
        return [t.age for t in self.traits(crops)]
