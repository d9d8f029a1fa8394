"""Test clip generators (ffmpeg lavfi or a face image moved over frames) and exact frame counting.

Used by the video tests and by anyone needing a short clip; nothing here is part of the engine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np

from pipeline.video import ffmpeg

_Q = ["-hide_banner", "-nostdin", "-loglevel", "error", "-y"]


def _run(cmd: list[str], stdin: bytes | None = None) -> None:
    result = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{result.stderr.decode(errors='replace')}")


def make_clip(
    path: str | Path,
    seconds: float = 2.0,
    size: tuple[int, int] = (320, 240),
    fps: int | str = 30,
    audio: bool = True,
    face_image: str | Path | np.ndarray | None = None,
    *,
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    color: str | None = "bt709",
    rotation: int = 0,
    vfr: bool = False,
    hdr: bool = False,
    audio_codec: str = "aac",
) -> Path:
    """Write a short clip: lavfi ``testsrc2`` (or ``face_image`` zooming and drifting across the
    frame) with an optional 440 Hz sine track.

    ``color`` tags bt709 (or None for untagged); ``hdr`` makes 10-bit HEVC tagged bt2020/PQ;
    ``vfr`` keeps every frame of the first half and every other one after (mp4 keeps the gaps);
    ``rotation`` stores a display-matrix rotation (needs the imageio-ffmpeg binary, ffmpeg >= 6).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    exe = shutil.which("ffmpeg") or ffmpeg.ffmpeg_exe()
    w, h = size
    cmd = [exe, *_Q]
    if face_image is None:
        cmd += ["-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate={fps}:duration={seconds}"]
        stdin = None
    else:
        n = round(seconds * float(eval(str(fps)) if "/" in str(fps) else fps))  # noqa: S307 - test helper
        stdin = _face_frames(face_image, n, w, h).tobytes()
        cmd += ["-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{w}x{h}", "-framerate", str(fps),
                "-i", "pipe:0"]
    if audio:
        cmd += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=48000:duration={seconds}"]
    vf = [f"scale={w}:{h}"] if face_image is None else []  # testsrc2 rounds odd sizes down
    if vfr:
        half = seconds / 2
        vf.append(f"select='lt(t\\,{half})+not(mod(n\\,2))'")
        cmd += ["-fps_mode", "vfr"]
    if hdr:
        vf.append("format=yuv420p10le")
        x265_hdr10 = "log-level=error:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:hdr10=1"
        cmd += ["-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-x265-params", x265_hdr10,
                "-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc",
                "-tag:v", "hvc1"]
    else:
        cmd += ["-c:v", codec, "-pix_fmt", pix_fmt]
        if codec == "libx264":
            cmd += ["-preset", "ultrafast", "-crf", "20"]
        if color:
            cmd += ["-colorspace", color, "-color_primaries", color, "-color_trc", color,
                    "-color_range", "tv"]
    if vf:
        cmd += ["-vf", ",".join(vf)]
    if audio:
        cmd += ["-c:a", audio_codec]
    target = path if not rotation else path.with_name(f"unrotated_{path.name}")
    _run([*cmd, "-map", "0:v", *(["-map", "1:a"] if audio else []), str(target)], stdin)
    if rotation:
        set_rotation(target, path, rotation)
        target.unlink()
    return path


def set_rotation(src: Path, dest: Path, degrees: int) -> Path:
    """Copy ``src`` with a display-matrix rotation (counter-clockwise degrees, as ffprobe reports)."""
    import imageio_ffmpeg  # Debian's ffmpeg 5.1 has no -display_rotation

    _run([imageio_ffmpeg.get_ffmpeg_exe(), *_Q, "-display_rotation", str(degrees), "-i", str(src),
          "-c", "copy", str(dest)])
    return dest


