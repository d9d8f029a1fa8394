"""One check of a swap before it is previewed or queued: inputs readable, models installed, a face in
every source photo, the output folder writable.

The web UI runs :func:`check_swap` before a preview and before "Add to queue", so a job the preview
refuses is never queued. The first problem found is raised as one :class:`~pipeline.errors.UserError`
(all missing models together in one :class:`ModelsMissing`); what the user should know but that does not
stop the swap (the classic swapper is in use) comes back as notices.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import alpha, env, media
from pipeline.errors import ModelMissing, NoFaceFound, UserError
from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.plan import ModelPlan
from pipeline.settings import Settings

CLASSIC_IN_USE = ("the built-in classic swapper is in use (lower quality): install a neural swapper "
                  "such as hyperswap_1a_256 or inswapper_128 for better results")

_faces_lock = threading.Lock()
_source_faces: dict[tuple[object, str], int] = {}  # (source file key, detector settings) -> faces found


class ModelsMissing(ModelMissing):
    """The settings need models that are not installed; ``names`` lists them (catalog names)."""

    def __init__(self, entries: Sequence[ModelEntry], hint: str = "") -> None:
        self.names = tuple(e.name for e in entries)
        shown = ", ".join(f"{e.name} ({e.role}, {describe_size(catalog.download_size(e))})" for e in entries)
        word = "model is" if len(entries) == 1 else "models are"
        super().__init__(f"{len(entries)} {word} not installed: {shown}{hint}")


@dataclass(frozen=True)
class SwapCheck:
    """What passed: the swapper that will run, and notices for the user."""

    swapper: str
    notices: list[str] = field(default_factory=list)


def describe_size(size: int | None) -> str:
    """``340 MB``, ``1.7 MB``, or ``size unknown``."""
    if not size:
        return "size unknown"
    mb = size / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


def resolved_swapper(settings: Settings) -> str:
    """The swapper that will run (``auto`` resolved to an installed one, else ``classic``): the plan's."""
    return ModelPlan.from_settings(settings).swapper


def required_models(settings: Settings) -> list[ModelEntry]:
    """Every catalog model a swap with ``settings`` loads: the model plan's."""
    return ModelPlan.from_settings(settings).required()


def missing_models(settings: Settings) -> list[ModelEntry]:
    return ModelPlan.from_settings(settings).missing()


def require_models(settings: Settings) -> None:
    """:class:`ModelsMissing` naming every model ``settings`` need that is not installed (not only the first
    one a render would load)."""
    missing = missing_models(settings)
    if missing:
        fetch = [e.name for e in missing if e.url]
        imports = [e.file for e in missing if not e.url]
        how = ([f"facestation models fetch {' '.join(fetch)}"] if fetch else []) + \
              [f"facestation models import {file}" for file in imports]
        raise ModelsMissing(missing, f"; run: {' and '.join(how)}")


def _faces_in_source(source: Path, settings: Settings) -> int:
    from pipeline.preview import faces_in

    key = (media.file_key(source), settings.detector.model_dump_json())
    with _faces_lock:
        if key in _source_faces:
            return _source_faces[key]
    count = len(faces_in(source, 0, settings))
    with _faces_lock:
        _source_faces[key] = count
    return count


def check_audio(audio: str | Path) -> Path:
    """A new voice (``--audio FILE``) exists and has a sound ffmpeg can read; its path."""
    from pipeline.audio.decode import has_audio

    path = Path(audio)
    if not path.is_file():
        raise UserError(f"audio file not found: {path}")
    if not has_audio(path):
        raise UserError(f"{path.name} has no audio stream that can be read: give a sound file (wav, mp3, "
                        "m4a…) or a video with sound")
    return path


def check_lip_sync_sound(settings: Settings, target: str | Path, audio: str | Path | None) -> None:
    """A lip_syncer in the order needs a sound to follow: ``audio``, else the target's own (a video's)."""
    if not any(p.name == "lip_syncer" for p in ModelPlan.from_settings(settings).processors):
        return
    if audio is not None:
        check_audio(audio)
        return
    from pipeline.audio.decode import has_audio

    if media.kind_of(Path(target)) == "image" or not has_audio(target):
        raise UserError(f"lip_syncer needs a sound to follow and {Path(target).name} has none: give a voice "
                        "with --audio FILE, or take lip_syncer out of processors.order")


