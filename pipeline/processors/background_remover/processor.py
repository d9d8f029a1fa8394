"""``background_remover``: the background of each whole frame painted over, or made transparent
(``background_remover`` settings; the maths in background.py).

A frame processor on the frame as the processors before it left it. With ``fill`` a colour (green by default,
which every output keeps) the background is painted that colour; with ``fill=transparent`` the frame's
pixels are kept and its alpha plane (``chain.Work.alpha``) becomes min(the mask, the alpha it had): the
processors after it keep working on BGR, a later upscaler scales the alpha with the frame, and the output
carries it where its format can (pipeline/alpha.py: .png/.webp stills, .webm VP9 and .mov ProRes 4444
videos; any other output is refused before the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pipeline import families
from pipeline.families import Family, run_options
from pipeline.models.sessions import CatalogSession
from pipeline.processors.background_remover.background import (
    BackgroundRemover,
    ClothRemover,
    CorridorKey,
    alpha_out,
    despill,
    fill,
)
from pipeline.processors.base import Cost, FrameProcessorBase
from pipeline.settings import Settings, colour_rgb
from pipeline.types import Alpha, Frame

FAMILIES: dict[str, Family] = {
    "background_remover": Family("background_remover",
                                 lambda name, s: BackgroundRemover(name, **run_options(s))),
    "u2net_cloth": Family("background_remover", lambda name, s: ClothRemover(name, **run_options(s))),
    "corridor_key": Family("background_remover", lambda name, s: CorridorKey(name, **run_options(s))),
}


class BackgroundRemoverProcessor(FrameProcessorBase):
    name: ClassVar[str] = "background_remover"
    section: ClassVar[str] = "background_remover"
    title: ClassVar[str] = "Background remover"
    batches: ClassVar[bool] = True
    cost: ClassVar[Cost] = "model"
    stage: ClassVar[str] = "background"
    families = FAMILIES

    @classmethod
    def models(cls, settings: Settings) -> tuple[str, ...]:
        return (settings.background_remover.model,)

    def __init__(self, settings: Settings, models: tuple[str, ...]) -> None:
        s = settings.background_remover
        self.transparent = s.transparent
        self.fill = None if s.transparent else colour_rgb(s.fill)
        self.despill = None if s.despill == "none" else colour_rgb(s.despill)
        self.remover: BackgroundRemover = families.build(models[0], settings, "background_remover", FAMILIES)

    def sessions(self) -> list[CatalogSession]:
        return [self.remover.runner]

    def run_frames(self, frames: Sequence[Frame], at: Sequence[int]) -> list[Frame]:
        return self.run_alpha(frames, [None] * len(frames), at)[0]

    def run_alpha(self, frames: Sequence[Frame], alphas: Sequence[Alpha | None],
                  at: Sequence[int]) -> tuple[list[Frame], list[Alpha | None]]:
        """Despill, then the fill colour over the background, or (transparent) the mask into the alpha."""
        masks, frames_out = self.remover.remove(frames)
        done: list[Frame] = []
        out_alphas: list[Alpha | None] = []
        for frame, mask, alpha, source in zip(frames_out, masks, alphas, frames, strict=True):
            if self.despill is not None:
                frame = despill(frame, self.despill)
            elif frame is source:
                frame = frame.copy()  # new arrays: the input is left as it is
            if self.fill is not None:
                frame = fill(frame, mask, self.fill)
                out_alphas.append(alpha)
            else:
                out_alphas.append(alpha_out(mask, alpha))
            done.append(frame)
        return done, out_alphas
