"""Small pictures for the web UI: source photos with the face found boxed, chosen faces, source -> face
pairs, and a job's frame for its Queue row.

The drawing functions (:func:`fit`, :func:`draw_boxes`, :func:`pair_image`) are pure: they return new
images and never touch their inputs. :func:`job_thumbnail` writes a small JPEG per job into the cache
folder, named after what it shows (the output file's identity, or the running job's newest segment), so a
poller asking every second decodes a video once, not on every tick.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from pipeline import media, paths
from pipeline.errors import UserError
from pipeline.image import read_image
from pipeline.jobs.model import Job
from pipeline.settings import Settings
from pipeline.types import Frame

log = logging.getLogger(__name__)

SOURCE_SIZE = 200  # px: the longest side of a source photo's thumbnail
ROW_HEIGHT = 80  # px: a Queue row's thumbnail (shown at half that, sharp on a 2x screen)
USED = (0, 200, 0)  # BGR: the face a source photo gives (its largest)
UNUSED = (0, 170, 255)  # BGR: other faces on the photo, not used
ARROW = (110, 110, 110)
PAPER = (255, 255, 255)


@dataclass(frozen=True)
class SourceThumb:
    """One source photo for the UI: its thumbnail (RGB) with the faces boxed, and a caption in words."""

    image: Frame
    caption: str
    faces: int


def fit(frame: Frame, size: int) -> tuple[Frame, float]:
    """``frame`` scaled down (never up) so that its longest side is at most ``size``; (image, scale)."""
    rows, cols = frame.shape[:2]
    scale = min(1.0, size / max(rows, cols, 1))
    if scale >= 1.0:
        return frame.copy(), 1.0
    shape = (max(1, round(cols * scale)), max(1, round(rows * scale)))
    return np.asarray(cv2.resize(frame, shape, interpolation=cv2.INTER_AREA), np.uint8), scale


def fit_height(frame: Frame, height: int, grow: bool = False) -> Frame:
    """``frame`` scaled down (and up, with ``grow``) to ``height`` rows."""
    rows, cols = frame.shape[:2]
    if rows == height or (rows < height and not grow):
        return frame.copy()
    shape = (max(1, round(cols * height / rows)), height)
    method = cv2.INTER_AREA if rows > height else cv2.INTER_CUBIC
    return np.asarray(cv2.resize(frame, shape, interpolation=method), np.uint8)


def draw_boxes(frame: Frame, boxes: Sequence[Sequence[float]], used: int | None = 0) -> Frame:
    """A copy of ``frame`` (BGR) with each box drawn: box ``used`` in green and thicker, the others in
    amber (a source photo gives only its largest face)."""
    out = frame.copy()
    thick = max(2, round(max(frame.shape[:2]) / 120))
    for index, box in enumerate(boxes):
        x1, y1, x2, y2 = (int(round(float(v))) for v in box)
        colour, width = (USED, thick) if index == used else (UNUSED, max(1, thick - 1))
        cv2.rectangle(out, (x1, y1), (x2, y2), colour, width, cv2.LINE_AA)
    return out


def _caption(name: str, faces: int) -> str:
    if faces == 0:
        return f"{name}: no face found in this photo"
    if faces == 1:
        return f"{name}: face found"
    return f"{name}: {faces} faces, the largest (green) is used"


def source_thumbnails(sources: Sequence[str | Path], settings: Settings | None = None,
                      size: int = SOURCE_SIZE) -> list[SourceThumb]:
    """Each source photo scaled down with the faces the detector finds boxed (the one used in green), and a
    caption that says plainly when a photo has no face. A photo that cannot be read gets its reason as the
    caption on a grey tile. Raises ModelMissing when the detector is not installed."""
    from pipeline.preview import detect_faces, read_frame

    settings = settings or Settings()
    out: list[SourceThumb] = []
    for source in sources:
        name = Path(source).name
        try:
            frame = read_frame(source)
        except UserError as exc:
            out.append(SourceThumb(np.full((size * 3 // 4, size, 3), 200, np.uint8), f"{name}: {exc}", 0))
            continue
        faces = detect_faces(frame, settings)
        small, scale = fit(frame, size)
        boxes = [[float(v) * scale for v in f.box] for f in faces]
        drawn = draw_boxes(small, boxes, 0)
        rgb = np.ascontiguousarray(drawn[:, :, ::-1])
        out.append(SourceThumb(rgb, _caption(name, len(faces)), len(faces)))
    return out


def face_image(reference: str | Path, size: int = SOURCE_SIZE) -> Frame:
    """A saved reference face (``save_reference``) as RGB, at most ``size`` px; BadMedia when it is gone."""
    small, _ = fit(read_image(reference).bgr, size)
    return np.ascontiguousarray(small[:, :, ::-1])


def pair_image(source: str | Path, reference: str | Path, height: int = SOURCE_SIZE * 3 // 4) -> Frame:
    """Source photo -> the face it replaces, side by side with an arrow between, both ``height`` rows high
    (a small face crop is scaled up), as RGB. BadMedia when either file cannot be read."""
    photo = fit_height(read_image(source).bgr, height, grow=True)
    face = fit_height(read_image(reference).bgr, height, grow=True)
    gap = max(24, height // 3)
    arrow = np.full((height, gap, 3), PAPER, np.uint8)
    mid = height // 2
    cv2.arrowedLine(arrow, (4, mid), (gap - 4, mid), ARROW, max(2, height // 40), cv2.LINE_AA, tipLength=0.35)
    joined = np.hstack([photo, arrow, face])
    return np.ascontiguousarray(joined[:, :, ::-1])


# ---------------------------------------------------------------- a job's frame for its Queue row


def thumbnails_dir() -> Path:
    """Where the Queue rows' thumbnails are kept (rebuilt on demand)."""
    return paths.cache_dir() / "thumbnails"


