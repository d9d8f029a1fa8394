"""``frame_colorizer``: each whole frame given colour.

- ``processor.py``  the processor (a frame processor)
- ``colorize.py``   DDColor and DeOldify: their input, output and the blend that keeps the frame's lightness
- ``judge.py``      its ``models check`` judge
"""

from pipeline.processors.frame_colorizer.processor import FrameColorizerProcessor

PROCESSOR = FrameColorizerProcessor

__all__ = ["PROCESSOR", "FrameColorizerProcessor"]
