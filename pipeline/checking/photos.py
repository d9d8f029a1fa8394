"""The real face photos a model check runs on, and where the built-in YuNet finds their faces.

Grace Hopper ships with matplotlib (a product dependency); scikit-image's astronaut, a second person, is
used where scikit-image is installed (it is a dev dependency): without her the checks that need two
people say so and skip. The same-person variants are made here: the photo mirrored and slightly warped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from pipeline.errors import NoFaceFound, UserError
from pipeline.faces.base import Detector
from pipeline.image import read_image
from pipeline.types import Face, Frame

log = logging.getLogger(__name__)

NO_SECOND_PERSON = "needs a second person's photo (scikit-image's astronaut: pip install scikit-image)"


def default_face() -> Path:
    """A real public-domain face photo that ships with matplotlib (installed with the dev extra)."""
    try:
        import matplotlib
    except ImportError:
        raise UserError("bench needs a face: pass --source IMG (and --target VIDEO), "
                        "or install matplotlib") from None
    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    if not path.is_file():
        raise UserError("bench needs a face: pass --source IMG")
    return path


@dataclass(frozen=True)
class Shot:
    """One photo and the face the reference detector finds in it."""

    name: str
    frame: Frame
    face: Face


@dataclass(frozen=True)
class Photos:
    person: Shot  # grace_hopper
    same: tuple[Shot, ...]  # the same person: mirrored, warped
    other: Shot | None  # another person (astronaut), where available

    @property
    def note(self) -> str:
        return "" if self.other else NO_SECOND_PERSON


def second_person() -> Frame | None:
    """scikit-image's astronaut as BGR, None where scikit-image is not installed."""
    try:
        from skimage import data
    except ImportError:
        log.info("scikit-image is not installed: no second person to check with")
        return None
    return np.ascontiguousarray(np.asarray(data.astronaut())[:, :, ::-1])


def _warped(frame: Frame) -> Frame:
    """The photo rotated by 4° and scaled by 0.92 about its centre: the same face, other pixels."""
    h, w = frame.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), 4.0, 0.92)
    return np.ascontiguousarray(cv2.warpAffine(frame, m, (w, h), borderMode=cv2.BORDER_REFLECT_101))


def shot(name: str, frame: Frame, detector: Detector) -> Shot:
    faces = detector.detect([frame])[0]
    if not faces:
        raise NoFaceFound(f"the built-in detector finds no face in the check photo {name}")
    return Shot(name, frame, faces[0])


def load(detector: Detector) -> Photos:
    """The check photos with their reference faces (``detector``: the built-in YuNet)."""
    try:
        grace = read_image(default_face()).bgr
    except UserError:
        raise UserError("models check needs matplotlib's sample photo grace_hopper.jpg: "
                        "pip install matplotlib") from None
    person = shot("grace_hopper", grace, detector)
    same = (shot("grace_hopper mirrored", np.ascontiguousarray(grace[:, ::-1]), detector),
            shot("grace_hopper warped", _warped(grace), detector))
    other = second_person()
    return Photos(person, same, shot("astronaut", other, detector) if other is not None else None)
