"""Checks that only mean something on an NVIDIA machine with the gpu extra installed.

Skipped unless FACESTATION_GPU_TESTS=1 (see tests/conftest.py); run them with scripts/gpu_check.py on a
lent GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.models import sessions
from pipeline.render import render
from pipeline.settings import Settings, apply_overrides
from pipeline.video import encoders, ffmpeg
from tests import photos
from tests.videos import count_frames, make_clip

pytestmark = pytest.mark.gpu


def test_cuda_provider_is_really_used() -> None:
    session = sessions.get_session("yunet", ("cuda", "cpu"))
    assert session.get_providers()[0] == "CUDAExecutionProvider", session.get_providers()


def test_nvenc_is_chosen_when_it_opens() -> None:
    name, reason = encoders.choose_encoder("auto", ffmpeg.ffmpeg_exe())
    assert name == "h264_nvenc", reason


def test_render_on_cuda_and_nvenc(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "c.mp4", seconds=2, size=(1280, 720), face_image=photos.astronaut())
    s = apply_overrides(Settings(), ["execution.providers=cuda,cpu", "selector.mode=one"])
    result = render(s, [photos.grace_hopper_path()], clip, tmp_path / "o.mp4")
    assert result.encoder == "h264_nvenc" and count_frames(tmp_path / "o.mp4") == 60
    assert any(row["providers"][0] == "CUDAExecutionProvider" for row in sessions.loaded())
