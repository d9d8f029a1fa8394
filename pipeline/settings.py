"""One validated settings model covering every option of the pipeline.

A preset is this model saved as JSON; a queued job stores the same object. Instances are frozen:
derive a changed copy with :func:`apply_overrides` (``--set section.key=value``).
"""

from __future__ import annotations

import difflib
import json
import re
import typing
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pipeline.errors import SettingsError
from pipeline.types import (
    CUSTOM_DFM_NAME,
    AgeModifierName,
    BackgroundRemoverName,
    ClassifierName,
    ColorizerName,
    ColorizerSize,
    ColorMethod,
    Container,
    DeepSwapperName,
    DetectorName,
    Encoder,
    EncoderPreset,
    EnhancerName,
    FaceArea,
    FaceRegion,
    FrameEnhancerName,
    LandmarkerName,
    LipSyncerName,
    LivePortraitModel,
    MaskType,
    OccluderName,
    ParserName,
    Provider,
    RestorerArea,
    SelectorGender,
    SelectorMode,
    SelectorOrder,
    SelectorRace,
    SwapperName,
    VoiceExtractorName,
)

SCHEMA_VERSION = 2
# sections renamed since an older schema (old name -> new): the face swapper's and face enhancer's took their
# processors' names in schema 2. Old presets, old queued jobs and ``--set swapper.model=...`` still work.
RENAMED_SECTIONS = {"swapper": "face_swapper", "enhancer": "face_enhancer"}

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
# UI facts a field may carry (json_schema_extra): "main" (shown beside the preview, not among the advanced
# settings; never a processor's: its settings are beside its tick box, shown only while it runs),
# "choice_words" ((value, words) for a value that means something other than itself), "ui_range",
# "placeholder" (an empty optional value in words), "suggest" (a free text's usual values, offered in a menu)
MAIN: dict[str, Any] = {"main": True}


