from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pipeline.errors import BadMedia, UserError
from pipeline.image import read_image, read_provenance, write_image


def _png_header_only(path: Path, width: int, height: int) -> None:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b""))


def _gradient(h: int = 40, w: int = 60) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 4 % 256, y * 6 % 256, (x + y) * 3 % 256], axis=2).astype(np.uint8)


def test_missing_empty_dir_and_not_an_image(tmp_path: Path) -> None:
    with pytest.raises(BadMedia, match="no such file"):
        read_image(tmp_path / "nope.png")
    (tmp_path / "empty.jpg").write_bytes(b"")
    with pytest.raises(BadMedia, match="empty"):
        read_image(tmp_path / "empty.jpg")
    with pytest.raises(BadMedia, match="folder"):
        read_image(tmp_path)
    (tmp_path / "text.png").write_text("hello, I am not a picture")
    with pytest.raises(BadMedia, match="not an image"):
        read_image(tmp_path / "text.png")


def test_truncated_jpeg(tmp_path: Path) -> None:
    full = tmp_path / "full.jpg"
    Image.fromarray(_gradient(200, 200)).save(full, quality=90)
    data = full.read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BadMedia, match="truncated"):
        read_image(cut)


def test_huge_image_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    _png_header_only(path, 30000, 30000)
    with pytest.raises(BadMedia, match="900 MP"):
        read_image(path)


def test_modes_become_bgr(tmp_path: Path) -> None:
    rgb = _gradient()
    Image.fromarray(rgb).convert("CMYK").save(tmp_path / "cmyk.jpg", quality=95)
    Image.fromarray(rgb).convert("L").save(tmp_path / "grey.png")
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 128, np.uint8)])
    Image.fromarray(rgba, "RGBA").save(tmp_path / "alpha.png")

    cmyk = read_image(tmp_path / "cmyk.jpg")
    assert cmyk.bgr.shape == (40, 60, 3) and cmyk.mode == "CMYK"
    assert np.abs(cmyk.bgr[:, :, ::-1].astype(int) - rgb).mean() < 12

    grey = read_image(tmp_path / "grey.png")
    assert grey.mode == "L" and grey.bgr.shape == (40, 60, 3)
    assert np.array_equal(grey.bgr[:, :, 0], grey.bgr[:, :, 2])

    alpha = read_image(tmp_path / "alpha.png")
    assert alpha.alpha is not None and int(alpha.alpha[0, 0]) == 128
    assert np.array_equal(alpha.bgr[:, :, ::-1], rgb)


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".webp"])
def test_write_keeps_size_and_tags_provenance(tmp_path: Path, suffix: str) -> None:
    src = tmp_path / "src.png"
    Image.fromarray(_gradient()).save(src)
    pic = read_image(src)
    out = write_image(tmp_path / f"out{suffix}", pic, pic.bgr, "synthetic: made with facestation test")
    with Image.open(out) as img:
        assert img.size == (60, 40)
    assert "synthetic" in (read_provenance(out) or "")
    assert not list(tmp_path.glob(".*part"))


def test_write_keeps_alpha_and_greyscale(tmp_path: Path) -> None:
    rgba = np.dstack([_gradient(), np.full((40, 60), 77, np.uint8)])
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    pic = read_image(tmp_path / "a.png")
    out = write_image(tmp_path / "o.png", pic, pic.bgr, "x")
    with Image.open(out) as img:
        assert img.mode == "RGBA" and img.getpixel((0, 0))[3] == 77

    Image.fromarray(_gradient()[:, :, 0]).save(tmp_path / "g.png")
    grey = read_image(tmp_path / "g.png")
    out = write_image(tmp_path / "go.png", grey, grey.bgr, "x")
    with Image.open(out) as img:
        assert img.mode == "L"


def test_unwritable_format(tmp_path: Path) -> None:
    pic = read_image(_save(tmp_path))
    with pytest.raises(UserError, match=".gif"):
        write_image(tmp_path / "o.gif", pic, pic.bgr, "x")


def _save(tmp_path: Path) -> Path:
    p = tmp_path / "s.png"
    Image.fromarray(_gradient()).save(p)
    return p
