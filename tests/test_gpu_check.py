"""scripts/gpu_check.py rehearsed on CPU: scaled-down twins, batch table, IO binding, the tables."""

from __future__ import annotations

import json
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


def test_the_live_rows_arguments_are_built_as_a_list() -> None:
    args = gpu_check.live_args(Path("face.jpg"), Path("cam.mp4"), Path("live.mp4"), "cuda", 20.0)
    assert args[:9] == ["live", "--source", "face.jpg", "--camera", "cam.mp4", "--output", "live.mp4",
                        "--seconds", "20"]
    assert "--json" in args
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert sets == ["swapper.model=inswapper_128", "enhancer.model=gfpgan_1.4", "selector.mode=one",
                    "execution.providers=cuda,cpu"]  # CPU as the fallback, as a render asks
    on_cpu = gpu_check.live_args(Path("f"), Path("c"), Path("o"), "cpu", 0.5)
    assert on_cpu[on_cpu.index("--seconds") + 1] == "0.5" and on_cpu[-1] == "execution.providers=cpu"


def test_live_sizes_are_checked_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.live_sizes("1280x720,1920x1080") == [(1280, 720), (1920, 1080)]
    assert gpu_check.live_sizes("") == []  # no live run
    with pytest.raises(SystemExit) as exited:
        gpu_check.main(["--live-sizes", "720p"])
    assert exited.value.code == 2 and "'720p' is not a comma list of WxH" in capsys.readouterr().err


def test_the_live_table_gives_fps_latency_and_drops_per_size() -> None:
    row = {"provider": "cuda", "size": "1920x1080", "frames_captured": 600, "frames_delivered": 598,
           "frames_dropped": 2, "fps": 29.9, "latency_p50_ms": 41.0, "latency_p95_ms": 55.5,
           "latency_start_p50_ms": 40.2, "latency_end_p50_ms": 41.8}
    report = {"onnxruntime": "1.x", "device": "GPU 0: test", "batches_asked": [1], "batches": {},
              "io_binding": [], "render": [], "live": [row]}
    text = gpu_check.table(report)
    assert "| cuda | 1920x1080 | 29.9 | 41.0 / 55.5 | 40.2 → 41.8 | 2 / 600 |" in text
    assert "live" not in gpu_check.table({**report, "live": []})


@pytest.mark.slow
def test_cpu_rehearsal_of_the_live_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code = gpu_check.main(["--providers", "cpu", "--width", "0.0625", "--only", "inswapper_128",
                           "arcface_w600k_r50", "gfpgan_1.4", "--batches", "1", "--items", "1", "--runs", "1",
                           "--skip-render", "--live-sizes", "160x120", "--live-seconds", "1"])
    assert code == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| cpu | 160x120 |"))
    assert row.endswith(" / 30 |")  # 1 s of a 30 fps camera, captured (counted, never timed)
    report = json.loads(out[out.index("\n{") + 1:])
    live = report["live"][0]
    assert live["frames_captured"] == live["frames_delivered"] + live["frames_dropped"] == 30
