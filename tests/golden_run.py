"""Run by tests/test_golden.py in a child process, under the code of one commit (PYTHONPATH): render a clip
and swap a still with default settings and print what they made, as sha256 digests of the pixels (JSON).

It uses only the engine API that the starting commit of the processor rewrite already had (``Render`` with
a frame sink, ``swap_image``), so the same script runs against that commit and against the working tree."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import cv2


class Digests:
    """A frame sink that keeps each frame's sha256 instead of encoding it."""

    encoder = "none"
    encoder_reason = "digests only"

    def __init__(self, out: Path) -> None:
        self.out = out
        self.frames: list[str] = []

    def write(self, frame) -> None:  # type: ignore[no-untyped-def]
        self.frames.append(hashlib.sha256(frame.tobytes()).hexdigest())

    def close(self) -> Path:
        return self.out

    def abort(self) -> None:
        pass


def main(clip: str, face: str, still: str, work: str, overrides: str) -> None:
    try:
        from pipeline.still import swap_image  # after the processor rewrite
    except ImportError:  # the starting commit
        from pipeline.process import swap_image  # type: ignore[attr-defined,no-redef]
    from pipeline.render import Render
    from pipeline.settings import Settings, apply_overrides

    settings = apply_overrides(Settings(), json.loads(overrides))
    sinks: list[Digests] = []

    def sink(width: int, height: int) -> Digests:
        sinks.append(Digests(Path(work) / "none.mp4"))
        return sinks[-1]

    Render(settings, [face], clip, sink=sink).run()
    out = Path(work) / "still.png"
    swap_image(settings, [face], Path(still), out)
    pixels = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
    print(json.dumps({"video": sinks[0].frames, "still": hashlib.sha256(pixels.tobytes()).hexdigest()}))


if __name__ == "__main__":
    main(*sys.argv[1:6])
