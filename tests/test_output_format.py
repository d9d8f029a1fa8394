"""The output a creator chooses (``output.container``, ``output.encoder``, ``output.fps``, ``output.size``):
which codec goes in which container and the one line said for each change (``video/formats.py``), the
same line from the request's check (so ``swap``, ``queue add``, a batch and the web UI say it), the encode
command's filters, and a real render at another frame rate and size read back with ffprobe."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import SettingsError
from pipeline.settings import Settings, apply_overrides
from pipeline.video import builders, formats
from tests import photos, videos

TRANSPARENT = ["processors.order=background_remover", "background_remover.fill=transparent"]


def _s(*overrides: str) -> Settings:
    return apply_overrides(Settings(), list(overrides))


def test_a_codec_that_fits_its_container_is_written_as_asked_without_a_line() -> None:
    assert formats.choose(_s(), "clip.mp4") == formats.Choice("auto")
    assert formats.choose(_s("output.encoder=prores_ks"), "clip.mov") == formats.Choice("prores_ks")
    assert formats.choose(_s("output.encoder=libx265"), "clip.mkv") == formats.Choice("libx265")
    assert formats.choose(_s(), "clip.webm") == formats.Choice("libvpx-vp9")  # auto in a .webm: VP9


def test_a_codec_its_container_cannot_hold_gives_way_in_one_line() -> None:
    chosen = formats.choose(_s("output.encoder=prores_ks"), "clip.mp4")
    assert chosen.encoder == "auto"
    assert chosen.notices == ("ProRes 4444 does not go in a .mp4 file: clip.mp4 is encoded as H.264 "
                              "(name it .mov to keep ProRes 4444)",)
    chosen = formats.choose(_s("output.encoder=libx264"), "clip.webm")
    assert chosen.encoder == "libvpx-vp9"
    assert chosen.notices == ("H.264 does not go in a .webm file: clip.webm is encoded as VP9 (name it .mp4 "
                              "to keep H.264)",)


def test_transparency_asked_with_a_codec_that_cannot_keep_it_is_said() -> None:
    chosen = formats.choose(_s(*TRANSPARENT, "output.encoder=libx264"), "clip.mov", transparent=True)
    assert chosen == formats.Choice("prores_ks", ("H.264 cannot keep transparency: clip.mov is encoded as "
                                                  "ProRes 4444",))
    # auto: the container's alpha codec, nothing to say
    assert formats.choose(_s(*TRANSPARENT), "clip-alpha.mov", transparent=True) == formats.Choice("prores_ks")


def test_a_given_name_keeps_its_extension_and_a_different_container_is_said() -> None:
    chosen = formats.choose(_s("output.container=.mkv"), "clip.mp4")
    assert chosen.notices == ("clip.mp4 is written as .mp4, the name's own extension (the container .mkv is "
                              "for names the app makes)",)


def test_names_the_app_makes_take_the_container_else_the_codecs_own() -> None:
    assert formats.suffix_for(_s()) == ".mp4"
    assert formats.suffix_for(_s(), transparent=True) == ".webm"
    assert formats.suffix_for(_s("output.encoder=prores_ks")) == ".mov"
    assert formats.suffix_for(_s("output.encoder=libvpx-vp9")) == ".webm"
    assert formats.suffix_for(_s("output.container=.mkv", "output.encoder=prores_ks")) == ".mkv"
    assert formats.suffix_for(_s("output.encoder=libx264"), transparent=True) == ".webm"


@pytest.mark.parametrize(("given", "spelled"), [("keep", "keep"), ("720", "720p"), (" 720P ", "720p"),
                                                ("0.5x", "0.5x"), ("50%", "0.5x"), ("2×", "2x"),
                                                ("", "keep")])
def test_the_resolution_has_one_spelling(given: str, spelled: str) -> None:
    assert _s(f"output.size={given}").output.size == spelled


@pytest.mark.parametrize("bad", ["big", "8p", "10x", "0.01x", "-720"])
def test_a_resolution_out_of_reach_is_one_line(bad: str) -> None:
    with pytest.raises(SettingsError, match=r"^output.size: Value error, a (resolution|height|factor)"):
        _s(f"output.size={bad}")


def test_a_frame_rate_out_of_range_is_one_line() -> None:
    with pytest.raises(SettingsError, match=r"^output.fps: Input should be greater than or equal to 1"):
        _s("output.fps=0")
    assert _s("output.fps=").output.fps is None


@pytest.mark.parametrize(("size", "frame", "out"), [("keep", (320, 240), (320, 240)),
                                                    ("keep", (321, 241), (322, 242)),
                                                    ("120p", (320, 240), (160, 120)),
                                                    ("0.5x", (320, 180), (160, 90)),
                                                    ("720p", (1920, 1080), (1280, 720)),
                                                    ("0.5x", (302, 170), (152, 86))])
def test_the_output_size_keeps_the_aspect_with_even_sides(size: str, frame: tuple[int, int],
                                                          out: tuple[int, int]) -> None:
    assert formats.output_size(size, *frame) == out


def test_the_encode_command_scales_and_changes_the_rate_in_its_filter() -> None:
    cmd = builders.encode_cmd("ffmpeg", "out.mp4", width=320, height=240, fps=30, video_args=[],
                              size=(160, 120), out_fps=12)
    assert cmd[cmd.index("-vf") + 1] == ("fps=fps=12/1,scale=w=160:h=120:flags=lanczos:"
                                         "out_color_matrix=bt709:out_range=tv,format=yuv420p")
    plain = builders.encode_cmd("ffmpeg", "out.mp4", width=320, height=240, fps=30, video_args=[],
                                size=(320, 240))
    assert plain[plain.index("-vf") + 1] == "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p"
    prores = builders.encode_cmd("ffmpeg", "out.mov", width=320, height=240, fps=30, video_args=[],
                                 pix_fmt=builders.OPAQUE_PIX_FMT["prores_ks"])
    assert prores[prores.index("-vf") + 1].endswith("format=yuv444p10le")


def test_the_request_check_says_the_change_for_a_file_and_for_a_preview(tmp_path: Path) -> None:
    """The one check: for an output file (``swap``, ``queue add``), and with none (the UI's preview, before
    Add to queue) for the file the app would name."""
    from pipeline.request import SwapRequest, check

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=0.5, audio=False)
    settings = _s("output.encoder=prores_ks")
    checked = check(SwapRequest.of([photos.grace_hopper_path()], clip, settings, tmp_path / "out.mp4"))
    assert checked.output_notices == ("ProRes 4444 does not go in a .mp4 file: out.mp4 is encoded as H.264 "
                                      "(name it .mov to keep ProRes 4444)",)
    assert set(checked.output_notices) <= set(checked.notices)
    preview = check(SwapRequest.of([photos.grace_hopper_path()], clip, settings))
    assert preview.output_notices == ()  # the app names it clip….mov: as asked
    both = _s("output.encoder=prores_ks", "output.container=.mp4")
    preview = check(SwapRequest.of([photos.grace_hopper_path()], clip, both))
    assert preview.output_notices == ("ProRes 4444 does not go in a .mp4 file: clip.mp4 is encoded as H.264 "
                                      "(name it .mov to keep ProRes 4444)",)


def test_swap_at_another_frame_rate_and_size_is_read_back_by_ffprobe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``facestation swap --set output.fps=12 --set output.size=0.5x``: 2 s at 30 fps, 320×240 -> 24 frames
    at 12 fps, 160×120, still 2 s long, and the sound kept."""
    from cli.main import main

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=2.0, size=(320, 240), fps=30)
    out = tmp_path / "small.mp4"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip), "--output",
                 str(out), "--set", "output.fps=12", "--set", "output.size=0.5x"]) == 0, capsys.readouterr()
    info = videos.stream_info(out)
    video = next(s for s in info["streams"] if s["codec_type"] == "video")
    assert (video["width"], video["height"]) == (160, 120)
    assert video["r_frame_rate"] == "12/1"
    assert videos.count_frames(out) == 24
    assert float(info["format"]["duration"]) == pytest.approx(2.0, abs=0.1)
    assert any(s["codec_type"] == "audio" for s in info["streams"])


