"""LivePortrait's keypoint maths (docs/processors.md §3.2, §3.3 and §4): pure numpy, one face per call.

Keypoints are 21 rows of (x, y, z). A face's motion is its head angles in degrees (pitch, yaw, roll), its
scale ``s``, translation ``t`` (3,), expression ``δ`` (21×3) and canonical keypoints ``x_c`` (21×3); its
keypoints are ``x = s·(x_c·Rᵀ + δ) + t`` with R = Rz(roll)·Ry(yaw)·Rx(pitch). The full t is added, as
FaceFusion does (whether its export's t_z is 0 is not known: see the catalog's ``unverified``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]

EXPRESSION_MIN: Array = np.array([
    [-2.88067125e-02, -8.12731311e-02, -1.70541159e-03], [-4.88598682e-02, -3.32196616e-02, -1.67431499e-04],
    [-6.75425082e-02, -4.28681746e-02, -1.98950816e-04], [-7.23103955e-02, -3.28503326e-02, -7.31324719e-04],
    [-3.87073644e-02, -6.01546466e-02, -5.50269964e-04], [-6.38048723e-02, -2.23840728e-01, -7.13261834e-04],
    [-3.02710701e-02, -3.93195450e-02, -8.24086510e-06], [-2.95799859e-02, -5.39318882e-02, -1.74219604e-04],
    [-2.92359516e-02, -1.53050944e-02, -6.30460854e-05], [-5.56493877e-03, -2.34344602e-02, -1.26858242e-04],
    [-4.37593013e-02, -2.77768299e-02, -2.70503685e-02], [-1.76926646e-02, -1.91676542e-02, -1.15090821e-04],
    [-8.34268332e-03, -3.99775570e-03, -3.27481248e-05], [-3.40162888e-02, -2.81868968e-02, -1.96679524e-04],
    [-2.91855410e-02, -3.97511162e-02, -2.81230678e-05], [-1.50395725e-02, -2.49494594e-02, -9.42573533e-05],
    [-1.67938769e-02, -2.00953931e-02, -4.00750607e-04], [-1.86435618e-02, -2.48535164e-02, -2.74416432e-02],
    [-4.61211195e-03, -1.21660791e-02, -2.93173041e-04], [-4.10017073e-02, -7.43824020e-02, -4.42762971e-02],
    [-1.90370996e-02, -3.74363363e-02, -1.34740388e-02]], np.float32)
EXPRESSION_MAX: Array = np.array([
    [4.46682945e-02, 7.08772913e-02, 4.08344204e-04], [2.14308221e-02, 6.15894832e-02, 4.85319615e-05],
    [3.02363783e-02, 4.45043296e-02, 1.28298725e-05], [3.05869691e-02, 3.79812494e-02, 6.57040102e-04],
    [4.45670523e-02, 3.97259220e-02, 7.10966764e-04], [9.43699256e-02, 9.85926315e-02, 2.02551950e-04],
    [1.61131397e-02, 2.92906128e-02, 3.44733417e-06], [5.23825921e-02, 1.07065082e-01, 6.61510974e-04],
    [2.85718683e-03, 8.32320191e-03, 2.39314613e-04], [2.57947259e-02, 1.60935968e-02, 2.41853559e-05],
    [4.90833223e-02, 3.43903080e-02, 3.22353356e-02], [1.44766076e-02, 3.39248963e-02, 1.42291479e-04],
    [8.75749043e-04, 6.82212645e-03, 2.76097053e-05], [1.86958015e-02, 3.84016186e-02, 7.33085908e-05],
    [2.01714113e-02, 4.90544215e-02, 2.34028921e-05], [2.46518422e-02, 3.29151377e-02, 3.48571630e-05],
    [2.22457591e-02, 1.21796541e-02, 1.56396593e-04], [1.72109623e-02, 3.01626958e-02, 1.36556877e-02],
    [1.83460284e-02, 1.61141958e-02, 2.87440169e-04], [3.57594155e-02, 1.80554688e-01, 2.75554154e-02],
    [2.17450950e-02, 8.66811201e-02, 3.34241726e-02]], np.float32)
for _a in (EXPRESSION_MIN, EXPRESSION_MAX):
    _a.setflags(write=False)

# the restorer's areas (§3.3 step 6): keypoints never restored, and those of each area
NEVER_RESTORED = (0, 4, 5, 8, 9)
AREA_KEYPOINTS: dict[str, tuple[int, ...]] = {
    "upper-face": (1, 2, 6, 10, 11, 12, 13, 15, 16),
    "lower-face": (3, 7, 14, 17, 18, 19, 20),
}
BASE_LIMITS = {"pitch": (-30.0, 30.0), "yaw": (-60.0, 60.0), "roll": (-20.0, 20.0)}
EYE_TARGET = (0.0, 0.6)  # the eye retargeter's target ratio for a slider < 0, else
LIP_TARGET = (0.0, 1.0)


@dataclass(frozen=True)
class Motion:
    """One face's motion, as the motion extractor gives it."""

    pitch: float  # degrees
    yaw: float
    roll: float
    scale: float
    translation: Array  # (3,)
    expression: Array  # (21, 3)
    points: Array  # (21, 3) canonical keypoints x_c

    def keypoints(self, expression: Array | None = None, angles: tuple[float, float, float] | None = None
                  ) -> Array:
        """x = s·(x_c·Rᵀ + δ) + t, with another expression or other angles where given."""
        r = rotation(*(angles if angles is not None else (self.pitch, self.yaw, self.roll)))
        delta = self.expression if expression is None else expression
        out = self.scale * (self.points @ r.T + delta) + self.translation
        return np.asarray(out, np.float32)


