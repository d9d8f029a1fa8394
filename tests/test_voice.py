"""A voice (``--audio``) is read only as far as the clip hears it: a long voice on a short clip costs what a
short one does (a 2 h voice on a 3 s clip reached 20.4 GB; BENCHMARKS.md has the 2 h figure), and the lip
syncer's windows are those of the same sound either way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli.main import main
from pipeline.audio import decode
from pipeline.processors.lip_syncer import clip
from tests import photos
from tests.sounds import voice
from tests.surrogates import install_surrogate
from tests.timing import scaled
from tests.videos import make_clip

REPO = Path(__file__).resolve().parents[1]
ORDER = ["--set", "processors.order=face_swapper,lip_syncer", "--set", "selector.mode=one"]


def long_voice(path: Path, seconds: float) -> Path:
    """A tone ``seconds`` long as low-bitrate MP3 (quick to make: a 10 min one is a few MB)."""
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"sine=frequency=300:duration={seconds}:sample_rate=16000", "-ac", "1", "-b:a", "16k",
                    str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def face_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clips") / "face.mp4", seconds=1.0, size=(320, 240),
                     face_image=photos.astronaut())


def test_only_the_sound_the_clip_hears_is_decoded(face_clip: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A 10 min voice on a 1 s clip: about 1.7 s of it is decoded (the clip, the last window, a margin)."""
    install_surrogate("wav2lip_gan_96")
    decoded: list[float] = []
    real = decode.decode

    def spy(*args: object, **kwargs: object) -> decode.Samples:
        samples = real(*args, **kwargs)  # type: ignore[arg-type]
        decoded.append(len(samples) / decode.RATE)
        return samples

    monkeypatch.setattr(decode, "decode", spy)
    clip._cache.clear()
    code = main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip), "--output",
                 str(tmp_path / "o.mp4"), "--audio", str(long_voice(tmp_path / "long.mp3", 600)), *ORDER,
                 "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["frames"] == 30
    assert decoded and max(decoded) == pytest.approx(clip.heard_seconds(30, 30.0), abs=0.05), decoded


def test_the_windows_of_a_clip_are_those_of_its_stretch_of_the_voice(tmp_path: Path) -> None:
    """The bounded read gives the frames the same windows as the whole voice does, where the voice's
    loudness is the same (peak-normalised: a voice as long as the clip, the usual case, is unchanged)."""
    sound = voice(tmp_path / "v.wav", seconds=2.0)
    clip._cache.clear()
    whole = clip.windows(sound, 30.0)
    clip._cache.clear()
    bounded = clip.windows(sound, 30.0, frames=30)
    assert bounded.count < whole.count
    for n in range(30):
        assert np.allclose(bounded.window(n), whole.window(n), rtol=0.05, atol=1e-3), n


def _peak_rss_mb(args: list[str]) -> float:
    """The peak RSS of ``facestation ARGS`` in a child process (the Python process itself, in MB): VmHWM,
    its own memory's high-water mark (ru_maxrss would carry this test process's peak over the exec)."""
    code = ("import re, sys; from cli.main import main; rc = main(sys.argv[1:]); status = open("
            "'/proc/self/status').read(); print('RSS', re.search(r'VmHWM:\\s*(\\d+)', status).group(1), "
            "file=sys.stderr); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=scaled(600))
    err = done.stderr.decode()
    assert done.returncode == 0, err
    return int(err.rsplit("RSS ", 1)[1].split()[0]) / 1024


@pytest.mark.slow
def test_a_long_voice_costs_no_more_memory_than_the_clips_own_sound(face_clip: Path, tmp_path: Path) -> None:
    """A 10 min voice (main: 2.0 GB against 0.3 GB, growing with the voice) against the same render hearing
    the clip's own sound: within 10 % (the test's scaled-down form of the 2 h acceptance figure). One frame
    in flight: at the defaults the render's own peak moves by a third from run to run with the machine's
    load (the frames queued between its stages), which would hide what the voice costs."""
    install_surrogate("wav2lip_gan_96")
    common = ["swap", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip), *ORDER,
              "--set", "execution.batch_size=1", "--set", "execution.queue_size=1"]
    without = _peak_rss_mb([*common, "--output", str(tmp_path / "a.mp4")])
    sound = long_voice(tmp_path / "long.mp3", 600)
    with_voice = _peak_rss_mb([*common, "--output", str(tmp_path / "b.mp4"), "--audio", str(sound)])
    assert with_voice <= without * 1.10, (with_voice, without)


