"""A still image through the chain: read, swap, write in kind with the provenance tag."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipeline.chain import Chain, Work, frame_changers, no_face_notice
from pipeline.checks import check_alpha_output
from pipeline.errors import UserError
from pipeline.image import output_format, read_image, write_image
from pipeline.process import FaceProcessor
from pipeline.processors import STILL
from pipeline.provenance import provenance_tag
from pipeline.quality import write_report
from pipeline.quality.record import quality_summary, recorder_for
from pipeline.settings import Settings


def swap_image(settings: Settings, sources: Sequence[Path | str], target: Path,
               output: Path, guard: Callable[[], None] | None = None) -> dict[str, Any]:
    """Swap faces in one still image and write ``output`` in kind, with the provenance tag; returns a
    summary. ``guard`` (it raises to refuse) is asked just before the output is renamed into place."""
    output_format(output)  # refuse an unwritable format before any work
    check_alpha_output(settings, output)
    started = time.perf_counter()
    picture = read_image(target)
    processor = FaceProcessor(settings, list(sources))
    processor.prepare(STILL)
    work: Work = Chain(processor).one(picture.bgr, alpha=picture.alpha)
    recorder = recorder_for(processor)
    recorder.look([work])  # the chain blends into a copy: ``work.decoded`` is the target as read
    recorder.add([work])
    faces = work.faces
    order, said = settings.processors.order, None
    left_alone = processor.face_models.turned_away
    if not faces and frame_changers(order) == []:  # nothing would change it: refused
        why = f"; the selector's filters left {left_alone} alone" if left_alone else ""
        raise UserError(f"no face to replace in the target {target.name} "
                        f"(selector.mode={settings.selector.mode}{why})")
    if not faces:  # changed by its frame processors only: said so
        said = no_face_notice(target.name, order, settings.selector.mode)
    result = work.out
    assert result is not None  # Chain.one sets it for every frame
    picture = replace(picture, alpha=work.alpha)  # its own alpha as the chain left it (the remover's)
    write_image(output, picture, result, provenance_tag(processor.models), settings.output.image_quality,
                guard=guard)
    quality = recorder.report(output.name)
    return {
        "output": str(output),
        "kind": "image",
        "frames": 1,
        "faces_swapped": len(faces),
        "faces_left_alone": left_alone,
        "models": processor.models,
        "notices": [*processor.notices, *([said] if said else []),
                    *picture.loss_notices(target.name, output)],
        "seconds": round(time.perf_counter() - started, 3),
        "quality": quality_summary(quality, write_report(quality, output)),
    }