def _at_least_one(value: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``value`` without repeats (the first of each kept); none at all is refused, naming ``what``."""
    if not value:
        raise ValueError(f"at least one {what} is needed")
    return tuple(dict.fromkeys(value))


class _Section(BaseModel):
    # every number finite (inf and nan refused in one line, for the CLI, presets, jobs, the UI and live alike)
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)


class ProcessorSection(_Section):
    """A processor's settings: ``processor`` is its name in ``processors.order``, and the section's in
    :class:`Settings` (adding a processor adds one of these and its field there)."""

    processor: ClassVar[str]

    @property
    def makes_alpha(self) -> bool:
        """Whether its processor gives the frames an alpha plane with these settings (the output is then
        transparent)."""
        return False


class DetectorSettings(_Section):
    model: DetectorName = Field("yunet", title="Face detector",
                                description="the model that finds faces; yunet is built in")
    score: Unit = Field(0.5, title="Detection confidence (0–1)",
                        description="faces scored below this are ignored; lower finds more, and more "
                        "mistakes")
    size: int = Field(640, ge=160, le=1280, multiple_of=32, title="Detector resolution (px)",
                      description="the frame is scaled to this size to find faces; larger finds smaller "
                      "faces")
    nms: Unit = Field(0.4, title="Overlap merge (0–1)",
                      description="boxes overlapping more than this count as one face (non-maximum "
                      "suppression)")
    interval: Literal["auto"] | Annotated[int, Field(ge=1, le=120)] = Field(
        "auto", title="Full detection every N frames",
        description="in between, faces are re-detected around where they were (yunet) or followed by "
        "optical flow (1 = every frame; auto = about 6 times a second)")


class SelectorSettings(_Section):
    mode: SelectorMode = Field("many", title="Which faces to replace",
                               description="one: the first face in the order below; many: every face; "
                               "reference: only the person clicked in the faces gallery")
    order: SelectorOrder = Field("large-small", title="Face order",
                                 description="which face counts as the first one")
    reference: str | None = Field(None, title="Chosen person",
                                  description="image of the person to replace (mode=reference)")
    reference_distance: float = Field(0.6, ge=0.0, le=2.0, title="Same-person tolerance (0–2)",
                                      description="how different a face may look from the chosen person "
                                      "and still be replaced (cosine distance)")
    min_size: int = Field(0, ge=0, title="Smallest face (px)",
                          description="ignore faces whose box is smaller than this (0 = keep all)")
    mapping: tuple[str, ...] = Field((), title="Source → person mapping",
                                     description="face mapping: one reference image per source image, "
                                     "in order; source i replaces the person in reference i (empty = off)")
    gender: SelectorGender = Field("any", title="Only this gender",
                                   description="faces the face classifier reads as another gender are left "
                                   "alone (any = all)")
    race: SelectorRace = Field("any", title="Only this race",
                               description="faces the face classifier reads as another of FairFace's classes "
                               "are left alone (any = all)",
                               json_schema_extra={"choice_words": [
                                   ["white", "White"], ["black", "Black"],
                                   ["latino_hispanic", "Latino / Hispanic"],
                                   ["east_asian", "East Asian"], ["southeast_asian", "Southeast Asian"],
                                   ["indian", "Indian"], ["middle_eastern", "Middle Eastern"]]})
    age_min: int = Field(0, ge=0, le=100, title="Youngest age (years)",
                         description="faces read as younger are left alone (by the classifier's age bracket)")
    age_max: int = Field(100, ge=0, le=100, title="Oldest age (years)",
                         description="faces read as older are left alone (100 = no limit)")
    classifier: ClassifierName = Field("fairface", title="Face classifier",
                                       description="the model the gender, race and age filters read faces "
                                       "with (loaded only while a filter is set)")

    @model_validator(mode="after")
    def _ages_in_order(self) -> SelectorSettings:
        if self.age_min > self.age_max:
            raise ValueError(f"selector.age_min {self.age_min} is above selector.age_max {self.age_max}")
        return self

    @property
    def filters(self) -> bool:
        """Whether a gender, race or age filter is set (the classifier then reads every face found)."""
        return (self.gender, self.race, self.age_min, self.age_max) != ("any", "any", 0, 100)


class SwapperSettings(ProcessorSection):
    processor: ClassVar[str] = "face_swapper"
    model: SwapperName = Field("auto", title="Face swapper",
                               description="auto: the best installed model, else the built-in classic one")
    pixel_boost: Literal[0, 128, 256, 512, 1024] = Field(0, title="Swap resolution (px)",
                                                         description="0 = the model's own size; larger "
                                                         "is sharper and slower",
                                                         json_schema_extra={"choice_words": [
                                                             [0, "auto (the model's own size)"]]})
    poisson: bool = Field(False, title="Seamless edge (classic swapper)",
                          description="classic swapper: Poisson-blend the edge")

    @field_validator("pixel_boost", mode="before")
    @classmethod
    def _boost_from_text(cls, value: Any) -> Any:
        # from --set face_swapper.pixel_boost=512
        return int(value) if isinstance(value, str) and value.strip().isdigit() else value


class EnhancerSettings(ProcessorSection):
    processor: ClassVar[str] = "face_enhancer"
    model: EnhancerName = Field("none", title="Face enhancer",
                                description="restores detail on the swapped face (slower)")
    blend: int = Field(80, ge=0, le=100, title="Enhancer strength (%)",
                       description="how much of the enhanced face is mixed in")
    fidelity: Unit = Field(0.5, title="CodeFormer fidelity (0–1)",
                           description="codeformer only: higher keeps closer to the swapped face")


class FrameColorizerSettings(ProcessorSection):
    processor: ClassVar[str] = "frame_colorizer"
    model: ColorizerName = Field("ddcolor", title="Colouriser",
                                 description="the model that gives the frame colour (ddcolor: natural; "
                                 "deoldify: old film)")
    blend: int = Field(100, ge=0, le=100, title="Colour strength (%)",
                       description="how much of the colour is mixed in (the lightness stays the frame's)")
    size: ColorizerSize = Field("256x256", title="Colouriser resolution",
                                description="the size the model sees the frame at; larger is finer and "
                                "slower")


class FrameEnhancerSettings(ProcessorSection):
    processor: ClassVar[str] = "frame_enhancer"
    model: FrameEnhancerName = Field("span_kendata_x4", title="Frame enhancer",
                                     description="upscales the whole frame (×2, ×4 or ×8, as the name says); "
                                     "runs where frame_enhancer is in the processors")
    blend: int = Field(80, ge=0, le=100, title="Frame enhancer strength (%)",
                       description="how much of the upscaled frame is mixed with the frame simply resized")


class MaskSettings(_Section):
    types: tuple[MaskType, ...] = Field(("box",), title="Mask shapes",
                                        description="box: soft rectangle; occlusion: keep hands and hair "
                                        "in front; region: only chosen face parts; mouth: keep the open "
                                        "mouth; area: only chosen areas of the face's outline (upper face, "
                                        "lower face, mouth)", json_schema_extra=MAIN)
    blur: Unit = Field(0.3, title="Edge softness (0–1)", description="how softly the swapped face fades out")
    padding: tuple[int, int, int, int] = Field((0, 0, 0, 0), title="Mask padding (%)",
                                               description="top, right, bottom, left in % of the crop")
    occluder: OccluderName = Field("xseg", title="Occlusion model",
                                   description="finds what covers the face (occlusion mask)")
    parser: ParserName = Field("bisenet_resnet34", title="Face-parts model",
                               description="finds the face parts (region mask)")
    regions: tuple[FaceRegion, ...] = Field((
        "skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
        "upper-lip", "lower-lip",
    ), title="Face parts to replace", description="region mask only: the parts of the face that are swapped")
    areas: tuple[FaceArea, ...] = Field(("upper-face", "lower-face", "mouth"), title="Face areas to replace",
                                        description="area mask only: upper-face (brows to nose), lower-face "
                                        "(nose to chin), mouth (the lips), from the 68 landmarks "
                                        "(landmarks.model; else estimated from five points)")

    @field_validator("padding")
    @classmethod
    def _padding_range(cls, value: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        if any(not 0 <= v <= 100 for v in value):
            raise ValueError("each padding must be between 0 and 100")
        return value

    @field_validator("types")
    @classmethod
    def _types_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _at_least_one(value, "mask type")

    @field_validator("areas")
    @classmethod
    def _areas_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _at_least_one(value, "area")


class ColorSettings(_Section):
    method: ColorMethod = Field("reinhard", title="Colour matching",
                                description="the face swapper's output matched to the target face's "
                                "colours (the later processors work on, and keep, the matched swap)")
    strength: Unit = Field(1.0, title="Colour matching strength (0–1)",
                           description="0 = the swapper's own colours, 1 = fully matched")


class LandmarkSettings(_Section):
    model: LandmarkerName = Field("none", title="Landmark model",
                                  description="68 face points for a steadier fit (optional)")


class TrackerSettings(_Section):
    enabled: bool = Field(True, title="Track faces across frames",
                          description="videos: follow each face and smooth its position")
    max_gap: int = Field(8, ge=0, le=120, title="Bridge lost faces (frames)",
                         description="frames a lost face is interpolated across")
    min_cutoff: float = Field(0.3, gt=0.0, le=100.0, title="Steadiness (Hz)",
                              description="One-Euro filter (Hz): lower = smoother, higher = follows faster",
                              json_schema_extra={"ui_range": [0.05, 5.0]})
    beta: float = Field(3.0, ge=0.0, le=100.0, title="Follow fast motion",
                        description="One-Euro filter: speed response (face sizes/s); higher lags less",
                        json_schema_extra={"ui_range": [0.0, 20.0]})
    scene_cut: Unit = Field(0.35, title="Scene-cut sensitivity (0–1)",
                            description="histogram distance that starts a new scene; lower cuts more often")


class ReportSettings(_Section):
    """The quality report written with every render (pipeline/quality/): what it measures, what it flags."""

    identity: bool = Field(True, title="Judge identity",
                           description="score each swapped face against the source with SFace "
                           "(off: faster; the report keeps faces, misses and jitter)")
    identity_every: int = Field(30, ge=1, le=300, title="Judge every Nth frame",
                                description="judge identity on every Nth frame only (30: about once a "
                                "second; 1 = every frame: the judge is the report's costly part, two SFace "
                                "runs a face)")
    identity_min: Unit = Field(0.3, title="Identity flag below (0–1)",
                               description="flag frames whose swapped face resembles the source less "
                               "than this (SFace cosine; 0.363 = same person)")
    jitter_max: float = Field(0.1, gt=0.0, le=1.0, title="Jitter flag above (face sizes)",
                              description="flag frames whose face landmarks shake more than this, as a "
                              "fraction of the face's size")
    profile_turn: float = Field(0.5, gt=0.0, le=5.0, title="Side-on flag above (eye distances)",
                                description="flag frames whose swapped face is turned aside more than this: "
                                "the nose tip's distance from the middle of the eyes, in eye distances "
                                "(about 0.1 facing the camera, over 1 in profile)")


class VideoSettings(_Section):
    # the trim (video/trim.py reads it): finite times, so a job stores what was asked (JSON has no inf)
    start: float | None = Field(None, ge=0.0, allow_inf_nan=False, title="Start at (s)",
                                description="trim start (s); empty = beginning")
    end: float | None = Field(None, gt=0.0, allow_inf_nan=False, title="End at (s)",
                              description="trim end (s); empty = the end")
    keep_audio: bool = Field(True, title="Keep the sound",
                             description="copy the target's audio into the result")
    allow_damaged: bool = Field(False, title="Render a damaged video",
                                description="render what can be read of a damaged video (a notice)")


class OutputSettings(_Section):
    """The output file a creator chooses: its container and codec (``video/formats.py`` says which go
    together and what the app changes, before a run), quality, frame rate and size."""

    container: Container = Field("auto", title="Container",
                                 description="the file type of a video the app names; a name given with its "
                                 "own extension (--output, a batch's pattern) keeps it",
                                 json_schema_extra={"choice_words": [
                                     ["auto", "auto (the codec's own, else .mp4)"]]})
    encoder: Encoder = Field("auto", title="Video codec",
                             description="auto: H.264 on the GPU where it works (VP9 in a .webm)",
                             json_schema_extra={"choice_words": [
                                 ["auto", "auto (H.264, GPU where it works)"],
                                 ["libx264", "H.264 (libx264)"], ["libx265", "HEVC (libx265)"],
                                 ["h264_nvenc", "H.264 (NVIDIA GPU)"], ["hevc_nvenc", "HEVC (NVIDIA GPU)"],
                                 ["av1_nvenc", "AV1 (NVIDIA GPU)"],
                                 ["libvpx-vp9", "VP9 (.webm, keeps transparency)"],
                                 ["prores_ks", "ProRes 4444 (.mov, keeps transparency)"]]})
    quality: int = Field(80, ge=0, le=100, title="Video quality (%)",
                         description="0 = smallest file, 100 = best")
    preset: EncoderPreset = Field("medium", title="Encoding speed",
                                  description="faster encodes make larger files at the same quality")
    fps: float | None = Field(None, ge=1.0, le=240.0, allow_inf_nan=False, title="Frame rate (fps)",
                              description="empty = the target's; a number: frames dropped or repeated to it",
                              json_schema_extra={"placeholder": "the target's"})
    size: str = Field("keep", title="Resolution",
                      description="keep, a height (720p) or a factor (0.5x) of the target's size",
                      json_schema_extra={"suggest": ["keep", "2160p", "1440p", "1080p", "720p", "480p",
                                                     "0.5x"]})
    image_quality: int = Field(95, ge=1, le=100, title="Image quality (%)", description="JPEG/WebP quality")

    @field_validator("size", mode="before")
    @classmethod
    def _size_words(cls, value: Any) -> Any:
        return output_size_text(value)


_SIZE = re.compile(r"^(?:(?P<height>\d+)\s*p?|(?P<factor>\d*\.?\d+)\s*[x×]|(?P<percent>\d*\.?\d+)\s*%)$")


def output_size_text(value: Any) -> str:
    """``output.size`` in its one spelling: ``keep``, ``720p`` (a height, 16–8640) or ``0.5x`` (a factor,
    0.1–4; ``50%`` is ``0.5x``); anything else refused in one line."""
    text = str(value).strip().lower()
    if text in ("keep", "", "none", "same"):
        return "keep"
    match = _SIZE.match(text)
    if match is None:
        raise ValueError("a resolution is keep, a height such as 720p or a factor such as 0.5x")
    if match["height"] is not None:
        height = int(match["height"])
        if not 16 <= height <= 8640:
            raise ValueError("a height is 16p to 8640p")
        return f"{height}p"
    factor = float(match["factor"]) if match["factor"] is not None else float(match["percent"]) / 100
    if not 0.1 <= factor <= 4.0:
        raise ValueError("a factor is 0.1x to 4x")
    return f"{factor:g}x"


class ExecutionSettings(_Section):
    providers: tuple[Provider, ...] = Field(("tensorrt", "cuda", "cpu"), title="Run models on",
                                            description="tried in order; only what works here is offered")
    batch_size: Literal["auto"] | Annotated[int, Field(ge=1, le=256)] = Field(
        "auto", title="Frames per batch", description="auto picks for the device; more uses more memory")
    threads: int = Field(0, ge=0, le=256, title="CPU threads",
                         description="threads per model (0 = shared out by cost: the heaviest stage gets "
                         "what the rest leave)",
                         json_schema_extra={"ui_range": [0, 64]})
    queue_size: int = Field(8, ge=1, le=256, title="Frames in flight",
                            description="frames buffered between stages; more uses more memory",
                            json_schema_extra={"ui_range": [1, 64]})
    model_memory: Literal["auto"] | Annotated[int, Field(ge=64, le=1 << 24)] = Field(
        "auto", title="Model memory (MB)",
        description="loaded models may hold this much together; least recently used ones are dropped past "
        "it (auto: 3/4 of free RAM, or of free GPU memory)")

    @field_validator("providers")
    @classmethod
    def _providers_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _at_least_one(value, "provider")


class ExpressionRestorerSettings(ProcessorSection):
    processor: ClassVar[str] = "expression_restorer"
    model: LivePortraitModel = Field("live_portrait", title="Expression restorer model",
                                     description="LivePortrait: puts the target's own expression back on "
                                     "the processed face")
    factor: int = Field(80, ge=0, le=100, title="Expression restored (%)",
                        description="how much of the target's expression comes back (80 = FaceFusion's "
                        "default; above about 83 it is exaggerated)")
    areas: tuple[RestorerArea, ...] = Field(("upper-face", "lower-face"), title="Face areas restored",
                                            description="upper-face: brows and eyes; lower-face: mouth "
                                            "and jaw")

    @field_validator("areas")
    @classmethod
    def _areas_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _at_least_one(value, "area")


Slider = Annotated[float, Field(ge=-1.0, le=1.0, multiple_of=0.05)]


def _slider(title: str, description: str) -> Any:
    return Field(0.0, title=f"{title} (−1–1)", description=description)


class FaceEditorSettings(ProcessorSection):
    """FaceFusion's fourteen face-editor sliders; all at 0 leave the face untouched (FaceFusion re-renders
    it)."""

    processor: ClassVar[str] = "face_editor"
    model: LivePortraitModel = Field("live_portrait", title="Face editor model",
                                     description="LivePortrait: moves the face's expression and head pose")
    eyebrow_direction: Slider = _slider("Eyebrows", "down (−) or up (+)")
    eye_gaze_horizontal: Slider = _slider("Gaze left/right", "where the eyes look, sideways")
    eye_gaze_vertical: Slider = _slider("Gaze up/down", "where the eyes look, up or down")
    eye_open_ratio: Slider = _slider("Eyes open", "close (−) or open (+) the eyes (needs landmarks.model)")
    lip_open_ratio: Slider = _slider("Lips open", "close (−) or open (+) the lips (needs landmarks.model)")
    mouth_grim: Slider = _slider("Grim", "a grim mouth")
    mouth_pout: Slider = _slider("Pout", "a pouting mouth")
    mouth_purse: Slider = _slider("Purse", "pursed lips")
    mouth_smile: Slider = _slider("Smile", "frown (−) or smile (+)")
    mouth_position_horizontal: Slider = _slider("Mouth left/right", "moves the mouth sideways")
    mouth_position_vertical: Slider = _slider("Mouth up/down", "moves the mouth up or down")
    head_pitch: Slider = _slider("Head pitch", "nods the head (±20°)")
    head_yaw: Slider = _slider("Head yaw", "turns the head (±60°)")
    head_roll: Slider = _slider("Head roll", "tilts the head (±15°)")

    def sliders(self) -> dict[str, float]:
        """Every slider by name (the model left out)."""
        return {k: float(v) for k, v in self.model_dump().items() if k != "model"}
class LipSyncerSettings(ProcessorSection):
    processor: ClassVar[str] = "lip_syncer"
    model: LipSyncerName = Field("wav2lip_gan_96", title="Lip sync model",
                                 description="lip_syncer: the mouth follows the audio (wav2lip: the lower "
                                 "face at 96 px; edtalk_256: the whole face at 256 px)")
    weight: float = Field(0.5, ge=0.0, le=1.0, multiple_of=0.05, title="Lip sync strength (0–1)",
                          description="how strongly the audio moves the mouth (0.5 = the model's own)")
    voice_extractor: VoiceExtractorName = Field(
        "none", title="Voice extractor",
        description="lip_syncer: takes the voice out of music and noise before the mouth follows it "
        "(none: the sound as it is; kim_vocal_2 is FaceFusion's choice)")


DEEP_SWAPPER_MODELS: tuple[str, ...] = typing.get_args(DeepSwapperName)
_CUSTOM_DFM = re.compile(CUSTOM_DFM_NAME)


class DeepSwapperSettings(ProcessorSection):
    """DeepFaceLive's DFM models: the identity is in the file (no source photo needed)."""

    processor: ClassVar[str] = "deep_swapper"
    model: str = Field("iperov/elon_musk_224", title="Deep swapper model",
                       description="a DeepFaceLive model (scope/name) or custom/<name> for your own "
                       "<name>.dfm in the models folder's custom/ folder")
    morph: int = Field(100, ge=0, le=100, title="Morph (%)",
                       description="AMP models only: how far the face is morphed into the model's identity")

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value in DEEP_SWAPPER_MODELS or _CUSTOM_DFM.fullmatch(value):
            return value
        raise ValueError(f"choose one of {', '.join(DEEP_SWAPPER_MODELS)}, or custom/<file stem> of a .dfm "
                         "file in the models folder's custom/ folder")


