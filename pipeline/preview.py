"""The engine side of the web UI's preview: read one frame, find its faces, process it with the current
settings.

Everything the browser UI needs that touches pixels, OpenCV or onnxruntime for a preview lives here, so
that ``webui/`` only builds widgets and calls these functions (media checks are in :mod:`pipeline.media`,
uploads and output names in :mod:`pipeline.workspace`). Warm state is kept in small caches:

- one :class:`~pipeline.process.FaceProcessor` per (settings, sources) — building one loads models and
  detects the source faces, which is most of a cold preview;
- one detector per detector settings (for the faces gallery);
- the last few decoded frames, keyed by (file, size, mtime, index), so scrubbing back and forth and
  changing a setting do not decode again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from pipeline import media, paths
from pipeline.errors import BadMedia, NoFaceFound, UserError
from pipeline.image import read_image
from pipeline.overlay import draw_debug
from pipeline.settings import Settings
from pipeline.types import Frame

log = logging.getLogger(__name__)

RGB = npt.NDArray[np.uint8]

_FRAME_CACHE = 8
_PROCESSOR_CACHE = 2


@dataclass(frozen=True)
class FoundFace:
    crop: RGB  # RGB crop around the face with some margin, for a gallery
    box: tuple[int, int, int, int]
    score: float


class _Lru(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()

    def get_or(self, key: Any, make: Any) -> Any:
        with self.lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
        value = make()
        with self.lock:
            self[key] = value
            while len(self) > self.size:
                self.popitem(last=False)
        return value


_frames = _Lru(_FRAME_CACHE)
_processors = _Lru(_PROCESSOR_CACHE)
_detectors = _Lru(2)


# ---------------------------------------------------------------- frames


def read_frame(path: str | Path, index: int = 0) -> Frame:
    """Frame ``index`` (0-based) of an image (always its only frame) or a video, as BGR."""
    info = media.check_media(path)
    index = 0 if info.kind == "image" else max(0, min(int(index), info.frames - 1))
    return _frames.get_or((media.file_key(info.path), index), lambda: _decode(info, index))


def _decode(info: media.MediaInfo, index: int) -> Frame:
    if info.kind == "image":
        return read_image(info.path).bgr
    from pipeline.video.decode import read_frames
    from pipeline.video.trim import WHOLE, Trim

    trim = Trim(index / info.fps) if index and info.fps else WHOLE  # from the frame's own time
    frames = read_frames(info.path, trim=trim, hwaccel="none")
    try:
        for frame in frames:
            return frame
    finally:
        frames.close()  # type: ignore[attr-defined]
    raise BadMedia(f"{info.path.name}: frame {index} could not be decoded")


# ---------------------------------------------------------------- faces


def _detector(settings: Settings) -> Any:
    from pipeline import families

    detector, execution = settings.detector, settings.execution
    key = (detector.model_dump_json(), execution.providers, execution.threads)
    return _detectors.get_or(key, lambda: families.build(detector.model, settings, "detector"))


def detect_faces(frame: Frame, settings: Settings | None = None) -> list[Any]:
    """The faces (``types.Face``) the warm detector finds on ``frame``, largest first."""
    return sorted(_detector(settings or Settings()).detect([frame])[0], key=lambda f: -f.area)


def faces_in(target: str | Path, frame_index: int = 0, settings: Settings | None = None) -> list[FoundFace]:
    """The faces the detector finds on one frame, largest first, as RGB crops with margin and boxes."""
    settings = settings or Settings()
    frame = read_frame(target, frame_index)
    faces = detect_faces(frame, settings)
    return [FoundFace(_crop(frame, f.box, 0.4)[:, :, ::-1].copy(), _int_box(f.box), float(f.score))
            for f in faces]


def _int_box(box: Any) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (int(round(float(v))) for v in box)
    return x1, y1, x2, y2


def _crop(frame: Frame, box: Any, margin: float) -> Frame:
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    mx, my = (x2 - x1) * margin, (y2 - y1) * margin
    a, b = max(0, int(x1 - mx)), max(0, int(y1 - my))
    c, d = min(w, int(x2 + mx) + 1), min(h, int(y2 + my) + 1)
    return np.ascontiguousarray(frame[b:d, a:c])


def save_reference(target: str | Path, frame_index: int, face_index: int,
                   settings: Settings | None = None) -> Path:
    """Save the ``face_index``-th face (largest first) of a frame as a reference image for
    ``selector.mode=reference``."""
    settings = settings or Settings()
    frame = read_frame(target, frame_index)
    faces = detect_faces(frame, settings)
    if not 0 <= face_index < len(faces):
        raise NoFaceFound(f"face {face_index + 1} is not on frame {frame_index} of {Path(target).name}")
    crop = _crop(frame, faces[face_index].box, 0.8)
    folder = paths.data_dir() / "references"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(crop.tobytes()).hexdigest()[:16]
    dest = folder / f"ref-{digest}.png"
    if not dest.exists():
        ok, data = cv2.imencode(".png", crop)
        if not ok:
            raise UserError("could not encode the reference face")
        dest.write_bytes(data.tobytes())
    return dest


# ---------------------------------------------------------------- preview


def processor(settings: Settings, sources: Sequence[str | Path]) -> Any:
    """A warm FaceProcessor for (settings, sources), built once and kept while it is used."""
    from pipeline.process import FaceProcessor

    if not sources:
        raise UserError("add a source image (the face to put in) to see a preview")
    for s in sources:
        media.check_media(s, ("image",))
    key = (settings.model_dump_json(), tuple(media.file_key(Path(s)) for s in sources))
    return _processors.get_or(key, lambda: FaceProcessor(settings, [Path(s) for s in sources]))


def preview(
    settings: Settings,
    sources: Sequence[str | Path],
    target: str | Path,
    frame_index: int = 0,
    overlay: bool = False,
    audio: str | Path | None = None,
    max_side: int | None = None,
) -> RGB:
    """Frame ``frame_index`` of ``target`` processed with ``settings``, as RGB; with ``overlay`` the
    face debugger (pipeline.overlay) draws each detected face's box, score and landmarks, and the outline
    of each swapped face's paste mask. ``audio``: a new voice (the processors hear it, as a render's
    ``--audio``: a lip syncer's mouth follows that frame's moment of it), else the target's own sound.
    ``max_side``: a fast preview, the frame first made at most this many pixels on its longer side (the
    UI's while the frame slider moves); None: at its own size."""
    from pipeline.chain import Chain
    from pipeline.processors import Media

    info = media.check_media(target)
    index = 0 if info.kind == "image" else max(0, min(int(frame_index), info.frames - 1))
    frame = smaller(read_frame(target, index), max_side)
    warm = processor(settings, sources)
    fps = None if info.kind == "image" else float(info.fps)
    warm.prepare(Media(info.path, fps, 0.0, None if audio is None else Path(audio)))
    work = Chain(warm).one(frame, index)
    out = work.out
    assert out is not None
    if work.alpha is not None:  # a transparent background, shown over a checkerboard
        out = over_checkerboard(out, work.alpha)
    if overlay:
        outlines = [(layer.mask, layer.matrix) for it in work.items for layer in it.layers()]
        out = draw_debug(out, work.detected, work.faces, masks=outlines)
    return np.ascontiguousarray(out[:, :, ::-1])


def smaller(frame: Frame, max_side: int | None) -> Frame:
    """``frame`` scaled down (area average) to at most ``max_side`` pixels on its longer side; as it is
    when it is no larger, or with None."""
    h, w = frame.shape[:2]
    if max_side is None or max(h, w) <= max_side:
        return frame
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.ascontiguousarray(cv2.resize(frame, size, interpolation=cv2.INTER_AREA))


def over_checkerboard(frame: Frame, alpha: npt.NDArray[np.uint8], square: int = 16) -> Frame:
    """``frame`` over a grey checkerboard by ``alpha`` (how an image viewer shows transparency)."""
    h, w = frame.shape[:2]
    yy, xx = np.mgrid[:h, :w]
    board = np.where(((yy // square + xx // square) % 2 == 0), 204, 153).astype(np.float32)[..., None]
    a = alpha.astype(np.float32)[..., None] / 255.0
    return np.asarray(np.rint(frame * a + board * (1.0 - a)), np.uint8)


def clear() -> None:
    """Drop every cached frame, processor, detector and media description (frees their memory)."""
    for cache in (_frames, _processors, _detectors):
        with cache.lock:
            cache.clear()
    media.clear_cache()
