"""Markers: settings that change at a frame inside one render (pipeline/markers.py, Settings.markers).

The acceptance: a marker that changes a setting at frame N gives an output whose frames before N are (decoded)
those of the unmarked render and whose frames from N are those of a render with the new setting, with the same
frame count and the audio untouched; a job with markers resumes at its segments; bad markers are one line.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline import markers
from pipeline.errors import SettingsError, UserError
from pipeline.jobs import runner, segments
from pipeline.jobs.store import JobStore
from pipeline.progress import RunControl
from pipeline.request import SwapRequest, check
from pipeline.settings import Settings, apply_overrides, validate
from pipeline.video import ffmpeg
from pipeline.video.decode import read_frames
from tests import photos
from tests.videos import count_frames, make_clip

# the classic swapper (no model file); colour matching visibly changes its output at the defaults
FAST = apply_overrides(Settings(), ["selector.mode=one", "execution.batch_size=1", "detector.size=320"])
NEW = apply_overrides(FAST, ["color.method=mkl"])  # another colour matching: a visible change
N = 20  # the marker's frame
SOURCE = photos.grace_hopper_path


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=2, size=(320, 240), fps=25,
                     face_image=photos.astronaut())


def _run_job(tmp_path: Path, clip: Path, settings: Settings, name: str,
             saved: list[dict] | None = None) -> Path:
    """Queue and run one job here, its segments cut every N frames (so that an unmarked render's segments
    also begin at N: the same encoder input gives the same packets)."""
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / name
    job = store.add([SOURCE()], clip, out, settings)
    ctx = runner.JobContext(control=RunControl(), save_resume=[] .append if saved is None else saved.append,
                            log=lambda line: None, pace=segments.Pace.frames(N))
    summary = runner.execute(job, ctx)
    assert summary["output"] == str(out)
    return out


def _frames(path: Path) -> list[np.ndarray]:
    return list(read_frames(path))


def _audio_packets(path: Path) -> str:
    exe = ffmpeg.ffmpeg_exe()
    done = subprocess.run([exe, "-v", "error", "-i", str(path), "-map", "0:a:0", "-c", "copy", "-f",
                           "framemd5", "-"], capture_output=True, check=True, text=True)
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith("#"))


def test_a_marker_changes_the_output_from_its_frame_on(tmp_path: Path, clip: Path) -> None:
    """Before N: the unmarked render's frames; from N: those of a render with the new setting throughout
    (the faces found and tracked go on across the marker), decoded; same frame count, the audio's packets
    unchanged."""
    marked = markers.with_markers(FAST, [f"{N}=color.method=mkl"])
    assert marked.markers[0].frame == N and marked.markers[0].changes == {"color.method": "mkl"}
    got = _frames(out := _run_job(tmp_path, clip, marked, "marked.mp4"))
    before = _frames(_run_job(tmp_path, clip, FAST, "before.mp4"))
    after = _frames(_run_job(tmp_path, clip, NEW, "after.mp4"))
    assert len(got) == len(before) == len(after) == count_frames(clip) == 50
    changed = [float(np.abs(before[i].astype(int) - after[i].astype(int)).mean()) for i in range(N, 50)]
    assert min(changed) > 0.05, "the setting has no visible effect: the test proves nothing"
    for i in range(N):
        assert np.array_equal(got[i], before[i]), f"frame {i} before the marker differs from the unmarked"
    for i in range(N, 50):
        assert np.array_equal(got[i], after[i]), f"frame {i} from the marker on is not the new setting's"
    assert _audio_packets(out) == _audio_packets(tmp_path / "before.mp4") != ""


def test_a_marker_that_changes_how_faces_are_found_starts_finding_again_there(tmp_path: Path,
                                                                              clip: Path) -> None:
    """A marker changing the detector, selector, tracker or landmarks: its stretch finds the faces anew from
    its first frame, exactly as a render of that stretch alone (a resumed job's start)."""
    marked = markers.with_markers(FAST, [f"{N}=color.method=mkl,detector.score=0.45"])
    got = _frames(_run_job(tmp_path, clip, marked, "marked.mp4"))
    # the new settings, finding faces anew at N too (one face: no overlapping boxes to merge)
    alone = markers.with_markers(apply_overrides(NEW, ["detector.score=0.45"]), [f"{N}=detector.nms=0.41"])
    ref = _frames(_run_job(tmp_path, clip, alone, "alone.mp4"))
    for i in range(N, len(got)):
        assert np.array_equal(got[i], ref[i]), f"frame {i}"


class _Killed(Exception):
    pass


def test_segments_split_at_markers_and_a_resume_keeps_them(tmp_path: Path, clip: Path) -> None:
    """No segment spans a marker; a job stopped after its second segment resumes there (in its second
    stretch) and ends with every frame."""
    marked = markers.with_markers(FAST, ["0.6s=color.method=mkl", "37=color.strength=0.5"])
    assert [m.label for m in marked.markers] == ["frame 37", "0.6 s"]  # frames first, then times
    store = JobStore(tmp_path / "q.sqlite3")
    out = tmp_path / "m.mkv"
    job = store.add([SOURCE()], clip, out, marked)
    saved: list[dict] = []

    def save(record: dict) -> None:
        if len(record["segments"]) > 2:
            raise _Killed  # the third segment is never recorded: as if the worker died there
        saved.append(record)

    lines: list[str] = []
    with pytest.raises(_Killed):
        runner.execute(job, runner.JobContext(RunControl(), save, lines.append, segments.Pace.frames(N)))
    kept = [(s["start"], s["frames"]) for s in saved[-1]["segments"]]
    assert kept == [(0, 15), (15, 20)]  # 0.6 s is frame 15 at 25 fps
    again = dataclasses.replace(job, resume=saved[-1])
    summary = runner.execute(again, runner.JobContext(RunControl(), saved.append, lines.append,
                                                      segments.Pace.frames(N)))
    assert "resuming at frame 35 (2 finished segments kept)" in lines
    starts = [(s["start"], s["frames"]) for s in saved[-1]["segments"]]
    assert starts == [(0, 15), (15, 20), (35, 2), (37, 13)], starts  # a segment ends at the marker at 37
    assert summary["frames_rendered_now"] == 15 and count_frames(out) == 50


def test_swap_renders_markers_too(tmp_path: Path, clip: Path) -> None:
    from pipeline.jobs.markers import render_file
    from pipeline.video.probe import probe

    marked = markers.with_markers(FAST, [f"{N}=color.method=mkl"])
    out = tmp_path / "swap.mp4"
    result = render_file(marked, [SOURCE()], clip, out, info=probe(clip), control=RunControl())
    assert result.frames == count_frames(out) == 50
    assert result.quality is not None and [f.frame for f in result.quality.frames] == list(range(50))
    assert result.quality_path is not None and result.quality_path.is_file()  # one report for the output
    assert not out.with_name(f".{out.name}.markers").exists()


def test_markers_are_checked_against_the_clip_and_trim(clip: Path, tmp_path: Path) -> None:
    def refused(*texts: str, base: Settings = FAST) -> str:
        with pytest.raises(UserError) as caught:
            marked = markers.with_markers(base, list(texts))
            check(SwapRequest.of([SOURCE()], clip, marked, tmp_path / "o.mp4"))
        return str(caught.value)

    assert "outside what is rendered" in refused("60=color.method=mkl")
    trimmed = apply_overrides(FAST, ["video.start=1"])
    assert "frame 10" in refused("10=color.method=mkl", base=trimmed)
    assert "both at frame 25" in refused("25=color.method=mkl", "1s=color.strength=0.5")
    assert "not one" in refused_image(tmp_path)
    ok = check(SwapRequest.of([SOURCE()], clip, markers.with_markers(trimmed, ["1.2s=color.method=mkl"]),
                              tmp_path / "o.mp4"))
    assert ok.frames is not None


def refused_image(tmp_path: Path) -> str:
    with pytest.raises(UserError) as caught:
        check(SwapRequest.of([SOURCE()], photos.astronaut_path(tmp_path),
                             markers.with_markers(FAST, ["3=color.method=mkl"]), tmp_path / "o.png"))
    return str(caught.value)


@pytest.mark.parametrize(("text", "said"), [
    ("80s=color.method=bogus", "marker at 80 s: color.method: Input should be"),
    ("80s=colr.method=none", "unknown settings key 'colr.method'"),
    ("00:01:20=video.start=3", "cannot change video.start"),
    ("soon=color.method=mkl", "'soon' is not a marker's place"),
    ("12", "--marker expects PLACE=section.key=value"),
])
def test_a_bad_marker_is_one_line_naming_it(text: str, said: str) -> None:
    with pytest.raises(SettingsError) as caught:
        markers.with_markers(FAST, [text])
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_places_and_values_as_typed() -> None:
    marked = markers.with_markers(Settings(), ["00:01:20=swapper.model=classic,mask.types=box,occlusion"])
    (marker,) = marked.markers
    assert marker.time == 80.0 and marker.changes == {"face_swapper.model": "classic",
                                                      "mask.types": "box,occlusion"}
    assert validate(marked.model_dump()) == marked  # a job and a preset keep it as it is
    parts = markers.stretches(marked, 3000, 25)
    assert [(p.start, p.stop) for p in parts] == [(0, 2000), (2000, 3000)]
    assert parts[1].settings.mask.types == ("box", "occlusion")


def test_cli_queue_add_keeps_the_marker_in_the_job(tmp_path: Path, clip: Path) -> None:
    from cli.main import main
    from pipeline.jobs import service

    code = main(["queue", "add", "--source", str(SOURCE()), "--target", str(clip), "--output",
                 str(tmp_path / "q.mp4"), "--marker", "1s=color.method=mkl"])
    assert code == 0
    (job,) = service.open_store().list()
    assert [(m.time, m.changes) for m in job.settings.markers] == [(1.0, {"color.method": "mkl"})]


def test_cli_presets_save_keeps_its_markers_for_the_jobs_that_use_it(
        tmp_path: Path, clip: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``presets save --marker`` reads a marker as ``swap`` and ``queue add`` do (one reader): the preset
    holds it, a preset saved from it adds to it, a job queued with it carries it; a bad one is one line and
    no preset is written."""
    from cli.main import main
    from pipeline import presets
    from pipeline.jobs import service

    assert main(["presets", "save", "marked", "--set", "color.method=reinhard", "--marker",
                 "1s=color.method=mkl"]) == 0, capsys.readouterr().err
    assert [(m.time, m.changes) for m in presets.load("marked").markers] == [(1.0, {"color.method": "mkl"})]
    assert main(["presets", "save", "more", "--from", "marked", "--marker", "10=color.strength=0.5"]) == 0
    assert [m.changes for m in presets.load("more").markers] == [{"color.strength": "0.5"},
                                                                  {"color.method": "mkl"}]
    assert main(["queue", "add", "--source", str(SOURCE()), "--target", str(clip), "--output",
                 str(tmp_path / "q.mp4"), "--preset", "more"]) == 0, capsys.readouterr().err
    (job,) = service.open_store().list()
    assert job.settings.markers == presets.load("more").markers
    capsys.readouterr()
    assert main(["presets", "save", "bad", "--marker", "1s=video.start=0.5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "video.start" in err and "Traceback" not in err, err
    assert "bad" not in {row.name for row in presets.list_presets()}


def test_a_timeline_marker_keeps_what_changed_against_the_settings_before_it() -> None:
    """The Swap tab's "Add a marker here" (pipeline/markers.py, through the api): the changes against the
    settings in effect just before the frame; nothing changed or a frame taken is one line; the job keeps the
    start's settings with the markers, and the trim and output as the controls have them now."""
    first = markers.add_here(FAST, apply_overrides(FAST, ["color.method=mkl"]), 10, 25)
    assert [(m.frame, m.changes) for m in first.markers] == [(10, {"color.method": "mkl"})]
    now = apply_overrides(FAST, ["color.method=mkl", "color.strength=0.5"])
    both = markers.add_here(first, now, 30, 25)
    assert both.markers[1].changes == {"color.strength": 0.5}  # the method was mkl there already
    with pytest.raises(UserError, match="would change nothing"):
        markers.add_here(both, now, 40, 25)
    with pytest.raises(UserError, match="a marker at frame 10 already"):
        markers.add_here(both, FAST, 10, 25)
    job = markers.for_job(both, apply_overrides(now, ["video.start=0.2", "output.quality=70"]))
    assert (job.video.start, job.output.quality, job.color.method) == (0.2, 70, "reinhard")
    assert job.markers == both.markers and markers.without(both, 0).markers == (both.markers[1],)
    assert markers.listed(both) == ["frame 10: color.method=mkl", "frame 30: color.strength=0.5"]


def test_cli_swap_with_a_marker_writes_the_whole_video(tmp_path: Path, clip: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from cli.main import main

    out = tmp_path / "swapped.mp4"
    code = main(["swap", "--source", str(SOURCE()), "--target", str(clip), "--output", str(out), "--marker",
                 "1s=color.method=mkl", "--json"])
    assert code == 0, capsys.readouterr().err
    assert count_frames(out) == 50 and _audio_packets(out) != ""
    assert out.with_name("swapped.quality.json").is_file()
    assert main(["swap", "--source", str(SOURCE()), "--target", str(clip), "--output", str(out), "--marker",
                 "3s=color.method=mkl"]) == 2  # past the clip's 2 s: one line, no traceback
    assert "outside what is rendered" in capsys.readouterr().err