def check_output_folder(folder: Path) -> None:
    """The folder renders are written to exists (or can be made) and is writable."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        raise UserError("the output folder cannot be made: ask the host to check its permissions") from None
    if not os.access(folder, os.W_OK):
        raise UserError("the output folder is not writable: ask the host to check its permissions")


def check_swap(settings: Settings, sources: Sequence[str | Path] | None, target: str | Path | None,
               outputs: Path | None = None, audio: str | Path | None = None) -> SwapCheck:
    """Raise the first reason a swap of ``target`` with ``sources`` would fail; else what will run.
    ``audio``: the new voice the output carries (a lip syncer follows it)."""
    if not sources:
        raise UserError("add a source photo (the face to put in)")
    if not target:
        raise UserError("add a target image or video")
    for source in sources:
        media.check_media(source, ("image",))
    media.check_media(target)
    plan = ModelPlan.from_settings(settings)
    missing = plan.missing()
    if missing:
        raise ModelsMissing(missing)
    for source in sources if plan.runs_swapper else ():
        if _faces_in_source(Path(source), settings) == 0:
            raise NoFaceFound(f"no face found in the source photo {Path(source).name}: use a photo where "
                              "the face is clearly visible")
    check_output_size(settings, target)
    check_trim(settings, target)
    if audio is not None:
        check_audio(audio)
    check_lip_sync_sound(settings, target, audio)
    if outputs is not None:
        check_output_folder(outputs)
    return SwapCheck(plan.swapper, [CLASSIC_IN_USE] if plan.classic else [])


def check_trim(settings: Settings, target: str | Path) -> None:
    """Refuse a trim (video.start / video.end) that keeps no frame of the video ``target``."""
    start, end = settings.video.start, settings.video.end
    info = media.check_media(target)
    if info.kind == "image" or (start is None and end is None):
        return
    duration = info.frames / info.fps
    if start is not None and start >= duration:
        raise UserError(f"video.start {start:g} s is past the end of {Path(target).name} ({duration:.2f} s)")
    if end is not None and end <= (start or 0.0):
        raise UserError(f"video.end {end:g} s is not after video.start ({start or 0:g} s): nothing to render")


def check_output_size(settings: Settings, target: str | Path) -> None:
    """Refuse a frame enhancer's output larger than the encoder takes (a video) or than facestation reads
    back (a still image), naming the size, before any model is loaded."""
    scale = ModelPlan.from_settings(settings).scale
    if scale == 1:
        return
    info = media.check_media(target)
    width, height = info.width * scale, info.height * scale
    what = f"{Path(target).name} ({info.width}×{info.height}) ×{scale} would be {width}×{height}"
    fix = ("choose an x2 model (frame_enhancer.model=real_esrgan_x2) or a smaller target" if scale > 2
           else "use a smaller target")
    if info.kind == "image":
        limit = env.MAX_PIXELS.get()
        if width * height > limit:
            raise UserError(f"{what}: more than the {limit:,} pixels a still may have; {fix}")
        return
    from pipeline.video import encoders, ffmpeg

    encoder, _ = encoders.choose_encoder(settings.output.encoder, ffmpeg.ffmpeg_exe())
    side = encoders.MAX_SIDE.get(encoder)
    if side is not None and max(width + width % 2, height + height % 2) > side:
        other = " (or output.encoder=libx264)" if encoder.endswith("_nvenc") else ""
        raise UserError(f"{what}: larger than {encoder} takes ({side} px a side); {fix}{other}")


def check_alpha_output(settings: Settings, output: str | Path) -> None:
    """Refuse a transparent background (``background_remover.fill=transparent``) into an output that cannot
    carry alpha, naming the formats that can, before any work."""
    if not alpha.transparent(settings):
        return
    suffix = Path(output).suffix.lower()
    if suffix not in (*alpha.ALPHA_IMAGES, *alpha.ALPHA_VIDEOS):
        raise UserError(f"background_remover.fill=transparent needs an output that keeps transparency: "
                        f"{Path(output).name} cannot; use {alpha.FORMATS_LINE} (or a fill colour)")


def choice_label(name: str) -> str:
    """A model choice as a dropdown shows it: ``inswapper_128 (not installed)``; other choices as they are."""
    if name not in catalog.CATALOG:
        return name
    entry = catalog.get(name)
    if store.is_installed(entry):
        return name
    return f"{name} (not installed, {describe_size(catalog.download_size(entry))})"
