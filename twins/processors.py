"""Cost-twin builders of the processors' heaviest models (twins/build.py holds their targets; ``Net``,
the writer and the cost counter are in twins/graph.py).

Each builder fills a ``Net`` with the published layer table; each ``*_reference`` counts
the same published table in closed form (parameters and multiply-adds), independently of the graph, so a
test can hold the graph to it. BatchNorm after a conv is folded into the conv's bias, as torch's ONNX export
does in eval mode (its parameters are therefore not in the count: 2 per channel, < 0.1 %).

- RRDBNet (Real-ESRGAN ``RealESRGAN_x4plus`` / ``RealESRGAN_x2plus``; xinntao/Real-ESRGAN
  ``basicsr/archs/rrdbnet_arch.py``): conv_first 3×3 → 23 RRDB (three residual dense blocks each: five 3×3
  convs, 64 + i·32 → 32, the fifth → 64, LeakyReLU 0.2 after the first four, out·0.2 + in; the RRDB
  out·0.2 + in) → conv_body 3×3, added to conv_first's output → twice nearest ×2 + 3×3 conv + LeakyReLU →
  conv_hr 3×3 + LeakyReLU → conv_last 3×3 → 3. The ×2 model first pixel-unshuffles its input by 2 (3 → 12
  channels at half the side), so its trunk runs on a quarter of the pixels and its ×4 upsampling gives ×2.
  Written as basicsr's ``pixel_unshuffle`` traces (Reshape → Transpose → Reshape), the batch kept open in
  the Reshapes (0 copies it). What FaceFusion's ``real_esrgan_x2.onnx`` holds is not published; its size
  (×2 plus a 12-channel conv_first) is that of this model.
- Wav2Lip (Rudrabha/Wav2Lip ``models/wav2lip.py`` and ``models/conv.py``, the 96 px generator that both
  wav2lip_96 and wav2lip_gan_96 are): every ``Conv2d`` is conv + BatchNorm + ReLU, ``residual=True`` adding
  the block's input before the ReLU; ``Conv2dTranspose`` is a transposed conv + BatchNorm + ReLU. Face
  encoder 96 → 1 px (6 → 16 → 32 → 64 → 128 → 256 → 512 → 512), audio encoder of the (1, 80, 16) mel window
  to (512, 1, 1), face decoder of transposed convs back to 96 px, each output concatenated with the face
  encoder's feature of the same side, output block 80 → 32 (3×3) → 3 (1×1) → sigmoid.
"""

from __future__ import annotations

import math

import numpy as np

from twins.graph import Net

RRDB_BLOCKS, RRDB_FEAT, RRDB_GROW = 23, 64, 32


# --- RRDBNet (Real-ESRGAN x4plus / x2plus) ------------------------------------------------------------

def rrdbnet(net: Net, scale: int, side: int) -> Net:
    """``net`` filled with RRDBNet for ``scale`` 4 (input as is) or 2 (pixel-unshuffled by 2)."""
    if scale not in (2, 4):
        raise ValueError(f"RRDBNet twins are x2 or x4, not x{scale}")
    feat, grow = net.ch(RRDB_FEAT), net.ch(RRDB_GROW)
    x = net.input("input", [1, 3, side, side])
    cin = 3
    if scale == 2:  # basicsr pixel_unshuffle: (c, h·2, w·2) -> (c·4, h, w), channel c·4 + 2·i + j
        half = side // 2
        x = net.op("Reshape", x, net.const([0, 3, half, 2, half, 2]))
        x = net.op("Transpose", x, perm=[0, 1, 3, 5, 2, 4])
        x = net.op("Reshape", x, net.const([0, 12, half, half]))
        cin = 12
    first = net.conv(x, cin, feat, 3, gain=1.0)
    body = first
    for _ in range(RRDB_BLOCKS):
        body = _rrdb(net, body, feat, grow)
    x = net.op("Add", first, net.conv(body, feat, feat, 3, gain=0.1))
    for _ in range(2):
        x = net.leaky(net.conv(net.resize(x, 2.0, mode="nearest"), feat, feat, 3, gain=1.0))
    x = net.conv(net.leaky(net.conv(x, feat, feat, 3, gain=1.0)), feat, 3, 3, gain=0.1, bias_mean=0.5)
    net.output(x, "output", [1, 3, side * scale, side * scale])
    return net


def _rrdb(net: Net, x: str, feat: int, grow: int) -> str:
    out = x
    for _ in range(3):
        out = _dense_block(net, out, feat, grow)
    return _scaled_residual(net, out, x)


