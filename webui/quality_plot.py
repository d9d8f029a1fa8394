"""The Queue tab's picture of a finished job's quality report (issue 35, point 2), under the before / after
players: identity, faces swapped and found, and jitter over the output's frames, the flagged stretches
shaded, a playhead where the result player is; a click on it seeks both players to the frame under the
pointer.

Drawn here as an inline SVG (the report's numbers as lines; nothing is computed but their placing), so the
click lands in the page's own script: the x of a click is a frame (each frame one column of
:data:`PLOT_W`), its time (the frame's middle) is set on the result player, and the players' sync
(``queue_tab.SYNC_PLAYERS_JS``) moves the target with it. Built into the tab by :func:`section` (after the
players' HTML) and :data:`SEEK_JS` (after their script).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline import api

WIDTH, LEFT, RIGHT = 800, 86, 8  # the viewBox's width; the frames' columns lie between LEFT and WIDTH - RIGHT
PLOT_W = WIDTH - LEFT - RIGHT
BANDS = {"identity": (8, 78), "faces": (92, 150), "jitter": (164, 222)}  # each chart's top and bottom (y)
HEIGHT = 244
COLUMNS = 1200  # at most this many points a line: a long video's frames are drawn in groups
# how each part is drawn (SVG attributes: the plot carries its own look, no page CSS)
LOOK = {
    "fs-q-after": 'fill="none" stroke="#2e7d32" stroke-width="1.6"',
    "fs-q-before": 'fill="none" stroke="#888" stroke-width="1.2" stroke-dasharray="3 3"',
    "fs-q-found": 'fill="none" stroke="#1f6fb2" stroke-width="1.4"',
    "fs-q-swapped": 'fill="none" stroke="#e67e22" stroke-width="3"',
    "fs-q-jitter": 'fill="none" stroke="#7b3fa0" stroke-width="1.4"',
    "fs-q-limit": 'stroke="#c0392b" stroke-width="0.8" stroke-dasharray="5 3"',
    "fs-stretch": 'fill="#c0392b" fill-opacity="0.18"',
    "fs-q-text": 'font-size="11" fill="currentColor" opacity="0.8"',
}

# a click on the plot: the frame under the pointer (the SVG's own coordinates), the result player sent to its
# middle; the sync above moves the target player with it
SEEK_JS = """
element.addEventListener('click', (e) => {
  const svg = e.target.closest('.fs-quality svg');
  const after = element.querySelector('#job-after video');
  if (!svg || !after) return;
  const d = svg.dataset;
  const x = new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse()).x;
  const frame = Math.min(+d.frames - 1, Math.max(0, Math.floor((x - +d.left) / +d.step)));
  after.currentTime = (frame + 0.5) / +d.fps;
});
// the playhead: where the result player is, on the plot (moved as it plays or is sought)
const head = (e) => {
  const svg = element.querySelector('.fs-quality svg'), line = svg && svg.querySelector('.fs-q-head');
  if (!line || e.target !== element.querySelector('#job-after video')) return;
  const x = +svg.dataset.left + e.target.currentTime * +svg.dataset.fps * +svg.dataset.step;
  line.setAttribute('x1', x.toFixed(1));
  line.setAttribute('x2', x.toFixed(1));
};
element.addEventListener('timeupdate', head, true);
element.addEventListener('seeked', head, true);
"""


def section(output: str | Path) -> str:
    """The report of ``output`` as HTML: its summary line and, for a video, the plot; one plain line when
    there is none (a job rendered before reports, or its file removed)."""
    try:
        report = api.read_quality_report(output)
    except api.UserError as exc:
        return f'<p class="fs-quality-none">{html.escape(str(exc))}</p>'
    line = html.escape(_summary(report))
    frames, fps = report["frames"], report.get("fps")
    if not fps or len(frames) < 2:  # a still: its one frame says it all
        return f'<div class="fs-quality"><p>{line}</p></div>'
    hint = "click the plot to see that moment in both players"
    return f'<div class="fs-quality"><p>{line} · {hint}</p>{svg(report)}</div>'


def _summary(report: dict[str, Any]) -> str:
    s = report["summary"]
    said = [f"Quality: {s['frames_swapped']}/{s['frames']} frames swapped"]
    if s.get("identity_mean") is not None:
        said.append(f"identity {s['identity_mean']:.2f}")
    n = s["stretches"]
    said.append(f"{n} flagged stretch{'es' if n != 1 else ''}")
    return ", ".join(said)


def svg(report: dict[str, Any]) -> str:
    """The plot: three charts over the frames (identity after / before with its threshold; faces found /
    swapped; jitter with its threshold), the flagged stretches shaded across all three."""
    fps, limits = float(report["fps"]), report["thresholds"]
    total = report["frames"][-1]["frame"] + 1  # numbers: a resumed job's report may lack its earlier frames
    step = PLOT_W / total
    frames, size = _grouped(report["frames"], total)
    parts = [_stretch(s, step, fps) for s in report["stretches"]]
    found = [float(f["found"]) for f in frames]
    top_faces = max([*found, 1.0])
    jitter = [f["jitter"] for f in frames]
    top_jitter = max([limits["jitter_max"] * 2, *(j for j in jitter if j is not None)])
    # identity is judged every ``identity_every``-th frame: its line joins the judged frames, broken only
    # where a frame had no face swapped
    judged = [f for f in frames if f["identity"] or not f["swapped"]]
    every = size * math.ceil(int(limits.get("identity_every", 1)) / size)
    charts: list[tuple[str, list[dict[str, Any]], Sequence[float | None], float, float, str]] = [
        ("identity", judged, [min(f["identity"]) if f["identity"] else None for f in judged], 0.0, 1.0,
         "fs-q-after"),
        ("identity", judged, [min((b for b in f["before"] if b is not None), default=None) for f in judged],
         0.0, 1.0, "fs-q-before"),
        ("faces", frames, [float(f["swapped"]) for f in frames], 0.0, top_faces, "fs-q-swapped"),
        ("faces", frames, found, 0.0, top_faces, "fs-q-found"),  # over swapped: where they part, both show
        ("jitter", frames, jitter, 0.0, top_jitter, "fs-q-jitter")]
    parts += [_line(band, [f["frame"] for f in those], values, (low, high), step, css,
                    every if band == "identity" else size)
              for band, those, values, low, high, css in charts]
    parts += [_rule("identity", limits["identity_min"], 0.0, 1.0), _rule("jitter", limits["jitter_max"], 0.0,
                                                                         top_jitter)]
    parts += [_label("identity", "identity"), _label("faces", f"faces (0–{top_faces:g})"),
              _label("jitter", "jitter")]
    parts.append(_legend())
    top, bottom = BANDS["identity"][0], BANDS["jitter"][1]
    parts.append(f'<line class="fs-q-head" stroke="currentColor" stroke-width="1" x1="{LEFT}" x2="{LEFT}" '
                 f'y1="{top}" y2="{bottom}"/>')
    seconds = total / fps
    text, y = LOOK["fs-q-text"], HEIGHT - 4
    parts.append(f'<text class="fs-q-axis" {text} x="{LEFT}" y="{y}">0 s</text>'
                 f'<text class="fs-q-axis" {text} x="{WIDTH - RIGHT}" y="{y}" text-anchor="end">'
                 f'{seconds:.1f} s · {total} frames</text>')
    return (f'<svg class="fs-quality-plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="quality over time" style="width: 100%; height: auto; cursor: pointer" '
            f'data-frames="{total}" data-fps="{fps:g}" data-left="{LEFT}" data-step="{step!r}">'
            f'{"".join(parts)}</svg>')


def _grouped(frames: list[dict[str, Any]], total: int) -> tuple[list[dict[str, Any]], int]:
    """A long video's frames in groups of ``size`` (at most :data:`COLUMNS` groups), each the worst of its
    frames placed at its middle (lowest identity, fewest swapped, most found, most jitter); (frames, 1) for
    a short one."""
    size = math.ceil(total / COLUMNS)
    if size <= 1:
        return frames, 1
    groups: dict[int, list[dict[str, Any]]] = {}
    for f in frames:
        groups.setdefault(f["frame"] // size, []).append(f)
    out = []
    for g, fs in sorted(groups.items()):
        ids = [min(f["identity"]) for f in fs if f["identity"]]
        before = [b for f in fs for b in f["before"] if b is not None]
        jitter = [f["jitter"] for f in fs if f["jitter"] is not None]
        out.append({"frame": min(g * size + size // 2, total - 1), "identity": [min(ids)] if ids else [],
                    "before": [min(before)] if before else [], "found": max(f["found"] for f in fs),
                    "swapped": min(f["swapped"] for f in fs), "jitter": max(jitter) if jitter else None})
    return out, size


def _legend() -> str:
    """What each colour is, along the bottom between the axis' ends."""
    said = [("#2e7d32", "identity after"), ("#888", "before"), ("#1f6fb2", "faces found"),
            ("#e67e22", "swapped"), ("#7b3fa0", "jitter"), ("#c0392b", "thresholds, flagged (shaded)")]
    spans = "  ".join(f'<tspan fill="{colour}">■ {text}</tspan>' for colour, text in said)
    return (f'<text class="fs-q-legend" font-size="11" x="{LEFT + PLOT_W / 2}" y="{HEIGHT - 4}" '
            f'text-anchor="middle">{spans}</text>')


