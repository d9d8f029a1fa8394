"""``frame_sharpener``: each whole frame sharpened (an unsharp mask; no model).

- ``processor.py``  the processor: its facts and the sharpening (``frame_sharpener`` settings)
"""

from pipeline.processors.frame_sharpener.processor import FrameSharpenerProcessor

PROCESSOR = FrameSharpenerProcessor

__all__ = ["PROCESSOR", "FrameSharpenerProcessor"]
