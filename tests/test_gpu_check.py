"""scripts/gpu_check.py on the CPU: its arguments, the projection, provider selection and rows with fakes, the
whole path rehearsed on narrow twins, and the tables (scripts/gpu_tables.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402
import gpu_tables  # noqa: E402


def test_the_projection_of_five_minutes_of_1080p30() -> None:
    # 300 frames rendered in 10 s after 20 s of start-up: 30 fps; 9000 frames take 20 + 300 s
    p = gpu_check.projection(300, 10.0, 20.0)
    assert p["fps"] == 30.0 and p["frames_projected"] == 9000
    assert p["projected_s"] == 320.0 and p["projected_min"] == 5.33
    assert p["article_min"] == 7.5 and p["vs_article"] == pytest.approx(450 / 320, abs=0.01)
    slow = gpu_check.projection(30, 150.0, 5.0)  # 0.2 fps: 45,005 s, 100 times slower than the article
    assert slow["projected_s"] == 45005.0 and slow["vs_article"] == 0.01
    assert gpu_check.projection(0, 0.0, 1.0)["vs_article"] == 0.0  # nothing rendered: no figure, no crash


@pytest.mark.parametrize(("argv", "says"), [
    (["--providers", "cuda,rocm"], "'cuda,rocm': a comma list of tensorrt, cuda, cpu"),
    (["--size", "1080p"], "'1080p' is not WxH"),
    (["--seconds", "0"], "--seconds and --budget must be positive"),
    (["--live-sizes", "720p"], "'720p' is not a comma list of WxH"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        gpu_check.main(argv)
    assert exited.value.code == 2 and says in capsys.readouterr().err


def test_the_defaults_are_the_articles_workload() -> None:
    args = gpu_check.parse([])
    assert args.providers == ["cuda", "tensorrt"] and args.size == (1920, 1080)
    assert args.budget <= 480  # the whole check fits a lent machine's 8 minutes
    assert gpu_check.ARTICLE_SETTINGS == ("face_swapper.model=inswapper_128",
                                          "face_enhancer.model=gfpgan_1.4")


def _trial(providers: tuple[str, ...], error: str = "") -> SimpleNamespace:
    return SimpleNamespace(providers=providers, error=error)


def test_providers_are_used_only_where_a_session_really_ran_on_them() -> None:
    built = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    trials = {"CUDAExecutionProvider": _trial(("CUDAExecutionProvider", "CPUExecutionProvider")),
              "TensorrtExecutionProvider": _trial(("CPUExecutionProvider",),
                                                  "libnvinfer.so.10: cannot open shared object file")}
    usable, checks = gpu_check.provider_checks(["cuda", "tensorrt"], built, trials.__getitem__, card="H200")
    assert usable == ["cuda"]
    lines = [c.line() for c in checks]
    assert lines[0] == "ok          provider cuda: a session ran on CUDAExecutionProvider"
    assert lines[1].startswith("could not   provider tensorrt: a session asked for TensorrtExecutionProvider "
                               "got CPUExecutionProvider: libnvinfer.so.10: cannot open shared object file")


def test_the_cpu_package_and_no_card_are_said_without_a_trial() -> None:
    tried: list[str] = []

    def trial(name: str) -> Any:
        tried.append(name)
        return _trial((name,))

    usable, checks = gpu_check.provider_checks(["cuda"], ["CPUExecutionProvider"], trial, card="H200")
    assert usable == [] and tried == []
    assert "install onnxruntime-gpu instead of onnxruntime" in checks[0].line()
    usable, checks = gpu_check.provider_checks(["cuda", "cpu"], ["CUDAExecutionProvider"], trial, card=None)
    assert usable == ["cpu"] and tried == [] and "no NVIDIA card" in checks[0].line()


def test_missing_packages_are_named_with_what_to_carry() -> None:
    checks = gpu_check.package_checks(lambda m: None if m in ("pydantic", "onnxruntime") else object())
    missing = [c.line() for c in checks if not c.ok]
    assert missing == [
        "could not   python package onnxruntime: missing (fix: carry a wheel of onnxruntime-gpu (no registry "
        "is reachable))",
        "could not   python package pydantic: missing (fix: carry a wheel of pydantic (with pydantic-core, "
        "annotated-types, typing-inspection) (no registry is reachable))"]


def test_a_machine_without_numpy_gets_the_preflight_not_a_traceback() -> None:
    # a bare lent machine: the script is run with the engine's packages not importable (as there)
    blocked = "import runpy, sys\nfor m in ('numpy', 'pydantic'): sys.modules[m] = None\n" \
        "sys.argv = ['gpu_check.py', '--providers', 'cpu']\n" \
        f"runpy.run_path({str(ROOT / 'scripts' / 'gpu_check.py')!r}, run_name='__main__')\n"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "could not   python package numpy: missing (fix: carry a wheel of numpy" in done.stdout
    assert "facestation gpu_check: no row measured: none of cpu can render here" in done.stderr


def test_rows_run_nvenc_first_then_libx264_and_each_within_the_budget() -> None:
    assert gpu_check.planned_rows(["cuda", "tensorrt"], nvenc=True) == [
        ("cuda", "h264_nvenc"), ("tensorrt", "h264_nvenc"), ("cuda", "libx264")]
    assert gpu_check.planned_rows(["cuda"], nvenc=False) == [("cuda", "libx264")]
    now = [0.0]
    calls: list[tuple[list[str], float]] = []
    answers = iter([(0, 'log\n{"provider": "cuda", "fps": 30.0}\n', ""),  # 100 s
                    (124, "", "building the TensorRT engine"),  # ran out of its time
                    (1, "", "Traceback…\nRuntimeError: CUDA out of memory")])

    def runner(command: list[str], timeout: float) -> tuple[int, str, str]:
        calls.append((command, timeout))
        now[0] += 100.0
        return next(answers)

    rows = [("cuda", "h264_nvenc"), ("tensorrt", "h264_nvenc"), ("cuda", "libx264"), ("cpu", "libx264")]
    done, could_not = gpu_check.run_rows(rows, ["--clip", "c.mp4"], deadline=350.0, runner=runner,
                                         clock=lambda: now[0])
    assert done == [{"provider": "cuda", "fps": 30.0}]
    # each row gets what is left, less a minute for each row after it
    assert [c[1] for c in calls] == [350.0 - 180.0, 250.0 - 120.0, 150.0 - 60.0]
    assert calls[0][0][-4:] == ["--row", "cuda:h264_nvenc", "--clip", "c.mp4"]
    assert could_not == ["row tensorrt/h264_nvenc: ran out of its 130 s: building the TensorRT engine",
                         "row cuda/libx264: failed (exit 1): RuntimeError: CUDA out of memory",
                         "row cpu/libx264: not started, 50 s of the budget left"]


def test_the_article_table_names_what_really_ran() -> None:
    cuda = "CUDAExecutionProvider"
    row = {"provider": "cuda", "ran_on": {"inswapper": cuda, "gfpgan": cuda}, "decoder": "NVDEC",
           "encoder": "h264_nvenc", "frames": 300, "startup_s": 12.0, **gpu_check.projection(300, 5.0, 12.0)}
    text = gpu_check.article_table([row])  # 12 s + 9000 frames at 60 fps = 162 s: 450 / 162 = 2.78
    assert "| cuda (CUDAExecutionProvider) | NVDEC | h264_nvenc | 300 | 60.0 | 12.0 | 2.7 min | 7.5 min " \
           "| 2.78× |" in text


def test_cpu_rehearsal_of_the_articles_rows(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole path on this CPU: preflight, narrow twins, a clip, one row in a child process, the table."""
    code = gpu_check.main(["--providers", "cpu", "--width", "0.0625", "--seconds", "0.2",
                           "--size", "160x120"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok          provider cpu: onnxruntime's CPU provider" in out
    row_start = "| cpu (CPUExecutionProvider) | software | libx264 | 6 |"
    line = next(x for x in out.splitlines() if x.startswith(row_start))
    assert line.endswith(" min | 7.5 min | " + line.split(" | ")[-1])
    report = json.loads(out[out.index("\n{") + 1:])
    row = report["rows"][0]
    assert row["frames"] == 6 and row["faces_swapped"] > 0 and row["fps"] > 0
    assert row["projected_s"] == pytest.approx(row["startup_s"] + 9000 / row["fps"], rel=0.01)


def test_cpu_rehearsal_of_the_batch_table_and_io_binding(capsys: pytest.CaptureFixture[str]) -> None:
    code = gpu_check.main(["--providers", "cpu", "--width", "0.0625", "--only", "inswapper_128",
                           "inswapper_128_fp16", "arcface_w600k_r50", "--batches", "1,2", "--items", "2",
                           "--runs", "1", "--tables", "--live-sizes", "", "--seconds", "0.1",
                           "--size", "96x64"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| inswapper_128 | cpu (CPUExecutionProvider) | yes |" in out  # the rewrite gives it a batch axis
    assert "| arcface_w600k_r50 | cpu (CPUExecutionProvider) | yes |" in out  # exported with one
    assert "| inswapper_128_fp16 | cpu (CPUExecutionProvider) | yes |" in out  # converted, then rewritten
    bound = next(line for line in out.splitlines() if line.startswith("| CPUExecutionProvider | cpu | 2 |"))
    assert bound.endswith("| True |")  # IO-bound runs give the plain runs' output


def test_the_live_rows_arguments_are_built_as_a_list() -> None:
    args = gpu_tables.live_args(Path("face.jpg"), Path("cam.mp4"), Path("live.mp4"), "cuda", 20.0)
    assert args[:9] == ["live", "--source", "face.jpg", "--camera", "cam.mp4", "--output", "live.mp4",
                        "--seconds", "20"]
    assert "--json" in args
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    assert sets == ["face_swapper.model=inswapper_128", "face_enhancer.model=gfpgan_1.4", "selector.mode=one",
                    "execution.providers=cuda,cpu"]  # CPU as the fallback, as a render asks
    on_cpu = gpu_tables.live_args(Path("f"), Path("c"), Path("o"), "cpu", 0.5)
    assert on_cpu[on_cpu.index("--seconds") + 1] == "0.5" and on_cpu[-1] == "execution.providers=cpu"


def test_live_sizes_are_checked_before_anything_runs() -> None:
    assert gpu_tables.live_sizes("1280x720,1920x1080") == [(1280, 720), (1920, 1080)]
    assert gpu_tables.live_sizes("") == []  # no live run


def test_the_tables_give_batches_and_live_rows() -> None:
    row = {"provider": "cuda", "size": "1920x1080", "frames_captured": 600, "frames_delivered": 598,
           "frames_dropped": 2, "fps": 29.9, "latency_p50_ms": 41.0, "latency_p95_ms": 55.5,
           "latency_start_p50_ms": 40.2, "latency_end_p50_ms": 41.8}
    report = {"onnxruntime": "1.x", "device": "GPU 0: test", "batches_asked": [1, 8],
              "batches": {"gfpgan_1.4": {"cuda": {"provider": "CUDAExecutionProvider", "dynamic_batch": False,
                                                  "1": 41.5}}},
              "io_binding": [], "live": [row]}
    text = gpu_tables.table(report)
    assert "| gfpgan_1.4 | cuda (CUDAExecutionProvider) | no | 41.5 | – |" in text
    assert "| cuda | 1920x1080 | 29.9 | 41.0 / 55.5 | 40.2 → 41.8 | 2 / 600 |" in text
    assert "live" not in gpu_tables.table({**report, "live": []})


@pytest.mark.slow
def test_cpu_rehearsal_of_the_live_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code = gpu_check.main(["--providers", "cpu", "--width", "0.0625", "--only", "inswapper_128",
                           "arcface_w600k_r50", "gfpgan_1.4", "--batches", "1", "--items", "1", "--runs", "1",
                           "--tables", "--live-sizes", "160x120", "--live-seconds", "1", "--seconds", "0.1",
                           "--size", "96x64"])
    assert code == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| cpu | 160x120 |"))
    assert row.endswith(" / 30 |")  # 1 s of a 30 fps camera, captured (counted, never timed)
    report = json.loads(out[out.index("\n{") + 1:])
    live = report["tables"]["live"][0]
    assert live["frames_captured"] == live["frames_delivered"] + live["frames_dropped"] == 30
