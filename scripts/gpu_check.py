#!/usr/bin/env python
"""One short GPU check for a lent NVIDIA machine: providers, batch speed-up on a cost-matched model, NVENC.

Run: scripts/setup.sh (picks the gpu extra when nvidia-smi works)
then `.venv/bin/python scripts/gpu_check.py`.
Prints one JSON document to paste into BENCHMARKS.md.
Nothing here is needed on CPU machines; CI never runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def conv_model(path: Path, size: int = 128, channels: int = 128, layers: int = 8) -> Path:
    """A swapper-shaped conv net (target [B,3,S,S] + source [B,512] -> [B,3,S,S])
    costing ~inswapper's FLOPs.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev, cin = "target", 3
    for i in range(layers):
        cout = 3 if i == layers - 1 else channels
        weights = rng.standard_normal((cout, cin, 3, 3)) * (1 / np.sqrt(cin * 9))
        w = numpy_helper.from_array(weights.astype(np.float32), f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        act = "Relu" if i < layers - 1 else "Sigmoid"
        nodes.append(helper.make_node(act, [f"c{i}"], [f"a{i}"]))
        prev, cin = f"a{i}", cout
    inits.append(numpy_helper.from_array(np.zeros((512, 3), np.float32), "proj"))
    nodes += [helper.make_node("MatMul", ["source", "proj"], ["sp"]),
              helper.make_node("Unsqueeze", ["sp", "axes"], ["sp4"]),
              helper.make_node("Add", [prev, "sp4"], ["output"])]
    inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
    image = ["B", 3, size, size]
    graph = helper.make_graph(nodes, "costmatched",
                              [helper.make_tensor_value_info("target", TensorProto.FLOAT, image),
                               helper.make_tensor_value_info("source", TensorProto.FLOAT, ["B", 512])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, image)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def time_batches(path: Path, provider: str, batches=(1, 2, 4, 8, 16), crops: int = 64) -> dict:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=[provider, "CPUExecutionProvider"])
    got = sess.get_providers()[0]
    out = {"provider": got}
    for b in batches:
        t = np.random.rand(b, 3, 128, 128).astype(np.float32)
        s = np.random.rand(b, 512).astype(np.float32)
        sess.run(None, {"target": t, "source": s})
        start = time.perf_counter()
        for _ in range(max(1, crops // b)):
            sess.run(None, {"target": t, "source": s})
        out[f"batch_{b}_crops_per_s"] = round(max(1, crops // b) * b / (time.perf_counter() - start), 1)
    return out


def main() -> None:
    import onnxruntime as ort

    from pipeline.video import encoders, ffmpeg

    report: dict = {"onnxruntime": ort.__version__, "available": ort.get_available_providers()}
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
        report["nvidia_smi"] = smi.stdout.strip()
    except OSError as exc:
        report["nvidia_smi"] = f"not found: {exc}"
    with tempfile.TemporaryDirectory() as tmp:
        model = conv_model(Path(tmp) / "cost.onnx")
        report["cpu"] = time_batches(model, "CPUExecutionProvider", batches=(1, 8), crops=16)
        if "CUDAExecutionProvider" in report["available"]:
            report["cuda"] = time_batches(model, "CUDAExecutionProvider")
    exe = ffmpeg.ffmpeg_exe()
    for enc in ("h264_nvenc", "hevc_nvenc", "av1_nvenc"):
        report[enc] = encoders.choose_encoder(enc, exe)
    bench = subprocess.run([sys.executable, "-m", "cli", "bench", "--no-temp-frames", "--json",
                            "--set", "execution.providers=tensorrt,cuda,cpu", "--set", "selector.mode=one"],
                           capture_output=True, text=True, cwd=ROOT, timeout=900)
    report["bench"] = json.loads(bench.stdout) if bench.returncode == 0 else bench.stderr[-2000:]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/test_gpu.py"], cwd=ROOT,
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "FACESTATION_GPU_TESTS": "1"})
    report["gpu_tests"] = tests.stdout.strip().splitlines()[-1:] + tests.stdout.splitlines()[-40:-1]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
