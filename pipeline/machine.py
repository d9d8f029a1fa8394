"""What really works on this machine, for a front end to offer: inference providers and video encoders.

onnxruntime lists the providers it was built with, not what the machine has (the GPU package lists
TensorRT and CUDA without a GPU), and ffmpeg lists NVENC encoders that fail to open without one. These
functions answer with what was confirmed: a CUDA driver that sees a device, a one-frame trial encode.
Answers are cached for the life of the process.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from typing import get_args

from pipeline.types import Encoder, Provider

log = logging.getLogger(__name__)

_TENSORRT_LIBS = ("libnvinfer.so.10", "libnvinfer.so.8", "libnvinfer.so")


@functools.cache
def cuda_devices() -> int:
    """How many CUDA devices the driver sees (0 without a driver or a GPU)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return 0
        count = ctypes.c_int(0)
        return count.value if lib.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0
    except OSError:
        return 0


def _loads(names: tuple[str, ...]) -> bool:
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


@functools.cache
def usable_providers() -> tuple[Provider, ...]:
    """The providers a model can really run on here, best first; ``cpu`` always (CUDA only where its
    provider really starts: models.gpu)."""
    from pipeline.models.sessions import available_providers

    try:
        built = set(available_providers())
    except Exception as exc:  # noqa: BLE001 - no onnxruntime: the CPU is still what would be asked for
        log.info("onnxruntime not usable: %s", exc)
        return ("cpu",)
    out: list[Provider] = []
    from pipeline.models.gpu import gpu_problem

    if cuda_devices() > 0 and "CUDAExecutionProvider" in built and gpu_problem() is None:
        if "TensorrtExecutionProvider" in built and _loads(_TENSORRT_LIBS):
            out.append("tensorrt")
        out.append("cuda")
    return (*out, "cpu")


@functools.cache
def usable_encoders() -> tuple[Encoder, ...]:
    """``auto`` and every encoder this ffmpeg has that opens (NVENC by a one-frame trial encode)."""
    from pipeline.video.ffmpeg import encoders, ffmpeg_exe

    try:
        listed = encoders(ffmpeg_exe())
    except Exception as exc:  # noqa: BLE001 - no ffmpeg: only "auto", which will report it when a render starts
        log.info("ffmpeg not usable: %s", exc)
        return ("auto",)
    failed = encoder_failures()
    return ("auto", *(name for name in get_args(Encoder)
                      if name != "auto" and name in listed and name not in failed))


@functools.cache
def encoder_failures() -> dict[str, str]:
    """Each NVENC encoder this ffmpeg lists that failed its one-frame trial encode here, with why (the last
    line ffmpeg wrote); {} without ffmpeg."""
    from pipeline.video.encoders import trial_encode
    from pipeline.video.ffmpeg import encoders, ffmpeg_exe

    try:
        exe = ffmpeg_exe()
        listed = encoders(exe)
    except Exception:  # noqa: BLE001 - no ffmpeg: usable_encoders says so
        return {}
    out: dict[str, str] = {}
    for name in get_args(Encoder):
        if name.endswith("_nvenc") and name in listed:
            works, message = trial_encode(exe, name)
            if not works:
                out[name] = message
    return out
