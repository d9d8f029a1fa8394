"""``expression_restorer``: the target's own expression put back on the processed face (LivePortrait, whose
parts and maths are shared with the face editor in pipeline/liveportrait/).

- ``processor.py``  the processor (its original: the frame as decoded)
- ``restore.py``    the restorer's pipeline on a batch of crops
"""

from pipeline.processors.expression_restorer.processor import ExpressionRestorerProcessor

PROCESSOR = ExpressionRestorerProcessor

__all__ = ["PROCESSOR", "ExpressionRestorerProcessor"]