def _face_frames(image: str | Path | np.ndarray, n: int, w: int, h: int) -> np.ndarray:
    img = image if isinstance(image, np.ndarray) else cv2.imread(str(image), cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(image)
    base = min(w / img.shape[1], h / img.shape[0])
    frames = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        t = i / max(n - 1, 1)
        scale = base * (0.8 + 0.3 * t)  # slow zoom in
        dx, dy = 0.1 * w * np.sin(2 * np.pi * t), 0.05 * h * t  # drift
        m = np.array([[scale, 0, w / 2 - scale * img.shape[1] / 2 + dx],
                      [0, scale, h / 2 - scale * img.shape[0] / 2 + dy]], np.float32)
        frames[i] = cv2.warpAffine(img, m, (w, h), borderMode=cv2.BORDER_CONSTANT)
    return frames


def count_frames(path: str | Path) -> int:
    """Exact number of video frames (ffprobe -count_frames decodes the whole stream)."""
    tools = ffmpeg.find_tools()
    if tools.ffprobe is None:
        import av

        with av.open(str(path)) as container:
            return sum(1 for _ in container.decode(video=0))
    out = subprocess.run(
        [tools.ffprobe, "-v", "error", "-count_frames", "-select_streams", "v:0",
         "-show_entries", "stream=nb_read_frames", "-of", "json", str(path)],
        capture_output=True, check=True,
    ).stdout
    return int(json.loads(out)["streams"][0]["nb_read_frames"])


def stream_info(path: str | Path) -> dict:
    """Raw ffprobe JSON (format + streams) for assertions on tags and durations."""
    tools = ffmpeg.find_tools()
    assert tools.ffprobe, "needs ffprobe"
    out = subprocess.run([tools.ffprobe, "-v", "error", "-print_format", "json", "-show_format",
                          "-show_streams", str(path)], capture_output=True, check=True).stdout
    return json.loads(out)


# --- broken inputs for probe tests ----------------------------------------------------------------

def make_truncated(src: Path, dest: Path) -> Path:
    data = src.read_bytes()
    dest.write_bytes(data[: len(data) // 2])
    return dest


def make_audio_only(dest: Path, seconds: float = 1.0) -> Path:
    exe = shutil.which("ffmpeg") or ffmpeg.ffmpeg_exe()
    _run([exe, *_Q, "-f", "lavfi", "-i", f"sine=duration={seconds}", "-c:a", "aac", str(dest)])
    return dest


def make_image_as_video(dest: Path) -> Path:
    ok, buf = cv2.imencode(".png", np.full((64, 64, 3), 128, np.uint8))
    assert ok
    dest.write_bytes(buf.tobytes())
    return dest


def make_unknown_codec(dest: Path) -> Path:
    """A Matroska file whose video codec id is rewritten to one no ffmpeg knows."""
    tmp = dest.with_name(f"known_{dest.stem}.mkv")
    make_clip(tmp, seconds=0.5, audio=False)
    data = tmp.read_bytes()
    assert b"V_MPEG4/ISO/AVC" in data
    dest.write_bytes(data.replace(b"V_MPEG4/ISO/AVC", b"V_QQQQQ/ISO/QQQ"))
    tmp.unlink()
    return dest


def make_faststart(src: Path, dest: Path) -> Path:
    """A stream copy of ``src`` with the MP4 index at the front (a cut copy still promises every frame)."""
    exe = shutil.which("ffmpeg") or ffmpeg.ffmpeg_exe()
    _run([exe, *_Q, "-i", str(src), "-c", "copy", "-movflags", "+faststart", str(dest)])
    return dest


def make_cut(src: Path, dest: Path, start: float = 0.4, end: float = 0.6) -> Path:
    """``src`` without the bytes from ``start`` to ``end`` of its length (a recording cut in the middle)."""
    data = src.read_bytes()
    dest.write_bytes(data[: int(len(data) * start)] + data[int(len(data) * end) :])
    return dest


def make_zeroed(src: Path, dest: Path, nbytes: int = 30_000) -> Path:
    """``src`` with ``nbytes`` zeroed a third of the way into its media data (``mdat``): a damaged file."""
    data = bytearray(src.read_bytes())
    mdat = data.find(b"mdat")
    assert mdat > 0, "not an MP4"
    start = mdat + (len(data) - mdat) // 3
    data[start : start + nbytes] = bytes(min(nbytes, len(data) - start))
    dest.write_bytes(bytes(data))
    return dest


def add_audio_tracks(src: Path, dest: Path, tracks: list[tuple[str, str]]) -> Path:
    """``src``'s video with one sine audio stream per (language, title) in ``tracks``, tagged."""
    exe = shutil.which("ffmpeg") or ffmpeg.ffmpeg_exe()
    cmd = [exe, *_Q, "-i", str(src)]
    for i in range(len(tracks)):
        cmd += ["-f", "lavfi", "-i", f"sine=frequency={300 + 200 * i}:sample_rate=48000:duration=5"]
    cmd += ["-map", "0:v"]
    for i, (language, title) in enumerate(tracks):
        cmd += ["-map", f"{i + 1}:a", f"-metadata:s:a:{i}", f"language={language}",
                f"-metadata:s:a:{i}", f"title={title}"]
    _run([*cmd, "-c:v", "copy", "-c:a", "aac", "-shortest", str(dest)])
    return dest


def add_extra_streams(src: Path, dest: Path, *, subtitles: bool = True, second_video: bool = False,
                      attachment: bool = False) -> Path:
    """``src`` (video + audio) as Matroska with an SRT subtitle stream (two lines), a second video stream and
    an attached file, as asked."""
    exe = shutil.which("ffmpeg") or ffmpeg.ffmpeg_exe()
    srt = dest.with_name(f"{dest.stem}.srt")
    srt.write_text("1\n00:00:00,100 --> 00:00:00,400\nfirst line\n\n2\n00:00:00,500 --> 00:00:00,900\n"
                   "second line\n")
    cmd = [exe, *_Q, "-i", str(src)]
    maps = ["-map", "0:v:0", "-map", "0:a?"]
    if second_video:
        cmd += ["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=1"]
        maps += ["-map", f"{cmd.count('-i') - 1}:v"]
    if subtitles:
        cmd += ["-i", str(srt)]
        maps += ["-map", f"{cmd.count('-i') - 1}:s"]
    if attachment:
        maps += ["-attach", str(srt), "-metadata:s:t", "mimetype=text/plain"]
    _run([*cmd, *maps, "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "copy", "-c:s", "srt", str(dest)])
    srt.unlink()
    return dest


GREY_STEP = 5  # grey level per frame of grey_clip: frame i is grey 5·i, so a picture says which frame it is


def grey_clip(path: Path, frames: int = 50, size: tuple[int, int] = (320, 180), fps: int = 25) -> Path:
    """A clip whose frame i is uniformly grey ``GREY_STEP``·i (lossless x264), ``fps`` frames a second."""
    w, h = size
    data = np.concatenate([np.full((h, w, 3), GREY_STEP * i, np.uint8) for i in range(frames)]).tobytes()
    _run([ffmpeg.ffmpeg_exe(), *_Q, "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{w}x{h}", "-r", str(fps),
          "-i", "pipe:0", "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-color_primaries", "bt709",
          "-color_trc", "bt709", "-colorspace", "bt709", str(path)], data)
    return path