class AgeModifierSettings(ProcessorSection):
    """FaceFusion's age modifier; a direction of 0 leaves the processor out (the face untouched)."""

    processor: ClassVar[str] = "age_modifier"
    model: AgeModifierName = Field("fran", title="Age modifier model",
                                   description="fran: ages the face from its estimated age; styleganex_age: "
                                   "re-draws the head and its surroundings (1.3 GB)")
    direction: int = Field(0, ge=-100, le=100, title="Age direction (−100–100)",
                           description="younger (−) or older (+); 0 leaves the face as it is")


# --- background_remover (docs/processors.md §7) ---------------------------------------------------------
TRANSPARENT = "transparent"


def colour_rgb(text: str) -> tuple[int, int, int]:
    """``#RRGGBB`` or ``R,G,B`` (0..255 each) -> (R, G, B); ValueError naming the forms that work."""
    value = text.strip().lower()
    try:
        if value.startswith("#") and len(value) == 7:
            rgb = tuple(int(value[i:i + 2], 16) for i in (1, 3, 5))
        else:
            rgb = tuple(int(p) for p in value.split(","))
    except ValueError:
        rgb = ()
    if len(rgb) != 3 or not all(0 <= c <= 255 for c in rgb):
        raise ValueError(f"'{text}' is not a colour: use #RRGGBB or R,G,B (0-255 each)")
    return rgb[0], rgb[1], rgb[2]


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


