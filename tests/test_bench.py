from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from pipeline.bench import make_test_clip, run_bench
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.videos import count_frames


def test_bench_reports_all_paths_on_a_small_clip(tmp_path: Path) -> None:
    clip = make_test_clip(tmp_path / "c.mp4", photos.grace_hopper_path(), seconds=1.0, size=(320, 240))
    assert count_frames(clip) == 30
    settings = apply_overrides(Settings(), ["selector.mode=one"])
    report = run_bench(settings, [photos.grace_hopper_path()], clip, tmp_path)
    assert set(report["fps"]) == {"transcode", "naive", "temp_frames", "pipeline"}
    assert all(v > 0 for v in report["fps"].values())
    assert report["faces_swapped"] >= 28  # the face is visible in every frame
    fps = report["fps"]
    assert report["ratio"]["pipeline_vs_naive"] == pytest.approx(fps["pipeline"] / fps["naive"], rel=0.01)


def test_bench_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = make_test_clip(tmp_path / "c.mp4", photos.grace_hopper_path(), seconds=0.5, size=(256, 192))
    assert main(["bench", "--target", str(clip), "--no-temp-frames", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fps"]["temp_frames"] is None and report["batch_size"] >= 1


def test_background_bench_feeds_the_system_tab_chart() -> None:
    import time
    from types import SimpleNamespace

    from pipeline.bench import BackgroundBench
    from webui import system_tab

    settings = apply_overrides(Settings(), ["selector.mode=one"])
    ctx = SimpleNamespace(bench=BackgroundBench(settings, seconds=0.5, size=(256, 192)))
    deadline = time.time() + 120
    while ctx.bench.status()["state"] == "running" and time.time() < deadline:
        time.sleep(0.2)
    assert ctx.bench.status()["state"] == "done", ctx.bench.status()
    text, chart, timer = system_tab.poll_bench(ctx)
    assert "pipeline" in text and "fps" in text
    assert list(chart["value"]["stage"]) == ["decode", "detect", "swap", "enhance", "blend", "encode"]
    assert timer["active"] is False
