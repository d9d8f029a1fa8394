"""What the processors do with LivePortrait, on batches of 512 crops (shared/PROCESSORS.md §3.3, §4.2).

- :func:`restore`: the target's expression (from the original target crop) back onto the processed crop;
- :func:`edit`: the face editor's sliders applied to a crop (expression, head angles, eye and lip retargeting,
  stitcher).

Both return the generator's re-rendering of the processed crop, (N, 512, 512, 3) BGR uint8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pipeline.liveportrait import kinematics as k
from pipeline.liveportrait.network import LivePortrait, prepare

Crops = npt.NDArray[np.uint8]


def restore(lp: LivePortrait, targets: Crops, processed: Crops, factor: int,
            areas: tuple[str, ...]) -> Crops:
    """generator(F(P), x_target, x_temp): P's pose and keypoints with the expression δ* mixed from T's."""
    blob_p, blob_t = prepare(processed), prepare(targets)
    features = lp.features(blob_p)
    motions = lp.motion(np.concatenate([blob_t, blob_p]))  # one run for both: T's first, then P's
    of_t, of_p = motions[:len(targets)], motions[len(targets):]
    wanted = np.stack([p.keypoints(k.restored_expression(t.expression, p.expression, factor, areas))
                       for t, p in zip(of_t, of_p, strict=True)])
    own = np.stack([p.keypoints() for p in of_p])
    return lp.generate(features, wanted, own)


def edit(lp: LivePortrait, crops: Crops, sliders: Mapping[str, float],
         landmarks68: Sequence[npt.NDArray[np.float32] | None]) -> Crops:
    """The sliders on each crop; ``landmarks68[i]``: face i's 68 points (any coordinates: only their ratios
    are read), None where there are none (its eyes and lips are then not retargeted)."""
    blob = prepare(crops)
    features = lp.features(blob)
    motions = lp.motion(blob)
    own = np.stack([m.keypoints() for m in motions])
    wanted = np.stack([m.keypoints(k.edited_expression(m.expression, sliders), k.edited_angles(m, sliders))
                       for m in motions])
    for part, key, make in (("eye_retargeter", "eye_open_ratio", k.eye_input),
                            ("lip_retargeter", "lip_open_ratio", k.lip_input)):
        v = float(sliders.get(key, 0.0))
        rows = [i for i, points in enumerate(landmarks68) if points is not None]
        if v == 0.0 or not rows:  # a slider at 0 adds 0·delta: the network is not run
            continue
        inputs = np.concatenate([make(own[i], landmarks68[i], v) for i in rows])  # type: ignore[arg-type]
        wanted[rows] += lp.retarget(part, inputs) * abs(v)
    wanted = lp.stitch(wanted, own)
    return lp.generate(features, wanted, own)
