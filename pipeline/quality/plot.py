"""The quality report as a picture: identity, faces swapped and found, and jitter over the frames, the flagged
stretches shaded (matplotlib, drawn off screen into a PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.paths import write_atomic


def draw(report: dict[str, Any], png: Path) -> Path:
    """Draw ``report`` (as read from its file) into ``png``; its path."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    frames = report["frames"]
    x = [f["frame"] for f in frames]
    fig = Figure(figsize=(10, 6), dpi=100)
    ax_id, ax_faces, ax_jitter = fig.subplots(3, 1, sharex=True)
    identity = [min(f["identity"]) if f["identity"] else float("nan") for f in frames]
    before = [min((b for b in f["before"] if b is not None), default=float("nan")) for f in frames]
    ax_id.plot(x, identity, label="identity after", color="tab:green")
    ax_id.plot(x, before, label="before", color="tab:grey", linestyle=":")
    ax_id.axhline(report["thresholds"]["identity_min"], color="tab:red", linewidth=0.8)
    ax_id.set_ylabel("SFace cosine")
    ax_id.legend(loc="lower right", fontsize="small")
    ax_faces.step(x, [f["found"] for f in frames], where="mid", label="found", color="tab:blue")
    ax_faces.step(x, [f["swapped"] for f in frames], where="mid", label="swapped", color="tab:orange")
    ax_faces.set_ylim(-0.2, max((f["found"] for f in frames), default=1) + 0.5)
    ax_faces.set_ylabel("faces")
    ax_faces.legend(loc="lower right", fontsize="small")
    ax_jitter.plot(x, [f["jitter"] if f["jitter"] is not None else float("nan") for f in frames],
                   color="tab:purple")
    ax_jitter.axhline(report["thresholds"]["jitter_max"], color="tab:red", linewidth=0.8)
    ax_jitter.set_ylabel("jitter (face sizes)")
    ax_jitter.set_xlabel("frame")
    for stretch in report["stretches"]:
        for ax in (ax_id, ax_faces, ax_jitter):
            ax.axvspan(stretch["start"] - 0.5, stretch["end"] + 0.5, color="tab:red", alpha=0.15)
    ax_id.set_title(f"{report['output']}: quality")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    write_atomic(png, buffer.getvalue())
    return png
