"""``facestation report OUTPUT [--png FILE] [--json]``: the quality report written beside a render's output,
as one line (and every flagged stretch), its plot drawn into a PNG."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.errors import UserError


def register(sub: Any) -> None:
    report = sub.add_parser("report", help="show the quality report of a rendered output")
    report.add_argument("output", metavar="OUTPUT", help="the rendered file (or its .quality.json)")
    report.add_argument("--png", metavar="FILE", help="draw the report (identity, faces, jitter) into FILE")
    report.add_argument("--json", action="store_true", help="print the whole report")
    report.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from pipeline.quality import read_report, sidecar_of
    from pipeline.quality.report import summary_line

    data = read_report(args.output)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(summary_line(data["summary"], str(sidecar_of(args.output))))
    for s in data["stretches"]:
        print(f"  frames {s['start']}-{s['end']}: {', '.join(s['kinds'])}")
    if args.png:
        from pipeline.quality.plot import draw

        png = Path(args.png)
        if png.suffix.lower() != ".png":
            raise UserError(f"--png {png.name}: the plot is a PNG file (name it .png)")
        if not png.parent.is_dir():
            raise UserError(f"--png {png}: the folder {png.parent} does not exist")
        print(f"drew {draw(data, png)}")
    return 0