@pytest.mark.parametrize("command", ["swap", "queue add"])
def test_a_voice_that_is_not_a_sound_file_is_said_as_what_it_is(
        face_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """A folder or a FIFO was "audio file not found"; a symbolic link that loops was "not found" too; a
    voice on a still image was dropped without a word."""
    folder, fifo, loop = tmp_path / "voices", tmp_path / "voice.fifo", tmp_path / "loop.wav"
    folder.mkdir()
    os.mkfifo(fifo)
    loop.symlink_to(loop)
    broken = tmp_path / "gone.wav"
    broken.symlink_to(tmp_path / "nowhere.wav")
    still = photos.astronaut_path(tmp_path)
    sound = voice(tmp_path / "v.wav")
    cases = {
        (face_clip, folder): f"{folder} is a folder, not a sound file",
        (face_clip, fifo): f"{fifo} is a named pipe (FIFO), not a sound file",
        (face_clip, loop): f"audio file {loop} is a symbolic link that loops (it leads back to itself)",
        (face_clip, broken): (f"audio file {broken} is a broken symbolic link (to "
                              f"{tmp_path / 'nowhere.wav'}, which does not exist)"),
        (loop, sound): f"target {loop} is a symbolic link that loops (it leads back to itself)",
        (still, sound): (f"the voice v.wav cannot go with {still.name}: a still image carries no sound; "
                         "give a video target, or leave the voice out"),
    }
    for (target, audio), said in cases.items():
        code = main([*command.split(), "--source", str(photos.grace_hopper_path()), "--target", str(target),
                     "--output", str(tmp_path / f"o{target.suffix}"), "--audio", str(audio)])
        err = capsys.readouterr().err
        assert code == 2 and err.strip().splitlines() == [f"facestation: error: {said}"], err
    assert not list(tmp_path.glob("o.*"))


@pytest.mark.parametrize("gone", ["audio", "source"])
def test_a_queued_job_whose_input_was_deleted_fails_in_one_line_at_once(
        face_clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], gone: str) -> None:
    """It failed with a raw FileNotFoundError, retried three times."""
    from pipeline.jobs.service import open_store

    install_surrogate("wav2lip_gan_96")
    sound, face = voice(tmp_path / "v.wav"), tmp_path / "face.jpg"
    face.write_bytes(photos.grace_hopper_path().read_bytes())
    assert main(["queue", "add", "--source", str(face), "--target", str(face_clip), "--output",
                 str(tmp_path / "o.mp4"), "--audio", str(sound), *ORDER]) == 0
    (sound if gone == "audio" else face).unlink()
    main(["queue", "run", "--once"])
    capsys.readouterr()
    job = open_store().get(1)
    role, path = ("audio file", sound) if gone == "audio" else ("source image", face)
    assert job.state == "failed" and job.attempts == 1, (job.state, job.attempts, job.log)
    assert job.error == f"{role} not found: {path}", job.error
    assert "Traceback" not in job.log and not (tmp_path / "o.mp4").exists()


def test_a_voice_cut_short_is_said_like_a_damaged_video(face_clip: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """An MP3 cut to its first half kept its length in its header and became its first half with no word."""
    install_surrogate("wav2lip_gan_96")
    whole = tmp_path / "whole.mp3"  # as ffmpeg writes an MP3: its length in its header
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "sine=frequency=300:duration=10", str(whole)], check=True)
    data = whole.read_bytes()
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[: len(data) // 2])
    for command in (["swap"], ["queue", "add"]):
        code = main([*command, "--source", str(photos.grace_hopper_path()), "--target", str(face_clip),
                     "--output", str(tmp_path / "o.mp4"), "--audio", str(cut), *ORDER])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        said = r"cut\.mp3 is truncated or damaged: 4\.\d\d s of its 10\.\d\d s of sound could be read"
        assert re.fullmatch(rf"facestation: error: {said}; give the whole file", err.strip()), err
    assert main(["swap", "--source", str(photos.grace_hopper_path()), "--target", str(face_clip), "--output",
                 str(tmp_path / "o.mp4"), "--audio", str(whole), *ORDER]) == 0