class BackgroundRemoverSettings(ProcessorSection):
    processor: ClassVar[str] = "background_remover"
    model: BackgroundRemoverName = Field("modnet", title="Background remover",
                                         description="the model that finds the person (modnet: fast; "
                                         "birefnet, rmbg_2.0: finer edges, slower)")
    fill: str = Field("#00ff00", title="Background",
                      description="a colour (#RRGGBB or R,G,B) painted over the background, or "
                      "'transparent' (only .png/.webp stills, .webm/.mov videos carry it); green screen by "
                      "default, which every output format keeps")
    despill: str = Field("none", title="Despill colour",
                         description="the screen colour whose spill is taken out of the edges (#RRGGBB or "
                         "R,G,B), or 'none'")

    @field_validator("fill")
    @classmethod
    def _fill_colour(cls, value: str) -> str:
        text = value.strip().lower()
        return TRANSPARENT if text == TRANSPARENT else _hex(colour_rgb(text))

    @field_validator("despill")
    @classmethod
    def _despill_colour(cls, value: str) -> str:
        text = value.strip().lower()
        return "none" if text in ("none", "") else _hex(colour_rgb(text))

    @property
    def transparent(self) -> bool:
        return self.fill == TRANSPARENT

    @property
    def makes_alpha(self) -> bool:
        return self.transparent


