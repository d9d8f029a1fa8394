"""The background remover's ``models check`` judges: Grace Hopper's background removed."""

from __future__ import annotations

import numpy as np

from pipeline.checking.judging import MAX_CORNERS, MIN_CENTRE, Context, Finding, Judge, build, decide
from pipeline.processors.background_remover.processor import FAMILIES


def judge_background_remover(name: str, ctx: Context, *, clothes: bool = False, keyer: bool = False
                             ) -> Finding:
    """Grace Hopper's background removed: her face must be foreground (the mask's mean over YuNet's box;
    ``clothes``, u2net_cloth's, over her uniform below it) and the photo's top corners background
    (``keyer``, corridor_key's, sees them painted green-screen green) -- a remover fed the wrong range or
    channels, or an inverted file, marks the background or nothing."""
    shot = ctx.photos.person
    frame = shot.frame.copy()
    h, w = frame.shape[:2]
    side = max(8, min(h, w) // 8)
    if keyer:
        frame[:side, :side] = frame[:side, -side:] = (0, 255, 0)
    (mask,), _ = build(name, ctx, FAMILIES).remove([frame])
    m = mask.astype(np.float32) / 255.0
    x1, y1, x2, y2 = (max(int(v), 0) for v in shot.face.box)
    if clothes:
        y1, y2 = y2 + (h - y2) // 3, h  # her uniform, under her chin
    face = float(m[y1:y2, x1:x2].mean())
    corners = float((m[:side, :side].mean() + m[:side, -side:].mean()) / 2)
    failures = []
    what = "her uniform is not foreground" if clothes else "the person's face is not foreground"
    if face < MIN_CENTRE:
        failures.append(f"{what} (mask mean {face:.2f} < {MIN_CENTRE})")
    if corners > MAX_CORNERS:
        failures.append(f"the background is kept (top corners' mask mean {corners:.2f} > {MAX_CORNERS})")
    return decide({"face": face, "corners": corners}, failures,
                  "the person is foreground, the top corners background")


JUDGES: dict[str, Judge] = {
    "background_remover": judge_background_remover,
    "u2net_cloth": lambda name, ctx: judge_background_remover(name, ctx, clothes=True),
    "corridor_key": lambda name, ctx: judge_background_remover(name, ctx, keyer=True),
}
