"""System tab: onnxruntime providers available and in use, ffmpeg and the encoders it has, the benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import gradio as gr
import pandas as pd

from pipeline import api
from webui import workers
from webui.common import Ctx, user_errors
from webui.controls import SettingsForm

# onnxruntime's provider names in plain words; one not listed (Azure, ...) is never offered here, so not shown
PROVIDER_WORDS = {"TensorrtExecutionProvider": "TensorRT", "CUDAExecutionProvider": "CUDA GPU",
                  "CPUExecutionProvider": "CPU", "tensorrt": "TensorRT", "cuda": "CUDA GPU", "cpu": "CPU"}


def plain_providers(names: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(PROVIDER_WORDS[n] for n in names if n in PROVIDER_WORDS)) or "none"


def report() -> str:
    lines = ["### Inference"]
    try:
        problem = api.gpu_problem()
        if problem is not None:  # a GPU here that models will not use: red, first
            lines.append(f'- <span style="color:#d32f2f">🔴 **{problem.line()}**</span>')
        lines.append(f"- models can run on: {plain_providers(api.usable_providers())} "
                     f"(onnxruntime was built for {plain_providers(api.available_providers())})")
        lines += loaded_lines(api.loaded_sessions())
    except Exception as exc:  # noqa: BLE001 - a broken onnxruntime install is reported, not raised
        lines.append(f"- onnxruntime unusable: {exc}")
    lines.append("\n### Video tools")
    try:
        tools = api.find_ffmpeg()
        lines.append(f"- ffmpeg: `{tools.ffmpeg}`")
        lines.append(f"- ffprobe: `{tools.ffprobe or 'not found (PyAV probes instead)'}`")
        lines.append("- encoders: " + encoder_marks(api.ffmpeg_encoders(tools.ffmpeg), api.usable_encoders(),
                                                    api.encoder_failures()))
    except Exception as exc:  # noqa: BLE001 - shown to the user, e.g. FFmpegMissing
        lines.append(f"- ffmpeg not usable: {exc}")
    return "\n".join(lines + farm_lines(api.farm_status()))


def loaded_lines(loaded: Sequence[dict[str, Any]]) -> list[str]:
    """One line per model file loaded now (a file loaded twice, e.g. with other thread counts, once)."""
    if not loaded:
        return ["- no model loaded now (a preview or a render loads them)"]
    providers: dict[str, list[str]] = {}
    for m in loaded:  # by its catalog name (a batched copy's file is named by its sha256)
        providers.setdefault(m.get("name", m["model"]), []).extend(m["providers"])
    return [f"- loaded: `{model}` on {plain_providers(names)}" for model, names in providers.items()]


def encoder_marks(listed: Sequence[str] | set[str], works: Sequence[str], failed: dict[str, str]) -> str:
    """Each known encoder: ✓ where it opens here, else ✗ and what failed."""
    marks = []
    for e in (e for e in get_args(api.Encoder) if e != "auto"):
        if e in works:
            marks.append(f"{e} ✓" + (" (a one-frame trial encode worked)" if e.endswith("_nvenc") else ""))
        elif e in failed:
            marks.append(f"{e} ✗ (in this ffmpeg, but its one-frame trial encode failed: {failed[e]})")
        elif e in listed:
            marks.append(f"{e} ✗ (in this ffmpeg, but does not open here)")
        else:
            marks.append(f"{e} ✗ (not in this ffmpeg)")
    return ", ".join(marks)


def farm_lines(status: dict[str, Any] | None) -> list[str]:
    """The render farm's nodes, their GPUs and free GPU memory, and the segments running now."""
    lines = ["\n### Render farm"]
    if status is None:
        return [*lines, "- not running (start one with `facestation queue run --ray local`)"]
    running = sum(status["running"].values())
    lines.append(f"- {status['address']}: {len(status['nodes'])} node(s), {status['slots']} slot(s), "
                 f"{running} segment(s) rendering")
    for n in status["nodes"]:
        free = f", {n['gpu_free_mb']:.0f} MB free" if n.get("gpu_free_mb") is not None else ""
        lines.append(f"- `{n['node']}` ({n['node_id']}): {n['gpus']:g} GPU{free}, {n['cpus']:g} CPU")
    return lines


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["report"] = gr.Markdown(report(), elem_id="system-report")
    c["workers"] = gr.Markdown("", elem_id="system-workers")  # who renders this queue's jobs
    with gr.Row():
        c["refresh"] = gr.Button("Refresh", size="sm", elem_id="system-refresh")
        c["release"] = gr.Button("Free model memory", size="sm", elem_id="system-release")
    gr.Markdown("### Benchmark\nA short generated 720p clip through the plain transcode, a naive frame loop "
                "and the staged pipeline, with the current settings (about half a minute on a CPU). "
                "Full runs: `facestation bench`.")
    c["bench_run"] = gr.Button("Run benchmark", elem_id="bench-run")
    c["bench_text"] = gr.Markdown("", elem_id="bench-text")
    c["bench_chart"] = gr.BarPlot(x="stage", y="ms per frame", title="busy time per frame, by stage",
                                  elem_id="bench-chart", visible=False, sort=list(api.STAGES))
    c["bench_timer"] = gr.Timer(1.0, active=False)
    return c


