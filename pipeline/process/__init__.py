"""The face-swap work on frames: detect -> select -> swap (align, swap, paste masks) -> enhance -> blend
(colour, paste back), batched across frames.

- ``models.py``      FaceModels: every model one swap uses, built from the settings
- ``identities.py``  Identities: the source faces as swapper identities; the references that pick targets
- ``crops.py``       CropStages: the per-crop stages (swap + masks, enhance, colour/paste) and ``Swapped``
- ``processor.py``   FaceProcessor, which puts them together, and ``swap_image`` for a still
"""

from pipeline.process.crops import Swapped
from pipeline.process.processor import FaceProcessor, swap_image

__all__ = ["FaceProcessor", "Swapped", "swap_image"]
