"""The timeline's engine side (pipeline/strip.py): a video's frame strip (K thumbnails at evenly spaced
frames, cached per file), the target's first frame, a still image without a strip; and the UI's range
words (webui/timeline.py)."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline import api, strip
from pipeline.errors import BadMedia
from tests import photos
from tests.videos import GREY_STEP, grey_clip

FPS = 25  # grey_clip's: 50 frames are 2 s


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
        assert abs(float(image.mean()) - GREY_STEP * thumb.frame) < 4, thumb.frame  # the frame it names


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
    assert range_text(api.Trim(1.2, 4.0)) == "0:01.20 – 0:04.00"
    assert range_text(api.Trim(None, 4.0)) == "0:00.00 – 0:04.00"
    assert range_text(api.Trim(2.5)) == "0:02.50 – end"
    assert range_text(api.Trim()) == ""
    assert seconds(1.0) == "1" and seconds(2.96) == "2.96" and seconds(1 / 30) == "0.033"


def test_dragged_handles_become_the_settings_text(tmp_path: Path) -> None:
    from webui.timeline import dragged

    clip = str(grey_clip(tmp_path / "grey.mp4"))  # 2 s at 25 fps
    assert dragged("1.0000,1.6000", clip) == ("1", "1.6")
    assert dragged("0.0000,2.0000", clip) == ("", "")  # the clip's ends: no trim at all
    skipped = dragged("1.5,1.0", clip)  # out before in cannot come from the handles: nothing is set
    assert all(not isinstance(v, str) for v in skipped)


def test_the_scrubber_keeps_to_the_trim_and_a_bad_trim_is_one_line(tmp_path: Path) -> None:
    from webui.timeline import frame_slider, range_changed, within

    clip = str(grey_clip(tmp_path / "grey.mp4"))
    info = api.check_media(clip)
    trim = api.Trim(0.4, 1.2)
    slider = frame_slider(info, trim, 0)
    assert (slider["minimum"], slider["maximum"], slider["value"]) == (10, 29, 10)
    assert "within frames 10–29 (0.40–1.20 s)" in slider["label"]
    full = frame_slider(info, api.Trim(), 33)
    assert (full["minimum"], full["maximum"], full["value"]) == (0, 49, 33)
    # a trim's change that comes back late keeps the frame the page shows now, unless it falls outside
    assert "value" not in frame_slider(info, trim, 20, keep=True)
    assert frame_slider(info, trim, 0, keep=True)["value"] == 10
    assert range_changed(clip, "0.4", "1.2", 20)[0].get("value") is None
    one = frame_slider(info, api.Trim(1.96), 0)  # only the last frame kept: a slider that cannot move
    assert one["value"] == 49 and one["interactive"] is False and one["minimum"] < one["maximum"]
    settings = api.apply_overrides(api.Settings(), {"video.start": 0.4, "video.end": 1.2})
    assert [within(settings, clip, f) for f in (0, 20, 40)] == [10, 20, 29]  # the preview's frame
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.zeros((20, 20, 3), np.uint8))
    assert within(settings, str(still), 40) == 0
    for start, end, said in (("5", "", "video.start 5 s is past the end of the clip (2.00 s)"),
                             ("1", "0.5", "video.end 0.5 s is not after video.start (1 s)"),
                             ("0.4", "9", "video.end 9 s is after the end of the clip (2.00 s): the render")):
        note = range_changed(clip, start, end, 0)[1]  # the same words the check refuses a job with
        assert said in note["value"] and "\n" not in note["value"] and note["visible"], note
    assert range_changed(clip, "0.4", "1.2", 0)[1] == {"__type__": "update", "value": "", "visible": False}
    assert range_changed(clip, "inf", "", 0)[1]["visible"] is False  # not a time: the settings say so


def test_a_trim_that_keeps_no_frame_is_refused_before_a_job(tmp_path: Path) -> None:
    source = str(photos.grace_hopper_path())
    clip = grey_clip(tmp_path / "grey.mp4")  # 2 s

    def checked(target: Path, start: float | None, end: float | None = None) -> api.Checked:
        settings = api.apply_overrides(api.Settings(), {"video.start": start, "video.end": end})
        return api.check_request(api.SwapRequest.of([source], target, settings))

    for start, end, words in ((3.0, None, "video.start 3 s is past the end of grey.mp4 (2.00 s)"),
                              (1.0, 0.5, "video.end 0.5 s is not after video.start (1 s)")):
        with pytest.raises(api.UserError, match=words.replace("(", r"\(").replace(")", r"\)")):
            checked(clip, start, end)
    assert checked(clip, 0.4, 9.0).frames == range(10, 50)  # an end after the clip's: to its end
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), np.zeros((20, 20, 3), np.uint8))
    assert checked(still, 3.0).frames is None  # a still has no trim