def wire(ctx: Ctx, c: dict[str, Any], form: SettingsForm, shown: Any) -> None:
    """Opening the tab (``shown``: its select event) and Refresh rewrite the report (the models loaded now)
    and the workers; free memory rewrites the report; the benchmark runs with the current settings, polled
    by a timer."""
    def refresh(request: gr.Request) -> tuple[str, str]:
        return report(), "### Render workers\n" + workers.summary(ctx, request)

    gr.on([shown, c["refresh"].click], refresh, None, [c["report"], c["workers"]], api_visibility="private",
          show_progress="hidden")
    c["release"].click(release_models, None, c["report"], api_visibility="private")

    def on_bench(*vals: Any) -> tuple[str, dict[str, Any]]:
        return start_bench(ctx, form.read(vals))

    # no progress overlay: Gradio's own one flashed an untranslated "common.complete" at its end
    c["bench_run"].click(user_errors(on_bench), form.inputs, [c["bench_text"], c["bench_timer"]],
                         api_visibility="private", show_progress="hidden")
    polled = [c["bench_text"], c["bench_chart"], c["bench_timer"]]
    c["bench_timer"].tick(lambda: poll_bench(ctx), None, polled, api_visibility="private",
                          show_progress="hidden")


def release_models() -> str:
    """Drop every loaded model session (they load again on the next preview or render)."""
    count = api.release_sessions()
    return report() + f"\n\n_freed {count} loaded model session(s)_"


def start_bench(ctx: Ctx, settings: api.Settings) -> tuple[str, dict[str, Any]]:
    if ctx.bench is not None and ctx.bench.state == "running":
        return "a benchmark is already running", gr.update(active=True)
    ctx.bench = api.BackgroundBench(settings)
    return "benchmark running…", gr.update(active=True)


def poll_bench(ctx: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    run = ctx.bench
    if run is None:
        return "", gr.update(), gr.update(active=False)
    st = run.status()
    if st["state"] == "running":
        return f"benchmark running… {st['elapsed_s']:.0f} s", gr.update(), gr.update(active=True)
    if st["state"] == "failed":
        return f"benchmark failed: {st['error']}", gr.update(visible=False), gr.update(active=False)
    r = st["report"]
    fps, ratio = r["fps"], r["ratio"]
    text = (f"**{r['clip']['width']}×{r['clip']['height']}, {r['clip']['frames']} frames**, models "
            f"{', '.join(r['models'])}, encoder {r['encoder']}, batch {r['batch_size']}  \n"
            f"transcode {fps['transcode']} fps · naive {fps['naive']} fps · "
            f"pipeline **{fps['pipeline']} fps** "
            f"(× {ratio['pipeline_vs_transcode']} of transcode, × {ratio['pipeline_vs_naive']} of naive)")
    rows = pd.DataFrame({"stage": list(r["ms_per_frame"]), "ms per frame": list(r["ms_per_frame"].values())})
    top = max(1.0, float(rows["ms per frame"].max()) * 1.15)
    return text, gr.update(value=rows, visible=True, y_lim=[0, top]), gr.update(active=False)
