"""Keyframe detection against detection on every frame, on the same frames: landmark error and identity.

Used by tests/test_keyframes.py (on a short generated clip) and scripts/bench_keyframes.py (on the bench
clip). Nothing here is part of the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.chain import Chain, Work
from pipeline.faces.base import region_detection
from pipeline.faces.keyframes import KeyframeDetector
from pipeline.faces.recognise import cosine
from pipeline.faces.track import Tracker
from pipeline.image import read_image
from pipeline.process import FaceProcessor
from pipeline.settings import Settings
from pipeline.types import Face, Frame


@dataclass
class Comparison:
    frames: int = 0
    keyframes: int = 0
    missing: int = 0  # frames where one mode has a face and the other not
    errors: list[float] = field(default_factory=list)  # mean 5-point distance (px) per face, raw
    smoothed_errors: list[float] = field(default_factory=list)  # the same after the tracker
    crop_cos: list[float] = field(default_factory=list)  # SFace: aligned crop, keyframes vs every frame
    swap_cos: list[float] = field(default_factory=list)  # SFace: swapped face in the output, both modes
    identity_every: list[float] = field(default_factory=list)  # swapped face vs the source identity
    identity_keyed: list[float] = field(default_factory=list)
    truth: dict[str, float] = field(default_factory=dict)  # against the clip's true landmarks, if known
    follower: str = ""  # how faces were followed between keyframes: region or flow

    def summary(self) -> dict[str, float | str]:
        def mean(xs: list[float]) -> float:
            return round(float(np.mean(xs)), 4) if xs else float("nan")

        return {
            "frames": self.frames, "keyframes": self.keyframes, "missing": self.missing,
            "landmark_error_px": mean(self.errors),
            "landmark_error_p95_px": round(float(np.percentile(self.errors, 95)), 3) if self.errors else 0,
            "landmark_error_max_px": round(max(self.errors), 3) if self.errors else 0,
            "smoothed_landmark_error_px": mean(self.smoothed_errors),
            "crop_cosine_min": round(min(self.crop_cos), 4) if self.crop_cos else float("nan"),
            "crop_cosine_mean": mean(self.crop_cos),
            "swap_cosine_mean": mean(self.swap_cos),
            "identity_every_frame": mean(self.identity_every),
            "identity_keyframes": mean(self.identity_keyed),
            "identity_change": round(abs(mean(self.identity_every) - mean(self.identity_keyed)), 4),
            "follower": self.follower,
            **self.truth,
        }


def _pairs(a: list[Face], b: list[Face]) -> list[tuple[Face, Face]]:
    """Faces of ``a`` matched to the nearest face of ``b`` (centre distance under half a face)."""
    out = []
    for face in a:
        if not b:
            break
        near = min(b, key=lambda f: float(np.hypot(*(np.subtract(f.center, face.center)))))
        size = float(np.hypot(face.box[2] - face.box[0], face.box[3] - face.box[1]))
        if float(np.hypot(*np.subtract(near.center, face.center))) < 0.5 * size:
            out.append((face, near))
    return out


def _lm_error(a: Face, b: Face) -> float:
    return float(np.linalg.norm(a.landmarks - b.landmarks, axis=1).mean())


Warp = Callable[[int], tuple[float, np.ndarray]]


def bench_clip_warp(photo: tuple[int, int], n: int, size: tuple[int, int] = (1920, 1080)) -> Warp:
    """Frame i of ``pipeline.bench.make_test_clip`` (``n`` frames of a ``photo``-shaped (h, w) image) is the
    photo scaled by s and shifted by (x, y): i -> (s, (x, y)). Keep in step with make_test_clip."""
    w, h = size

    def warp(i: int) -> tuple[float, np.ndarray]:
        t = i / max(1, n - 1)
        scale = 0.6 * min(w / photo[1], h / photo[0]) * (0.85 + 0.3 * t)
        dx, dy = 0.15 * w * np.sin(2 * np.pi * t), 0.05 * h * np.cos(2 * np.pi * t)
        return scale, np.array([w / 2 - scale * photo[1] / 2 + dx, h / 2 - scale * photo[0] / 2 + dy])

    return warp


def against_truth(every: np.ndarray, keyed: np.ndarray, warp: Warp) -> dict[str, float]:
    """Mean 5-point error (px) of both landmark series (F, 5, 2) against the truth: the photo's five points
    (fitted as the mean of the per-frame detections mapped back into the photo) moved by ``warp``."""
    warps = [warp(i) for i in range(len(every))]
    template = np.mean([(every[i] - off) / s for i, (s, off) in enumerate(warps)], axis=0)
    truth = np.array([template * s + off for s, off in warps])

    def err(x: np.ndarray) -> float:
        return round(float(np.linalg.norm(x - truth, axis=2).mean()), 3)

    return {"every_frame_vs_truth_px": err(every), "keyframes_vs_truth_px": err(keyed)}


def compare(frames: Iterable[Frame], source: Path, settings: Settings, interval: int, fps: float,
            identity_every: int = 1, warp: Warp | None = None, flow: bool = False) -> Comparison:
    """Run detection on every frame and on keyframes side by side over ``frames``; identity (SFace
    embeddings, the swap with ``settings``' swapper from ``source``) on every ``identity_every``th frame.
    ``warp``: the clip's known motion (one face), to measure both against the truth. ``flow``: follow by
    optical flow even where the detector can re-detect regions."""
    processor = FaceProcessor(settings, [source])
    cut = settings.tracker.scene_cut
    every = KeyframeDetector(processor.detect, processor.select, 1, cut)
    landmarker = processor.face_models.landmarker
    regions = None if flow else region_detection(processor.detector)
    keyed = KeyframeDetector(processor.detect, processor.select, interval, cut, regions,
                             None if landmarker is None else landmarker.refine)
    trackers: list[Tracker[int]] = [Tracker(settings.tracker, fps), Tracker(settings.tracker, fps)]
    src = read_image(source).bgr
    src_faces = processor.detect([src])[0][:1]
    src_emb = processor.face_models.embed(src, src_faces)[0]
    result = Comparison(follower="flow" if regions is None else "region")
    smoothed: list[list[list[Face]]] = [[], []]
    series: list[tuple[np.ndarray, np.ndarray]] = []
    for index, frame in enumerate(frames):
        ref, got = every.faces([frame])[0], keyed.faces([frame])[0]
        if len(ref) == len(got) == 1:
            series.append((ref[0].landmarks, got[0].landmarks))
        for k, faces in enumerate((ref, got)):
            smoothed[k].extend(f for _, f in trackers[k].push(frame, faces, index))
        pairs = _pairs(ref, got)
        result.frames += 1
        result.missing += int(len(ref) != len(got) or len(pairs) != len(ref))
        result.errors.extend(_lm_error(a, b) for a, b in pairs)
        if pairs and index % identity_every == 0:
            _identity(processor, frame, pairs, src_emb, result)
    for k in (0, 1):
        smoothed[k].extend(f for _, f in trackers[k].flush())
    for ref, got in zip(*smoothed, strict=True):
        result.smoothed_errors.extend(_lm_error(a, b) for a, b in _pairs(ref, got))
    result.keyframes = keyed.keyframes
    if warp is not None and len(series) == result.frames:
        result.truth = against_truth(np.array([a for a, _ in series], np.float64),
                                     np.array([b for _, b in series], np.float64), warp)
    return result


def _identity(processor: FaceProcessor, frame: Frame, pairs: list[tuple[Face, Face]], src_emb: np.ndarray,
              result: Comparison) -> None:
    ref = [a for a, _ in pairs]
    got = [b for _, b in pairs]
    e_ref, e_got = processor.face_models.embed(frame, ref), processor.face_models.embed(frame, got)
    result.crop_cos.extend(float(cosine(a, b)) for a, b in zip(e_ref, e_got, strict=True))
    out_ref = Chain(processor).through([Work(frame.copy(), ref)])[0].out
    out_got = Chain(processor).through([Work(frame.copy(), got)])[0].out
    assert out_ref is not None and out_got is not None
    # judge each output as an onlooker would: find the face in it again and embed it where it was found
    seen_ref = [b for _, b in _pairs(ref, processor.detect([out_ref])[0])]
    seen_got = [b for _, b in _pairs(ref, processor.detect([out_got])[0])]
    if len(seen_ref) != len(ref) or len(seen_got) != len(ref):
        return
    s_ref = processor.face_models.embed(out_ref, seen_ref)
    s_got = processor.face_models.embed(out_got, seen_got)
    result.swap_cos.extend(float(cosine(a, b)) for a, b in zip(s_ref, s_got, strict=True))
    result.identity_every.extend(float(cosine(e, src_emb)) for e in s_ref)
    result.identity_keyed.extend(float(cosine(e, src_emb)) for e in s_got)
