"""``lip_syncer``: each chosen face's mouth moved to the clip's sound (``lip_syncer`` settings).

The sound is the target's own from the output's first frame (``video.start``), or the new voice given with
``--audio`` (:attr:`Media.audio`, which the output then carries); :meth:`prepare` turns it into one mel
window per output frame, once per clip (pipeline/audio/ decodes; this folder's voice.py extracts the
voice, mel.py makes the windows). Each face is framed at ffhq_512 × 512; the model (wav2lip.py, edtalk.py)
re-draws the face to its frame's window, and that is pasted once under the model's own mask (wav2lip: the
lower face's area mask, no box; edtalk: the box mask) and the occlusion mask where chosen: every pixel
outside it is as the processors before made it. Frames past the sound's end
(and, as in FaceFusion, those of its last 200 ms) and a still image hear silence; a notice says how many
frames come after the sound has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline import families
from pipeline.blend import mask as masks
from pipeline.faces import align
from pipeline.families import Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Media, Original
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items
from pipeline.processors.lip_syncer import clip, geometry
from pipeline.processors.lip_syncer.base import CROP, TEMPLATE, LipSyncModel, Mouth
from pipeline.processors.lip_syncer.edtalk import EdTalk
from pipeline.processors.lip_syncer.mel import Windows, empty
from pipeline.processors.lip_syncer.voice import VoiceExtractor
from pipeline.processors.lip_syncer.wav2lip import Wav2Lip
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, MaskType
from pipeline.video.probe import probe
from pipeline.video.trim import Trim

ESTIMATED = ("lip_syncer: no 68-point landmarks (landmarks.model=none): the mouth area is estimated from the "
             "five points; set landmarks.model=2dfan4 for the landmarks' own fit")
STILL_SILENT = "lip_syncer: a still image has no moment of the sound to follow: its mouth follows silence"



def _edtalk(name: str, s: Settings) -> EdTalk:
    return EdTalk(name, masks.box_mask(CROP, s.mask.blur, s.mask.padding), **run_options(s))


FAMILIES: dict[str, Family] = {
    "wav2lip": Family("lip_syncer", lambda name, s: Wav2Lip(name, **run_options(s))),
    "edtalk": Family("lip_syncer", _edtalk),
    "mdxnet": Family("voice_extractor", lambda name, s: VoiceExtractor(name, **run_options(s))),
}


class LipSyncerProcessor(FaceProcessorBase):
    name: ClassVar[str] = "lip_syncer"
    section: ClassVar[str] = "lip_syncer"
    title: ClassVar[str] = "Lip syncer"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "lipsync"
    pastes_under: ClassVar[frozenset[MaskType]] = frozenset({"occlusion"})
    needs_sound: ClassVar[bool] = True
    not_live: ClassVar[str] = "a camera has no sound track for the mouth to follow"
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        s = settings.lip_syncer
        return (s.model,) + ((s.voice_extractor,) if s.voice_extractor != "none" else ())

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.settings = settings
        self.weight = settings.lip_syncer.weight
        self.syncer: LipSyncModel = families.build(models[0], settings, "lip_syncer", FAMILIES)
        self.extractor: VoiceExtractor | None = (
            families.build(models[1], settings, "voice_extractor", FAMILIES) if len(models) > 1 else None)
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
        frames = self._frames(media)  # only the sound these frames hear is decoded, however long the voice
        self.windows = clip.windows(sound, media.fps, start, self.extractor, frames=frames)
        if media.target is not None:
            self._say_unheard(media, self.windows)

    def _frames(self, media: Media) -> int | None:
        """How many of the target's frames there are from ``media.start`` on (a preview may show any of
        them, a render those its trim keeps); None: not known (a live camera's)."""
        if media.target is None:
            return None
        info = probe(media.target)
        return max(1, info.frame_count - round(media.start * float(info.fps)))

    def _say_unheard(self, media: Media, windows: Windows) -> None:
        assert media.target is not None
        info = probe(media.target)
        frames = len(Trim.of(self.settings).frames(info.frame_count, info.fps))
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

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        pairs = frame_items(frames, items, TEMPLATE, CROP, self.box)
        if not pairs:
            return
        group = [item for _, item in pairs]
        fed = [item.result for item in group]
        numbers = [n for row, n in zip(items, at, strict=True) for _ in row]
        mouths = [Mouth(item.result, self._geometry(item), self.window(n))
                  for item, n in zip(group, numbers, strict=True)]
        for item, (drawn, mask) in zip(group, self.syncer.sync(mouths, self.weight), strict=True):
            item.result, item.mask = drawn_under(item.result, drawn, mask), np.asarray(mask, np.float32)
        if masks is not None:
            masks.apply(group, self.pastes_under, fed)

    def _geometry(self, item: FaceItem) -> geometry.Geometry:
        face = item.face
        assert face is not None
        if face.landmarks68 is not None:
            return geometry.from_68(align.transform_points(face.landmarks68, item.matrix))
        self._say(ESTIMATED)
        return geometry.from_5(align.transform_points(face.landmarks, item.matrix))


def drawn_under(fed: Frame, drawn: Frame, mask: Mask) -> Frame:
    """``drawn`` where ``mask`` reaches, ``fed`` elsewhere: what is pasted under ``mask`` (the same paste as
    ``drawn`` itself; the crop outside the mask shows what the model was fed, not its border's smear)."""
    return np.where(np.asarray(mask)[..., None] > 0, drawn, fed)