def rotation(pitch: float, yaw: float, roll: float) -> Array:
    """R = Rz(roll)·Ry(yaw)·Rx(pitch), angles in degrees (scipy's extrinsic 'xyz')."""
    p, y, r = np.radians([pitch, yaw, roll])
    rx = np.array([[1, 0, 0], [0, np.cos(p), -np.sin(p)], [0, np.sin(p), np.cos(p)]])
    ry = np.array([[np.cos(y), 0, np.sin(y)], [0, 1, 0], [-np.sin(y), 0, np.cos(y)]])
    rz = np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0], [0, 0, 1]])
    return np.asarray(rz @ ry @ rx, np.float32)


def limit_expression(delta: npt.ArrayLike) -> Array:
    """δ clipped element-wise to [EXPRESSION_MIN, EXPRESSION_MAX]."""
    return np.clip(np.asarray(delta, np.float32), EXPRESSION_MIN, EXPRESSION_MAX)


def limit_angle(kind: str, own: float, edited: float) -> float:
    """``edited`` clipped to ``kind``'s base range, widened to take in the face's ``own`` angle."""
    low, high = BASE_LIMITS[kind]
    if own < 0:
        low = min(own, low)
    else:
        high = max(own, high)
    return float(np.clip(edited, low, high))


# --- expression restorer (§3.3) ---------------------------------------------------------------------------

def restore_factor(factor: int) -> float:
    """``expression_restorer.factor`` 0..100 -> the weight of the target's expression, 0..1.2."""
    return float(np.interp(factor, [0, 100], [0.0, 1.2]))


def restricted(target: Array, processed: Array, areas: tuple[str, ...]) -> Array:
    """The target's expression with the keypoints outside ``areas`` (and those never restored) taken from the
    processed face's."""
    out = np.array(target, np.float32)
    keep = list(NEVER_RESTORED)
    for area, rows in AREA_KEYPOINTS.items():
        if area not in areas:
            keep += rows
    out[keep] = processed[keep]
    return out


def restored_expression(target: Array, processed: Array, factor: int, areas: tuple[str, ...]) -> Array:
    """δ* = clip(f·δ_T′ + (1 − f)·δ_P, MIN, MAX)."""
    f = restore_factor(factor)
    return limit_expression(f * restricted(target, processed, areas) + (1.0 - f) * processed)


# --- face editor (§4.1): the expression sliders, applied in FaceFusion's order ------------------------------

X, Y, Z = 0, 1, 2
Edit = list[tuple[int, int, float]]  # (keypoint, coordinate, coefficient of v)


def _gaze_horizontal(v: float) -> Edit:
    return [(11, X, 0.015), (15, X, 0.020)] if v > 0 else [(11, X, 0.020), (15, X, 0.015)]


def _gaze_vertical(v: float) -> Edit:
    return [(1, Y, 0.0025), (2, Y, -0.0025), (11, Y, -0.010), (13, Y, -0.005), (15, Y, -0.010),
            (16, Y, -0.005)]


def _grim(v: float) -> Edit:
    if v > 0:
        return [(17, Z, -0.005), (19, Z, 0.01), (20, Y, -0.06), (20, Z, -0.03)]
    return [(19, Y, -0.05), (19, Z, -0.02), (20, Z, -0.03)]


def _position_horizontal(v: float) -> Edit:
    return [(19, X, 0.05), (20, X, 0.04)]