class FrameSharpenerSettings(ProcessorSection):
    """An unsharp mask on the whole frame (no model); an amount of 0 leaves the processor out."""

    processor: ClassVar[str] = "frame_sharpener"
    amount: int = Field(50, ge=0, le=300, multiple_of=5, title="Sharpening (%)",
                        description="how much of the frame's fine detail is added again on top (0 = none)")
    radius: float = Field(1.0, ge=0.5, le=5.0, multiple_of=0.5, title="Detail size (px)",
                          description="the blur the detail is measured against: small sharpens fine "
                          "texture, large the broad edges")


# the names processors.order takes: the processor sections' (every ProcessorSection above)
if TYPE_CHECKING:
    ProcessorName = str
else:
    ProcessorName = Literal[tuple(section.processor for section in ProcessorSection.__subclasses__())]


class ProcessorSettings(_Section):
    # the swapper alone: the enhancer's model is none until a creator chooses one, and a processor ticked
    # by default that changes nothing would be a control set and ignored
    order: tuple[ProcessorName, ...] = Field(("face_swapper",), title="Processors, in order",
                                             description="what is done, in this order: face processors work "
                                             "on each chosen face, frame processors on the whole frame (one "
                                             "that changes nothing as set, an enhancer set to none, is said)")

    @field_validator("order")
    @classmethod
    def _order_not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("at least one processor is needed")
        if len(set(value)) != len(value):
            raise ValueError("each processor may appear once")
        return value


