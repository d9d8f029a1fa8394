"""``face_swapper``: the source identity onto each chosen face.

- ``processor.py``   the processor: a batch's faces swapped per identity, its paste mask, its colour step
- ``auto.py``        ``auto``: the first installed swapper, else the classic one
- ``swapper.py``     the Protocol every swapper family implements
- ``neural.py``      the ONNX swappers of the catalog (inswapper, hyperswap, simswap, ghost)
- ``classic.py``     the built-in swapper with no weights (a warped, colour-matched source face)
- ``pixel_boost.py`` a larger crop cut into the model's size and swapped together
- ``color.py``       colour transfer (``color.method``): the swap matched to the face it replaces
- ``judge.py``       its ``models check`` judge
"""

from pipeline.processors.face_swapper.processor import FaceSwapperProcessor

PROCESSOR = FaceSwapperProcessor

__all__ = ["PROCESSOR", "FaceSwapperProcessor"]
