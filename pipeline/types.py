"""The shared vocabulary: array aliases, model names, and the Face record.

Model and option names are spelled once here; the settings model, the catalog, the CLI and the
web UI derive their choices from these Literals with ``typing.get_args``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

Frame: TypeAlias = npt.NDArray[np.uint8]  # H×W×3 BGR uint8
Mask: TypeAlias = npt.NDArray[np.float32]  # H×W float32 in [0, 1]
Alpha: TypeAlias = npt.NDArray[np.uint8]  # H×W uint8 transparency of a frame (255: opaque; None: all opaque)
Embedding: TypeAlias = npt.NDArray[np.float32]  # (D,) L2-normalised
Landmarks5: TypeAlias = npt.NDArray[np.float32]  # (5, 2): left eye, right eye, nose, left mouth, right mouth
Matrix: TypeAlias = npt.NDArray[np.float64]  # 2×3 affine

DetectorName = Literal["yunet", "retinaface", "scrfd", "yolo_face"]
SwapperName = Literal[
    "auto",
    "classic",
    "inswapper_128",
    "inswapper_128_fp16",
    "hyperswap_1a_256",
    "hyperswap_1b_256",
    "hyperswap_1c_256",
    "simswap_256",
    "simswap_512_unoff",
    "ghost_1_256",
    "ghost_2_256",
    "ghost_3_256",
]
EnhancerName = Literal[
    "none",
    "gfpgan_1.4",
    "codeformer",
    "gpen_bfr_256",
    "gpen_bfr_512",
    "gpen_bfr_1024",
    "restoreformer_plus_plus",
]
# frame_enhancer.model: FaceFusion 3.8.1's upscalers (docs/processors.md §1.1), under FaceFusion's names
FrameEnhancerName = Literal[
    "clear_reality_x4", "face_dat_x4", "nomos8k_sc_x4", "real_esrgan_x2", "real_esrgan_x2_fp16",
    "real_esrgan_x4", "real_esrgan_x4_fp16", "real_esrgan_x8", "real_esrgan_x8_fp16", "real_hatgan_x4",
    "real_web_photo_x4", "realistic_rescaler_x4", "remacri_x4", "siax_x4", "span_kendata_x4", "swin2_sr_x4",
    "tghq_face_x8", "ultra_sharp_x4", "ultra_sharp_2_x4",
]
OccluderName = Literal["xseg", "occluder"]
ParserName = Literal["bisenet_resnet34"]
LandmarkerName = Literal["none", "2dfan4"]
ColorizerName = Literal["ddcolor", "ddcolor_artistic", "deoldify", "deoldify_artistic", "deoldify_stable"]
ColorizerSize = Literal["192x192", "256x256", "384x384", "512x512"]
LipSyncerName = Literal["wav2lip_96", "wav2lip_gan_96", "edtalk_256"]  # lip_syncer.model
VoiceExtractorName = Literal["none", "kim_vocal_1", "kim_vocal_2", "uvr_mdxnet"]  # lip_syncer.voice_extractor
# FaceFusion's vocabulary; see pipeline/processors/
ModelRole = Literal["detector", "recogniser", "swapper", "enhancer", "occluder", "parser", "landmarker",
                    "colorizer", "frame_enhancer", "liveportrait", "lip_syncer", "voice_extractor",
                    "deep_swapper", "age_modifier", "classifier", "background_remover"]

# deep_swapper.model: the catalog's DFM models (docs/processors.md §8.1); custom/<stem> names the user's own
DeepSwapperName = Literal["iperov/elon_musk_224", "dflive/keanu_reeves_320", "dflive/jackie_chan"]
CUSTOM_DFM_NAME = r"custom/[A-Za-z0-9][A-Za-z0-9 _.+-]*"  # a name of the user's own custom/<stem>.dfm

SelectorMode = Literal["one", "many", "reference"]
# FairFace's race classes, in the order of its output (pipeline/faces/classify.py)
FaceRace = Literal["white", "black", "latino_hispanic", "east_asian", "southeast_asian", "indian",
                   "middle_eastern"]
FaceGender = Literal["male", "female"]  # FairFace's gender ids 0, 1
SelectorRace = Literal["any", FaceRace]  # selector.race
SelectorGender = Literal["any", FaceGender]  # selector.gender
ClassifierName = Literal["fairface"]  # selector.classifier: the model the selector's filters read faces with
SelectorOrder = Literal["large-small", "small-large", "left-right", "right-left", "top-bottom", "best-score"]
ColorMethod = Literal["none", "reinhard", "mkl", "histogram"]
MaskType = Literal["box", "occlusion", "region", "mouth", "area"]
FaceArea = Literal["upper-face", "lower-face", "mouth"]  # landmark hulls of the area mask (FaceFusion's)
FaceRegion = Literal[
    "skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
    "upper-lip", "lower-lip",
]
Encoder = Literal["auto", "libx264", "libx265", "h264_nvenc", "hevc_nvenc", "av1_nvenc", "libvpx-vp9",
                  "prores_ks"]
Container = Literal["auto", ".mp4", ".mov", ".mkv", ".webm"]  # a video output's file type
EncoderPreset = Literal["fastest", "fast", "medium", "slow", "slowest"]
Provider = Literal["tensorrt", "cuda", "cpu"]
# LivePortrait processors (expression_restorer, face_editor)
LivePortraitModel = Literal["live_portrait"]
RestorerArea = Literal["upper-face", "lower-face"]
# age_modifier (docs/processors.md §5): the model, and FaceFusion's styleganex_384 crop of the head
AgeModifierName = Literal["fran", "styleganex_age"]
Template = Literal["arcface_112_v1", "arcface_112_v2", "arcface_128", "ffhq_512",
                   "dfl_whole_face", "styleganex_384"]


@dataclass(frozen=True, eq=False)
class Face:
    """One detected face in one frame, in that frame's pixel coordinates."""

    box: npt.NDArray[np.float32]  # (4,) x1, y1, x2, y2
    landmarks: Landmarks5
    score: float
    embedding: Embedding | None = None
    landmarks68: npt.NDArray[np.float32] | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def area(self) -> float:
        x1, y1, x2, y2 = (float(v) for v in self.box)
        return max(0.0, x2 - x1) * max(0.0, y2 - y1)

    @property
    def center(self) -> tuple[float, float]:
        x1, y1, x2, y2 = (float(v) for v in self.box)
        return (x1 + x2) / 2, (y1 + y2) / 2

    def with_embedding(self, embedding: Embedding) -> Face:
        return replace(self, embedding=embedding)

    def scaled(self, factor: float) -> Face:
        """The same face in a frame ``factor`` times larger (after an upscaling frame processor)."""
        if factor == 1:
            return self
        lm68 = None if self.landmarks68 is None else (self.landmarks68 * factor).astype(np.float32)
        return replace(self, box=(self.box * factor).astype(np.float32),
                       landmarks=(self.landmarks * factor).astype(np.float32), landmarks68=lm68)


# background_remover.model: FaceFusion 3.8.1's background removers (docs/processors.md §7)
BackgroundRemoverName = Literal[
    "ben_2", "birefnet_general", "birefnet_portrait", "corridor_key_1024", "corridor_key_2048",
    "isnet_general", "modnet", "ormbg", "rmbg_1.4", "rmbg_2.0", "silueta", "u2net_cloth", "u2net_general",
    "u2net_human", "u2netp",
]
