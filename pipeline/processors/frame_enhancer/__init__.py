"""``frame_enhancer``: whole frames upscaled (a frame processor whose frames come out ``scale`` × larger).

- ``processor.py``  the processor
- ``upscaler.py``   the upscalers of the catalog: tiles of a batch's frames in bounded groups per model run
- ``tiles.py``      FaceFusion's tiling of a frame: pad, cut, place
- ``judge.py``      its ``models check`` judge
"""

from pipeline.processors.frame_enhancer.processor import FrameEnhancerProcessor

PROCESSOR = FrameEnhancerProcessor

__all__ = ["PROCESSOR", "FrameEnhancerProcessor"]