# --- markers: settings that change at a frame of the clip (pipeline/markers.py runs them) -----------------
# what a marker may not change: the trim, the output file's stream, the machine, the report's thresholds (one
# output, one encoder, one report for the whole clip)
MARKER_FIXED = ("video", "output", "execution", "report")
_TIME = re.compile(r"^(?:(?:(\d+):)?(\d+):)?(\d+(?:\.\d*)?)$")


def marker_place(text: str) -> dict[str, Any]:
    """Where a marker is, as typed: ``120`` (a frame of the clip), ``80s`` / ``80.5s`` or ``1:20`` /
    ``00:01:20.5`` (a time in the clip) -> ``{"frame": 120}`` or ``{"time": 80.0}``; ValueError in words."""
    value = text.strip().lower()
    if value.isdigit():
        return {"frame": int(value)}
    timed = value[:-1].strip() if value.endswith("s") else value
    match = _TIME.match(timed)
    if match and (value.endswith("s") or ":" in value):
        hours, minutes, seconds = match.groups()
        return {"time": int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds)}
    raise ValueError(f"'{text}' is not a marker's place: give a frame (120) or a time (80s, 1:20, "
                     "00:01:20.5)")


class Marker(_Section):
    """Settings that take effect from a frame of the clip on: ``frame`` (the clip's frame number, 0 = its
    first) or ``time`` (seconds into the clip; the frame shown then, as the trim counts), and ``changes``
    (``section.key`` -> value, the keys ``--set`` takes) applied on top of the settings before it. Given as
    ``at`` ("00:01:20", "80s", "120") it is stored as a frame or a time."""

    frame: int | None = Field(None, ge=0)
    time: float | None = Field(None, ge=0.0)
    changes: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _at(cls, data: Any) -> Any:
        if isinstance(data, dict) and "at" in data:
            rest = {k: v for k, v in data.items() if k != "at"}
            try:
                return {**rest, **marker_place(str(data["at"]))}
            except ValueError as exc:
                raise PydanticCustomError("marker", str(exc)) from None
        return data

    @model_validator(mode="after")
    def _one_place(self) -> Marker:
        if (self.frame is None) == (self.time is None):
            raise PydanticCustomError("marker", "a marker is at a frame or at a time: give one of them")
        if not self.changes:
            raise PydanticCustomError("marker", f"the marker at {self.label} changes nothing: give "
                                      "section.key=value")
        changes = {current_key(k): v for k, v in self.changes.items()}
        for key in changes:
            if key.partition(".")[0] in MARKER_FIXED:
                raise PydanticCustomError("marker", f"the marker at {self.label} cannot change {key}: the "
                                 f"{', '.join(MARKER_FIXED)} settings hold for the whole render")
        object.__setattr__(self, "changes", changes)
        return self

    @property
    def label(self) -> str:
        """Where it is, in words: "frame 120" or "80 s"."""
        return f"frame {self.frame}" if self.frame is not None else f"{self.time:g} s"

    @property
    def order(self) -> float:
        """A key that sorts markers of one kind (frames or times) by place."""
        return float(self.frame if self.frame is not None else self.time or 0.0)


