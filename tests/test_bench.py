from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

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
    quality = report["report"]  # the quality report's own cost: its stage's busy time a frame, judge on
    assert quality["identity"] is True and quality["ms_per_frame"] == report["ms_per_frame"]["quality"] > 0
    rss = report["peak_rss_mb"]  # one unit: the process's peak holds the render's (the kernel's high-water
    assert rss["process"] >= 0.99 * rss["render"] > 0  # mark lags its sampled RSS a little: 296.1 vs 296.4)


def test_the_process_peak_rss_is_in_the_renders_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Linux's ru_maxrss is KiB: 2,556,000 KiB is 2617 MiB but 2617.3 MB, the unit of the render's own peak
    # (a chain bench printed "render 2745.1 MB, whole process 2617.7 MB": the whole in MiB)
    from pipeline import bench

    usage = SimpleNamespace(ru_maxrss=2_556_000)
    monkeypatch.setattr(bench.resource, "getrusage", lambda who: usage)
    assert bench.process_peak_rss_mb() == 2617.3


def test_bench_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = make_test_clip(tmp_path / "c.mp4", photos.grace_hopper_path(), seconds=0.5, size=(256, 192))
    assert main(["bench", "--target", str(clip), "--no-temp-frames", "--json",
                 "--set", "report.identity=false"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fps"]["temp_frames"] is None and report["batch_size"] >= 1
    assert report["report"]["identity"] is False  # the report without its judge (the cheap part)
    # which provider each model really ran on (the built-in detector's converted file, on this CPU)
    assert report["ran_on"] and set(report["ran_on"].values()) == {"CPUExecutionProvider"}
    assert any("yunet" in name for name in report["ran_on"])


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
    assert list(chart["value"]["stage"]) == ["decode", "detect", "swap", "enhance", "blend", "quality",
                                             "encode"]  # the quality report's stage among them
    assert timer["active"] is False


def test_bench_twins_links_only_the_twins_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A swapper twin left in the cache by an earlier run must not be linked in: face_swapper.model=auto would
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
    assert cli_bench.install_twins(["gfpgan_1.4"], tmp_path / "a") == ["face_enhancer.model=gfpgan_1.4"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["GFPGANv1.4.onnx"]
    cli_bench.install_twins(["inswapper_128"], tmp_path / "b")  # with the recogniser it needs
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["inswapper_128.onnx", "w600k_r50.onnx"]


def _chain_report() -> dict[str, Any]:
    from pipeline.bench import chain_report
    from pipeline.render import RenderResult

    result = RenderResult(output=Path("o.mp4"), frames=30, seconds=153.0, fps=0.196, batch_size=1,
                          encoder="libx264", encoder_reason="", models=[], faces_swapped=30,
                          stage_s={"detect": 0.6, "swap": 49.5, "enhance": 104.1, "blend": 2.1},
                          threads={"detect": 1, "swap": 2, "enhance": 2},
                          turn_wait_s={"swap": 104.0, "enhance": 49.0}, cpu_s=309.0,
                          plan={"placement": "swap + enhance take turns on 2 threads (swap 2, enhance 2)",
                                "period_s": 5.12})
    bound = {"per_face_s": {"yunet": {1: 0.012, 2: 0.02}, "inswapper_128": {1: 3.1, 2: 1.6},
                            "gfpgan_1.4": {1: 5.3, 2: 3.45}},
             "cpu_per_face_s": {"yunet": {1: 0.012, 2: 0.03}, "inswapper_128": {1: 3.1, 2: 3.2},
                                "gfpgan_1.4": {1: 5.3, 2: 6.9}},
             "best_threads": {"yunet": 1, "inswapper_128": 2, "gfpgan_1.4": 2},
             "stage": {"yunet": "detect", "inswapper_128": "swap", "gfpgan_1.4": "enhance"},
             "fps": round(1 / (0.012 + 1.6 + 3.45), 4)}
    return chain_report(result, bound)


def test_the_chain_report_puts_each_stage_beside_its_model_alone() -> None:
    chain = _chain_report()
    assert chain["limit_fps"] == 0.1976 and chain["achieved_fps"] == 0.196
    assert chain["ratio"] == round(0.196 / 0.1976, 3)
    assert chain["stages"]["enhance"] == {
        "model": "gfpgan_1.4", "busy_s_a_frame": 3.47, "busy_s_a_face": 3.47, "threads": 2,
        "turn_wait_s_a_frame": 1.633, "model_alone_s": 3.45, "model_alone_threads": 2}
    assert chain["stages"]["detect"]["turn_wait_s_a_frame"] == 0.0  # of no group: it never waits
    assert chain["cpu_s_a_frame"] == {"render": 10.3, "models_alone": 0.012 + 3.2 + 6.9}


def test_bench_prints_the_plan_and_the_chain(capsys: pytest.CaptureFixture[str]) -> None:
    from cli.bench import print_chain, print_plan

    print_plan({"placement": "swap + enhance take turns on 2 threads (swap 2, enhance 2)",
                "threads": {"detect": 1, "swap": 2, "enhance": 2}, "batch": 1, "free_cores": 2.0,
                "period_s": 5.12, "limit_s": 5.05, "curves": {"swap": {"2": 1.6, "1": 3.1}},
                "considered": [{"placement": "a", "period_s": 5.12},
                               {"placement": "swap on 1 thread ‖ enhance on 1 thread", "period_s": 5.3}]})
    print_chain(_chain_report())
    out = capsys.readouterr().out
    assert "plan: swap + enhance take turns on 2 threads (swap 2, enhance 2); threads" in out
    assert "swap: s a frame by threads 2: 1.6, 1: 3.1" in out
    assert "also weighed: swap on 1 thread ‖ enhance on 1 thread: 5.3 s a frame" in out
    assert "chain: limit 0.1976 fps, achieved 0.196 fps, ratio 0.992 (wall 153.0 s); CPU s a frame: render " \
           "10.3, the models alone 10.112" in out
    assert any(line.split()[:3] == ["enhance", "gfpgan_1.4", "3.47"] for line in out.splitlines())


def test_bench_chain_summary_says_the_ratio_against_the_goal() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import bench_chain

    report = {"chain": _chain_report(), "peak_rss_mb": {"render": 2500.0, "process": 2900.0},
              "load_average": {"before": [0.4, 0.5, 0.6], "after": [1.9, 1.0, 0.7]}}
    lines = bench_chain.summary("chain", report)
    assert lines[0] == ("chain: limit 0.1976 fps, achieved 0.196 fps, ratio 0.992 (≥ 0.9); wall 153.0 s; "
                        "load average 0.4 before, 1.9 after")
    assert "  enhance  busy 3.47 s a face (2 threads, waited 1.633 s a frame for its turn); gfpgan_1.4 " \
           "alone 3.45 s at 2 threads" in lines
    assert lines[-2:] == [
        "  CPU s a frame: the render 10.3 (this process), the models alone at their best 10.112",
        "  peak RSS: render 2500.0 MB, whole process 2900.0 MB"]


def test_the_limit_keeps_what_each_model_measured_for_the_next_render_plan() -> None:
    """``bench --twins`` measures each model alone at every thread count for the limit; the render it runs
    next reads that (pipeline/plancache.py) instead of measuring the same model again."""
    from pipeline import plancache
    from pipeline.bench import model_bound
    from pipeline.models import sessions
    from pipeline.process import FaceProcessor
    from pipeline.renderplan import cores
    from pipeline.threadplan import measured_counts
    from tests import steps
    from tests.surrogates import install_surrogate

    install_surrogate("inswapper_128")
    install_surrogate("arcface_w600k_r50")
    sessions.release()
    settings = apply_overrides(Settings(), ["face_swapper.model=inswapper_128", "selector.mode=one"])
    proc = FaceProcessor(settings, [photos.grace_hopper_path()])
    frame = photos.grace_hopper()
    bound = model_bound(proc, frame, repeats=1)
    alone = bound["per_face_s"]["inswapper_128"]
    swapper = steps.swapper(proc).swapper
    n, size = cores(), (frame.shape[1], frame.shape[0])
    kept = [plancache.curve(plancache.key([swapper], size, n, shared), alone[n], n, measured_counts(n))
            for shared in (False, True)]  # whether others shared the cores meanwhile is the machine's
    assert [curve for curve in kept if curve is not None] == [
        {t: round(alone[n] * round(s / alone[n], 4), 4) for t, s in alone.items()}]
