"""edtalk_256: the face re-made at 256 px around a mouth that follows the audio (docs/processors.md §2.6).

The 512 crop is shrunk to 256 (area), RGB /255 ((N, 3, 256, 256)); the model takes it with the frame's
audio window ((N, 1, 80, 16), not scaled) and ``lip_syncer.weight`` as its own input ((1,)); its RGB output
in [0, 1] is enlarged back to 512 (cubic) and replaces the crop under the box mask.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.processors.lip_syncer.base import CROP, Mouth
from pipeline.processors.lip_syncer.mel import audio_tensor
from pipeline.types import Frame, Mask, Provider

SIZE = 256


class EdTalk(CatalogSession):
    """lipsync.base.LipSyncModel for edtalk_256; ``box``: the paste mask on the 512 crop."""

    def __init__(self, name: str, box: Mask, providers: Sequence[Provider] = ("cpu",),
                 threads: int = 0) -> None:
        if catalog.get(name).family != "edtalk":
            raise UserError(f"'{name}' is not an edtalk model (choose from: edtalk_256)")
        super().__init__(name, providers, threads)
        self.box = box

    def sync(self, mouths: Sequence[Mouth], weight: float) -> list[tuple[Frame, Mask]]:
        (audio_name, face_name, weight_name), (out_name,) = self.io
        out = []
        for mouth in mouths:  # the file's batch is 1 and its weight input is not per face
            small = cv2.resize(mouth.crop, (SIZE, SIZE), interpolation=cv2.INTER_AREA)
            face = (small[..., ::-1].astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
            feeds = {audio_name: audio_tensor(mouth.window), face_name: np.ascontiguousarray(face),
                     weight_name: np.array([weight], np.float32)}
            y: npt.NDArray[np.float32] = self.session.run([out_name], feeds)[0][0]
            rgb = (np.clip(y.transpose(1, 2, 0), 0.0, 1.0) * 255.0).astype(np.uint8)
            bgr = np.ascontiguousarray(rgb[..., ::-1])
            big = np.asarray(cv2.resize(bgr, (CROP, CROP), interpolation=cv2.INTER_CUBIC), np.uint8)
            out.append((big, self.box))
        return out