def _position_vertical(v: float) -> Edit:
    return [(19, Y, -0.04), (20, Y, -0.02)] if v > 0 else [(19, Y, -0.05), (20, Y, -0.04)]


def _pout(v: float) -> Edit:
    if v > 0:
        return [(19, Y, -0.022), (19, Z, 0.025), (20, Z, -0.002)]
    return [(19, Y, 0.022), (19, Z, 0.025), (20, Z, -0.002)]


def _purse(v: float) -> Edit:
    if v > 0:
        return [(19, Y, -0.04), (19, Z, -0.02)]
    return [(14, Y, -0.02), (17, Z, 0.01), (19, Z, -0.015), (20, Z, -0.002)]


def _smile(v: float) -> Edit:
    if v > 0:
        return [(20, Y, -0.015), (14, Y, -0.025), (17, Y, 0.01), (17, Z, 0.004), (3, Y, -0.0045),
                (7, Y, -0.0045)]
    return [(14, Y, -0.02), (17, Y, 0.003), (19, Y, 0.02), (19, Z, -0.005), (20, Z, 0.01), (3, Y, 0.0045),
            (7, Y, 0.0045)]


def _eyebrow(v: float) -> Edit:
    if v > 0:
        return [(1, Y, 0.015), (2, Y, -0.020)]
    return [(1, X, -0.015), (2, X, 0.020), (1, Y, 0.005), (2, Y, -0.005)]


# FaceFusion's order: gaze, grim, position, pout, purse, smile, eyebrow (all additive, then one clip)
EXPRESSION_SLIDERS = (
    ("eye_gaze_horizontal", _gaze_horizontal), ("eye_gaze_vertical", _gaze_vertical), ("mouth_grim", _grim),
    ("mouth_position_horizontal", _position_horizontal), ("mouth_position_vertical", _position_vertical),
    ("mouth_pout", _pout), ("mouth_purse", _purse), ("mouth_smile", _smile), ("eyebrow_direction", _eyebrow),
)
HEAD_SLIDERS = {"head_pitch": -20.0, "head_yaw": -60.0, "head_roll": 15.0}  # degrees at v = 1


def edited_expression(delta: Array, sliders: Mapping[str, float]) -> Array:
    """δ′ = clip(δ + every expression slider's change, MIN, MAX) (sliders missing or 0 change nothing)."""
    out = np.array(delta, np.float32)
    for name, edit in EXPRESSION_SLIDERS:
        v = float(sliders.get(name, 0.0))
        if v:
            for k, c, a in edit(v):
                out[k, c] += a * v
    return limit_expression(out)


def edited_angles(motion: Motion, sliders: Mapping[str, float]) -> tuple[float, float, float]:
    """(pitch′, yaw′, roll′): each angle moved by its slider, then limited (:func:`limit_angle`)."""
    own = {"pitch": motion.pitch, "yaw": motion.yaw, "roll": motion.roll}
    return tuple(limit_angle(kind, own[kind], own[kind] + HEAD_SLIDERS[f"head_{kind}"]
                             * float(sliders.get(f"head_{kind}", 0.0)))
                 for kind in ("pitch", "yaw", "roll"))  # type: ignore[return-value]


def ratio(points: npt.ArrayLike, a: int, b: int, c: int, d: int) -> float:
    """‖p_a − p_b‖ / (‖p_c − p_d‖ + 1e-6) on 68 landmarks."""
    p = np.asarray(points, np.float64).reshape(-1, 2)
    return float(np.linalg.norm(p[a] - p[b]) / (np.linalg.norm(p[c] - p[d]) + 1e-6))


def eye_input(keypoints: Array, landmarks68: npt.ArrayLike, v: float) -> Array:
    """(1, 66): the keypoints, the left and right eye-open ratios and the target ratio."""
    left, right = ratio(landmarks68, 37, 40, 39, 36), ratio(landmarks68, 43, 46, 45, 42)
    target = EYE_TARGET[0] if v < 0 else EYE_TARGET[1]
    return np.concatenate([keypoints.reshape(-1), [left, right, target]]).astype(np.float32)[None]


def lip_input(keypoints: Array, landmarks68: npt.ArrayLike, v: float) -> Array:
    """(1, 65): the keypoints, the lip-open ratio and the target ratio."""
    target = LIP_TARGET[0] if v < 0 else LIP_TARGET[1]
    lip = ratio(landmarks68, 62, 66, 54, 48)
    return np.concatenate([keypoints.reshape(-1), [lip, target]]).astype(np.float32)[None]

