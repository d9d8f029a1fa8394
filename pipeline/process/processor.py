"""One face swap's work on frames, batched across frames: detect -> select -> swap -> enhance -> blend.

:class:`FaceProcessor` is built once per job from the validated settings and the source images, keeps its
models warm, and processes lists of frames. It puts three parts together:

- :class:`~pipeline.process.models.FaceModels`: every model, built from the settings;
- :class:`~pipeline.process.identities.Identities`: the identities to swap in and the references that pick
  the faces to replace;
- :class:`~pipeline.process.crops.CropStages`: the per-crop stages (swap with its paste masks, enhance,
  blend).

The video render calls the stages one by one (``detect``, ``select``, ``swap``, ``enhance``, ``blend``) so
that tracking runs between detection and swapping and each stage's time is its own; ``apply`` and
``process`` run them in a row (stills, the preview, the bench).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import UserError
from pipeline.faces import mapping
from pipeline.faces import select as selection
from pipeline.faces.base import Detector
from pipeline.image import output_format, read_image, write_image
from pipeline.process.crops import CropStages, Swapped
from pipeline.process.identities import Identities
from pipeline.process.models import FaceModels
from pipeline.provenance import provenance_tag
from pipeline.settings import Settings
from pipeline.swap.base import Swapper
from pipeline.types import Face, Frame, Mask

if TYPE_CHECKING:
    from pipeline.blend.occlusion import Occluder
    from pipeline.blend.region import FaceParser
    from pipeline.enhance.base import Enhancer


class FaceProcessor:
    def __init__(self, settings: Settings, sources: Sequence[Path | str | Frame]) -> None:
        self.settings = settings
        self.face_models = FaceModels.build(settings)
        self.identities = Identities(self.face_models, sources)
        self.crops = CropStages(self.face_models)

    # --- what it is made of ---------------------------------------------------------------------------
    @property
    def models(self) -> list[str]:
        """The catalog names of the models in use (provenance tag, summaries)."""
        return self.face_models.names

    @property
    def notices(self) -> list[str]:
        return self.face_models.notices

    @property
    def detector(self) -> Detector:
        return self.face_models.detector

    @property
    def swapper(self) -> Swapper:
        return self.face_models.swapper

    @property
    def enhancer(self) -> Enhancer | None:
        return self.face_models.enhancer

    @property
    def occluder(self) -> Occluder | None:
        return self.face_models.occluder

    @property
    def parser(self) -> FaceParser | None:
        return self.face_models.parser

    @property
    def identity(self) -> object:
        """The (first) identity the swapper swaps in."""
        return self.identities.prepared[0]

    @property
    def boost(self) -> int:
        return self.crops.boost

    @property
    def crop_size(self) -> int:
        return self.crops.crop_size

    @property
    def mask(self) -> Mask:
        """The box paste mask of a swapped crop (an item whose own ``mask`` is None pastes with this)."""
        return self.crops.mask

    # --- stages ---------------------------------------------------------------------------------------
    @property
    def selects_by_identity(self) -> bool:
        """Whether :meth:`select` embeds the faces of every frame (reference or mapping selection)."""
        return self.identities.references is not None or self.settings.selector.mode == "reference"

    def detect(self, frames: Sequence[Frame]) -> list[list[Face]]:
        return self.face_models.detector.detect(frames)

    def select(self, frame: Frame, faces: list[Face]) -> list[Face]:
        """The faces of ``frame`` to replace (``selector`` settings), refined by the landmark model if any."""
        sel, who, models = self.settings.selector, self.identities, self.face_models
        if who.references is not None:  # (selects_by_identity)
            candidates = [f for f in faces if min(f.box[2] - f.box[0], f.box[3] - f.box[1]) >= sel.min_size]
            if candidates:
                embeddings = models.embed(frame, candidates)
                candidates = [f.with_embedding(e) for f, e in zip(candidates, embeddings, strict=True)]
            assigned = mapping.assign(candidates, who.references, sel.reference_distance)
            chosen = selection.order_faces(assigned, sel.order)
        else:
            if sel.mode == "reference" and faces:
                embeddings = models.embed(frame, faces)
                faces = [f.with_embedding(e) for f, e in zip(faces, embeddings, strict=True)]
            chosen = selection.select(faces, sel.mode, sel.order, who.reference, sel.reference_distance,
                                      sel.min_size)
        if models.landmarker is not None and chosen:
            chosen = models.landmarker.refine(frame, chosen)
        return chosen

    def swap(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[list[Swapped]]:
        """Align and swap every given face (all crops of all frames batched), with their paste masks."""
        return self.crops.swap(frames, faces, self.identities.prepared, self.identities.index_of)

    @property
    def enhances(self) -> bool:
        """Whether :meth:`enhance` does anything with these settings."""
        return self.crops.enhances

    def enhance(self, frames: Sequence[Frame], swapped: Sequence[Sequence[Swapped]]) -> None:
        """Restore the swapped faces (``swap``'s output for ``frames``) with the enhancer, in one batch."""
        if not self.enhances:
            return
        owners = [frame for frame, row in zip(frames, swapped, strict=True) for _ in row]
        self.crops.enhance(owners, [item for row in swapped for item in row])

    def blend(self, frame: Frame, items: Sequence[Swapped], inplace: bool = False) -> Frame:
        """Colour-match each swapped crop and paste it back (``inplace``: into ``frame`` itself)."""
        return self.crops.blend(frame, items, inplace=inplace)

    def apply(self, frames: Sequence[Frame], faces: Sequence[Sequence[Face]]) -> list[Frame]:
        """Swap the given faces in their frames: swap, enhance, blend."""
        swapped = self.swap(frames, faces)
        self.enhance(frames, swapped)
        return [self.blend(f, items) for f, items in zip(frames, swapped, strict=True)]

    def process(self, frames: Sequence[Frame]) -> list[Frame]:
        detected = self.detect(frames)
        chosen = [self.select(f, d) for f, d in zip(frames, detected, strict=True)]
        return self.apply(frames, chosen)


def swap_image(settings: Settings, sources: Sequence[Path | str], target: Path,
               output: Path) -> dict[str, Any]:
    """Swap faces in one still image and write ``output`` in kind, with the provenance tag; returns a
    summary."""
    output_format(output)  # refuse an unwritable format before any work
    started = time.perf_counter()
    picture = read_image(target)
    processor = FaceProcessor(settings, list(sources))
    faces = processor.select(picture.bgr, processor.detect([picture.bgr])[0])
    if not faces:
        raise UserError(f"no face to replace in the target {target.name} "
                        f"(selector.mode={settings.selector.mode})")
    result = processor.apply([picture.bgr], [faces])[0]
    write_image(output, picture, result, provenance_tag(processor.models), settings.output.image_quality)
    return {
        "output": str(output),
        "kind": "image",
        "frames": 1,
        "faces_swapped": len(faces),
        "models": processor.models,
        "notices": [*processor.notices, *filter(None, [picture.depth_notice(target.name)])],
        "seconds": round(time.perf_counter() - started, 3),
    }
