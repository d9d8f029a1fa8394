"""The built-in classic swapper: no model file, no network, works on any machine.

It is plain image compositing done in the aligned crop. Source and target faces are both aligned to
the same template, so their eyes, nose and mouth already sit on the same pixels; the swapper takes the
(averaged) aligned source crop, moves its colours toward the target crop (Reinhard in L*a*b*,
statistics inside an inner face ellipse so hair and background do not count), and blends it into the
target crop through a feathered face ellipse built from the template's five points: eyes, brows,
nose, mouth and cheeks come from the source, the crop's outer ring stays the target's. ``poisson``
first Poisson-blends the source into the target (paste.poisson_blend), which hides lighting seams
at some cost in identity.

Choices, measured on grace_hopper -> astronaut with SFace (see tests/test_classic.py):
- ``crop_size`` 256: at 256 the ffhq_512 framing puts ~63 px between the eyes, about what a source
  photo (grace_hopper: 80 px) and a 1080p medium shot carry, so a larger crop adds interpolated
  pixels, not detail. Measured SFace cosine to the source: 0.691 at 128, 0.719 at 256, 0.714 at 512;
  the swap costs ~6 ms per face at 256 on two busy CPU cores, twice that at 512 (Poisson: 4x).
- template ``ffhq_512``: it frames the whole face, brows to chin, with a margin, so the face ellipse
  is never cut by the crop edge. With the default ellipse both candidate templates score the same
  (SFace cosine to the source 0.675 ffhq_512 vs 0.679 arcface_128, before the ellipse was tuned);
  with larger ellipses ffhq_512 keeps more of the face (0.771 vs 0.767, 0.769 vs 0.750), where the
  tighter arcface_128 framing pushes the chin against the crop's bottom edge.
- the ellipse (:class:`FaceEllipse`): larger ones score a higher similarity but pull the source's
  hairline and background into the target's forehead and jaw; the default stops short of the hairline
  (SFace cosine 0.72 on the pair above, 0.68 with Poisson, against 0.18 for the unswapped target).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pipeline.blend.mask import ellipse_mask
from pipeline.blend.paste import poisson_blend
from pipeline.errors import NoFaceFound
from pipeline.faces.align import align, template_points
from pipeline.processors.face_swapper.color import transfer
from pipeline.types import Face, Frame, Mask, Template

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaceEllipse:
    """The face ellipse in units of the template's own geometry.

    ``center`` is where the centre sits between the eye line (0) and the mouth line (1); ``height`` is
    the vertical semi-axis in eye-to-mouth distances, ``width`` the horizontal one in eye distances;
    ``feather`` the width of the soft edge as a fraction of the smaller semi-axis.
    """

    center: float = 0.6
    height: float = 1.7
    width: float = 1.25
    feather: float = 0.35


@dataclass(frozen=True)
class ClassicIdentity:
    """The prepared source: its aligned crop (the mean of several crops of one person)."""

    crop: npt.NDArray[np.uint8]  # (S, S, 3) BGR
    count: int


def face_ellipse_mask(template: Template, size: int, shape: FaceEllipse, scale: float = 1.0) -> Mask:
    """The feathered face ellipse of ``shape`` in a ``size`` crop aligned to ``template``, axes ×
    ``scale``."""
    points = template_points(template, size)
    eyes, mouth = points[:2].mean(axis=0), points[3:].mean(axis=0)
    eye_distance = float(np.linalg.norm(points[1] - points[0]))
    eye_to_mouth = float(mouth[1] - eyes[1])
    cx = float((eyes[0] + mouth[0]) / 2)
    cy = float(eyes[1] + shape.center * eye_to_mouth)
    ax, ay = shape.width * eye_distance * scale, shape.height * eye_to_mouth * scale
    return ellipse_mask(size, (cx, cy), (ax, ay), feather=shape.feather * min(ax, ay))


class ClassicSwapper:
    """Swapper protocol (swap.base.Swapper) with no weights: aligned source face composited onto targets."""

    name = "classic"
    builtin = True
    crop_size = 256
    template: Template = "ffhq_512"

    def __init__(self, poisson: bool = False, shape: FaceEllipse | None = None) -> None:
        self.poisson = bool(poisson)
        self.shape = shape or FaceEllipse()
        self.face_mask = face_ellipse_mask(self.template, self.crop_size, self.shape)
        # Colour statistics from the inner face only: skin, eyes, nose, mouth; no hair, no background.
        self.inner_mask = face_ellipse_mask(self.template, self.crop_size, self.shape, scale=0.75)

    def prepare_source(self, sources: Sequence[tuple[Frame, Face]]) -> ClassicIdentity:
        """Align every source face to the template; several faces of one person are averaged."""
        if not sources:
            raise NoFaceFound("no source face was given: add a source photo with a clearly visible face")
        crops = [align(frame, face.landmarks, self.template, self.crop_size)[0] for frame, face in sources]
        if len(crops) == 1:
            mean = crops[0]
        else:
            average = np.mean(np.stack(crops).astype(np.float32), axis=0)
            mean = np.clip(np.rint(average), 0, 255).astype(np.uint8)
        log.debug("classic swapper: source identity from %d face(s)", len(crops))
        return ClassicIdentity(crop=np.ascontiguousarray(mean), count=len(crops))

    def swap(self, crops: npt.NDArray[np.uint8], identity: object) -> npt.NDArray[np.uint8]:
        """(N, 256, 256, 3) BGR target crops aligned to ffhq_512 -> the same crops wearing the source face."""
        if not isinstance(identity, ClassicIdentity):
            raise TypeError("classic swapper needs the identity from its own prepare_source(), "
                            f"got {type(identity)}")
        crops = np.asarray(crops)
        size = self.crop_size
        if crops.ndim != 4 or crops.shape[1:] != (size, size, 3):
            raise ValueError(f"classic swapper takes (N, {size}, {size}, 3) crops, got {crops.shape}")
        out = np.empty_like(crops)
        alpha = self.face_mask[..., None]
        for i, target in enumerate(crops):
            source = transfer(identity.crop, target, "reinhard", 1.0, self.inner_mask)
            if self.poisson:
                source = poisson_blend(source, target, self.face_mask)
            base = target.astype(np.float32)
            blended = base + (source.astype(np.float32) - base) * alpha
            out[i] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
        return out
