"""The identity judge: each swapped face, re-aligned on the output frame, against the source, by the built-in
SFace recogniser (which no swapper is conditioned on), and the same face before the swap (the gain is what
the swap did)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.faces.base import Recogniser
from pipeline.faces.recognise import aligned_crops
from pipeline.faces.sface import l2_normalise
from pipeline.types import Face, Frame

Crops = npt.NDArray[np.uint8]


class IdentityJudge:
    """SFace against each identity put in (``groups``: the source faces of each, averaged)."""

    def __init__(self, recogniser: Recogniser, groups: Sequence[Sequence[tuple[Frame, Face]]]) -> None:
        self.recogniser = recogniser
        self.sources = np.stack([_mean(recogniser, group) for group in groups]) if groups else None

    def crops(self, frame: Frame, faces: Sequence[Face]) -> Crops:
        """``faces`` of ``frame`` aligned as the judge sees them."""
        return aligned_crops(self.recogniser, frame, faces)

    def scores(self, crops: Crops, who: Sequence[int]) -> list[float]:
        """The cosine of each crop to the identity ``who`` names (one index per crop)."""
        if self.sources is None or len(crops) == 0:
            return []
        embedded = np.asarray(self.recogniser.embed(crops), dtype=np.float64)
        return [round(float(e @ self.sources[i]), 4) for e, i in zip(embedded, who, strict=True)]


def _mean(recogniser: Recogniser, group: Sequence[tuple[Frame, Face]]) -> npt.NDArray[np.float32]:
    embedded = [recogniser.embed(aligned_crops(recogniser, frame, [face]))[0] for frame, face in group]
    return l2_normalise(np.mean(embedded, axis=0))
