"""``face_editor``: FaceFusion's fourteen expression and head-pose sliders (LivePortrait, whose parts and
maths are shared with the expression restorer in pipeline/liveportrait/).

- ``processor.py``  the processor
- ``edit.py``       the editor's pipeline on a batch of crops
"""

from pipeline.processors.face_editor.processor import FaceEditorProcessor

PROCESSOR = FaceEditorProcessor

__all__ = ["PROCESSOR", "FaceEditorProcessor"]
