"""ffmpeg command builders, checked as lists without running ffmpeg."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from pipeline.video import builders


def _after(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_media_arg_is_absolute_file_url_and_survives_odd_names(tmp_path: Path) -> None:
    odd = tmp_path / "-a: clip é.mp4"
    arg = builders.media_arg(odd)
    assert arg == f"file:{odd}"
    assert Path(arg.removeprefix("file:")).is_absolute()


def test_rate_arg_keeps_ntsc_fractions_exact() -> None:
    assert builders.rate_arg(Fraction(30000, 1001)) == "30000/1001"
    assert builders.rate_arg(25) == "25/1"
    assert builders.rate_arg(Fraction(1350, 59)) == "1350/59"


def test_sws_matrix_from_tag_or_size() -> None:
    assert builders.sws_matrix("bt709", 480) == "bt709"
    assert builders.sws_matrix("bt470bg", 1080) == "bt470"
    assert builders.sws_matrix("bt2020nc", 2160) == "bt2020"
    assert builders.sws_matrix(None, 1080) == "bt709"
    assert builders.sws_matrix(None, 480) == "smpte170m"


def test_decode_cmd_trim_hwaccel_and_raw_bgr_output() -> None:
    cmd = builders.decode_cmd("ffmpeg", "/v/in.mp4", filters="format=bgr24", start=1.5, duration=2.0,
                              hwaccel="cuda")
    assert cmd[0] == "ffmpeg"
    # seeking and hwaccel are input options (before -i), the duration limit an output option
    i = cmd.index("-i")
    assert cmd.index("-ss") < i and cmd.index("-hwaccel") < i and cmd.index("-t") > i
    assert _after(cmd, "-ss") == "1.500000" and _after(cmd, "-t") == "2.000000"
    assert _after(cmd, "-i") == "file:/v/in.mp4"
    assert _after(cmd, "-pix_fmt") == "bgr24" and _after(cmd, "-f") == "rawvideo"
    assert cmd[-1] == "pipe:1" and "-an" in cmd


def test_decode_cmd_without_trim_has_no_seek() -> None:
    cmd = builders.decode_cmd("ffmpeg", "/v/in.mp4", filters="format=bgr24")
    assert "-ss" not in cmd and "-t" not in cmd and "-hwaccel" not in cmd


def test_decode_filters_order_vfr_tonemap_matrix() -> None:
    plain = builders.decode_filters(matrix="bt709", color_range="tv")
    assert plain == "scale=in_color_matrix=bt709:in_range=tv,format=bgr24"
    tm = builders.tonemap_filter("smpte2084", "bt2020", "bt2020nc", "tv")
    chain = builders.decode_filters(matrix="bt2020", color_range="tv", cfr_fps=Fraction(45, 2), tonemap=tm)
    parts = chain.split(",")
    assert parts[0] == "fps=fps=45/2"
    assert chain.index("tonemap=") < chain.index("scale=in_color_matrix=bt709")  # after tone-mapping: bt709
    assert "tin=smpte2084" in chain and parts[-1] == "format=bgr24"
    assert "in_range=pc" in builders.decode_filters(matrix="bt709", color_range="pc")


@pytest.mark.parametrize(("quality", "crf"), [(0, "35"), (100, "12"), (50, "24")])
def test_x264_quality_maps_to_crf(quality: int, crf: str) -> None:
    args = builders.quality_args("libx264", quality, "medium")
    assert _after(args, "-crf") == crf and _after(args, "-preset") == "medium"


def test_quality_is_monotonic_and_nvenc_uses_vbr_cq() -> None:
    crfs = [int(_after(builders.quality_args("libx264", q, "fast"), "-crf")) for q in range(0, 101, 10)]
    assert crfs == sorted(crfs, reverse=True)
    nv = builders.quality_args("h264_nvenc", 80, "slowest")
    assert _after(nv, "-preset") == "p7" and _after(nv, "-tune") == "hq" and _after(nv, "-rc") == "vbr"
    assert 14 <= int(_after(nv, "-cq")) <= 40
    assert _after(builders.quality_args("hevc_nvenc", 80, "fastest"), "-preset") == "p1"
    assert "-crf" in builders.quality_args("libx265", 80, "medium")


@pytest.mark.parametrize(
    ("container", "codec", "expected"),
    [(".mp4", "aac", "copy"), (".mp4", "pcm_s16le", "aac"), (".mov", "pcm_s16le", "copy"),
     (".mkv", "pcm_s16le", "copy"), (".webm", "aac", "libopus"), (".webm", "opus", "copy"),
     (".avi", "aac", "aac")],
)
def test_audio_copy_where_container_allows(container: str, codec: str, expected: str) -> None:
    assert _after(builders.audio_codec_args(container, codec), "-c:a") == expected


def test_fitted_audio_is_reencoded_padded_and_cut_to_the_video() -> None:
    """A damaged source's audio (video.allow_damaged): never a copy; gaps filled, padded, cut at the end."""
    args = builders.audio_codec_args(".mkv", "aac", fit=True)
    assert _after(args, "-c:a") == "aac" and _after(args, "-af") == "aresample=async=1,apad"
    assert "-shortest" in args
    assert _after(builders.audio_codec_args(".webm", "opus", fit=True), "-c:a") == "libopus"


