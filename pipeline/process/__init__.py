"""The face-swap work on frames: detect -> select -> the processors of ``processors.order`` -> blend, batched
across frames.

- ``models.py``      FaceModels: the models the processors share (detector, landmarker, recogniser, masks)
- ``identities.py``  Identities: the source faces as swapper identities; the references that pick targets
- ``processor.py``   FaceProcessor: them and the processors together (the chain, pipeline/chain.py, runs it)
"""

from pipeline.process.processor import FaceProcessor
from pipeline.processors.crops import FaceItem

__all__ = ["FaceProcessor", "FaceItem"]
