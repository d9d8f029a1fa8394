"""Cost twins: random-weight ONNX models with a real model's I/O, structure, size and cost.

Usage: .venv/bin/python scripts/make_twins.py DIR [--only NAME ...] [--force] [--no-run]
(or ``python -m twins``; the modules: ``graph`` the writer and cost counter, ``faces`` and ``processors``
the layers, ``build`` the catalog of twins, the cache and the command)

No machine of this project can download the real weights, so speed and memory are measured on twins:
graphs built here with ``onnx.helper`` whose inputs and outputs are those of the real files (names,
shapes including the batch dims as exported, dtypes), whose layers follow the published architecture,
and whose weights are random (fixed seeds: the same file on every machine with the same numpy). Each
twin is written under its catalog file name (``DIR/inswapper_128.onnx``…), so DIR can serve as a models
folder. Twins are generated, never committed; ``DIR/twins.json`` records each file's spec digest, size
and sha256, and a twin whose file still matches is not rebuilt (``--force`` rebuilds). Weights are
streamed to disk one tensor at a time (the protobuf is written field by field), so building the 554 MB
swapper holds one layer in memory, never the model.

Cost convention: MAC = one multiply-accumulate of a Conv, ConvTranspose, Gemm or MatMul, read off the built
graph with ONNX shape inference; GFLOP = 2 × GMAC. Element-wise ops, norms, resizes and activations are not
counted (< 1 %). Published figures are quoted in their own convention (mmcv's and ptflops' "FLOPs" count
multiply-adds, i.e. MACs).

Twins, targets and sources:
- inswapper_128 (catalog ``inswapper_128``; real ``inswapper_128.onnx`` ≈ 554 MB fp32). Structure as
  given in issue 10: encoder 7×7 reflect-padded 3→128, 3×3 128→256, stride-2 256→512, stride-2 512→1024;
  six residual style blocks of two 3×3 1024→1024 convs, each followed by instance norm and an AdaIN
  scale/shift (two Gemms 512→1024) from the 512-d latent, ReLU after the first; decoder bilinear ×2 +
  3×3 1024→512, bilinear ×2 + 3×3 512→256, 3×3 256→128, 7×7 reflect-padded 128→3, tanh mapped to [0, 1].
  The 512×512 ``emap`` is the last initializer and, as in the real file, used by no node. Targets:
  554 MB and 350 GFLOP per face (issue 10, from the published layer structure). Batch fixed to 1 as
  exported; no node hard-codes it, so the loader's dynamic-batch rewrite applies.
- inswapper_128_fp16 (catalog ``inswapper_128_fp16``, real ``inswapper_128.fp16.onnx`` ≈ 277 MB): the
  inswapper_128 twin's file (built first where needed) converted by ``pipeline.models.fp16``, one weight in
  memory at a time: float16 weights, Resize scales in float32, float32 inputs and outputs (the published
  fp16 file is bound with float32 buffers in Rope's ``run_swapper``), the emap still the last initializer.
- arcface_w600k_r50 (``w600k_r50.onnx``): IResNet-50 at 112² (insightface ``iresnet.py``: 3×3 stem +
  PReLU, IBasicBlocks [3, 4, 14, 3] at 64/128/256/512 channels, each stage starting with stride 2,
  BN → Flatten → FC 25088→512 → BN). I/O as the real file reports it: ``input.1`` ['None', 3, 112, 112]
  → ``683`` [1, 512] (insightface's model_zoo log ``w600k_r50.onnx recognition ['None', 3, 112, 112]``;
  the output is noted as ``683: [1, 512]`` in public wrappers). Targets: 43.6 M parameters (≈ 174 MB
  file); 6.3 GMAC per face (insightface ``recognition/arcface_torch/README.md``, table "ViT For Face
  Recognition", row r50: FLOPs 6.3 G).
- gfpgan_1.4 (``GFPGANv1.4.onnx``): GFPGANv1Clean at 512, channel multiplier 2, num_style_feat 512,
  different_w, sft_half, input_is_latent (TencentARC/GFPGAN ``gfpgan/archs/gfpganv1_clean_arch.py`` and
  ``stylegan2_clean_arch.py``): U-Net of bilinear ResBlocks (32→256 channels, 512→4 px and back), a
  Linear 4096→16×512 style code, SFT scale/shift branches per level, a StyleGAN2 decoder of modulated
  convs (512…64 channels, 4→512 px) with noise and ToRGB skips. Modulated convs are written as a batch-1
  export traces them (the style multiplies the weight, which is demodulated and reshaped with a literal
  batch of 1), so this twin, like such an export, keeps batch 1. I/O: ``input`` [1, 3, 512, 512] →
  ``output`` the same. Targets: 85.0 M parameters (real ONNX ≈ 340 MB; the v1.4 checkpoint has 87,143,276
  params_ema per the mlx-community/GFPGANv1.4-fp32 model card, of which the 8-layer style MLP, 2,101,248,
  is unused when the input is latent). No published FLOPs figure was found (searched docs, code, pages
  and issues): the target is the multiply-adds of the published layer table, counted in closed form by
  ``gfpgan_reference_gmac`` (independently of the graph counter).
- scrfd_10g (catalog ``retinaface``, real ``det_10g.onnx`` = SCRFD-10GF with keypoints): insightface
  ``detection/scrfd/configs/scrfd/scrfd_10g_bnkps.py``: ResNetV1e deep stem (28/28/56) + max-pool,
  BasicBlocks (3, 4, 2, 3) at (56, 88, 88, 224) with average-pool shortcuts; PAFPN over strides 8–32 at
  56 channels; per-stride heads of three 3×3 convs at 80 channels (BN folded) and 3×3 cls (2) / bbox (8)
  / kps (20) convs, 2 anchors. I/O as the real file: ``input.1`` [1, 3, '?', '?'] → nine outputs
  ``448, 471, 494`` scores [N, 1], ``451, 474, 497`` boxes [N, 4], ``454, 477, 500`` keypoints [N, 10]
  (batch folded into N, as exported). Scores are biased to ≈ 0: the twin finds no faces; it is for cost,
  not detection. Targets (insightface ``detection/scrfd/README.md``, "SCRFD_10G_KPS | … | 10G | 4.23",
  evaluated at VGA 640×480): 4.23 M parameters, 10 GMAC at 640×480 (mmcv's counter, multiply-adds).
  A 640×640 frame costs 4/3 of that.
- real_esrgan_x4 / real_esrgan_x2 (frame_enhancer; ``real_esrgan_x4.onnx`` / ``real_esrgan_x2.onnx``):
  RRDBNet, 23 RRDB, 64 features, growth 32 (xinntao/Real-ESRGAN ``basicsr/archs/rrdbnet_arch.py``, the
  configuration of ``RealESRGAN_x4plus`` and ``RealESRGAN_x2plus``; the ×2 model pixel-unshuffles its input by
  2 first), layers in ``twins/processors.py``. I/O as the catalog: ``input`` [1, 3, 256, 256] (the catalog's
  tile) → ``output`` [1, 3, 1024, 1024] (×4) / [1, 3, 512, 512] (×2), float32. Targets: parameters ≈ 16.7 M
  (Real-ESRGAN's documentation, model table: RealESRGAN_x4plus ~16.7 M), exactly 16,697,987 (×4) and
  16,703,171 (×2: conv_first takes 12 channels) by the layer table; file 4 bytes a parameter (no size of
  FaceFusion's x2/x4 files is published; its x8 file, one conv more, is 69.6 MB). No FLOPs figure at a
  256² tile is published: the target is the layer table counted in closed form (``rrdbnet_reference``):
  1,174.9 GMAC per 256² tile at ×4, 293.8 at ×2 (the trunk runs at 128²). A 1080p frame is 45 such tiles.
- wav2lip_gan_96 (lip_syncer; ``wav2lip_gan_96.onnx``, the same generator as wav2lip_96): Rudrabha/Wav2Lip
  ``models/wav2lip.py`` (face encoder 96 → 1 px, audio encoder of the mel window, face decoder of transposed
  convs with the encoder's features concatenated, sigmoid output; ``models/conv.py``: conv + BatchNorm +
  ReLU, folded here as an eval-mode export folds it). I/O as the catalog: ``source`` [1, 1, 80, 16] and
  ``target`` [1, 6, 96, 96] → ``output`` [1, 3, 96, 96]. Targets: ≈ 36 M parameters (the figure the task
  gives; no published count was found: the layer table gives 36,275,283, BatchNorm folded), ≈ 144 MB; no
  published multiply-adds either: the layer table in closed form (``wav2lip_reference``), 3.97 GMAC a face.
"""

from __future__ import annotations
