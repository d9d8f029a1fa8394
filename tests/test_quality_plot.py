"""The Queue tab's quality plot (webui/quality_plot.py) as HTML: a report drawn, a missing one in a line."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.quality.report import FrameRecord, QualityReport, write_report
from webui import quality_plot

LIMITS = {"identity_min": 0.3, "jitter_max": 0.1, "identity_every": 1}


def _write(output: Path, fps: float | None, n: int, flagged: range) -> None:
    frames = [FrameRecord(i, found=1, swapped=int(i not in flagged), missed=int(i in flagged),
                          identity=[] if i in flagged else [0.6], before=[] if i in flagged else [0.1],
                          flags=["missed"] if i in flagged else []) for i in range(n)]
    write_report(QualityReport(output.name, fps, True, LIMITS, frames, []), output)


def test_a_video_report_is_a_plot_with_its_stretch_shaded_over_its_frames(tmp_path: Path) -> None:
    out = tmp_path / "clip.mp4"
    _write(out, 25, 50, range(10, 20))
    shown = quality_plot.section(out)
    assert "Quality: 40/50 frames swapped, identity 0.60, 1 flagged stretch" in shown
    assert 'data-frames="50" data-fps="25"' in shown
    rects = re.findall(r'<rect class="fs-stretch"[^>]*data-start="(\d+)" data-end="(\d+)" x="([\d.]+)"'
                       r'[^>]*width="([\d.]+)"', shown)
    step = quality_plot.PLOT_W / 50
    assert [(s, e) for s, e, _, _ in rects] == [("10", "19")]
    assert abs(float(rects[0][2]) - (quality_plot.LEFT + 10 * step)) < 0.1  # columns 10..19 of 50
    assert abs(float(rects[0][3]) - 10 * step) < 0.1
    assert shown.count('class="fs-q-after"') == 2  # the identity line breaks where nothing was swapped
    assert "frames 10–19 (0.40–0.80 s): missed" in shown


def test_a_still_shows_its_line_and_a_missing_report_one_plain_line(tmp_path: Path) -> None:
    still = tmp_path / "photo.png"
    _write(still, None, 1, range(0))
    assert quality_plot.section(still) == ('<div class="fs-quality"><p>Quality: 1/1 frames swapped, identity '
                                           '0.60, 0 flagged stretches</p></div>')
    said = quality_plot.section(tmp_path / "old.mp4")
    assert said.startswith('<p class="fs-quality-none">no quality report for old.mp4') and "\n" not in said
    (tmp_path / "bad.quality.json").write_text("{")
    assert "is not a quality report" in quality_plot.section(tmp_path / "bad.mp4")


def test_frames_are_placed_by_their_number_a_gap_breaks_the_lines(tmp_path: Path) -> None:
    """A resumed job's report lacks the frames of its earlier run: they stay empty columns."""
    out = tmp_path / "resumed.mp4"
    frames = [FrameRecord(i, found=1, swapped=1, identity=[0.6], before=[0.1])
              for i in (*range(5), *range(15, 20))]
    write_report(QualityReport(out.name, 10, True, LIMITS, frames, []), out)
    shown = quality_plot.section(out)
    assert 'data-frames="20"' in shown and "2.0 s · 20 frames" in shown
    lines = re.findall(r'class="fs-q-after"[^>]*points="([^"]+)"', shown)
    step = quality_plot.PLOT_W / 20
    assert len(lines) == 2 and float(lines[1].split(",")[0]) == round(quality_plot.LEFT + 15.5 * step, 1)


def test_identity_judged_every_tenth_frame_is_one_line_broken_only_where_nothing_was_swapped(
        tmp_path: Path) -> None:
    out = tmp_path / "every.mp4"
    frames = [FrameRecord(i, found=1, swapped=int(not 40 <= i < 45), identity=[0.6] if i % 10 == 0 else [],
                          before=[0.1] if i % 10 == 0 else []) for i in range(0, 80)]
    frames[40].identity, frames[40].before = [], []  # a judged frame with nothing swapped
    write_report(QualityReport(out.name, 25, True, {**LIMITS, "identity_every": 10}, frames, []), out)
    shown = quality_plot.section(out)
    lines = re.findall(r'<polyline class="fs-q-after"[^>]*points="([^"]+)"', shown)
    assert [len(points.split()) for points in lines] == [4, 3]  # frames 0-30, then 50-70


def test_a_long_video_is_drawn_in_groups_its_worst_frames_kept(tmp_path: Path) -> None:
    """20 minutes (36,000 frames): at most COLUMNS points a line, a one-frame dip of identity still seen."""
    out = tmp_path / "long.mp4"
    frames = [FrameRecord(i, found=1, swapped=1, identity=[0.1 if i == 20_000 else 0.6], before=[0.1])
              for i in range(36_000)]
    write_report(QualityReport(out.name, 30, True, LIMITS, frames, []), out)
    shown = quality_plot.section(out)
    points = re.findall(r'class="fs-q-after"[^>]*points="([^"]+)"', shown)[0].split()
    assert len(points) <= quality_plot.COLUMNS and len(shown) < 200_000
    ys = [float(p.split(",")[1]) for p in points]
    assert len(set(ys)) == 2  # 0.6 everywhere, and the dip
