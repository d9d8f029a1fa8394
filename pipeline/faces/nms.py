"""Greedy non-maximum suppression, vectorised over the remaining boxes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def iou_one_to_many(box: npt.NDArray[np.floating],
                    boxes: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Intersection over union of one x1y1x2y2 box against (N,4) boxes."""
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = max(0.0, float(box[2] - box[0])) * max(0.0, float(box[3] - box[1]))
    areas = np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0, None)
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0).astype(np.float64)


def nms(boxes: npt.ArrayLike, scores: npt.ArrayLike, iou: float) -> npt.NDArray[np.intp]:
    """Indices of the boxes kept, best score first: each drops the later ones overlapping it over ``iou``."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(b) != len(s):
        raise ValueError(f"{len(b)} boxes but {len(s)} scores")
    order = np.argsort(-s, kind="stable")
    keep: list[int] = []
    while order.size:
        best = int(order[0])
        keep.append(best)
        rest = order[1:]
        order = rest[iou_one_to_many(b[best], b[rest]) <= iou]
    return np.asarray(keep, dtype=np.intp)
