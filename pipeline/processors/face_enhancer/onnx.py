"""ONNX face restorers of the catalog: GFPGAN 1.4, CodeFormer, GPEN-BFR 256/512/1024, RestoreFormer++.

All take an RGB face aligned to the ffhq_512 template at the model's size, normalised to [−1, 1], and
return the same shape in [−1, 1]. CodeFormer also takes its fidelity weight ``w`` (a double, shaped as
the file declares it: [1] in the real file; 0 = strongest restoration, 1 = closest to the input).
RestoreFormer++ has several outputs: its image is read by name (the catalog's ``2359``). The batch axis
is made dynamic where the export allows (models.runner), so every face of every frame in a batch goes
through in one run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.runner import ModelRunner, denormalise, normalise
from pipeline.processors.face_enhancer.base import mix
from pipeline.types import Provider, Template

log = logging.getLogger(__name__)


class OnnxEnhancer:
    """enhance.base.Enhancer for every ONNX enhancer in the catalog."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0,
                 fidelity: float = 0.5) -> None:
        entry = catalog.get(name)
        if entry.role != "enhancer" or entry.template is None:
            valid = [e.name for e in catalog.by_role("enhancer")]
            raise UserError(f"'{name}' is not an enhancer (choose from: {', '.join(valid)})")
        if not 0.0 <= fidelity <= 1.0:
            raise UserError(f"face_enhancer.fidelity must be between 0 and 1, got {fidelity}")
        self.name = name
        self.entry = entry
        self.crop_size = entry.input_size
        self.template: Template = entry.template
        self.fidelity = float(fidelity)
        self.runner = ModelRunner(name, "enhancer", providers, threads)

    def enhance(self, crops: npt.NDArray[np.uint8], blend: int = 100) -> npt.NDArray[np.uint8]:
        crops = np.asarray(crops)
        size = self.crop_size
        if crops.ndim != 4 or crops.shape[1:] != (size, size, 3) or crops.dtype != np.uint8:
            raise ValueError(f"{self.name} takes (N,{size},{size},3) uint8 crops, "
                             f"got {crops.shape} {crops.dtype}")
        if len(crops) == 0 or blend == 0:
            return mix(crops, crops, blend)
        params = {str(spec.name): self.fidelity for spec in self.entry.inputs[1:]}  # CodeFormer's w
        raw = self.runner.run(normalise(crops, self.entry), params)[0]
        return mix(crops, denormalise(raw, self.entry), blend)