def test_encode_cmd_maps_video_audio_metadata_and_tags() -> None:
    cmd = builders.encode_cmd(
        "ffmpeg", "/o/out.mp4", width=322, height=242, fps=Fraction(30000, 1001),
        video_args=["-c:v", "libx264", "-crf", "20"], matrix="bt709",
        color_args=builders.color_tag_args("bt709", "bt709", "bt709"),
        source=builders.SourceMux(Path("/v/in.mp4"), 1.0, 2.0, ("-c:a", "copy"), subtitles=(0, 2)),
        metadata={"comment": "synthetic"},
    )
    first, second = [i for i, a in enumerate(cmd) if a == "-i"]
    assert cmd[first + 1] == "pipe:0" and cmd[second + 1] == "file:/v/in.mp4"
    assert _after(cmd, "-s") == "322x242" and _after(cmd, "-framerate") == "30000/1001"
    # the trim applies to the audio input
    assert first < cmd.index("-ss") < second and first < cmd.index("-t") < second
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-map"] == ["0:v:0", "1:a", "1:s:0", "1:s:2"]
    assert _after(cmd, "-c:a") == "copy" and _after(cmd, "-c:s") == "copy"
    assert "out_color_matrix=bt709" in _after(cmd, "-vf")
    assert _after(cmd, "-colorspace") == "bt709" and _after(cmd, "-metadata") == "comment=synthetic"
    assert cmd[-1] == "file:/o/out.mp4" and "+faststart" in cmd


def test_encode_cmd_without_audio_maps_video_only() -> None:
    cmd = builders.encode_cmd("ffmpeg", "/o/out.mkv", width=64, height=64, fps=25,
                              video_args=["-c:v", "libx264"])
    assert cmd.count("-i") == 1 and cmd.count("-map") == 1 and "-c:a" not in cmd and "-movflags" not in cmd


def test_a_source_without_audio_muxes_its_subtitles_alone() -> None:
    subtitles_only = builders.SourceMux(Path("/v/in.mkv"), audio_args=None, subtitles=(1,))
    inputs, maps = builders.source_args(subtitles_only, 1)
    assert inputs == ["-i", "file:/v/in.mkv"] and maps == ["-map", "1:s:1", "-c:s", "copy"]
    assert builders.source_args(builders.SourceMux(Path("/v/in.mkv"), audio_args=None), 1) == ([], [])


def test_trial_commands() -> None:
    enc = builders.trial_encode_cmd("ff", "h264_nvenc")
    assert _after(enc, "-c:v") == "h264_nvenc" and _after(enc, "-frames:v") == "1"
    assert enc[-2:] == ["null", "-"]
    assert _after(enc, "-f") == "lavfi"
    dec = builders.trial_decode_cmd("ff", "/v/a.mp4", "cuda")
    assert _after(dec, "-hwaccel") == "cuda" and _after(dec, "-hwaccel_output_format") == "cuda"


def test_provenance_tag_names_version_models_and_synthetic() -> None:
    from pipeline import __version__
    from pipeline.provenance import provenance_metadata, provenance_tag

    tag = provenance_tag(["inswapper_128", "gfpgan_1.4", "inswapper_128"])
    assert tag.startswith("synthetic media") and f"facestation {__version__}" in tag
    assert tag.endswith("models: inswapper_128, gfpgan_1.4")  # de-duplicated, in order
    assert provenance_tag([]).endswith("models: none")
    classic = provenance_tag(["classic"])
    assert provenance_metadata(["classic"]) == {"comment": classic, "description": classic}
