"""A GPU that is present but not used is said loudly: faked as the NVENC tests fake ffmpeg. A fake
``nvidia-smi`` on PATH lists a card; the onnxruntime built in is said to have CUDA (the gpu extra); a fake
interpreter answers the CUDA trial run as onnxruntime-gpu does when a piece is missing (its log line on
stderr, the providers the session really got on stdout). Judged where the user sees it: one line on each
command that runs models, red on the System tab, CUDA no longer offered."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import bench, live, models, queue, swap, ui
from cli.main import main
from pipeline import machine
from pipeline.models import gpu, sessions
from webui import system_tab

GPU_BUILT = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
RTX_4090 = "NVIDIA GeForce RTX 4090, 550.54.15, 8.9"
RTX_5090 = "NVIDIA GeForce RTX 5090, 570.86.10, 12.0"
CUDNN_MISSING = ("[E:onnxruntime:Default, provider_bridge_ort.cc:2036 TryGetProviderInfo_CUDA] Failed to "
                 "load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open "
                 "shared object file: No such file or directory")
CUBLAS_MISSING = CUDNN_MISSING.replace("libcudnn.so.9", "libcublasLt.so.13")
OLD_DRIVER = ("[E:onnxruntime:Default, cuda_call.cc:123 CudaCall] CUDA failure 35: CUDA driver version is "
              "insufficient for CUDA runtime version ; GPU=0 ; hostname=box")


def _exe(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


class Machine:
    """The fakes: which card nvidia-smi lists, what the CUDA trial gets, and whether it was run."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder, self.monkeypatch = folder, monkeypatch
        monkeypatch.setenv("PATH", f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setattr(sessions, "available_providers", lambda: list(GPU_BUILT))

    def card(self, line: str) -> None:
        _exe(self.folder / "bin" / "nvidia-smi", f"print({line!r})\n")

    def trial(self, providers: list[str], stderr: str = "", cuda: str = "13.0",
              version: str = "1.31.1") -> None:
        answer = json.dumps({"providers": providers, "cuda": cuda, "version": version})
        fake = _exe(self.folder / "python", f"import sys\nopen({str(self.ran)!r}, 'a').write('ran\\n')\n"
                    f"sys.stderr.write({stderr!r})\nprint({answer!r})\n")
        self.monkeypatch.setattr(gpu, "TRIAL_PYTHON", str(fake))

    @property
    def ran(self) -> Path:
        return self.folder / "trial-ran"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    gpu.gpu_problem.cache_clear()
    machine.usable_providers.cache_clear()
    yield Machine(tmp_path, monkeypatch)
    gpu.gpu_problem.cache_clear()
    machine.usable_providers.cache_clear()


def test_missing_cudnn_names_the_library_and_the_reinstall(fake: Machine) -> None:
    fake.card(RTX_4090)
    fake.trial(["CPUExecutionProvider"], CUDNN_MISSING)
    problem = gpu.gpu_problem()
    assert problem is not None
    assert problem.line() == (
        "GPU not used: NVIDIA GeForce RTX 4090 (driver 550.54.15, compute 8.9) is here, but cuDNN for "
        "onnxruntime-gpu's CUDA provider cannot be loaded (libcudnn.so.9 not found); models run on the CPU. "
        "Fix: pip install --force-reinstall 'onnxruntime-gpu[cuda,cudnn]==1.31.1' (the extras bring NVIDIA's "
        "CUDA and cuDNN libraries)")


def test_missing_cuda_runtime_libraries(fake: Machine) -> None:
    fake.card(RTX_4090)
    fake.trial(["CPUExecutionProvider"], CUBLAS_MISSING)
    problem = gpu.gpu_problem()
    assert problem is not None and "the CUDA runtime libraries" in problem.missing
    assert "(libcublasLt.so.13 not found)" in problem.missing


def test_a_driver_older_than_the_runtime(fake: Machine) -> None:
    fake.card(RTX_4090)
    fake.trial([], OLD_DRIVER)
    problem = gpu.gpu_problem()
    assert problem is not None
    assert problem.missing == "driver 550.54.15 is older than CUDA 13.0 of this onnxruntime-gpu needs"
    assert problem.fix.startswith("update the NVIDIA driver")


def test_an_rtx_50_on_a_runtime_older_than_cuda_12_8(fake: Machine) -> None:
    fake.card(RTX_5090)
    fake.trial(["CPUExecutionProvider"], cuda="12.4", version="1.20.1")
    problem = gpu.gpu_problem()
    assert problem is not None
    assert problem.missing.startswith("the card is newer than CUDA 12.4 this onnxruntime-gpu was built for")
    assert problem.fix.startswith("pip install -U 'onnxruntime-gpu[cuda,cudnn]'")


def test_the_cpu_package_on_a_gpu_machine(fake: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.card(RTX_4090)
    fake.trial(["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(sessions, "available_providers", lambda: ["CPUExecutionProvider"])
    problem = gpu.gpu_problem()
    assert problem is not None and problem.missing == "the CPU onnxruntime is installed, not onnxruntime-gpu"
    assert not fake.ran.exists()  # nothing to try: the package has no CUDA provider


def test_a_working_gpu_and_no_gpu_say_nothing(fake: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.card(RTX_4090)
    fake.trial(["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(machine, "cuda_devices", lambda: 1)
    assert gpu.gpu_problem() is None and fake.ran.exists()
    assert "cuda" in machine.usable_providers()
    gpu.gpu_problem.cache_clear()
    fake.ran.unlink()
    (fake.folder / "bin" / "nvidia-smi").unlink()
    assert gpu.gpu_problem() is None and not fake.ran.exists()  # no card: nothing run


def _stub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command's handler made a no-op: the line is said before any of them runs."""
    for module, name in ((swap, "cmd_swap"), (live, "cmd_live"), (bench, "cmd_bench"), (ui, "cmd_ui"),
                         (queue, "cmd_run"), (models, "cmd_check"), (models, "cmd_list")):
        monkeypatch.setattr(module, name, lambda _args: 0)


RUNS_MODELS = (["swap", "--source", "s.jpg", "--target", "t.mp4", "--output", "o.mp4"],
               ["live", "--source", "s.jpg", "--camera", "c.mp4", "--output", "o.mp4"],
               ["bench"], ["ui"], ["queue", "run"], ["models", "check"])


def test_every_command_that_runs_models_says_it_in_one_line(
        fake: Machine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake.card(RTX_5090)
    fake.trial(["CPUExecutionProvider"], CUDNN_MISSING)
    monkeypatch.setattr(machine, "cuda_devices", lambda: 1)  # the driver sees the card
    _stub(monkeypatch)
    for argv in RUNS_MODELS:
        assert main(argv) == 0, argv
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("facestation: warning: GPU not used: NVIDIA GeForce RTX "
                                                   "5090"), (argv, err)
        assert "libcudnn.so.9 not found" in err[0] and "Fix: pip install" in err[0]
    assert main(["models", "list"]) == 0
    assert capsys.readouterr().err == ""  # a listing runs no model
    assert machine.usable_providers() == ("cpu",)  # CUDA is not offered where it does not start


def test_the_system_tab_shows_it_in_red(fake: Machine) -> None:
    fake.card(RTX_4090)
    fake.trial([], OLD_DRIVER)
    report = system_tab.report()
    line = next(row for row in report.splitlines() if "GPU not used" in row)
    assert line.startswith('- <span style="color:#d32f2f">🔴 **GPU not used: NVIDIA GeForce RTX 4090')
    assert "driver 550.54.15 is older than CUDA 13.0" in line and "update the NVIDIA driver" in line
    fake.trial(["CUDAExecutionProvider"])
    gpu.gpu_problem.cache_clear()
    assert "GPU not used" not in system_tab.report()
