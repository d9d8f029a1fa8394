"""``lip_syncer``: each chosen face's mouth moved to the clip's sound (``lip_syncer`` settings).

The sound is the target's own from the output's first frame (``video.start``), or the new voice given with
``--audio`` (:attr:`Media.audio`, which the output then carries); :meth:`prepare` turns it into one mel
window per output frame, once per clip (pipeline/audio/: decode, the optional voice extractor, the mel).
Each face is framed at ffhq_512 × 512; the model (pipeline/lipsync/) re-draws the lower face to its frame's
window, and that is composited into the face's result under the model's own mask (wav2lip: the lower face;
edtalk: the box), the rest of the result left as the processors before made it. Frames past the sound's end
(and, as in FaceFusion, those of its last 200 ms) and a still image hear silence; a notice says how many
frames come after the sound has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.audio import clip
from pipeline.audio.mel import Windows, empty
from pipeline.audio.voice import VoiceExtractor
from pipeline.blend import mask as masks
from pipeline.faces import align
from pipeline.lipsync import geometry
from pipeline.lipsync.base import CROP, TEMPLATE, LipSyncModel, Mouth
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Media
from pipeline.processors.crops import FaceMasks, Swapped, frame_items
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, ProcessorName
from pipeline.video.probe import probe

ESTIMATED = ("lip_syncer: no 68-point landmarks (landmarks.model=none): the mouth area is estimated from the "
             "five points; set landmarks.model=2dfan4 for the landmarks' own fit")
STILL_SILENT = "lip_syncer: a still image has no moment of the sound to follow: its mouth follows silence"


class LipSyncerProcessor(FaceProcessorBase):
    name: ClassVar[ProcessorName] = "lip_syncer"
    section: ClassVar[str] = "lip_syncer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "lipsync"

    @classmethod
    def models(cls, settings: Settings, swapper: str) -> tuple[str, ...]:
        s = settings.lip_syncer
        return (s.model,) + ((s.voice_extractor,) if s.voice_extractor != "none" else ())

    def __init__(self, settings: Settings, swapper: str, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.weight = settings.lip_syncer.weight
        self.syncer: LipSyncModel = families.build(models[0], settings, "lip_syncer")
        self.extractor: VoiceExtractor | None = (
            families.build(models[1], settings, "voice_extractor") if len(models) > 1 else None)
        self.box: Mask = masks.box_mask(CROP, settings.mask.blur, settings.mask.padding)
        self.windows: Windows | None = None
        self._notices: list[str] = []

    @property
    def crop_size(self) -> int:
        return CROP

    @property
    def notices(self) -> list[str]:
        return self._notices

    def sessions(self) -> list[CatalogSession]:
        return [s for s in (self.syncer, self.extractor) if isinstance(s, CatalogSession)]

    def prepare(self, media: Media) -> None:
        """The clip's mel windows: ``media.audio`` from its start, else the target's own sound from
        ``media.start``."""
        sound = media.audio or media.target
        if media.still or media.fps is None or sound is None:
            self.windows = None
            self._say(STILL_SILENT)
            return
        start = 0.0 if media.audio is not None else media.start
        self.windows = clip.windows(sound, media.fps, start, self.extractor)
        if media.target is not None:
            self._say_unheard(media, self.windows)

    def _say_unheard(self, media: Media, windows: Windows) -> None:
        assert media.target is not None
        video = self.settings.video
        frames = probe(media.target).frames_between(video.start, video.end)
        unheard = windows.frames_past_end(frames)
        if unheard:
            self._say(f"lip_syncer: the sound ends before the video: {unheard} of {frames} frames had no "
                      "audio (their mouths follow silence)")

    def _say(self, notice: str) -> None:
        if notice not in self._notices:
            self._notices.append(notice)

    def window(self, frame: int) -> np.ndarray:
        """The mel window output frame ``frame`` hears (the empty one past the sound's end, or on a still)."""
        return self.windows.window(frame) if self.windows is not None else empty()

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[Swapped]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int]) -> None:
        pairs = frame_items(frames, items, TEMPLATE, CROP, self.box)
        if not pairs:
            return
        numbers = [n for row, n in zip(items, at, strict=True) for _ in row]
        mouths = [Mouth(item.result, self._geometry(item), self.window(n))
                  for (_, item), n in zip(pairs, numbers, strict=True)]
        for (_, item), (drawn, mask) in zip(pairs, self.syncer.sync(mouths, self.weight), strict=True):
            item.result = composite(item.result, drawn, mask)
        if masks is not None:
            masks.apply([item for _, item in pairs])

    def _geometry(self, item: Swapped) -> geometry.Geometry:
        face = item.face
        assert face is not None
        if face.landmarks68 is not None:
            return geometry.from_68(align.transform_points(face.landmarks68, item.matrix))
        self._say(ESTIMATED)
        return geometry.from_5(align.transform_points(face.landmarks, item.matrix))


def composite(base: Frame, drawn: Frame, mask: Mask) -> Frame:
    """``drawn`` over ``base`` where ``mask`` is 1 (rounded back to uint8)."""
    m = np.asarray(mask, np.float32)[..., None]
    mixed = base.astype(np.float32) * (1.0 - m) + drawn.astype(np.float32) * m
    return np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