def _y(band: str, value: float, low: float, high: float) -> float:
    top, bottom = BANDS[band]
    share = (min(max(value, low), high) - low) / ((high - low) or 1.0)
    return round(bottom - share * (bottom - top), 1)


def _line(band: str, numbers: Sequence[int], values: Sequence[float | None], span: tuple[float, float],
          step: float, css: str, reach: int = 1) -> str:
    """One polyline per run of frames with a value, frames at most ``reach`` apart (a frame without a
    value, or a longer gap, breaks the line); a run of one point is a dot."""
    runs: list[list[str]] = [[]]
    last = None
    for i, value in zip(numbers, values, strict=True):
        if value is None or math.isnan(value) or (last is not None and i - last > reach):
            runs.append([])
        last = i
        if value is not None and not math.isnan(value):
            runs[-1].append(f"{LEFT + (i + 0.5) * step:.1f},{_y(band, value, *span)}")
    return "".join(f'<polyline class="{css}" {LOOK[css]} points="{" ".join(run)}"/>' if len(run) > 1 else
                   _dot(css, run[0]) for run in runs if run)


def _dot(css: str, point: str) -> str:
    x, y = point.split(",")
    colour = LOOK[css].split('stroke="')[1].split('"')[0]
    return f'<circle class="{css}" cx="{x}" cy="{y}" r="2.5" fill="{colour}"/>'


def _rule(band: str, value: float, low: float, high: float) -> str:
    y = _y(band, value, low, high)
    look = LOOK["fs-q-limit"]
    return f'<line class="fs-q-limit" {look} x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>'


def _label(band: str, text: str) -> str:
    top, bottom = BANDS[band]
    return (f'<text class="fs-q-label" {LOOK["fs-q-text"]} x="{LEFT - 6}" y="{(top + bottom) / 2 + 4}" '
            f'text-anchor="end">{text}</text>')


def _stretch(stretch: dict[str, Any], step: float, fps: float) -> str:
    start, end = int(stretch["start"]), int(stretch["end"])
    kinds = ", ".join(stretch["kinds"])
    title = f"frames {start}–{end} ({start / fps:.2f}–{(end + 1) / fps:.2f} s): {kinds}"
    top, bottom = BANDS["identity"][0], BANDS["jitter"][1]
    return (f'<rect class="fs-stretch" {LOOK["fs-stretch"]} data-start="{start}" data-end="{end}" '
            f'x="{LEFT + start * step:.1f}" y="{top}" width="{(end - start + 1) * step:.1f}" '
            f'height="{bottom - top}"><title>{html.escape(title)}</title></rect>')