def is_job_thumbnail(path: Path, job_id: int) -> bool:
    """Is ``path`` one of the thumbnails :func:`job_thumbnail` writes for job ``job_id``?"""
    name = path.name
    return path.parent == thumbnails_dir() and name.startswith(f"job-{job_id}-") and name.endswith(".jpg")


_refused: set[str] = set()  # keys whose frame could not be decoded: not tried again on every poll
_written: dict[tuple[int, str], Path] = {}  # (job id, output) -> the thumbnail last written for it


def job_thumbnail(job: Job, height: int = ROW_HEIGHT) -> Path | None:
    """A small JPEG of ``job``'s frame: the output's middle frame once done (image or video), the newest
    recorded frame while it runs, None while queued, once failed, or before the first frame. Written once
    per output (or segment) and found again by name, so asking every second costs a stat, not a decode."""
    from pipeline.jobs.service import latest_frame

    if job.state == "done":
        output = Path(job.output)
        try:
            st = output.stat()
        except OSError:
            return None
        key = f"{output.resolve()}|{st.st_size}|{st.st_mtime_ns}"
        frame = None
    elif job.state == "running":
        latest = latest_frame(job)
        if latest is None:
            return None
        key, frame = latest[0], np.ascontiguousarray(latest[1][:, :, ::-1])
    else:
        return None
    dest = thumbnails_dir() / f"job-{job.id}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jpg"
    if dest.is_file():
        return dest
    if key in _refused:
        return None
    try:
        frame = _middle_frame(Path(job.output)) if frame is None else frame
    except UserError as exc:
        log.info("no thumbnail for job %s: %s", job.id, exc)
        _refused.add(key)
        return None
    ok, data = cv2.imencode(".jpg", fit_height(frame, height), [cv2.IMWRITE_JPEG_QUALITY, 85])
    if not ok:
        _refused.add(key)
        return None
    paths.write_atomic(dest, data.tobytes())
    previous = _written.get((job.id, job.output))
    if previous is not None and previous != dest:  # the job's previous frame, no longer shown
        previous.unlink(missing_ok=True)
    _written[(job.id, job.output)] = dest
    return dest


def _middle_frame(path: Path) -> Frame:
    """The middle frame of a video (BGR), or the picture of a still image."""
    from pipeline.preview import read_frame

    return read_frame(path, media.check_media(path).frames // 2)
