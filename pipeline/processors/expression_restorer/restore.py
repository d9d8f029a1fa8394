"""The expression restorer's use of LivePortrait, on batches of 512 crops (docs/processors.md §3.3):
:func:`restore` puts the target's expression (from the original target crop) back onto the processed crop
and returns the generator's re-rendering of it, (N, 512, 512, 3) BGR uint8.
"""

from __future__ import annotations

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
