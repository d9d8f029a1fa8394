from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from pipeline.bench import make_test_clip, run_bench
from pipeline.settings import Settings, apply_overrides
from tests import photos
from tests.timing import wait_until
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
    costs = report["processor_ms_per_frame"]  # each processor of the order: its stage's time per frame
    assert list(costs) == ["face_swapper"] and costs["face_swapper"] > 0  # the enhancer is set to none
    assert costs["face_swapper"] == report["ms_per_frame"]["swap"]


def test_bench_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = make_test_clip(tmp_path / "c.mp4", photos.grace_hopper_path(), seconds=0.5, size=(256, 192))
    assert main(["bench", "--target", str(clip), "--no-temp-frames", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fps"]["temp_frames"] is None and report["batch_size"] >= 1


def test_background_bench_feeds_the_system_tab_chart() -> None:
    from types import SimpleNamespace

    from pipeline.bench import BackgroundBench
    from webui import system_tab

    settings = apply_overrides(Settings(), ["selector.mode=one"])
    ctx = SimpleNamespace(bench=BackgroundBench(settings, seconds=0.5, size=(256, 192)))
    wait_until(lambda: ctx.bench.status()["state"] != "running", 120, "the background bench to end")
    assert ctx.bench.status()["state"] == "done", ctx.bench.status()
    text, chart, timer = system_tab.poll_bench(ctx)
    assert "pipeline" in text and "fps" in text
    assert list(chart["value"]["stage"]) == ["decode", "detect", "swap", "enhance", "blend", "encode"]
    assert timer["active"] is False


def test_bench_twins_links_only_the_twins_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A swapper twin left in the cache by an earlier run must not be linked in: swapper.model=auto would
    pick it and `--twins gfpgan_1.4` would measure the 554 MB swapper too."""
    import subprocess

    from cli import bench as cli_bench
    from pipeline import paths

    cache = tmp_path / "cache"
    (cache / "twins").mkdir(parents=True)
    built = {"inswapper_128.onnx": "inswapper_128", "w600k_r50.onnx": "arcface_w600k_r50",
             "GFPGANv1.4.onnx": "gfpgan_1.4"}
    for file in built:
        (cache / "twins" / file).write_bytes(b"x")
    (cache / "twins" / "twins.json").write_text(json.dumps({f: {"twin": t} for f, t in built.items()}))
    monkeypatch.setattr(paths, "cache_dir", lambda: cache)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    assert cli_bench.install_twins(["gfpgan_1.4"], tmp_path / "a") == ["enhancer.model=gfpgan_1.4"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["GFPGANv1.4.onnx"]
    cli_bench.install_twins(["inswapper_128"], tmp_path / "b")  # with the recogniser it needs
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["inswapper_128.onnx", "w600k_r50.onnx"]
