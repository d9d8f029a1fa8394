"""Still images: checked reading and format-preserving writing with a provenance tag.

Reading goes through Pillow so that the header is checked before any pixel is decoded (a 30000×30000
file is refused without allocating it), EXIF orientation is applied, and CMYK / greyscale / palette /
alpha images are all turned into BGR frames. The original mode is kept in :class:`Picture` so the
output can be written back in the same kind (greyscale stays greyscale, alpha is re-attached).
"""

from __future__ import annotations

import os
import re
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps, PngImagePlugin, UnidentifiedImageError

from pipeline import env, sniff
from pipeline.errors import BadMedia, UserError, not_a_file
from pipeline.filenames import temp_name
from pipeline.types import Frame

FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP"}
IMAGE_SUFFIXES = frozenset(FORMATS) | {".bmp", ".tif", ".tiff"}
_PAGED = frozenset({"TIFF"})  # formats whose frames are pages, not an animation


def is_image_path(path: Path | str) -> bool:
    """Whether ``path`` names a still image (by extension); anything else is treated as a video."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


@dataclass(frozen=True)
class Picture:
    """A decoded image: BGR pixels plus what is needed to write it back in kind."""

    bgr: Frame
    mode: str  # Pillow mode of the source: RGB, L, RGBA, CMYK, P, ...
    format: str | None
    alpha: npt.NDArray[np.uint8] | None = None
    bits: int = 8  # bits per channel of the file (a 16-bit PNG is swapped and written in 8 bits)
    frames: int = 1  # frames in the file (an animated WebP/GIF/PNG: only the first is read)

    def depth_notice(self, name: str) -> str | None:
        """What the user should know when the output cannot keep the file's bit depth."""
        if self.bits <= 8:
            return None
        return (f"{name} has {self.bits} bits per channel: the output is 8-bit "
                "(facestation swaps faces in 8 bits per channel)")

    def loss_notices(self, name: str, output: Path) -> list[str]:
        """What an output at ``output`` cannot carry of this file: its bit depth, its other frames, its
        transparency (JPEG has none) — each said, never dropped in silence."""
        notes = [n for n in [self.depth_notice(name)] if n]
        if self.frames > 1 and self.format in _PAGED:
            notes.append(f"{name} has {self.frames} pages: only page 1 is swapped and written (save each "
                         "page as its own image to swap them all)")
        elif self.frames > 1:
            notes.append(f"{name} has {self.frames} frames (animated): only its first frame is swapped and "
                         "written; convert it to a video to swap every frame")
        if self.alpha is not None and FORMATS.get(output.suffix.lower()) == "JPEG":
            notes.append(f"{name} has transparency, which {output.name} (JPEG) cannot keep: it is dropped "
                         "(write a .png or .webp to keep it)")
        return notes


def read_image(path: Path | str) -> Picture:
    """Read an image file into BGR, refusing bad input with one clear line (BadMedia)."""
    path = Path(path)
    if not path.exists():
        raise BadMedia(f"no such file: {path}")
    special = not_a_file(path, "an image file")
    if special is not None:
        raise special
    if path.stat().st_size == 0:
        raise BadMedia(f"{path.name} is empty (0 bytes)")
    limit = env.MAX_PIXELS.get()
    previous, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, limit  # Pillow's bomb check agrees with ours
    try:
        return _open(path, limit)
    finally:
        Image.MAX_IMAGE_PIXELS = previous  # others' Pillow reads (scikit-image, imageio) keep their own


def _open(path: Path, limit: int) -> Picture:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                width, height = img.size
                if width * height > limit:
                    raise BadMedia(
                        f"{path.name} is {width}×{height} ({width * height / 1e6:.0f} MP), over the "
                        f"{limit / 1e6:.0f} MP limit; refused before decoding"
                    )
                fmt = img.format
                bits = _bits_per_channel(path, img)
                frames = int(getattr(img, "n_frames", 1) or 1)
                img.load()
                picture = _to_picture(ImageOps.exif_transpose(img), fmt)
                return Picture(picture.bgr, picture.mode, fmt, picture.alpha, bits, frames)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        found = re.search(r"\((\d+) pixels\)", str(exc))
        size = f" ({int(found.group(1)) / 1e6:.0f} MP)" if found else ""
        raise BadMedia(
            f"{path.name} is too large{size}, over the {limit / 1e6:.0f} MP limit; "
            "refused before decoding"
        ) from None
    except UnidentifiedImageError:
        kind = sniff.what_is(path)
        raise BadMedia(f"{path.name} is not an image ({f'it is {kind}' if kind else 'unrecognised format'})"
                       ) from None
    except OSError as exc:
        raise BadMedia(f"{path.name} could not be decoded ({exc}); is it truncated or corrupt?") from None


