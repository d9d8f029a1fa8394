"""One validated settings model covering every option of the pipeline.

A preset is this model saved as JSON; a queued job stores the same object. Instances are frozen:
derive a changed copy with :func:`apply_overrides` (``--set section.key=value``).
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.errors import SettingsError
from pipeline.types import (
    ColorMethod,
    DetectorName,
    Encoder,
    EncoderPreset,
    EnhancerName,
    FaceRegion,
    LandmarkerName,
    MaskType,
    OccluderName,
    ParserName,
    Provider,
    SelectorMode,
    SelectorOrder,
    SwapperName,
)

SCHEMA_VERSION = 1

Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class DetectorSettings(_Section):
    model: DetectorName = "yunet"
    score: Unit = 0.5
    size: int = Field(640, ge=160, le=1280, multiple_of=32, description="detector input size (px)")
    nms: Unit = 0.4
    interval: Literal["auto"] | Annotated[int, Field(ge=1, le=120)] = Field(
        "auto", description="full detection every N frames, faces followed by optical flow in between "
        "(1 = every frame; auto = about 6 times a second)")


class SelectorSettings(_Section):
    mode: SelectorMode = "many"
    order: SelectorOrder = "large-small"
    reference: str | None = Field(None, description="image of the person to replace (mode=reference)")
    reference_distance: float = Field(0.6, ge=0.0, le=2.0, description="max cosine distance to the reference")
    min_size: int = Field(0, ge=0, description="ignore faces whose box is smaller than this (px)")
    mapping: tuple[str, ...] = Field((), description="face mapping: one reference image per source image, "
                                     "in order; source i replaces the person in reference i (empty = off)")


class SwapperSettings(_Section):
    model: SwapperName = "auto"
    pixel_boost: Literal[0, 128, 256, 512, 1024] = Field(0, description="0 = the model's own size")
    poisson: bool = Field(False, description="classic swapper: Poisson-blend the edge")

    @field_validator("pixel_boost", mode="before")
    @classmethod
    def _boost_from_text(cls, value: Any) -> Any:
        # from --set swapper.pixel_boost=512
        return int(value) if isinstance(value, str) and value.strip().isdigit() else value


class EnhancerSettings(_Section):
    model: EnhancerName = "none"
    blend: int = Field(80, ge=0, le=100)
    fidelity: Unit = Field(0.5, description="codeformer fidelity weight")


class MaskSettings(_Section):
    types: tuple[MaskType, ...] = ("box",)
    blur: Unit = 0.3
    padding: tuple[int, int, int, int] = Field((0, 0, 0, 0),
                                               description="top, right, bottom, left in % of the crop")
    occluder: OccluderName = "xseg"
    parser: ParserName = "bisenet_resnet34"
    regions: tuple[FaceRegion, ...] = (
        "skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
        "upper-lip", "lower-lip",
    )

    @field_validator("padding")
    @classmethod
    def _padding_range(cls, value: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        if any(not 0 <= v <= 100 for v in value):
            raise ValueError("each padding must be between 0 and 100")
        return value

    @field_validator("types")
    @classmethod
    def _types_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("at least one mask type is needed")
        return tuple(dict.fromkeys(value))


class ColorSettings(_Section):
    method: ColorMethod = "reinhard"
    strength: Unit = 1.0


class LandmarkSettings(_Section):
    model: LandmarkerName = "none"


class TrackerSettings(_Section):
    enabled: bool = True
    max_gap: int = Field(8, ge=0, le=120, description="frames a lost face is interpolated across")
    min_cutoff: float = Field(0.3, gt=0.0, le=100.0, description="One-Euro filter (Hz): lower = smoother")
    beta: float = Field(3.0, ge=0.0, le=100.0, description="One-Euro filter: speed response (face sizes/s)")
    scene_cut: Unit = Field(0.35, description="histogram distance that starts a new scene")


class VideoSettings(_Section):
    start: float | None = Field(None, ge=0.0, description="trim start (s)")
    end: float | None = Field(None, gt=0.0, description="trim end (s)")
    keep_audio: bool = True
    allow_damaged: bool = Field(False, description="render what can be read of a damaged video (a notice)")


class OutputSettings(_Section):
    encoder: Encoder = "auto"
    quality: int = Field(80, ge=0, le=100, description="0 = smallest file, 100 = best")
    preset: EncoderPreset = "medium"
    image_quality: int = Field(95, ge=1, le=100, description="JPEG/WebP quality")


class ExecutionSettings(_Section):
    providers: tuple[Provider, ...] = ("tensorrt", "cuda", "cpu")
    batch_size: Literal["auto"] | Annotated[int, Field(ge=1, le=256)] = "auto"
    threads: int = Field(0, ge=0, le=256, description="onnxruntime intra-op threads per session (0 = shared "
                         "out by cost in a render: the heaviest stage gets what decode/encode leave)")
    queue_size: int = Field(8, ge=1, le=256, description="frames in flight between stages")
    model_memory: Literal["auto"] | Annotated[int, Field(ge=64, le=1 << 24)] = Field(
        "auto", description="MB that loaded models may hold together; least recently used ones are dropped "
                            "past it (auto: 3/4 of free RAM, or of free GPU memory for GPU sessions)")

    @field_validator("providers")
    @classmethod
    def _providers_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("at least one provider is needed")
        return tuple(dict.fromkeys(value))


class Settings(_Section):
    version: int = SCHEMA_VERSION
    detector: DetectorSettings = DetectorSettings()
    selector: SelectorSettings = SelectorSettings()
    swapper: SwapperSettings = SwapperSettings()
    enhancer: EnhancerSettings = EnhancerSettings()
    mask: MaskSettings = MaskSettings()
    color: ColorSettings = ColorSettings()
    landmarks: LandmarkSettings = LandmarkSettings()
    tracker: TrackerSettings = TrackerSettings()
    video: VideoSettings = VideoSettings()
    output: OutputSettings = OutputSettings()
    execution: ExecutionSettings = ExecutionSettings()


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"][:2] if not isinstance(p, int)) or "settings"
        if item["type"] == "extra_forbidden":
            parts.append(f"unknown settings key '{key}'")
        else:
            value = item.get("input")
            shown = "" if isinstance(value, dict) else f" (got {value!r})"
            parts.append(f"{key}: {item['msg']}{shown}")
    return "; ".join(dict.fromkeys(parts))


def validate(data: dict[str, Any]) -> Settings:
    """Build settings from plain data, raising SettingsError naming each bad key."""
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


def keys() -> dict[str, Any]:
    """Every settings key (``section.key``) with its field info, in declaration order."""
    out: dict[str, Any] = {}
    for section, info in Settings.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, _Section):
            for name, field in annotation.model_fields.items():
                out[f"{section}.{name}"] = field
    return out


def _is_sequence(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return True
    return any(_is_sequence(arg) for arg in typing.get_args(annotation) if arg is not type(None))


def _allows_none(annotation: Any) -> bool:
    return annotation is type(None) or type(None) in typing.get_args(annotation)


def _parse_value(raw: str, annotation: Any) -> Any:
    text = raw.strip()
    if text[:1] in "[{\"" or text in ("null", "true", "false"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    if text.lower() in ("none", "null", "") and _allows_none(annotation):
        return None
    if _is_sequence(annotation):
        return [p.strip() for p in text.split(",") if p.strip()]
    return text


def apply_overrides(settings: Settings, overrides: list[str] | dict[str, Any]) -> Settings:
    """Return a copy of ``settings`` with ``section.key=value`` overrides applied and validated."""
    fields = keys()
    data = settings.model_dump()
    items = overrides.items() if isinstance(overrides, dict) else (_split(o) for o in overrides)
    for key, value in items:
        if key not in fields:
            raise SettingsError(f"unknown settings key '{key}' (valid: {', '.join(fields)})")
        section, name = key.split(".", 1)
        if isinstance(value, str):
            value = _parse_value(value, fields[key].annotation)
        data[section][name] = value
    return validate(data)


def _split(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise SettingsError(f"--set expects section.key=value, got {item!r}")
    return key.strip(), value


def to_json(settings: Settings) -> str:
    return settings.model_dump_json(indent=2)