class Settings(_Section):
    version: int = SCHEMA_VERSION
    processors: ProcessorSettings = ProcessorSettings()
    detector: DetectorSettings = DetectorSettings()
    selector: SelectorSettings = SelectorSettings()
    face_swapper: SwapperSettings = SwapperSettings()
    face_enhancer: EnhancerSettings = EnhancerSettings()
    frame_colorizer: FrameColorizerSettings = FrameColorizerSettings()
    frame_enhancer: FrameEnhancerSettings = FrameEnhancerSettings()
    mask: MaskSettings = MaskSettings()
    color: ColorSettings = ColorSettings()
    landmarks: LandmarkSettings = LandmarkSettings()
    tracker: TrackerSettings = TrackerSettings()
    report: ReportSettings = ReportSettings()
    video: VideoSettings = VideoSettings()
    output: OutputSettings = OutputSettings()
    execution: ExecutionSettings = ExecutionSettings()
    expression_restorer: ExpressionRestorerSettings = ExpressionRestorerSettings()
    face_editor: FaceEditorSettings = FaceEditorSettings()
    lip_syncer: LipSyncerSettings = LipSyncerSettings()
    deep_swapper: DeepSwapperSettings = DeepSwapperSettings()
    age_modifier: AgeModifierSettings = AgeModifierSettings()
    background_remover: BackgroundRemoverSettings = BackgroundRemoverSettings()
    frame_sharpener: FrameSharpenerSettings = FrameSharpenerSettings()
    # settings that change at a frame (README "Markers"); sorted by place, each at its own place
    markers: tuple[Marker, ...] = ()

    @field_validator("markers")
    @classmethod
    def _markers_valid(cls, value: tuple[Marker, ...], info: ValidationInfo) -> tuple[Marker, ...]:
        """Each marker's changes validated on top of the settings before it (the one validator: a bad
        value is said as ``--set`` says it, naming the marker); sorted by place, no two at one place."""
        frames = sorted((m for m in value if m.frame is not None), key=lambda m: m.order)
        times = sorted((m for m in value if m.time is not None), key=lambda m: m.order)
        for same in (frames, times):
            for a, b in zip(same, same[1:], strict=False):
                if a.order == b.order:
                    raise PydanticCustomError("marker", "two markers at {at}: keep one", {"at": a.label})
        if not value or len(info.data) < len(Settings.model_fields) - 1:  # a section failed already
            return tuple(frames + times)
        current = Settings.model_construct(**info.data)
        for marker in [*frames, *times]:  # a frame's and a time's order are known once the clip's rate is
            try:
                current = apply_overrides(current, marker.changes)
            except SettingsError as exc:
                raise PydanticCustomError("marker", "marker at {at}: {why}",
                                          {"at": marker.label, "why": str(exc)}) from None
        return tuple(frames + times)


