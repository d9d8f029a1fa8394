"""The processors and their registry: a name of ``processors.order`` -> the class that does it.

- ``base.py``           the contract every processor declares (name, settings section, where it works,
                        whether it batches, its cost class, the models it needs) and how a face processor runs
- ``face_swapper.py``   face_swapper: the source identity onto each chosen face
- ``face_enhancer.py``  face_enhancer: each chosen face restored by a face-restoration model
- ``frame_colorizer.py`` frame_colorizer: each whole frame given colour (DDColor, DeOldify)
- ``frame_enhancer.py`` frame_enhancer: whole frames upscaled, tile by tile (a frame processor: ``scale`` ×)
- ``expression_restorer.py``  expression_restorer: the target's expression back on the processed face
                        (LivePortrait)
- ``face_editor.py``    face_editor: FaceFusion's fourteen expression and head-pose sliders (LivePortrait)
- ``lip_syncer.py``     lip_syncer: each chosen face's mouth moved to the clip's sound (or a new voice)
- ``deep_swapper.py``   deep_swapper: each chosen face swapped by a DeepFaceLive DFM model
- ``age_modifier.py``   age_modifier: each face made younger or older (fran, styleganex_age)
- ``background_remover.py`` background_remover: each whole frame's background painted a colour or made
                        transparent (the frames' alpha plane from it on)
"""

from __future__ import annotations

from pipeline.processors.age_modifier import AgeModifierProcessor
from pipeline.processors.background_remover import BackgroundRemoverProcessor
from pipeline.processors.base import STILL, FaceProcessorBase, FrameProcessorBase, Media, Processor
from pipeline.processors.deep_swapper import DeepSwapperProcessor
from pipeline.processors.expression_restorer import ExpressionRestorerProcessor
from pipeline.processors.face_editor import FaceEditorProcessor
from pipeline.processors.face_enhancer import FaceEnhancerProcessor
from pipeline.processors.face_swapper import FaceSwapperProcessor
from pipeline.processors.frame_colorizer import FrameColorizerProcessor
from pipeline.processors.frame_enhancer import FrameEnhancerProcessor
from pipeline.processors.lip_syncer import LipSyncerProcessor
from pipeline.types import ProcessorName

PROCESSORS: dict[ProcessorName, type[Processor]] = {
    cls.name: cls for cls in (FaceSwapperProcessor, FaceEnhancerProcessor, FrameColorizerProcessor,
                              FrameEnhancerProcessor, ExpressionRestorerProcessor, FaceEditorProcessor,
                              LipSyncerProcessor, DeepSwapperProcessor, AgeModifierProcessor,
                              BackgroundRemoverProcessor)
}

__all__ = ["PROCESSORS", "STILL", "AgeModifierProcessor", "BackgroundRemoverProcessor",
           "DeepSwapperProcessor", "ExpressionRestorerProcessor", "FaceEditorProcessor",
           "FaceEnhancerProcessor", "FaceProcessorBase", "FaceSwapperProcessor", "FrameColorizerProcessor",
           "FrameEnhancerProcessor", "FrameProcessorBase", "LipSyncerProcessor", "Media", "Processor"]
