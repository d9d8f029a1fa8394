"""System tab: onnxruntime providers available and in use, ffmpeg and the encoders it has, the benchmark."""

from __future__ import annotations

from typing import Any, get_args

import gradio as gr
import pandas as pd

from pipeline import api
from webui.common import Ctx, user_errors
from webui.controls import SettingsForm


def report() -> str:
    lines = ["### Inference"]
    try:
        lines.append(f"- models can run on: {', '.join(api.usable_providers())} "
                     f"(onnxruntime was built with {', '.join(api.available_providers())})")
        loaded = api.loaded_sessions()
        if loaded:
            lines += [f"- loaded: `{m['model']}` on {', '.join(m['providers'])}" for m in loaded]
        else:
            lines.append("- no model loaded yet (a preview or a render loads them)")
    except Exception as exc:  # noqa: BLE001 - a broken onnxruntime install is reported, not raised
        lines.append(f"- onnxruntime unusable: {exc}")
    lines.append("\n### Video tools")
    try:
        tools = api.find_ffmpeg()
        lines.append(f"- ffmpeg: `{tools.ffmpeg}`")
        lines.append(f"- ffprobe: `{tools.ffprobe or 'not found (PyAV probes instead)'}`")
        have = api.ffmpeg_encoders(tools.ffmpeg)
        works = api.usable_encoders()
        known = [e for e in get_args(api.Encoder) if e != "auto"]
        marks = [f"{e} ✓" if e in works else f"{e} ✗ (listed, does not open here)" if e in have else f"{e} ✗"
                 for e in known]
        lines.append("- encoders: " + ", ".join(marks) + " (NVENC confirmed by a one-frame trial encode)")
    except Exception as exc:  # noqa: BLE001 - shown to the user, e.g. FFmpegMissing
        lines.append(f"- ffmpeg not usable: {exc}")
    return "\n".join(lines + farm_lines(api.farm_status()))


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


def wire(ctx: Ctx, c: dict[str, Any], form: SettingsForm) -> None:
    """Refresh and free memory rewrite the report; the benchmark runs with the current settings, polled by a
    timer."""
    c["refresh"].click(report, None, c["report"], api_visibility="private")
    c["release"].click(release_models, None, c["report"], api_visibility="private")

    def on_bench(*vals: Any) -> tuple[str, dict[str, Any]]:
        return start_bench(ctx, form.read(vals))

    c["bench_run"].click(user_errors(on_bench), form.inputs, [c["bench_text"], c["bench_timer"]],
                         api_visibility="private")
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
