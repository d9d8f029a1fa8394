"""The face editor's use of LivePortrait, on batches of 512 crops (docs/processors.md §4.2): :func:`edit`
applies the sliders to a crop (expression, head angles, eye and lip retargeting, stitcher) and returns the
generator's re-rendering of it, (N, 512, 512, 3) BGR uint8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pipeline.liveportrait import kinematics as k
from pipeline.liveportrait.network import LivePortrait, prepare

Crops = npt.NDArray[np.uint8]


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