def _dense_block(net: Net, x: str, feat: int, grow: int) -> str:
    features = [x]
    for i in range(4):
        joined = features[0] if i == 0 else net.op("Concat", *features, axis=1)
        features.append(net.leaky(net.conv(joined, feat + i * grow, grow, 3, gain=0.1)))
    x5 = net.conv(net.op("Concat", *features, axis=1), feat + 4 * grow, feat, 3, gain=0.1)
    return _scaled_residual(net, x5, x)


def _scaled_residual(net: Net, out: str, x: str) -> str:
    return net.op("Add", net.op("Mul", out, net.const(0.2, np.float32)), x)


def rrdbnet_reference(scale: int, side: int, feat: int = RRDB_FEAT, grow: int = RRDB_GROW,
                      blocks: int = RRDB_BLOCKS) -> tuple[int, int]:
    """(parameters, multiply-adds) of RRDBNet from its layer table, for a ``side``² input tile."""
    cin = 3 * (4 if scale == 2 else 1)
    trunk = side // (2 if scale == 2 else 1)  # the side the trunk works at

    def conv(ci: int, co: int) -> int:  # 3×3 weights
        return ci * co * 9

    dense = [conv(feat + i * grow, grow) for i in range(4)] + [conv(feat + 4 * grow, feat)]
    dense_bias = 4 * grow + feat
    per_rrdb = 3 * (sum(dense) + dense_bias)
    upsampling = 4 * (conv(feat, feat) + feat)  # conv_body, conv_up1, conv_up2, conv_hr
    params = conv(cin, feat) + feat + blocks * per_rrdb + upsampling + conv(feat, 3) + 3
    px = trunk * trunk
    macs = px * (conv(cin, feat) + blocks * 3 * sum(dense) + conv(feat, feat))  # conv_first, body, conv_body
    macs += 4 * px * conv(feat, feat) + 16 * px * (2 * conv(feat, feat) + conv(feat, 3))  # up1; up2, hr, last
    return params, macs


# --- Wav2Lip (96 px) ----------------------------------------------------------------------------------

# (C_in, C_out, kernel, stride, padding, residual) per Conv2d block, as in models/wav2lip.py
Block = tuple[int, int, int, int | tuple[int, int], int, bool]
FACE_ENCODER: tuple[tuple[Block, ...], ...] = (
    ((6, 16, 7, 1, 3, False),),  # 96
    ((16, 32, 3, 2, 1, False), (32, 32, 3, 1, 1, True), (32, 32, 3, 1, 1, True)),  # 48
    ((32, 64, 3, 2, 1, False), *((64, 64, 3, 1, 1, True),) * 3),  # 24
    ((64, 128, 3, 2, 1, False), *((128, 128, 3, 1, 1, True),) * 2),  # 12
    ((128, 256, 3, 2, 1, False), *((256, 256, 3, 1, 1, True),) * 2),  # 6
    ((256, 512, 3, 2, 1, False), (512, 512, 3, 1, 1, True)),  # 3
    ((512, 512, 3, 1, 0, False), (512, 512, 1, 1, 0, False)),  # 1
)
AUDIO_ENCODER: tuple[Block, ...] = (
    (1, 32, 3, 1, 1, False), *((32, 32, 3, 1, 1, True),) * 2,  # 80 × 16
    (32, 64, 3, (3, 1), 1, False), *((64, 64, 3, 1, 1, True),) * 2,  # 27 × 16
    (64, 128, 3, 3, 1, False), *((128, 128, 3, 1, 1, True),) * 2,  # 9 × 6
    (128, 256, 3, (3, 2), 1, False), (256, 256, 3, 1, 1, True),  # 3 × 3
    (256, 512, 3, 1, 0, False), (512, 512, 1, 1, 0, False),  # 1 × 1
)
# per decoder block: (transposed conv C_in, C_out, stride) or None for the first (a 1×1 Conv2d 512 → 512),
# then the residual 3×3 Conv2d blocks at C_out that follow it
FACE_DECODER: tuple[tuple[tuple[int, int, int] | None, int], ...] = (
    (None, 0), ((1024, 512, 1), 1), ((1024, 512, 2), 2), ((768, 384, 2), 2), ((512, 256, 2), 2),
    ((320, 128, 2), 2), ((160, 64, 2), 2),
)


