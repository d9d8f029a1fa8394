"""The timeline's engine side (pipeline/strip.py): a video's frame strip (K thumbnails at evenly spaced
frames, cached per file), the target's first frame, a still image without a strip; and the UI's range
words (webui/timeline.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline import api, strip
from pipeline.errors import BadMedia
from pipeline.video import ffmpeg

FPS = 25
STEP = 5  # grey level per frame: frame i is grey 5·i, so a thumbnail says which frame it shows


def grey_clip(path: Path, frames: int = 50, size: tuple[int, int] = (320, 180)) -> Path:
    """A clip whose frame i is uniformly grey 5·i (lossless x264), ``FPS`` frames a second."""
    w, h = size
    data = np.concatenate([np.full((h, w, 3), STEP * i, np.uint8) for i in range(frames)]).tobytes()
    cmd = [ffmpeg.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
           "-pix_fmt", "bgr24", "-s", f"{w}x{h}", "-r", str(FPS), "-i", "pipe:0", "-c:v", "libx264",
           "-qp", "0", "-pix_fmt", "yuv420p", "-color_primaries", "bt709", "-color_trc", "bt709",
           "-colorspace", "bt709", str(path)]
    subprocess.run(cmd, input=data, check=True, capture_output=True)
    return path


def decode(jpeg: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    strip.clear_cache()


def test_a_strip_has_k_thumbnails_at_evenly_spaced_frames(tmp_path: Path) -> None:
    clip = grey_clip(tmp_path / "grey.mp4")
    made = api.frame_strip(clip, count=5)
    assert made is not None
    assert made.frames == 50 and made.fps == FPS and made.duration == pytest.approx(2.0, abs=0.05)
    assert [t.frame for t in made.thumbs] == [0, 10, 20, 30, 40]
    assert [t.time for t in made.thumbs] == pytest.approx([0.0, 0.4, 0.8, 1.2, 1.6])
    assert (made.width, made.height) == (96, 54)  # 54 px tall, the clip's 16:9 kept
    for thumb in made.thumbs:
        image = decode(thumb.jpeg)
        assert image.shape == (54, 96, 3)
        assert abs(float(image.mean()) - STEP * thumb.frame) < 4, thumb.frame  # the frame it says it shows


def test_a_short_clip_gives_one_thumbnail_per_frame(tmp_path: Path) -> None:
    made = api.frame_strip(grey_clip(tmp_path / "short.mp4", frames=3), count=10)
    assert made is not None and [t.frame for t in made.thumbs] == [0, 1, 2]
    assert strip.strip_frames(100, 10) == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]


def test_a_strip_is_made_once_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = grey_clip(tmp_path / "grey.mp4", frames=20)
    runs: list[list[str]] = []
    real = strip.run_tool

    def counting(cmd: list[str], **kw: object) -> object:
        runs.append(cmd)
        return real(cmd, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(strip, "run_tool", counting)
    first = api.frame_strip(clip, count=4)
    assert len(runs) == 4  # one short decode per thumbnail
    assert api.frame_strip(clip, count=4) is first and len(runs) == 4  # cached: no decode at all
    grey_clip(tmp_path / "other.mp4", frames=30).replace(clip)  # the file replaced: a new strip
    os.utime(clip, ns=(1, 1))
    again = api.frame_strip(clip, count=4)
    assert again is not first and len(runs) == 8
    assert again is not None and again.frames == 30


def test_a_still_image_has_no_strip_but_has_a_picture(tmp_path: Path) -> None:
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.full((300, 400, 3), (0, 0, 255), np.uint8))
    assert api.frame_strip(still) is None
    picture = decode(api.first_frame(still))
    assert picture.shape == (96, 128, 3)  # 96 px tall, the image's shape kept
    assert picture[..., 2].mean() > 240 and picture[..., 0].mean() < 15  # red, as the image


def test_the_first_frame_of_a_video(tmp_path: Path) -> None:
    picture = decode(api.first_frame(grey_clip(tmp_path / "grey.mp4", frames=10)))
    assert picture.shape == (96, 170, 3)
    assert picture.mean() < 4  # frame 0 is black


def test_a_file_that_is_no_video_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "fake.mp4"
    fake.write_bytes(b"not a video at all" * 100)
    with pytest.raises(BadMedia) as caught:
        api.frame_strip(fake)
    assert "fake.mp4" in str(caught.value) and "\n" not in str(caught.value)


def test_the_thumbnail_command() -> None:
    cmd = strip.thumb_cmd("ffmpeg", "/v/a clip.mp4", time=1.5, filters="format=bgr24", size=(96, 54))
    assert cmd[:6] == ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-ss"]
    assert cmd[cmd.index("-ss") + 1] == "1.500000"
    assert cmd.index("-ss") < cmd.index("-i")  # seek before the input: fast and accurate
    assert cmd[cmd.index("-i") + 1] == "file:/v/a clip.mp4"
    assert cmd[cmd.index("-vf") + 1] == "format=bgr24,scale=96:54:flags=area"
    assert cmd[cmd.index("-frames:v") + 1] == "1" and cmd[-1] == "pipe:1"
    assert "-ss" not in strip.thumb_cmd("ffmpeg", "a.mp4", time=0.0, filters="f", size=(2, 2))


# ---------------------------------------------------------------- the UI's side, without a browser


def test_a_range_in_words() -> None:
    from webui.timeline import clock, range_text, seconds

    assert clock(1.2) == "0:01.20" and clock(61.0) == "1:01.00" and clock(0.333) == "0:00.33"
    assert range_text(1.2, 4.0) == "0:01.20 – 0:04.00"
    assert range_text(None, 4.0) == "0:00.00 – 0:04.00" and range_text(2.5, None) == "0:02.50 – end"
    assert range_text(None, None) == ""
    assert seconds(1.0) == "1" and seconds(2.96) == "2.96" and seconds(1 / 30) == "0.033"


def test_dragged_handles_become_the_settings_text(tmp_path: Path) -> None:
    from webui.timeline import dragged

    clip = str(grey_clip(tmp_path / "grey.mp4"))  # 2 s at 25 fps
    assert dragged("1.0000,1.6000", clip) == ("1", "1.6")
    assert dragged("0.0000,2.0000", clip) == ("", "")  # the clip's ends: no trim at all
    skipped = dragged("1.5,1.0", clip)  # out before in cannot come from the handles: nothing is set
    assert all(not isinstance(v, str) for v in skipped)


def test_the_scrubber_keeps_to_the_trim_and_a_bad_trim_is_one_line(tmp_path: Path) -> None:
    from webui.timeline import frame_slider, range_changed, trim_problem, within

    clip = str(grey_clip(tmp_path / "grey.mp4"))
    info = api.check_media(clip)
    slider = frame_slider(info, 0.4, 1.2, 0)
    assert (slider["minimum"], slider["maximum"], slider["value"]) == (10, 29, 10)
    assert "0:00.40 – 0:01.20" in slider["label"]
    full = frame_slider(info, None, None, 33)
    assert (full["minimum"], full["maximum"], full["value"]) == (0, 49, 33)
    # a trim's change that comes back late keeps the frame the page shows now, unless it falls outside
    assert "value" not in frame_slider(info, 0.4, 1.2, 20, keep=True)
    assert frame_slider(info, 0.4, 1.2, 0, keep=True)["value"] == 10
    assert range_changed(clip, "0.4", "1.2", 20)[0].get("value") is None
    one = frame_slider(info, 1.96, None, 0)  # only the last frame kept: a slider that cannot move
    assert one["value"] == 49 and one["interactive"] is False and one["minimum"] < one["maximum"]
    settings = api.apply_overrides(api.Settings(), {"video.start": 0.4, "video.end": 1.2})
    assert [within(settings, clip, f) for f in (0, 20, 40)] == [10, 20, 29]  # the preview's frame
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.zeros((20, 20, 3), np.uint8))
    assert within(settings, str(still), 40) == 0
    assert trim_problem(3.0, None, 2.0).startswith("Start at 3 s is past the end of the clip (2.00 s)")
    assert trim_problem(1.0, 0.5, 2.0).startswith("End at 0.5 s is not after the start (1 s)")
    assert trim_problem(0.4, 1.2, 2.0) == ""
    _, note = range_changed(clip, "5", "", 0)
    assert "past the end of the clip" in note["value"] and "\n" not in note["value"] and note["visible"]
    assert range_changed(clip, "0.4", "1.2", 0)[1] == {"__type__": "update", "value": "", "visible": False}


def test_a_trim_that_keeps_no_frame_is_refused_before_a_job(tmp_path: Path) -> None:
    from pipeline.checks import check_trim

    clip = grey_clip(tmp_path / "grey.mp4")  # 2 s
    for start, end, words in ((3.0, None, "video.start 3 s is past the end of grey.mp4 (2.00 s)"),
                              (1.0, 0.5, "video.end 0.5 s is not after video.start (1 s)")):
        settings = api.apply_overrides(api.Settings(), {"video.start": start, "video.end": end})
        with pytest.raises(api.UserError, match=words.replace("(", r"\(").replace(")", r"\)")):
            check_trim(settings, clip)
    check_trim(api.apply_overrides(api.Settings(), {"video.start": 0.4, "video.end": 9.0}), clip)  # the end
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.zeros((20, 20, 3), np.uint8))
    check_trim(api.apply_overrides(api.Settings(), {"video.start": 3.0}), still)  # a still has no trim
