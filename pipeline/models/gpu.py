"""A GPU that is present but not used, said loudly, with the missing piece and the command that fixes it.

onnxruntime-gpu that cannot load its CUDA provider (cuDNN or the CUDA runtime libraries missing, a driver
older than its CUDA, a card newer than the CUDA it was built for: an RTX 50 needs CUDA 12.8) logs an error
and runs every model on the CPU. Asked only where ``nvidia-smi`` sees a card: one tiny graph is run on the
CUDA provider in a child process (a failing CUDA start-up cannot take the caller down, and its error text is
read), and what the session really got, with onnxruntime's words, says which piece is missing. The answer is
kept for the life of the process; the CLI prints :meth:`GpuProblem.line` on every command that runs models
and the System tab shows it in red.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

log = logging.getLogger(__name__)

TRIAL_PYTHON = sys.executable  # the interpreter of the trial run (tests put a fake one here)
TRIAL_TIMEOUT_S = 120.0
NEWEST_CARD_CUDA = ((12, 0), (12, 8))  # compute capability 12.x (RTX 50, Blackwell) needs CUDA ≥ 12.8
_TRIAL = r"""
import json, sys
try:
    import onnx, onnxruntime as ort
    from onnx import helper, TensorProto
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "trial", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    try:
        from onnxruntime.capi import build_and_package_info as info
        cuda = getattr(info, "cuda_version", "")
    except ImportError:
        cuda = ""
    s = ort.InferenceSession(model.SerializeToString(),
                             providers=[sys.argv[1] if len(sys.argv) > 1 else "CUDAExecutionProvider",
                                        "CPUExecutionProvider"])
    s.run(None, {"x": [[1.0, -1.0, 2.0, -2.0]]})
    print(json.dumps({"providers": s.get_providers(), "cuda": cuda, "version": ort.__version__}))
except Exception as exc:
    print(json.dumps({"providers": [], "error": str(exc).strip().splitlines()[0] if str(exc).strip() else
                      type(exc).__name__}))
