"""The parts of the one check of a swap request (:func:`pipeline.request.check`): the models a request
needs, a face in a source photo, a voice's sound, the sound a processor follows, the output's size and format.

Entry points never call these one by one: they build a :class:`~pipeline.request.SwapRequest` and check it.
A missing model is one :class:`ModelsMissing` naming all of them; the UI's model choice labels live here too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from pipeline import alpha, env, media
from pipeline.errors import ModelMissing, UserError, missing, not_a_file
from pipeline.models import catalog, store
from pipeline.models.catalog import ModelEntry
from pipeline.plan import ModelPlan
from pipeline.processors import PROCESSORS
from pipeline.settings import Settings, key_choosing

_faces_lock = threading.Lock()
_source_faces: dict[tuple[object, str], int] = {}  # (source file key, detector settings) -> faces found


class ModelsMissing(ModelMissing):
    """The settings need models that are not installed; ``names`` lists them (catalog names). The message
    ends with the command that installs them (a browser shows it without: ``browser_message``)."""

    def __init__(self, entries: Sequence[ModelEntry]) -> None:
        self.names = tuple(e.name for e in entries)
        sizes = [describe_size(catalog.download_size(e)) for e in entries]
        shown = ", ".join(f"{e.name} ({e.role}{', ' + size if size else ''})"
                          for e, size in zip(entries, sizes, strict=True))
        word = "model is" if len(entries) == 1 else "models are"
        fetch = [e.name for e in entries if e.url]
        imports = [e.file for e in entries if not e.url]
        how = ([f"facestation models fetch {' '.join(fetch)}"] if fetch else []) + \
              [f"facestation models import {file}" for file in imports]
        super().__init__(f"{len(entries)} {word} not installed: {shown}; run: {' and '.join(how)}")


def describe_size(size: int | None) -> str:
    """``340 MB``, ``1.7 MB``, or "" where unknown (said once, by ``models list``; never on every line)."""
    if not size:
        return ""
    mb = size / 1e6
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"


def required_models(settings: Settings) -> list[ModelEntry]:
    """Every catalog model a swap with ``settings`` loads: the model plan's."""
    return ModelPlan.from_settings(settings).required()


def require_models(plan: ModelPlan) -> None:
    """:class:`ModelsMissing` naming every model of ``plan`` that is not installed (not only the first one
    a render would load)."""
    missing = plan.missing()
    if missing:
        raise ModelsMissing(missing)


def faces_in_source(source: Path, settings: Settings) -> int:
    """How many faces the detector of ``settings`` finds in a source photo (cached per file and detector)."""
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
    from pipeline.audio.decode import has_audio, lost_sound

    path = Path(audio)
    special = not_a_file(path, "a sound file")  # a folder, a FIFO: said as what it is
    if special is not None:
        raise special
    if not path.is_file():
        raise missing(path, "audio file")
    if not has_audio(path):
        raise UserError(f"{path.name} has no audio stream that can be read: give a sound file (wav, mp3, "
                        "m4a…) or a video with sound")
    lost = lost_sound(path)
    if lost is not None:  # said as a damaged video is: what could be read of what it promises
        raise UserError(f"{path.name} is truncated or damaged: {lost[0]:.2f} s of its {lost[1]:.2f} s of "
                        "sound could be read; give the whole file")
    return path


def check_lip_sync_sound(settings: Settings, target: str | Path, audio: str | Path | None,
                         plan: ModelPlan | None = None) -> None:
    """A processor that follows a sound (the lip syncer) needs one: ``audio``, else the target's own (a
    video's)."""
    plan = plan or ModelPlan.from_settings(settings)
    if not plan.needs_sound:
        return
    if audio is not None:  # a voice to follow (the request's check made sure it has a sound)
        return
    from pipeline.audio.decode import has_audio

    if media.kind_of(Path(target)) == "image" or not has_audio(target):
        name = next(p.name for p in plan.processors if PROCESSORS[p.name].needs_sound)
        raise UserError(f"{name} needs a sound to follow and {Path(target).name} has none: give a voice "
                        f"with --audio FILE, or take {name} out of processors.order")


