"""``deep_swapper``: each chosen face swapped by a DeepFaceLive DFM model (the identity is in the file).

- ``processor.py``  the processor
- ``dfm.py``        a DFM file's session, pre-sharpen and its output mask
- ``judge.py``      its ``models check`` judge
"""

from pipeline.processors.deep_swapper.processor import DeepSwapperProcessor

PROCESSOR = DeepSwapperProcessor

__all__ = ["PROCESSOR", "DeepSwapperProcessor"]
