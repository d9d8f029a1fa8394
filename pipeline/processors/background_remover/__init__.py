"""``background_remover``: each whole frame's background painted a colour, or made transparent (the frames'
alpha plane from it on).

- ``processor.py``  the processor (a frame processor that makes alpha)
- ``background.py`` the removers' input, masks, despill and fill (FaceFusion's 15 models)
- ``judge.py``      its ``models check`` judges
"""

from pipeline.processors.background_remover.processor import BackgroundRemoverProcessor

PROCESSOR = BackgroundRemoverProcessor

__all__ = ["PROCESSOR", "BackgroundRemoverProcessor"]