def check_output_size(settings: Settings, target: str | Path, plan: ModelPlan | None = None) -> None:
    """Refuse a frame enhancer's output larger than the encoder takes (a video) or than facestation reads
    back (a still image), naming the size, before any model is loaded."""
    plan = plan or ModelPlan.from_settings(settings)
    scale = plan.scale
    if scale == 1:
        return
    info = media.check_media(target)
    check_frame_size(settings, Path(target).name, (info.width, info.height), info.kind, plan)


def check_frame_size(settings: Settings, name: str, size: tuple[int, int], kind: media.MediaKind = "video",
                     plan: ModelPlan | None = None) -> None:
    """:func:`check_output_size` for frames of ``size`` (width, height) named ``name`` (a live camera's)."""
    plan = plan or ModelPlan.from_settings(settings)
    scale = plan.scale
    if scale == 1:
        return
    width, height = size[0] * scale, size[1] * scale
    what = f"{name} ({size[0]}×{size[1]}) ×{scale} would be {width}×{height}"
    fix = (f"choose an x2 model ({smaller_scale(plan)}) or a smaller target" if scale > 2
           else "use a smaller target")
    if kind == "image":
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


def smaller_scale(plan: ModelPlan) -> str:
    """``key=model``: an x2 model of the role of the first upscaling model the plan runs, for its setting."""
    scaling = next(catalog.get(m) for p in plan.processors for m in p.models
                   if m in catalog.CATALOG and catalog.get(m).scale > 1)
    x2 = next(e.name for e in catalog.by_role(scaling.role) if e.scale == 2)
    return f"{key_choosing(scaling.name)}={x2}"


def check_alpha_output(settings: Settings, output: str | Path) -> None:
    """Refuse frames made transparent (the background remover's transparent fill) into an output that cannot
    carry alpha, naming the formats that can, before any work."""
    maker = alpha.maker(settings)
    if maker is None:
        return
    suffix = Path(output).suffix.lower()
    if suffix not in (*alpha.ALPHA_IMAGES, *alpha.ALPHA_VIDEOS):
        raise UserError(f"{maker} makes the frames transparent, which needs an output that keeps "
                        f"transparency: {Path(output).name} cannot; use {alpha.FORMATS_LINE} (or turn "
                        "transparency off)")


def choice_label(name: str) -> str:
    """A model choice as a dropdown shows it: ``inswapper_128 (not installed)``; other choices as they are."""
    if name not in catalog.CATALOG:
        return name
    entry = catalog.get(name)
    if store.is_installed(entry):
        return name
    size = describe_size(catalog.download_size(entry))
    return f"{name} (not installed{', ' + size if size else ''})"


def unused_settings(settings: Settings) -> list[str]:
    """Settings set to do something that the processors' order leaves undone, each in one line (never
    ignored silently): a processor's section changed from its defaults (its model chosen, say) while the
    processor is not in the order; a processor in the order that changes nothing as set (an enhancer set to
    none, an age modifier at 0)."""
    out = []
    for name, processor in PROCESSORS.items():
        if name in settings.processors.order:
            if not processor.active(settings):
                model = getattr(getattr(settings, processor.section), "model", None)
                why = f" ({processor.section}.model=none)" if model == "none" else ""
                out.append(f"{processor.title.lower()} is ticked but changes nothing as set{why}: set it "
                           "in Processors, or untick it")
            continue
        section = getattr(settings, processor.section)
        defaults = type(section)().model_dump()
        changed = {k: v for k, v in section.model_dump().items() if v != defaults[k]}
        if not changed:
            continue
        what = (str(changed["model"]) if "model" in changed
                else ", ".join(f"{processor.section}.{k}={v}" for k, v in changed.items()))
        out.append(f"{processor.title.lower()} {what} is not used: {name} is not in processors.order "
                   "(tick it in Processors)")
    return out
