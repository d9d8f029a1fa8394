"""wav2lip_96 / wav2lip_gan_96: the lower face re-drawn at 96 px to 200 ms of audio (docs/processors.md §2.6).

Each face's box (its 68 points', or the estimate) is stretched to 96 × 96 from the 512 crop; the model takes
that square twice, BGR /255, its lower half (rows 48..95) zeroed in the first copy ((N, 6, 96, 96)), and the
frame's audio window ×2·weight ((N, 1, 80, 16)); it returns the square re-drawn (BGR in [0, 1]), which goes
back on the crop under the lower-face mask. Faces of every frame of a batch go in one run (the batch-1
export is given a dynamic batch where that checks out, else it runs face by face).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.processors.lip_syncer import geometry
from pipeline.processors.lip_syncer.base import CROP, Mouth
from pipeline.processors.lip_syncer.mel import audio_tensor
from pipeline.types import Frame, Mask, Provider

SIZE = 96


def model_input(square: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """(96, 96, 3) BGR -> (6, 96, 96): [the square with its lower half zeroed, the square], /255."""
    masked = square.copy()
    masked[SIZE // 2:] = 0
    both = np.concatenate([masked, square], axis=2).astype(np.float32) / 255.0
    return np.ascontiguousarray(both.transpose(2, 0, 1))


def model_output(y: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """(3, 96, 96) BGR in [0, 1] -> (96, 96, 3) uint8."""
    return (np.clip(y.transpose(1, 2, 0), 0.0, 1.0) * 255.0).astype(np.uint8)


class Wav2Lip(CatalogSession):
    """lipsync.base.LipSyncModel for the wav2lip files."""

    batched = True

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        if catalog.get(name).family != "wav2lip":
            valid = [e.name for e in catalog.by_role("lip_syncer") if e.family == "wav2lip"]
            raise UserError(f"'{name}' is not a wav2lip model (choose from: {', '.join(valid)})")
        super().__init__(name, providers, threads)

    def sync(self, mouths: Sequence[Mouth], weight: float) -> list[tuple[Frame, Mask]]:
        if not mouths:
            return []
        cuts = [geometry.cut(m.crop, m.geometry.box, SIZE) for m in mouths]
        target = np.stack([model_input(square) for square, _ in cuts])
        source = np.concatenate([audio_tensor(m.window, 2.0 * weight) for m in mouths])
        drawn = self.run(source, target)
        out = []
        for mouth, (_, affine), y in zip(mouths, cuts, drawn, strict=True):
            back = geometry.uncut(model_output(y), affine, CROP)
            out.append((back, geometry.area_mask(mouth.geometry.hull, CROP)))
        return out

    def run(self, source: npt.NDArray[np.float32], target: npt.NDArray[np.float32]
            ) -> npt.NDArray[np.float32]:
        """(N, 1, 80, 16) audio and (N, 6, 96, 96) faces -> (N, 3, 96, 96), in runs of the file's batch."""
        (audio_name, face_name), (out_name,) = self.io
        step = self.batch or len(target)
        runs = [self.session.run([out_name], {audio_name: source[i:i + step],
                                              face_name: target[i:i + step]})[0]
                for i in range(0, len(target), step)]
        return np.concatenate(runs).astype(np.float32)