def test_swap_says_the_codec_change_before_it_renders(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=0.5, audio=False)
    out = tmp_path / "out.mp4"
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip), "--output",
                 str(out), "--set", "output.encoder=prores_ks"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("facestation: note: ProRes 4444 does not go in a .mp4 file: out.mp4 is encoded as "
                          "H.264"), err
    assert "output.encoder=prores_ks is not used" not in err  # said once, before, not again after
    video = next(s for s in videos.stream_info(out)["streams"] if s["codec_type"] == "video")
    assert video["codec_name"] == "h264"


def test_an_opaque_prores_mov_and_a_vp9_webm_are_written(tmp_path: Path) -> None:
    from cli.main import main

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=0.5, audio=False)
    for name, codec, pix in (("out.mov", "prores", "yuv444p"), ("out.webm", "vp9", "yuv420p")):
        out = tmp_path / name
        encoder = "prores_ks" if codec == "prores" else "auto"
        assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                     "--output", str(out), "--set", f"output.encoder={encoder}"]) == 0
        video = next(s for s in videos.stream_info(out)["streams"] if s["codec_type"] == "video")
        # ffprobe reads ProRes 4444 as 12 bits
        assert video["codec_name"] == codec and video["pix_fmt"].startswith(pix), video


def test_a_queued_job_in_segments_keeps_the_chosen_rate_and_size(tmp_path: Path) -> None:
    """A job rendered in segments of 15 frames (2 s at 30 fps: 4 segments) at ``output.fps=12`` and
    ``output.size=120p``: the joined file is 24 frames of 160×120, 2 s long."""
    from pipeline.jobs import segments
    from pipeline.jobs.service import add, open_store
    from pipeline.jobs.worker import run
    from pipeline.request import SwapRequest

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=2.0, size=(320, 240), fps=30)
    settings = _s("output.fps=12", "output.size=120p")
    store = open_store()
    job = add(store, SwapRequest.of([photos.grace_hopper_path()], clip, settings, tmp_path / "job.mp4"))
    assert run(store, "w1", once=True, pace=segments.Pace.frames(15)) == 1
    done = store.get(job.id)
    assert done.state == "done", (done.error, done.log)
    assert done.resume is not None and len(done.resume["segments"]) == 4
    video = next(s for s in videos.stream_info(done.output)["streams"] if s["codec_type"] == "video")
    assert (video["width"], video["height"], video["r_frame_rate"]) == (160, 120, "12/1")
    assert videos.count_frames(done.output) == 24
    assert float(videos.stream_info(done.output)["format"]["duration"]) == pytest.approx(2.0, abs=0.1)


