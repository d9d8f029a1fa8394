"""Face alignment: 5-point templates, similarity fits, and warps into and out of model crops.

A template is five points (left eye, right eye, nose, left mouth, right mouth) normalised to the crop
side, so the same template serves any crop size. ``estimate`` fits the similarity transform
(rotation, uniform scale, translation) that carries detected landmarks onto ``template * size`` in
the least-squares sense (Umeyama's closed form), exact on exact points.
"""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.types import Frame, Matrix, Template

Interpolation = Literal["linear", "area", "cubic"]
Border = Literal["replicate", "constant", "reflect"]

TEMPLATES: dict[Template, npt.NDArray[np.float64]] = {
    "arcface_112_v1": np.array([
        [0.35473214, 0.45658929], [0.64526786, 0.45658929], [0.50000000, 0.61154464],
        [0.37913393, 0.77687500], [0.62086607, 0.77687500]]),
    "arcface_112_v2": np.array([
        [0.34191607, 0.46157411], [0.65653393, 0.45983393], [0.50022500, 0.64050536],
        [0.37097589, 0.82469196], [0.63151696, 0.82325089]]),
    "arcface_128": np.array([
        [0.36167656, 0.40387734], [0.63696719, 0.40235469], [0.50019687, 0.56044219],
        [0.38710391, 0.72160547], [0.61507734, 0.72034453]]),
    "ffhq_512": np.array([
        [0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
        [0.39308822, 0.72541100], [0.61150205, 0.72490465]]),
    # DeepFaceLab's whole-face crop (FaceFusion's deep swapper; docs/processors.md §0.3)
    "dfl_whole_face": np.array([
        [0.35342266, 0.39285716], [0.62797622, 0.39285716], [0.48660713, 0.54017860],
        [0.38839287, 0.68750011], [0.59821427, 0.68750011]]),
    "styleganex_384": np.array([  # FaceFusion's (docs/processors.md §0.3): the age modifier's extend
        [0.42353745, 0.52289879], [0.57725008, 0.52319972], [0.50123859, 0.61331904],
        [0.43364461, 0.68337652], [0.57015325, 0.68306005]]),
}
for _points in TEMPLATES.values():
    _points.setflags(write=False)

_INTERPOLATION = {"linear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA, "cubic": cv2.INTER_CUBIC}
_BORDER = {"replicate": cv2.BORDER_REPLICATE, "constant": cv2.BORDER_CONSTANT,
           "reflect": cv2.BORDER_REFLECT_101}


def template_points(template: Template, size: int) -> npt.NDArray[np.float64]:
    """The template's five points in pixels of a ``size`` × ``size`` crop."""
    return TEMPLATES[template] * float(size)


def similarity(src: npt.ArrayLike, dst: npt.ArrayLike) -> Matrix:
    """Least-squares similarity transform (2×3) taking points ``src`` (N,2) onto ``dst`` (N,2)."""
    p = np.asarray(src, dtype=np.float64).reshape(-1, 2)
    q = np.asarray(dst, dtype=np.float64).reshape(-1, 2)
    if p.shape != q.shape or len(p) < 2:
        raise ValueError(f"need two matching sets of at least 2 points, got {p.shape} and {q.shape}")
    mp, mq = p.mean(axis=0), q.mean(axis=0)
    pc, qc = p - mp, q - mq
    var = float((pc**2).sum()) / len(p)
    if var <= 1e-12:
        raise ValueError("the source points coincide; no similarity transform fits them")
    cov = qc.T @ pc / len(p)
    u, d, vt = np.linalg.svd(cov)
    sign = np.eye(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:  # keep a rotation, never a reflection
        sign[1, 1] = -1.0
    rotation = u @ sign @ vt
    scale = float(np.trace(np.diag(d) @ sign)) / var
    matrix = np.empty((2, 3), dtype=np.float64)
    matrix[:, :2] = scale * rotation
    matrix[:, 2] = mq - matrix[:, :2] @ mp
    return matrix


def estimate(landmarks: npt.ArrayLike, template: Template, size: int) -> Matrix:
    """Frame -> crop similarity that puts the five ``landmarks`` on ``template`` at crop side ``size``."""
    return similarity(landmarks, template_points(template, size))


def invert(matrix: Matrix) -> Matrix:
    """The inverse of a 2×3 affine transform (crop -> frame for an alignment matrix)."""
    return np.asarray(cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64)), dtype=np.float64)


def transform_points(points: npt.ArrayLike, matrix: Matrix) -> npt.NDArray[np.float64]:
    """Apply a 2×3 affine transform to (N,2) points."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    m = np.asarray(matrix, dtype=np.float64)
    return p @ m[:, :2].T + m[:, 2]


def warp(frame: Frame, matrix: Matrix, size: int, interpolation: Interpolation = "linear",
         border: Border = "replicate") -> Frame:
    """The ``size`` × ``size`` crop of ``frame`` under the frame -> crop transform ``matrix``.

    (OpenCV's warpAffine treats "area" as bilinear; it is accepted for symmetry with cv2.resize.)
    """
    crop = cv2.warpAffine(frame, np.asarray(matrix, dtype=np.float64), (size, size),
                          flags=_INTERPOLATION[interpolation], borderMode=_BORDER[border])
    return np.asarray(crop, dtype=frame.dtype)


def align(frame: Frame, landmarks: npt.ArrayLike, template: Template, size: int) -> tuple[Frame, Matrix]:
    """Crop one face to ``template`` at ``size``; returns the crop and its frame -> crop matrix."""
    matrix = estimate(landmarks, template, size)
    return warp(frame, matrix, size), matrix
