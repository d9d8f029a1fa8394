"""The engine side of the web UI's preview: read one frame, find its faces, process it with the current settings.

Everything the browser UI needs that touches pixels, OpenCV, onnxruntime or ffmpeg lives here, so that
``webui/`` only builds widgets and calls these functions. Warm state is kept in small caches:

- one :class:`~pipeline.process.FaceProcessor` per (settings, sources) — building one loads models and
  detects the source faces, which is most of a cold preview;
- one detector per detector settings (for the faces gallery);
- the last few decoded frames, keyed by (file, size, mtime, index), so scrubbing back and forth and
  changing a setting do not decode again.

Uploaded files are checked by content (:func:`check_media`) before anything else reads them, and
copied into the app's own uploads folder by content hash (:func:`stash`) before a job refers to them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
import numpy.typing as npt

from pipeline import paths
from pipeline.errors import BadMedia, NoFaceFound, UserError
from pipeline.image import is_image_path, read_image
from pipeline.overlay import draw_debug
from pipeline.settings import Settings
from pipeline.types import Frame

log = logging.getLogger(__name__)

RGB = npt.NDArray[np.uint8]
MediaKind = Literal["image", "video"]

_FRAME_CACHE = 8
_PROCESSOR_CACHE = 2


@dataclass(frozen=True)
class MediaInfo:
    """What the UI needs to know about a target: its kind, size and how many frames to scrub."""

    path: Path
    kind: MediaKind
    width: int
    height: int
    frames: int
    fps: float

    def describe(self) -> str:
        if self.kind == "image":
            return f"image {self.width}×{self.height}"
        return f"video {self.width}×{self.height}, {self.frames} frames at {self.fps:.3g} fps"


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
_infos = _Lru(16)


def _file_key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


# ---------------------------------------------------------------- media


def kind_of(path: str | Path) -> MediaKind:
    return "image" if is_image_path(path) else "video"


def check_media(path: str | Path, allowed: Sequence[MediaKind] = ("image", "video")) -> MediaInfo:
    """Describe ``path`` after checking it by content (Pillow for images, ffprobe for videos); raise BadMedia."""
    path = Path(path)
    if not path.is_file():
        raise BadMedia(f"no such file: {path.name}")
    kind = kind_of(path)
    if kind not in allowed:
        wanted = " or ".join(allowed)
        raise BadMedia(f"{path.name}: expected {wanted}, got a {kind} (by its extension)")
    return _infos.get_or(_file_key(path), lambda: _describe(path, kind))


def _describe(path: Path, kind: MediaKind) -> MediaInfo:
    if kind == "image":
        bgr = read_image(path).bgr
        _frames.get_or((_file_key(path), 0), lambda: bgr)
        h, w = bgr.shape[:2]
        return MediaInfo(path, "image", w, h, 1, 0.0)
    from pipeline.video.probe import probe

    info = probe(path)
    if info.frame_count < 1:
        raise BadMedia(f"{path.name}: the video has no frames")
    return MediaInfo(path, "video", info.width, info.height, info.frame_count, float(info.fps))


def read_frame(path: str | Path, index: int = 0) -> Frame:
    """Frame ``index`` (0-based) of an image (always its only frame) or a video, as BGR."""
    info = check_media(path)
    index = 0 if info.kind == "image" else max(0, min(int(index), info.frames - 1))
    return _frames.get_or((_file_key(info.path), index), lambda: _decode(info, index))


def _decode(info: MediaInfo, index: int) -> Frame:
    if info.kind == "image":
        return read_image(info.path).bgr
    from pipeline.video.decode import read_frames

    start = index / info.fps if info.fps else 0.0
    frames = read_frames(info.path, start=start if index else None, hwaccel="none")
    try:
        for frame in frames:
            return frame
    finally:
        frames.close()  # type: ignore[attr-defined]
    raise BadMedia(f"{info.path.name}: frame {index} could not be decoded")


def stash(path: str | Path, kind: Sequence[MediaKind] = ("image", "video")) -> Path:
    """Check an uploaded file and copy it into the app's uploads folder under its content hash.

    Jobs refer to the stashed copy, which outlives the web server's temporary upload cache. The
    user-given file name is reduced to a safe stem, so it cannot leave the folder.
    """
    src = Path(path)
    check_media(src, kind)
    digest = hashlib.sha256()
    with open(src, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    folder = paths.data_dir() / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"{digest.hexdigest()[:16]}-{safe_stem(src.stem)}{src.suffix.lower()}"
    if not dest.exists():
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(src, tmp)
        tmp.replace(dest)
    return dest


def safe_stem(name: str, limit: int = 48) -> str:
    """A file-name stem made only of ``[A-Za-z0-9_-]`` (never empty, never a path)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:limit]
    return cleaned or "file"


