"""scripts/gpu_check.py rehearsed on CPU: scaled-down twins, batch table, IO binding, the tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402


def test_cpu_rehearsal_of_the_batch_table_and_io_binding(capsys: pytest.CaptureFixture[str]) -> None:
    code = gpu_check.main(["--providers", "cpu", "--width", "0.0625", "--only", "inswapper_128",
                           "inswapper_128_fp16", "arcface_w600k_r50",
                           "--batches", "1,2", "--items", "2", "--runs", "1",
                           "--skip-render"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| inswapper_128 | cpu (CPUExecutionProvider) | yes |" in out  # the rewrite gives it a batch axis
    assert "| arcface_w600k_r50 | cpu (CPUExecutionProvider) | yes |" in out  # exported with one
    assert "| inswapper_128_fp16 | cpu (CPUExecutionProvider) | yes |" in out  # converted, then rewritten
    bound = next(line for line in out.splitlines() if line.startswith("| CPUExecutionProvider | cpu | 2 |"))
    assert bound.endswith("| True |")  # IO-bound runs give the plain runs' output


def test_the_render_table_names_asked_and_used_encoders() -> None:
    report = {"onnxruntime": "1.x", "device": "GPU 0: test", "batches_asked": [1, 8],
              "batches": {"gfpgan_1.4": {"cuda": {"provider": "CUDAExecutionProvider", "dynamic_batch": False,
                                                  "1": 41.5}}},
              "io_binding": [],
              "render": [{"provider": "cuda", "requested": "h264_nvenc", "encoder": "h264_nvenc", "fps": 30.1,
                          "batch": 4, "startup_s": 3.2, "peak_rss_mb": 2100.0,
                          "stage_ms_per_frame": {"swap": 12.0, "enhance": 20.5, "encode": 3.1}}]}
    text = gpu_check.table(report)
    assert "| gfpgan_1.4 | cuda (CUDAExecutionProvider) | no | 41.5 | – |" in text
    assert "| cuda | h264_nvenc → h264_nvenc | 30.1 | 4 | 3.2 | 12.0 / 20.5 / 3.1 | 2100.0 |" in text