def _bits_per_channel(path: Path, img: Image.Image) -> int:
    """16 for a 16-bit PNG (Pillow reads its colour kinds as 8-bit without a word) or a 16-bit grey image."""
    if img.mode.startswith("I;16") or img.mode == "I":
        return 16
    if img.format == "PNG":
        with open(path, "rb") as fh:
            header = fh.read(25)
        if len(header) == 25 and header[24] == 16:  # IHDR bit depth
            return 16
    return 8


def _to_picture(img: Image.Image, fmt: str | None) -> Picture:
    mode = img.mode
    alpha = None
    if mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        alpha = np.asarray(rgba)[:, :, 3].copy()
        rgb = np.asarray(rgba.convert("RGB"))
    elif mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(img, dtype=np.float64)
        top = 65535.0 if arr.max() > 255 else 255.0
        grey = np.clip(arr / top * 255.0 + 0.5, 0, 255).astype(np.uint8)
        rgb = np.repeat(grey[:, :, None], 3, axis=2)
        mode = "L"
    else:
        rgb = np.asarray(img.convert("RGB"))
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    return Picture(bgr=bgr, mode=mode, format=fmt, alpha=alpha)


def output_format(path: Path | str) -> str:
    suffix = Path(path).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        raise UserError(f"cannot write '{suffix or Path(path).name}': use .png, .jpg or .webp") from None


def write_image(path: Path | str, picture: Picture, bgr: Frame, provenance: str, quality: int = 95,
                guard: Callable[[], None] | None = None) -> Path:
    """Write ``bgr`` in the kind of ``picture`` (greyscale, alpha) to ``path`` with a provenance tag; an alpha
    channel follows ``bgr``'s size where a frame processor scaled the picture (resized linearly).

    The file appears under its final name only when complete (temp name + rename); ``guard`` (it raises to
    refuse) is asked just before the rename.
    """
    path = Path(path)
    fmt = output_format(path)
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    img = Image.fromarray(rgb, "RGB")
    if picture.mode in ("L", "1", "I", "I;16") or (picture.mode == "P" and _is_grey(bgr)):
        img = img.convert("L")
    if picture.alpha is not None and fmt in ("PNG", "WEBP"):
        img = img.convert("RGBA") if img.mode == "RGB" else img.convert("LA")
        img.putalpha(Image.fromarray(_alpha_at(picture.alpha, bgr.shape[1], bgr.shape[0]), "L"))
    exif = Image.Exif()
    exif[0x010E] = provenance  # ImageDescription
    exif[0x0131] = "facestation"  # Software
    kwargs: dict[str, object] = {"exif": exif.tobytes()}
    if fmt == "PNG":
        info = PngImagePlugin.PngInfo()
        info.add_itxt("Description", provenance)
        info.add_text("Software", "facestation")
        kwargs["pnginfo"] = info
    elif fmt == "JPEG":
        kwargs.update(quality=quality, subsampling=0 if quality >= 90 else 2, comment=provenance.encode())
    elif fmt == "WEBP":
        kwargs.update(quality=quality)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path, f"{os.getpid()}-{uuid.uuid4().hex[:8]}.part")  # unique per writer, within NAME_MAX
    try:
        img.save(tmp, format=fmt, **kwargs)
        if guard is not None:
            guard()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _alpha_at(alpha: npt.NDArray[np.uint8], width: int, height: int) -> npt.NDArray[np.uint8]:
    """``alpha`` at ``width``×``height`` (resized linearly where the picture was scaled)."""
    if alpha.shape[:2] == (height, width):
        return alpha
    import cv2

    return np.asarray(cv2.resize(alpha, (width, height), interpolation=cv2.INTER_LINEAR), np.uint8)


def read_provenance(path: Path | str) -> str | None:
    """The provenance text written by :func:`write_image`, or None."""
    with Image.open(path) as img:
        text = img.info.get("Description") or img.info.get("comment")
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        if not text:
            text = img.getexif().get(0x010E)
    return str(text) if text else None


def _is_grey(bgr: Frame) -> bool:
    return bool(np.array_equal(bgr[:, :, 0], bgr[:, :, 1]) and np.array_equal(bgr[:, :, 1], bgr[:, :, 2]))