def output_path(folder: Path, target: str | Path, owner: str = "") -> Path:
    """A fresh output file for ``target`` inside ``folder/owner`` (the owner's name made safe)."""
    target = Path(target)
    sub = folder / safe_stem(owner or "local")
    sub.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower() if kind_of(target) == "image" and target.suffix.lower() in (
        ".png", ".jpg", ".jpeg", ".webp") else (".png" if kind_of(target) == "image" else ".mp4")
    stem = safe_stem(target.stem.split("-", 1)[-1] if re.match(r"^[0-9a-f]{16}-", target.stem) else target.stem)
    # a random part: jobs queued in the same second must not share a name (their files appear only when done)
    for _ in range(100):
        candidate = sub / f"{stem}-swap-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}{suffix}"
        if not candidate.exists():
            return candidate
    raise UserError(f"could not find a free output name for {stem} in {sub}")


# ---------------------------------------------------------------- faces


def _detector(settings: Settings) -> Any:
    from pipeline.faces.registry import make_detector

    key = (settings.detector.model_dump_json(), settings.execution.providers, settings.execution.threads)
    return _detectors.get_or(
        key, lambda: make_detector(settings.detector, settings.execution.providers, settings.execution.threads)
    )


def faces_in(target: str | Path, frame_index: int = 0, settings: Settings | None = None) -> list[FoundFace]:
    """The faces the detector finds on one frame, largest first, as RGB crops with margin and boxes."""
    settings = settings or Settings()
    frame = read_frame(target, frame_index)
    faces = sorted(_detector(settings).detect([frame])[0], key=lambda f: -f.area)
    return [FoundFace(_crop(frame, f.box, 0.4)[:, :, ::-1].copy(), _int_box(f.box), float(f.score)) for f in faces]


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


def save_reference(target: str | Path, frame_index: int, face_index: int, settings: Settings | None = None) -> Path:
    """Save the ``face_index``-th face (largest first) of a frame as a reference image for ``selector.mode=reference``."""
    settings = settings or Settings()
    frame = read_frame(target, frame_index)
    faces = sorted(_detector(settings).detect([frame])[0], key=lambda f: -f.area)
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
        check_media(s, ("image",))
    key = (settings.model_dump_json(), tuple(_file_key(Path(s)) for s in sources))
    return _processors.get_or(key, lambda: FaceProcessor(settings, [Path(s) for s in sources]))


def preview(
    settings: Settings,
    sources: Sequence[str | Path],
    target: str | Path,
    frame_index: int = 0,
    overlay: bool = False,
) -> RGB:
    """Frame ``frame_index`` of ``target`` processed with ``settings``, as RGB; with ``overlay`` the
    face debugger (pipeline.overlay) draws each detected face's box, score and landmarks, and the outline
    of each swapped face's paste mask."""
    frame = read_frame(target, frame_index)
    proc = processor(settings, sources)
    detected = proc.detect([frame])[0]
    chosen = proc.select(frame, detected)
    swapped = proc.swap([frame], [chosen])
    proc.enhance([frame], swapped)
    items = swapped[0]
    out = proc.blend(frame, items)
    if overlay:
        outlines = [(proc.mask if it.mask is None else it.mask, it.matrix) for it in items]
        out = draw_debug(out, detected, chosen, masks=outlines)
    return np.ascontiguousarray(out[:, :, ::-1])


def clear() -> None:
    """Drop every cached frame, processor and detector (frees their memory)."""
    for cache in (_frames, _processors, _detectors, _infos):
        with cache.lock:
            cache.clear()


# ---------------------------------------------------------------- downloads

DOWNLOAD_TTL_S = 3600.0


def download_copy(path: str | Path, ttl_s: float = DOWNLOAD_TTL_S) -> Path:
    """A copy of a finished output in a fresh, unguessable temp folder, for the UI to hand to one user.

    The outputs folder itself is never served: the UI checks who asks, then returns this copy (a hard
    link where the temp folder is on the same disk, so no bytes are copied). Copies older than ``ttl_s``
    are removed on the next call.
    """
    src = Path(path)
    if not src.is_file():
        raise UserError(f"the output {src.name} is not there any more")
    root = Path(tempfile.gettempdir()) / "facestation-downloads"
    root.mkdir(exist_ok=True)
    now = time.time()
    for old in root.iterdir():
        if now - old.stat().st_mtime > ttl_s:
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(dir=root))
    dest = folder / src.name
    try:
        os.link(src, dest)
    except OSError:  # another file system: copy
        shutil.copyfile(src, dest)
    return dest