def test_the_output_area_offers_its_choices_in_words() -> None:
    """The Output controls are built from the settings: the codec menu with what opens here, alpha marked;
    the container menu; the frame rate empty for "the target's"; the resolution a menu that takes any
    spelling (read back in its one spelling)."""
    pytest.importorskip("gradio")
    from pipeline import api
    from webui import controls

    fields = api.settings_keys()
    codec = controls.make_control("output.encoder", fields["output.encoder"], "auto")
    labels = dict((value, label) for label, value in codec.choices)
    assert labels["auto"] == "auto (H.264, GPU where it works)"
    assert set(labels) == set(api.usable_encoders())
    if "prores_ks" in labels:
        assert labels["prores_ks"] == "ProRes 4444 (.mov, keeps transparency)"
    container = controls.make_control("output.container", fields["output.container"], "auto")
    assert [v for _, v in container.choices] == ["auto", ".mp4", ".mov", ".mkv", ".webm"]
    fps = controls.make_control("output.fps", fields["output.fps"], None)
    assert fps.placeholder == "the target's" and fps.value == ""
    size = controls.make_control("output.size", fields["output.size"], "keep")
    assert "720p" in [v for _, v in size.choices] and size.allow_custom_value
    read = controls.settings_from(["output.fps", "output.size"], ["24", "50%"])
    assert (read.output.fps, read.output.size) == (24.0, "0.5x")


def test_a_preview_refuses_transparency_in_a_container_without_it_as_the_queue_would(tmp_path: Path) -> None:
    from pipeline.errors import UserError
    from pipeline.request import SwapRequest, check
    from tests.surrogates import install_surrogate

    install_surrogate("modnet")
    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=0.5, audio=False)
    settings = _s(*TRANSPARENT, "output.container=.mp4")
    with pytest.raises(UserError, match=r"background_remover makes the frames transparent.*clip.mp4 cannot"):
        check(SwapRequest.of([photos.grace_hopper_path()], clip, settings))
    # the codec asked cannot keep it: the container's alpha codec, said
    h264 = _s(*TRANSPARENT, "output.encoder=libx264")
    said = check(SwapRequest.of([photos.grace_hopper_path()], clip, h264))
    assert said.output_notices == ("H.264 cannot keep transparency: clip.webm is encoded as VP9",)


def test_queue_add_says_the_change_when_it_queues(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    clip = videos.make_clip(tmp_path / "clip.mp4", seconds=0.5, audio=False)
    assert main(["queue", "add", "--source", str(photos.grace_hopper_path()), "--target", str(clip),
                 "--output", str(tmp_path / "out.webm"), "--set", "output.encoder=libx265"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ("facestation: note: HEVC does not go in a .webm file: out.webm is encoded as VP9 "
                            "(name it .mp4 to keep HEVC)\n")
    assert captured.out.strip().isdigit()  # the job's id
