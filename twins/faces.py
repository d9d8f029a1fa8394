"""The face models' twins: inswapper_128, arcface_w600k_r50 (IResNet-50), gfpgan_1.4, scrfd_10g."""

from __future__ import annotations

import math

import numpy as np

from twins.graph import Net

# --- inswapper_128 -------------------------------------------------------------------------------------

def build_inswapper(width: float = 1.0) -> Net:
    net = Net("inswapper_128_twin", seed=128, width=width)
    c128, c256, c512, c1024 = (net.ch(c) for c in (128, 256, 512, 1024))
    x = net.input("target", [1, 3, 128, 128])
    latent = net.input("source", [1, 512])
    x = net.leaky(net.conv(net.reflect_pad(x, 3), 3, c128, 7, pad=0))
    x = net.leaky(net.conv(x, c128, c256, 3))
    x = net.leaky(net.conv(x, c256, c512, 3, stride=2))
    x = net.leaky(net.conv(x, c512, c1024, 3, stride=2))
    for _ in range(6):
        y = net.relu(_adain(net, net.conv(x, c1024, c1024, 3), latent, c1024))
        y = _adain(net, net.conv(y, c1024, c1024, 3, gain=0.5), latent, c1024)
        x = net.op("Add", x, y)
    x = net.leaky(net.conv(net.resize(x, 2.0), c1024, c512, 3))
    x = net.leaky(net.conv(net.resize(x, 2.0), c512, c256, 3))
    x = net.leaky(net.conv(x, c256, c128, 3))
    x = net.op("Tanh", net.conv(net.reflect_pad(x, 3), c128, 3, 7, pad=0, gain=1.0))
    x = net.op("Mul", net.op("Add", x, net.const(1.0, np.float32)), net.const(0.5, np.float32))
    net.output(x, "output", [1, 3, 128, 128])
    net.weight((512, 512), 1.0 / math.sqrt(512), name="emap")  # last initializer, as the loader expects
    return net


def _adain(net: Net, x: str, latent: str, c: int) -> str:
    """Instance norm, then × scale + shift, both Gemms of the 512-d latent."""
    x = net.instance_norm(x, c)
    scale = net.unsqueeze_hw(net.gemm(latent, 512, c, bias_mean=1.0))
    shift = net.unsqueeze_hw(net.gemm(latent, 512, c))
    return net.op("Add", net.op("Mul", x, scale), shift)


# --- arcface_w600k_r50 (IResNet-50) --------------------------------------------------------------------

def build_arcface(width: float = 1.0) -> Net:
    net = Net("w600k_r50_twin", seed=50, width=width)
    x = net.input("input.1", ["None", 3, 112, 112])
    inplanes = net.ch(64)
    x = net.prelu(net.conv(x, 3, inplanes, 3), inplanes)
    for planes, blocks in ((64, 3), (128, 4), (256, 14), (512, 3)):
        planes = net.ch(planes)
        for b in range(blocks):
            stride = 2 if b == 0 else 1
            y = net.batch_norm(x, inplanes)
            y = net.prelu(net.conv(y, inplanes, planes, 3), planes)
            y = net.conv(y, planes, planes, 3, stride=stride, gain=0.2)
            shortcut = x if b else net.conv(x, inplanes, planes, 1, stride=stride, pad=0, gain=1.0)
            x = net.op("Add", y, shortcut)
            inplanes = planes
    x = net.op("Flatten", net.batch_norm(x, inplanes), axis=1)
    x = net.batch_norm(net.gemm(x, inplanes * 7 * 7, 512), 512)
    net.output(x, "683", [1, 512])
    return net


# --- gfpgan_1.4 (GFPGANv1Clean, 512, channel multiplier 2) ----------------------------------------------

LEVELS = (8, 16, 32, 64, 128, 256, 512)
GFPGAN_CHANNELS = {4: 512, 8: 512, 16: 512, 32: 512, 64: 512, 128: 256, 256: 128, 512: 64}


