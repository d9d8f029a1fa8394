"""``face_enhancer``: each chosen face restored by a face-restoration model.

- ``processor.py``  the processor: its own framing, the enhancer's run, its paste mask
- ``base.py``       the Protocol of the restorers, and the mix of a restored face with its input
- ``onnx.py``       the ONNX restorers of the catalog (GFPGAN, CodeFormer, GPEN-BFR, RestoreFormer++)
- ``judge.py``      its ``models check`` judge
"""

from pipeline.processors.face_enhancer.processor import FaceEnhancerProcessor

PROCESSOR = FaceEnhancerProcessor

__all__ = ["PROCESSOR", "FaceEnhancerProcessor"]
