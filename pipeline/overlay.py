"""The face debugger overlay for previews: boxes, landmarks, mask outlines and identity distances.

:func:`draw_debug` is pure: it returns a new frame and never touches its input. Colours (BGR):
green box = a face being swapped, red = a detected face left alone, yellow dots = the five alignment
points, cyan dots = 68-point landmarks, magenta line = where the paste mask reaches one half.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.faces.align import invert, transform_points
from pipeline.types import Face, Frame, Mask, Matrix

CHOSEN = (0, 200, 0)
OTHER = (0, 0, 220)
POINTS5 = (0, 255, 255)
POINTS68 = (255, 255, 0)
OUTLINE = (255, 0, 255)


def _thickness(frame: Frame) -> int:
    return max(1, round(max(frame.shape[:2]) / 600))


def mask_outline(mask: Mask, matrix: Matrix, level: float = 0.5) -> list[npt.NDArray[np.int32]]:
    """Frame-space polygons where the crop-space ``mask`` (cut by ``matrix``, frame -> crop) crosses
    ``level``."""
    binary = (np.asarray(mask) >= level).astype(np.uint8)
    contours, _ = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    back = invert(matrix)
    return [np.round(transform_points(c.reshape(-1, 2), back)).astype(np.int32)
            for c in contours if len(c) >= 3]


def draw_debug(
    frame: Frame,
    faces: Sequence[Face],
    chosen: Sequence[Face] = (),
    masks: Sequence[tuple[Mask, Matrix]] = (),
    distances: Mapping[int, float] | Sequence[float | None] | None = None,
) -> Frame:
    """``frame`` with the debugger drawn on a copy.

    ``faces``: every detected face; ``chosen``: those being swapped (matched by identity or box);
    ``masks``: (crop-space mask, frame -> crop matrix) per swapped face; ``distances``: identity
    distance per index of ``faces`` (to the reference or mapped source), shown under each box.
    """
    out = frame.copy()
    thick = _thickness(frame)
    picked_ids = {id(f) for f in chosen}
    picked_boxes = [np.asarray(f.box, np.float64) for f in chosen]
    for polygon in (p for m, matrix in masks for p in mask_outline(m, matrix)):
        cv2.polylines(out, [polygon.reshape(-1, 1, 2)], True, OUTLINE, thick, cv2.LINE_8)
    for index, face in enumerate(faces):
        swapped = id(face) in picked_ids or any(np.allclose(face.box, b, atol=1.0) for b in picked_boxes)
        colour = CHOSEN if swapped else OTHER
        x1, y1, x2, y2 = (int(round(float(v))) for v in face.box)
        cv2.rectangle(out, (x1, y1), (x2, y2), colour, thick, cv2.LINE_8)
        scale = 0.4 * thick + 0.2
        cv2.putText(out, f"{face.score:.2f}", (x1, max(12, y1 - 4)), cv2.FONT_HERSHEY_SIMPLEX, scale, colour,
                    thick, cv2.LINE_AA)
        distance = _distance(distances, index)
        if distance is not None:
            cv2.putText(out, f"d={distance:.2f}", (x1, y2 + int(14 * thick)), cv2.FONT_HERSHEY_SIMPLEX,
                        scale, colour, thick, cv2.LINE_AA)
        if face.landmarks68 is not None:
            for x, y in np.asarray(face.landmarks68, np.float64):
                cv2.circle(out, (int(round(x)), int(round(y))), thick, POINTS68, -1, cv2.LINE_8)
        for x, y in np.asarray(face.landmarks, np.float64):
            cv2.circle(out, (int(round(x)), int(round(y))), thick + 1, POINTS5, -1, cv2.LINE_8)
    return out


def _distance(distances: Mapping[int, float] | Sequence[float | None] | None, index: int) -> float | None:
    if distances is None:
        return None
    if isinstance(distances, Mapping):
        return distances.get(index)
    return distances[index] if index < len(distances) else None