def build_gfpgan(width: float = 1.0) -> Net:
    net = Net("gfpgan_1.4_twin", seed=14, width=width)
    dec = {r: net.ch(c) for r, c in GFPGAN_CHANNELS.items()}
    unet = {r: c // 2 for r, c in dec.items()}  # the U-Net runs at half the decoder's channels
    x = net.input("input", [1, 3, 512, 512])
    feat = net.leaky(net.conv(x, 3, unet[512], 1))
    skips: list[str] = []
    for r in reversed((4, *LEVELS[:-1])):  # 256 … 4
        feat = _gfp_resblock(net, feat, unet[2 * r], unet[r], 0.5)
        skips.insert(0, feat)
    feat = net.leaky(net.conv(feat, unet[4], unet[4], 3))
    style = net.gemm(net.op("Flatten", feat, axis=1), unet[4] * 16, 16 * 512)
    conditions = []
    for i, r in enumerate(LEVELS):
        feat = _gfp_resblock(net, net.op("Add", feat, skips[i]), unet[r // 2], unet[r], 2.0)
        c = unet[r]
        scale = net.conv(net.leaky(net.conv(feat, c, c, 3)), c, c, 3, gain=0.1, bias_mean=1.0)
        shift = net.conv(net.leaky(net.conv(feat, c, c, 3)), c, c, 3, gain=0.1)
        conditions.append((scale, shift))
    image = _stylegan_decoder(net, style, dec, conditions)
    net.output(image, "output", [1, 3, 512, 512])
    return net


def _gfp_resblock(net: Net, x: str, cin: int, cout: int, factor: float) -> str:
    out = net.leaky(net.conv(x, cin, cin, 3))
    out = net.leaky(net.conv(net.resize(out, factor), cin, cout, 3, gain=1.0))
    skip = net.conv(net.resize(x, factor), cin, cout, 1, pad=0, bias=False, gain=0.5)
    return net.op("Add", out, skip)


def _latent(net: Net, style: str, i: int) -> str:
    """The i-th 512-d latent of the (N, 16×512) style code."""
    return net.op("Slice", style, net.const([i * 512]), net.const([(i + 1) * 512]), net.const([1]))


def _modconv(net: Net, x: str, latent: str, cin: int, cout: int, k: int, demod: bool = True) -> str:
    """StyleGAN2 modulated conv as a batch-1 export traces it: weight × style, demodulated, reshaped, Conv."""
    style = net.op("Reshape", net.gemm(latent, 512, cin, bias_mean=1.0), net.const([1, 1, cin, 1, 1]))
    weight = net.op("Mul", net.weight((1, cout, cin, k, k), 1.0 / math.sqrt(cin * k * k)), style)
    if demod:
        power = net.op("ReduceSum", net.op("Mul", weight, weight), net.const([2, 3, 4]), keepdims=1)
        norm = net.op("Reciprocal", net.op("Sqrt", net.op("Add", power, net.const(1e-8, np.float32))))
        weight = net.op("Mul", weight, norm)
    weight = net.op("Reshape", weight, net.const([cout, cin, k, k]))
    return net.op("Conv", x, weight, kernel_shape=[k, k], pads=[k // 2] * 4)


def _styleconv(net: Net, x: str, latent: str, cin: int, cout: int, size: int) -> str:
    out = net.op("Mul", _modconv(net, x, latent, cin, cout, 3), net.const(math.sqrt(2.0), np.float32))
    noise = net.op("Mul", net.weight((1, 1, size, size), 1.0), net.weight((1,), 0.0, 0.1))
    out = net.op("Add", net.op("Add", out, noise), net.weight((1, cout, 1, 1), 0.0))
    return net.leaky(out)


def _to_rgb(net: Net, x: str, latent: str, cin: int, skip: str | None) -> str:
    out = net.op("Add", _modconv(net, x, latent, cin, 3, 1, demod=False), net.weight((1, 3, 1, 1), 0.0))
    return out if skip is None else net.op("Add", out, net.resize(skip, 2.0))


def _stylegan_decoder(net: Net, style: str, dec: dict[int, int], conditions: list[tuple[str, str]]) -> str:
    const = net.weight((1, dec[4], 4, 4), 1.0)
    out = _styleconv(net, const, _latent(net, style, 0), dec[4], dec[4], 4)
    skip = _to_rgb(net, out, _latent(net, style, 1), dec[4], None)
    i = 1
    for r, (scale, shift) in zip(LEVELS, conditions, strict=True):
        cin, cout = dec[r // 2], dec[r]
        out = _styleconv(net, net.resize(out, 2.0), _latent(net, style, i), cin, cout, r)
        same, sft = net.split(out, [cout // 2, cout // 2])
        sft = net.op("Add", net.op("Mul", sft, scale), shift)  # channel-split SFT
        out = net.op("Concat", same, sft, axis=1)
        out = _styleconv(net, out, _latent(net, style, i + 1), cout, cout, r)
        skip = _to_rgb(net, out, _latent(net, style, i + 2), cout, skip)
        i += 2
    return skip


def gfpgan_reference_gmac() -> float:
    """Multiply-adds of GFPGANv1Clean (512, ×2) in closed form from its layer table, as the FLOPs target."""
    unet = {r: c // 2 for r, c in GFPGAN_CHANNELS.items()}
    macs = 512 * 512 * 3 * unet[512]  # conv_body_first, 1×1
    for r in (256, 128, 64, 32, 16, 8, 4):  # down ResBlocks: conv1 at 2r, conv2 + 1×1 skip at r
        cin, cout = unet[2 * r], unet[r]
        macs += (2 * r) ** 2 * cin * cin * 9 + r * r * (cin * cout * 9 + cin * cout)
    macs += 16 * unet[4] * unet[4] * 9 + unet[4] * 16 * 16 * 512  # final conv, final linear
    for r in LEVELS:  # up ResBlocks (conv1 at r/2) and the SFT branches (four 3×3 convs at r)
        cin, cout = unet[r // 2], unet[r]
        macs += (r // 2) ** 2 * cin * cin * 9 + r * r * (cin * cout * 9 + cin * cout)
        macs += 4 * r * r * cout * cout * 9
    dec = GFPGAN_CHANNELS
    macs += 16 * dec[4] * dec[4] * 9 + 16 * dec[4] * 3 + 2 * 512 * dec[4]  # style_conv1, to_rgb1, modulations
    for r in LEVELS:
        cin, cout = dec[r // 2], dec[r]
        macs += r * r * (cin * cout * 9 + cout * cout * 9 + cout * 3) + 512 * (cin + 2 * cout)
    return macs / 1e9


# --- scrfd_10g (det_10g) -------------------------------------------------------------------------------

SCRFD_OUTPUTS = (("448", "471", "494"), ("451", "474", "497"), ("454", "477", "500"))


def build_scrfd(width: float = 1.0) -> Net:
    net = Net("det_10g_twin", seed=10, width=width)
    x = net.input("input.1", [1, 3, "?", "?"])
    c28, c56 = net.ch(28), net.ch(56)
    x = net.relu(net.conv(x, 3, c28, 3, stride=2))
    x = net.relu(net.conv(x, c28, c28, 3))
    x = net.relu(net.conv(x, c28, c56, 3))
    x = net.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    levels, cin = [], c56
    for planes, blocks, stride in ((56, 3, 1), (88, 4, 2), (88, 2, 2), (224, 3, 2)):
        planes = net.ch(planes)
        for b in range(blocks):
            x = _basic_block(net, x, cin, planes, stride if b == 0 else 1)
            cin = planes
        levels.append((x, planes))
    feats = _pafpn(net, levels[1:], c56)
    heads = [_scrfd_head(net, f, c56) for f in feats]
    for kind, names in enumerate(SCRFD_OUTPUTS):
        width_out = (1, 4, 10)[kind]
        for s, name in enumerate(names):
            flat = net.op("Reshape", net.op("Transpose", heads[s][kind], perm=[0, 2, 3, 1]),
                          net.const([-1, width_out]))
            net.output(flat, name, [f"anchors_{8 << s}", width_out])
    return net


def _basic_block(net: Net, x: str, cin: int, planes: int, stride: int) -> str:
    y = net.relu(net.conv(x, cin, planes, 3, stride=stride))
    y = net.conv(y, planes, planes, 3, gain=0.2)
    shortcut = x
    if stride != 1 or cin != planes:  # ResNetV1e: average-pool, then a 1×1 conv
        if stride != 1:
            x = net.op("AveragePool", x, kernel_shape=[stride, stride], strides=[stride, stride], ceil_mode=1)
        shortcut = net.conv(x, cin, planes, 1, pad=0, gain=1.0)
    return net.relu(net.op("Add", y, shortcut))


def _pafpn(net: Net, levels: list[tuple[str, int]], c: int) -> list[str]:
    lateral = [net.conv(x, cx, c, 1, pad=0, gain=1.0) for x, cx in levels]
    for i in (1, 0):  # top-down
        lateral[i] = net.op("Add", lateral[i], net.resize(lateral[i + 1], 2.0, mode="nearest"))
    inter = [net.conv(x, c, c, 3, gain=1.0) for x in lateral]
    for i in (0, 1):  # bottom-up
        inter[i + 1] = net.op("Add", inter[i + 1], net.conv(inter[i], c, c, 3, stride=2, gain=0.5))
    return [inter[0]] + [net.conv(x, c, c, 3, gain=1.0) for x in inter[1:]]


def _scrfd_head(net: Net, x: str, c: int) -> tuple[str, str, str]:
    feat = net.ch(80)
    for cin in (c, feat, feat):
        x = net.relu(net.conv(x, cin, feat, 3))
    score = net.op("Sigmoid", net.conv(x, feat, 2, 3, gain=0.01, bias_mean=-8.0))  # no faces
    bbox = net.op("Mul", net.conv(x, feat, 8, 3, gain=0.1, bias_mean=1.0), net.weight((1,), 0.0, 1.0))
    kps = net.conv(x, feat, 20, 3, gain=0.1)
    return score, bbox, kps

