"""System tab: onnxruntime providers available and in use, ffmpeg and the encoders it has, the benchmark."""

from __future__ import annotations

import importlib.util
from typing import Any, get_args

import gradio as gr

from pipeline.types import Encoder


def report() -> str:
    lines = ["### Inference"]
    try:
        from pipeline.models import sessions

        lines.append(f"- providers available: {', '.join(sessions.available_providers())}")
        loaded = sessions.loaded()
        if loaded:
            lines += [f"- loaded: `{m['model']}` on {', '.join(m['providers'])}" for m in loaded]
        else:
            lines.append("- no model loaded yet (a preview or a render loads them)")
    except Exception as exc:  # noqa: BLE001 - a broken onnxruntime install is reported, not raised
        lines.append(f"- onnxruntime unusable: {exc}")
    lines.append("\n### Video tools")
    try:
        from pipeline.video import ffmpeg

        tools = ffmpeg.find_tools()
        lines.append(f"- ffmpeg: `{tools.ffmpeg}`")
        lines.append(f"- ffprobe: `{tools.ffprobe or 'not found (PyAV probes instead)'}`")
        have = ffmpeg.encoders(tools.ffmpeg)
        known = [e for e in get_args(Encoder) if e != "auto"]
        lines.append("- encoders: " + ", ".join(f"{e} {'✓' if e in have else '✗'}" for e in known)
                     + " (NVENC is confirmed by a trial encode when a render starts)")
    except Exception as exc:  # noqa: BLE001 - shown to the user, e.g. FFmpegMissing
        lines.append(f"- ffmpeg not usable: {exc}")
    return "\n".join(lines)


def bench_available() -> bool:
    return importlib.util.find_spec("pipeline.bench") is not None


def create() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["report"] = gr.Markdown(report(), elem_id="system-report")
    c["refresh"] = gr.Button("Refresh", size="sm", elem_id="system-refresh")
    # a benchmark is a render: it is not run inside a UI callback (a queued benchmark job would be the way)
    note = ("Benchmark: run `facestation bench` on the host; its per-stage results are not shown here yet."
            if bench_available() else "The benchmark is not part of this build yet.")
    c["bench_note"] = gr.Markdown(note, elem_id="bench-note")
    return c