def wav2lip(net: Net) -> Net:
    """``net`` filled with the Wav2Lip 96 generator: (source (1, 1, 80, 16), target (1, 6, 96, 96)) ->
    (1, 3, 96, 96) in [0, 1]."""
    ch = net.ch
    audio = net.input("source", [1, 1, 80, 16])
    x = net.input("target", [1, 6, 96, 96])
    feats = []
    for stage in FACE_ENCODER:
        for block in stage:
            x = _conv_block(net, x, block)
        feats.append(x)
    a = audio
    for block in AUDIO_ENCODER:
        a = _conv_block(net, a, block)
    x = a
    for up, residuals in FACE_DECODER:
        if up is None:
            x = _conv_block(net, x, (512, 512, 1, 1, 0, False))
        else:
            cin, cout, stride = up
            x = _conv_transpose_block(net, x, ch(cin), ch(cout), stride)
            for _ in range(residuals):
                x = _conv_block(net, x, (cout, cout, 3, 1, 1, True))
        x = net.op("Concat", x, feats.pop(), axis=1)
    x = _conv_block(net, x, (80, 32, 3, 1, 1, False))
    x = net.op("Sigmoid", net.conv(x, ch(32), 3, 1, pad=0, gain=1.0))
    net.output(x, "output", [1, 3, 96, 96])
    return net


def _conv_block(net: Net, x: str, block: Block) -> str:
    """wav2lip's Conv2d: conv (BatchNorm folded into its bias), + the input if residual, ReLU."""
    cin, cout, k, stride, pad, residual = block
    y = net.conv(x, net.ch(cin) if cin > 6 else cin, net.ch(cout), k, stride=stride, pad=pad,
                 gain=0.5 if residual else math.sqrt(2.0))
    return net.relu(net.op("Add", y, x) if residual else y)


def _conv_transpose_block(net: Net, x: str, cin: int, cout: int, stride: int) -> str:
    """wav2lip's Conv2dTranspose: k 3, padding 0 at stride 1 (1 → 3 px), else padding 1 + output padding 1
    (side × 2); BatchNorm folded into the bias; ReLU."""
    pad, extra = (0, 0) if stride == 1 else (1, 1)
    w = net.weight((cin, cout, 3, 3), math.sqrt(2.0) / math.sqrt(cin * 9 / stride**2))
    y = net.op("ConvTranspose", x, w, net.weight((cout,), 0.0), kernel_shape=[3, 3], strides=[stride] * 2,
               pads=[pad] * 4, output_padding=[extra] * 2)
    return net.relu(y)


def wav2lip_reference() -> tuple[int, int]:
    """(parameters, multiply-adds) of the Wav2Lip 96 generator from its layer table (BatchNorm folded)."""
    params = macs = 0

    def conv(block: Block, h: int, w: int) -> tuple[int, int]:
        cin, cout, k, stride, pad, _ = block
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        oh, ow = (h + 2 * pad - k) // sh + 1, (w + 2 * pad - k) // sw + 1
        nonlocal params, macs
        params += cin * cout * k * k + cout
        macs += oh * ow * cout * cin * k * k
        return oh, ow

    side = (96, 96)
    for stage in FACE_ENCODER:
        for block in stage:
            side = conv(block, *side)
    side = (80, 16)
    for block in AUDIO_ENCODER:
        side = conv(block, *side)
    side = conv((512, 512, 1, 1, 0, False), *side)  # the decoder's first block
    for up, residuals in FACE_DECODER[1:]:
        assert up is not None
        cin, cout, stride = up
        params += cin * cout * 9 + cout
        macs += side[0] * side[1] * cin * cout * 9  # each input pixel spreads over a 3×3 of outputs
        side = (3, 3) if stride == 1 else (2 * side[0], 2 * side[1])
        for _ in range(residuals):
            side = conv((cout, cout, 3, 1, 1, True), *side)
    side = conv((80, 32, 3, 1, 1, False), *side)
    conv((32, 3, 1, 1, 0, False), *side)
    return params, macs


# --- the builders (twins/build.py's TWINS) ------------------------------------------------------------

ENHANCER_TILE = 256  # the catalog's tile for real_esrgan_x2/x4 (entry.tile[0])


def build_real_esrgan_x4(width: float = 1.0) -> Net:
    return rrdbnet(Net("real_esrgan_x4_twin", seed=44, width=width), 4, ENHANCER_TILE)


def build_real_esrgan_x2(width: float = 1.0) -> Net:
    return rrdbnet(Net("real_esrgan_x2_twin", seed=22, width=width), 2, ENHANCER_TILE)


def build_wav2lip(width: float = 1.0) -> Net:
    return wav2lip(Net("wav2lip_gan_96_twin", seed=96, width=width))