"""


@dataclass(frozen=True)
class Card:
    name: str
    driver: str
    compute: tuple[int, int] | None  # compute capability, where nvidia-smi tells it

    def __str__(self) -> str:
        cc = f", compute {self.compute[0]}.{self.compute[1]}" if self.compute else ""
        return f"{self.name} (driver {self.driver}{cc})"


@dataclass(frozen=True)
class Trial:
    """What a tiny graph asked to run on CUDA really got: its providers, onnxruntime's CUDA version and
    version, and the error text (onnxruntime's log and any exception)."""

    providers: tuple[str, ...]
    cuda: str = ""
    version: str = ""
    error: str = ""


@dataclass(frozen=True)
class GpuProblem:
    card: Card
    missing: str  # the piece missing, in words
    fix: str  # the command (or step) that fixes it

    def line(self) -> str:
        return (f"GPU not used: {self.card} is here, but {self.missing}; models run on the CPU. "
                f"Fix: {self.fix}")


def nvidia_card() -> Card | None:
    """The first card ``nvidia-smi`` lists (None without nvidia-smi, a driver or a card)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    fields = [f.strip() for f in (out.strip().splitlines() or [""])[0].split(",")]
    if len(fields) < 2 or not fields[0]:
        return None
    compute = re.fullmatch(r"(\d+)\.(\d+)", fields[2]) if len(fields) > 2 else None
    return Card(fields[0], fields[1], (int(compute[1]), int(compute[2])) if compute else None)


def trial_cuda() -> Trial:
    """Run one tiny graph on the CUDA provider in a child process: what it got, and onnxruntime's words."""
    return trial("CUDAExecutionProvider")


def trial(provider: str) -> Trial:
    """Run one tiny graph on ``provider`` (an onnxruntime provider name, the CPU as its fallback) in a child
    process: what it got, and onnxruntime's words."""
    try:
        run = subprocess.run([TRIAL_PYTHON, "-c", _TRIAL, provider], capture_output=True, text=True,
                             timeout=TRIAL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return Trial((), error=f"the trial run did not finish: {exc}")
    try:
        found = json.loads(run.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Trial((), error=(run.stderr.strip().splitlines() or ["the trial run crashed"])[-1])
    error = "\n".join(filter(None, (found.get("error", ""), run.stderr.strip())))
    return Trial(tuple(found.get("providers", ())), found.get("cuda", ""), found.get("version", ""), error)


def _version(text: str) -> tuple[int, int]:
    parts = re.findall(r"\d+", text)
    return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) if parts else (0, 0)


def diagnose(card: Card | None, built: list[str], trial: Trial | None) -> GpuProblem | None:
    """The problem, if a card is here and models will not run on it (pure: the facts are given)."""
    if card is None:
        return None
    if "CUDAExecutionProvider" not in built:
        return GpuProblem(card, "the CPU onnxruntime is installed, not onnxruntime-gpu",
                          "scripts/setup.sh (it picks the gpu extra when nvidia-smi sees a card), or: "
                          "pip uninstall -y onnxruntime && pip install 'facestation[gpu]'")
    if trial is None or (trial.providers and trial.providers[0] == "CUDAExecutionProvider"):
        return None
    return GpuProblem(card, *_missing(card, trial))


def _missing(card: Card, trial: Trial) -> tuple[str, str]:
    """(what is missing, the fix) from onnxruntime's error text and the card's and runtime's versions."""
    text = trial.error
    pinned = f"=={trial.version}" if trial.version else ""
    runtime = f"CUDA {trial.cuda}" if trial.cuda else "its CUDA"
    reinstall = f"pip install --force-reinstall 'onnxruntime-gpu[cuda,cudnn]{pinned}'"
    lib = re.search(r"(lib[\w.+-]+\.so[\d.]*)\S*: cannot open shared object file", text)
    if lib:
        name = lib[1]
        what = "cuDNN" if "cudnn" in name else "the CUDA runtime libraries" if "cu" in name else "a library"
        return (f"{what} for onnxruntime-gpu's CUDA provider cannot be loaded ({name} not found)",
                f"{reinstall} (the extras bring NVIDIA's CUDA and cuDNN libraries)")
    if re.search(r"driver version is insufficient|CUDA driver version|cudaErrorInsufficientDriver", text):
        return (f"driver {card.driver} is older than {runtime} of this onnxruntime-gpu needs",
                "update the NVIDIA driver (Linux: your distribution's nvidia-driver package, e.g. sudo "
                "ubuntu-drivers install; Windows: the NVIDIA app), then start again")
    too_new = card.compute is not None and card.compute >= NEWEST_CARD_CUDA[0] and trial.cuda and \
        _version(trial.cuda) < NEWEST_CARD_CUDA[1]
    if too_new or "no kernel image is available" in text:
        return (f"the card is newer than {runtime} this onnxruntime-gpu was built for (compute 12.x needs "
                f"CUDA 12.8 or newer)",
                "pip install -U 'onnxruntime-gpu[cuda,cudnn]' (a build for CUDA 12.8 or newer)")
    first = (text.strip().splitlines() or ["it fell back to the CPU without saying why"])[0][:200]
    return f"onnxruntime-gpu's CUDA provider did not start ({first})", reinstall


@functools.cache
def gpu_problem() -> GpuProblem | None:
    """This machine's answer (asked once per process; nothing is run without a card)."""
    card = nvidia_card()
    if card is None:
        return None
    from pipeline.models.sessions import available_providers

    try:
        built = available_providers()
    except Exception as exc:  # noqa: BLE001 - no onnxruntime at all: the commands say so themselves
        log.info("onnxruntime not usable: %s", exc)
        return None
    problem = diagnose(card, built, trial_cuda() if "CUDAExecutionProvider" in built else None)
    if problem is not None:
        log.warning("%s", problem.line())
    return problem
