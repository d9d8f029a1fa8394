"""``face_editor``: FaceFusion's fourteen sliders on each face (LivePortrait; ``face_editor`` settings).

The face is framed zoomed out (landmarks scaled 1.5 about the nose tip, ffhq_512 at 512: docs/processors.md
§4), its expression and head angles edited, its eyes and lips retargeted, the keypoints stitched and the crop
re-rendered, then pasted under the box mask only (padding 0; no other mask type: a moved head is not cut by
masks of the pose it had), as FaceFusion's editor. Unlike FaceFusion, which re-renders every face even with
every slider at 0 (so the output is never the input), all sliders at 0 leave the processor out and the face
untouched.

The eye and lip sliders need each face's 68 landmarks (``landmarks.model``); a face without them keeps its
eyes and lips as they are (a notice says so when no landmark model is set).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from pipeline.blend import mask as masks
from pipeline.liveportrait.network import OUTPUT_SIZE, PARTS, model_name
from pipeline.models.sessions import CatalogSession
from pipeline.processors.base import Cost, FaceProcessorBase, Identities, Original
from pipeline.processors.crops import FaceItem, FaceMasks, frame_items
from pipeline.processors.face_editor.edit import edit
from pipeline.processors.liveportrait_common import build
from pipeline.settings import Settings
from pipeline.types import Frame, Mask, Template

TEMPLATE: Template = "ffhq_512"
ZOOM = 1.5  # landmarks scaled about the nose tip: the crop takes in the whole head
RETARGETED = {"eye_retargeter": "eye_open_ratio", "lip_retargeter": "lip_open_ratio"}


class FaceEditorProcessor(FaceProcessorBase):
    name: ClassVar[str] = "face_editor"
    section: ClassVar[str] = "face_editor"
    title: ClassVar[str] = "Face editor"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "edit"

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        """All six parts but a retargeter whose slider is 0 (it would add 0)."""
        sliders = settings.face_editor.sliders()
        return tuple(model_name(p) for p in PARTS if p not in RETARGETED or sliders[RETARGETED[p]] != 0.0)

    @classmethod
    def active(cls, settings: Settings) -> bool:
        return any(v != 0.0 for v in settings.face_editor.sliders().values())

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        self.sliders = settings.face_editor.sliders()
        self.lp = build(settings, models, PARTS)
        self.box: Mask = masks.box_mask(OUTPUT_SIZE, settings.mask.blur)  # FaceFusion: padding 0
        self._notices: list[str] = []
        wanted = [key for key in RETARGETED.values() if self.sliders[key] != 0.0]
        if wanted and settings.landmarks.model == "none":
            self._notices.append(f"face_editor.{' and '.join(wanted)} need 68-point landmarks: set "
                                 "landmarks.model=2dfan4, else the eyes and lips are left as they are")

    @property
    def notices(self) -> list[str]:
        return self._notices

    @property
    def crop_size(self) -> int:
        return OUTPUT_SIZE

    def sessions(self) -> list[CatalogSession]:
        return list(self.lp.sessions())

    def run(self, frames: Sequence[Frame], items: Sequence[Sequence[FaceItem]], who: Identities,
            masks: FaceMasks | None, at: Sequence[int], originals: Sequence[Original] | None = None) -> None:
        group = [item for _, item in frame_items(frames, items, TEMPLATE, OUTPUT_SIZE, self.box, ZOOM)]
        if not group:
            return
        landmarks = [item.face.landmarks68 if item.face is not None else None for item in group]
        edited = edit(self.lp, np.stack([item.result for item in group]), self.sliders, landmarks)
        for item, result in zip(group, edited, strict=True):
            item.result = result  # pasted under its box (item.box) only: pastes_under is empty
