"""LivePortrait's six files as sessions, and the face-level calls the processors make on them.

Each file is a :class:`LivePortraitPart` (a catalog session of the ``liveportrait`` role), fed by the
catalog's tensor names and read in the catalog's output order; it takes the items of a batch in one run where
its batch axis is dynamic (or made so by models.batching), else in chunks of its fixed batch.
:class:`LivePortrait` holds the parts a processor needs (the restorer: feature extractor, motion extractor,
generator; the editor: all six) and works on 512 crops: prepared as FaceFusion does (256 px INTER_AREA, RGB,
/255, NCHW), the generator's (3, 512, 512) RGB [0, 1] back to BGR uint8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.liveportrait.kinematics import Array, Motion
from pipeline.models.runner import ModelRunner, input_dtype
from pipeline.types import Provider

PARTS = ("feature_extractor", "motion_extractor", "generator", "eye_retargeter", "lip_retargeter", "stitcher")
RESTORER_PARTS = PARTS[:3]
INPUT_SIZE = 256
OUTPUT_SIZE = 512


def model_name(part: str) -> str:
    """The catalog name of a LivePortrait part."""
    return f"live_portrait_{part}"


class LivePortraitPart(ModelRunner):
    """One LivePortrait file, run on (N, …) inputs by the catalog's names."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        super().__init__(name, "liveportrait", providers, threads)

    def infer(self, feeds: Mapping[str, npt.NDArray[Any]]) -> list[npt.NDArray[np.float32]]:
        """``feeds``: the catalog's input names -> arrays of N items each; the outputs, N items each."""
        input_names, _ = self.io
        declared = {a.name: a for a in self.session.get_inputs()}
        graph = {str(spec.name): name for spec, name in zip(self.entry.inputs, input_names, strict=True)}
        count = len(next(iter(feeds.values())))
        step = self.batch or max(count, 1)
        chunks: list[list[npt.NDArray[np.float32]]] = []
        for start in range(0, count, step):
            chunk = {graph[key]: np.ascontiguousarray(value[start:start + step],
                                                      dtype=input_dtype(declared[graph[key]]))
                     for key, value in feeds.items()}
            k = min(step, count - start)
            chunks.append([_rows(np.asarray(o, np.float32), k) for o in self.run_feeds(chunk)])
        return [np.concatenate(parts) for parts in zip(*chunks, strict=True)]


def _rows(output: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.float32]:
    """One run's output for ``k`` items as (k, …): an output without a batch axis (a scalar per face, as the
    motion extractor's angles may be) becomes (k, 1)."""
    return output if output.ndim > 1 and output.shape[0] == k else output.reshape(k, -1)


def prepare(crops: npt.NDArray[np.uint8]) -> Array:
    """(N, 512, 512, 3) BGR uint8 -> (N, 3, 256, 256) RGB float32 in [0, 1] (INTER_AREA, as FaceFusion)."""
    small = np.stack([cv2.resize(c, (INPUT_SIZE, INPUT_SIZE), interpolation=cv2.INTER_AREA) for c in crops])
    return np.ascontiguousarray(small[..., ::-1].transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)


class LivePortrait:
    """The parts a processor runs, by part name (``PARTS``)."""

    def __init__(self, parts: Mapping[str, LivePortraitPart]) -> None:
        unknown = set(parts) - set(PARTS)
        if unknown:
            raise UserError(f"unknown LivePortrait part(s) {sorted(unknown)} (known: {', '.join(PARTS)})")
        self.parts = dict(parts)

    def sessions(self) -> list[LivePortraitPart]:
        return list(self.parts.values())

    def features(self, blob: Array) -> Array:
        return self.parts["feature_extractor"].infer({"input": blob})[0]

    def motion(self, blob: Array) -> list[Motion]:
        pitch, yaw, roll, scale, t, delta, points = self.parts["motion_extractor"].infer({"input": blob})
        n = len(blob)
        t = t.reshape(n, -1)
        return [Motion(float(pitch.reshape(n, -1)[i, 0]), float(yaw.reshape(n, -1)[i, 0]),
                       float(roll.reshape(n, -1)[i, 0]), float(scale.reshape(n, -1)[i, 0]),
                       t[i, :3].astype(np.float32), delta.reshape(n, 21, 3)[i], points.reshape(n, 21, 3)[i])
                for i in range(n)]

    def generate(self, features: Array, source: Array, target: Array) -> npt.NDArray[np.uint8]:
        """generator(F, source = the wanted keypoints, target = the crop's own) -> (N, 512, 512, 3) BGR
        uint8 (truncated, as FaceFusion casts it)."""
        feeds = {"feature_volume": features, "source": source, "target": target}
        out = self.parts["generator"].infer(feeds)[0]
        rgb = np.clip(out.reshape(len(source), 3, OUTPUT_SIZE, OUTPUT_SIZE), 0.0, 1.0).transpose(0, 2, 3, 1)
        return np.ascontiguousarray((rgb[..., ::-1] * 255.0).astype(np.uint8))

    def retarget(self, part: str, inputs: Array) -> Array:
        """The eye or lip retargeter's keypoint change, (N, 21, 3)."""
        return self.parts[part].infer({"input": inputs})[0].reshape(len(inputs), 21, 3)

    def stitch(self, source: Array, target: Array) -> Array:
        """The stitched driving keypoints (N, 21, 3)."""
        stitched = self.parts["stitcher"].infer({"source": source, "target": target})[0]
        return stitched.reshape(len(source), 21, 3)