def _describe(error: ValidationError) -> str:
    """One message per bad key. A key that takes a literal or a number (``auto`` or N) fails in both branches
    of its union: that is said once, "Input should be greater than or equal to 1, or 'auto' (got '0')"."""
    by_key: dict[str, list[Any]] = {}
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"][:2] if not isinstance(p, int)) or "settings"
        by_key.setdefault(key, []).append(item)
    parts = []
    for key, items in by_key.items():
        if items[0]["type"] == "extra_forbidden":
            parts.append(unknown_key(key))
            continue
        literals = [i for i in items if i["type"] == "literal_error"]
        others = [i for i in items if i["type"] != "literal_error"] or literals
        message = "; ".join(dict.fromkeys(i["msg"] for i in others))
        if literals and others is not literals:
            message += ", or " + " or ".join(i["ctx"]["expected"] for i in literals)
        value = items[0].get("input")
        shown = "" if isinstance(value, dict) or items[0]["type"] == "marker" else f" (got {value!r})"
        parts.append(f"{key}: {message}{shown}")
    return "; ".join(parts)


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Settings data of an older schema (a job queued before, a settings dump) in this schema's names: each
    renamed section under its new name, the version this one's. A section given under both names is
    refused."""
    out = dict(data)
    for old, new in RENAMED_SECTIONS.items():
        if old in out:
            if new in out:
                raise SettingsError(f"settings give both '{old}' and '{new}': '{old}' is the old name of "
                                    f"'{new}', keep one")
            out[new] = out.pop(old)
    version = out.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        out["version"] = SCHEMA_VERSION
    return out


def current_key(key: str) -> str:
    """``section.key`` in this schema's names (``swapper.model`` -> ``face_swapper.model``)."""
    section, dot, name = key.partition(".")
    return f"{RENAMED_SECTIONS[section]}{dot}{name}" if section in RENAMED_SECTIONS else key


def validate(data: dict[str, Any], *, strict: bool = False) -> Settings:
    """Build settings from plain data (an older schema's upgraded first), raising SettingsError naming each
    bad key. ``strict`` (a preset file): every value must already be of its key's JSON type (``true`` is no
    number, ``"0.5"`` no fraction)."""
    data = upgrade(data)
    try:
        if strict:
            return Settings.model_validate_json(json.dumps(data), strict=True)
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


def key_choosing(value: str) -> str | None:
    """The settings key (``section.key``) among whose choices ``value`` is: a model's name -> the setting that
    picks it (None: no setting offers it)."""
    for key, info in keys().items():
        if value in _choices(info.annotation):
            return key
    return None


def _choices(annotation: Any) -> tuple[Any, ...]:
    """The literal values an annotation allows (a union's, a tuple's items'), none for a free value."""
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    return tuple(c for arg in typing.get_args(annotation) for c in _choices(arg))


def unknown_key(key: str) -> str:
    """"unknown settings key 'KEY'" with the closest keys (by the whole key, then a key of that name in
    another section), else the keys of the closest section, else the sections: a few names, never all keys."""
    fields = list(keys())
    name = key.rpartition(".")[2]
    close = difflib.get_close_matches(key, fields, n=3, cutoff=0.6)
    close = list(dict.fromkeys(close + [f for f in fields if f.rpartition(".")[2] == name]))[:3]
    if not close:
        sections = list(dict.fromkeys(f.partition(".")[0] for f in fields))
        near = difflib.get_close_matches(key.partition(".")[0], sections, n=1, cutoff=0.6)
        if not near:
            return f"unknown settings key '{key}': a key is section.key, in one of {', '.join(sections)}"
        close = [f for f in fields if f.startswith(f"{near[0]}.")]
        close = difflib.get_close_matches(key, close, n=3, cutoff=0) or close[:3]
    return f"unknown settings key '{key}': did you mean {' or '.join(close)}?"


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
    given: list[str] = []
    for key, value in items:
        key = current_key(key)
        if key not in fields:
            raise SettingsError(unknown_key(key))
        section, name = key.split(".", 1)
        if isinstance(value, str):
            value = _parse_value(value, fields[key].annotation)
        data[section][name] = value
        given.append(key)
    return validate(_joined(data, given))


def with_used_processors(settings: Settings, given: list[str]) -> Settings:
    """``settings`` whose ``given`` keys (``section.key``, say a preset file's) were set: each processor whose
    own settings they changed is in the order unless they set the order too (the rule of :func:`_joined`)."""
    return validate(_joined(settings.model_dump(), given))


def _joined(data: dict[str, Any], given: list[str]) -> dict[str, Any]:
    """``data`` with each processor whose settings the overrides (``given`` keys) changed from their
    defaults put at the end of ``processors.order``, where the overrides do not set the order themselves:
    ``--set face_enhancer.model=gfpgan_1.4`` enhances (the enhancer is not in the default order until its
    model is chosen), as ticking it in the UI does; a processor's setting is never set and ignored."""
    if "processors.order" in given:
        return data
    processors = {section.processor for section in ProcessorSection.__subclasses__()}
    order = tuple(data["processors"]["order"])
    for key in given:
        name, field = key.split(".", 1)
        if name in processors and name not in order and \
                data[name][field] != getattr(Settings.model_fields[name].default, field):
            order = (*order, name)
    data["processors"]["order"] = order
    return data


def _split(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise SettingsError(f"--set expects section.key=value, got {item!r}")
    return key.strip(), value


def to_json(settings: Settings) -> str:
    return settings.model_dump_json(indent=2)
