"""Bad and awkward inputs, table-driven: each kind is run through the ``facestation`` command and must give
the right exit code, ONE clear stderr line naming the file or key (notes aside), no traceback, nothing left
behind (no output, no hidden partial), and for accepted inputs the right output (frames, audio, size).

The clips are tiny and generated once per module; disk faults use a tmpfs mount (skipped where mounting is not
permitted), a write-protected folder ``chattr +i`` (EPERM) or a process without CAP_DAC_OVERRIDE (EACCES).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import psutil
import pytest

from cli.main import main
from pipeline.models import catalog, store
from pipeline.progress import HOLD_VARIABLE
from tests import photos
from tests.timing import scaled, wait_until
from tests.videos import (
    add_audio_tracks,
    add_extra_streams,
    count_frames,
    make_audio_only,
    make_clip,
    make_cut,
    make_faststart,
    make_image_as_video,
    make_truncated,
    make_unknown_codec,
    make_zeroed,
    stream_info,
)

REPO = Path(__file__).resolve().parents[1]


# --- the inputs, made once --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad_inputs")
    a: dict[str, Path] = {}
    a["clip.mp4"] = make_clip(d / "clip.mp4", seconds=1.0, size=(160, 120), fps=30)
    a["silent.mp4"] = make_clip(d / "silent.mp4", seconds=1.0, size=(160, 120), fps=30, audio=False)
    two_seconds = make_clip(d / "two.mp4", seconds=2.0, size=(320, 240), fps=30, audio=False)
    a["fs.mp4"] = make_faststart(two_seconds, d / "fs.mp4")
    a["halved.mp4"] = make_truncated(a["fs.mp4"], d / "halved.mp4")
    a["zeroed.mp4"] = make_zeroed(a["fs.mp4"], d / "zeroed.mp4")
    a["cut.mp4"] = make_truncated(a["clip.mp4"], d / "cut.mp4")  # index at the end: unreadable
    a["audio.mp4"] = make_audio_only(d / "audio.mp4")
    a["png.mp4"] = make_image_as_video(d / "png.mp4")
    a["unknown.mkv"] = make_unknown_codec(d / "unknown.mkv")
    tracks = [("eng", "Main"), ("fra", "Commentaire")]
    a["langs.mkv"] = add_audio_tracks(a["silent.mp4"], d / "langs.mkv", tracks)
    a["odd.mkv"] = make_clip(
        d / "odd.mkv", seconds=0.5, size=(161, 121), fps=30, codec="ffv1", pix_fmt="yuv444p", audio=False
    )
    a["face.jpg"] = Path(shutil.copy(photos.grace_hopper_path(), d / "face.jpg"))
    face16 = photos.grace_hopper().astype(np.uint16) * 257
    cv2.imwrite(str(d / "face16.png"), face16)
    a["face16.png"] = d / "face16.png"
    cv2.imwrite(str(d / "noface.jpg"), np.full((200, 200, 3), 128, np.uint8))
    a["noface.jpg"] = d / "noface.jpg"
    data = a["face.jpg"].read_bytes()
    (d / "halfface.jpg").write_bytes(data[: len(data) // 2])
    a["halfface.jpg"] = d / "halfface.jpg"
    for name, content in {
        "text.mp4": b"not a video at all\n",
        "text.jpg": b"not an image\n",
        "empty.mp4": b"",
        "binary.json": bytes(range(256)) * 4,
        "broken.json": b'{"schema": 1, "settings": {',
        "badkey.json": b'{"schema": 1, "settings": {"swapper": {"colour": 1}}}',
    }.items():
        (d / name).write_bytes(content)
        a[name] = d / name
    with zipfile.ZipFile(d / "zip.mp4", "w") as archive:  # what a browser download of a folder gives
        archive.write(a["clip.mp4"], "clip.mp4")
    a["zip.mp4"] = d / "zip.mp4"
    a["zip.jpg"] = Path(shutil.copyfile(d / "zip.mp4", d / "zip.jpg"))
    for name, content in {
        "page.mp4": b"<!DOCTYPE html>\n<html><body>Sign in to download</body></html>\n",
        "doc.mp4": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
        "packed.mp4": gzip.compress(b"a video, gzipped" * 100),
    }.items():
        (d / name).write_bytes(content)
        a[name] = d / name
    return a


class Lab:
    """One test's folder: inputs copied in on demand, and the faults (mounts, locks) undone afterwards."""

    def __init__(self, root: Path, assets: dict[str, Path]) -> None:
        self.root = root
        self.assets = assets
        self.cleanups: list[Callable[[], None]] = []
        root.mkdir()

    def __call__(self, name: str) -> str:
        """The path of asset ``name`` inside the lab (copied on first use)."""
        path = self.root / name
        if not path.exists():
            shutil.copyfile(self.assets[name], path)
        return str(path)

    def out(self, name: str) -> str:
        return str(self.root / name)

    def special(self, name: str, kind: str) -> str:
        path = self.root / name
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        return str(path)

    def mount(self, name: str, size: str, *, read_only: bool = False, fill: bool = False) -> Path:
        path = self.root / name
        path.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True
        )
        if result.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode(errors='replace').strip()}")
        self.cleanups.append(lambda: subprocess.run(["umount", "-l", str(path)], check=False))
        if fill:
            with contextlib.suppress(OSError), open(path / "filler", "wb") as fh:
                while True:
                    fh.write(b"\0" * 65536)
        return path

    def locked(self, name: str) -> Path:
        """A folder nobody may create files in, not even root (``chattr +i``: EPERM)."""
        path = self.root / name
        path.mkdir()
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not supported here")
        self.cleanups.append(lambda: subprocess.run(["chattr", "-i", str(path)], check=False))
        return path


@pytest.fixture
def lab(tmp_path: Path, assets: dict[str, Path]) -> Iterator[Lab]:
    the_lab = Lab(tmp_path / "lab", assets)
    yield the_lab
    for undo in reversed(the_lab.cleanups):
        undo()


def _files(root: Path) -> set[str]:
    found = set()
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            found.add(str(Path(dirpath, name).relative_to(root)))
    return found


# --- the table ------------------------------------------------------------------------------------------

Check = Callable[[Lab, dict[str, Any]], None]


@dataclass(frozen=True)
class Case:
    kind: str
    argv: Callable[[Lab], list[str]]
    code: int
    says: str  # regex: the one error line (code != 0) or a note (code 0) must match it
    check: Check | None = None  # accepted inputs: what the output must be
    creates: tuple[str, ...] = ()  # files an accepted input adds to the lab

    def __str__(self) -> str:
        return self.kind


def swap(
    target: Callable[[Lab], str],
    output: Callable[[Lab], str] = lambda lab: lab.out("o.mp4"),
    source: Callable[[Lab], str] = lambda lab: lab("face.jpg"),
    *extra: str,
) -> Callable[[Lab], list[str]]:
    return lambda lab: [
        "swap",
        "--source",
        source(lab),
        "--target",
        target(lab),
        "--output",
        output(lab),
        "--json",
        *extra,
    ]


def _frames(expected: int) -> Check:
    def check(lab: Lab, summary: dict[str, Any]) -> None:
        assert count_frames(summary["output"]) == summary["frames"] == expected

    return check


def _damaged_output(lab: Lab, summary: dict[str, Any]) -> None:
    assert 0 < count_frames(summary["output"]) == summary["frames"] <= 60
    assert any("lost" in n or "decode error" in n for n in summary["notices"])


def _audio_tags(path: str) -> list[tuple[str | None, str | None]]:
    streams = [s for s in stream_info(path)["streams"] if s["codec_type"] == "audio"]
    return [(s.get("tags", {}).get("language"), s.get("tags", {}).get("title")) for s in streams]


def _two_tagged_audio_streams(lab: Lab, summary: dict[str, Any]) -> None:
    assert _audio_tags(summary["output"]) == [("eng", "Main"), ("fra", "Commentaire")]
    assert count_frames(summary["output"]) == 30


def _two_audio_streams_mp4(lab: Lab, summary: dict[str, Any]) -> None:
    """MP4 as ffmpeg writes it keeps each stream's language (it has no place for a title)."""
    assert [lang for lang, _title in _audio_tags(summary["output"])] == ["eng", "fra"]


def _padded_to_even(lab: Lab, summary: dict[str, Any]) -> None:
    video = next(s for s in stream_info(summary["output"])["streams"] if s["codec_type"] == "video")
    assert (video["width"], video["height"]) == (162, 122)
    assert count_frames(summary["output"]) == 15


def _no_audio(lab: Lab, summary: dict[str, Any]) -> None:
    assert [s["codec_type"] for s in stream_info(summary["output"])["streams"]] == ["video"]
    assert count_frames(summary["output"]) == 30


def _eight_bit_png(lab: Lab, summary: dict[str, Any]) -> None:
    out = cv2.imread(summary["output"], cv2.IMREAD_UNCHANGED)
    assert out.dtype == np.uint8 and out.shape == photos.grace_hopper().shape


def _exported(lab: Lab, summary: dict[str, Any]) -> None:
    assert json.loads((lab.root / "mine.json").read_text())["name"] == "fast-preview"


CASES = [
    # targets that are not videos or images at all
    Case("target-missing", swap(lambda lab: lab.out("nothing.mp4")), 2, r"target not found: .*nothing\.mp4"),
    Case("target-folder", swap(lambda lab: lab.special("dir.mp4", "dir")), 2, r"dir\.mp4 is a folder"),
    Case("target-fifo", swap(lambda lab: lab.special("pipe.mp4", "fifo")), 2, r"pipe\.mp4 is a named pipe"),
    Case("target-dev-zero", swap(lambda lab: "/dev/zero"), 2, r"/dev/zero is a device"),
    Case(
        "target-fifo-image",
        swap(lambda lab: lab.special("pipe.jpg", "fifo"), lambda lab: lab.out("o.jpg")),
        2,
        r"pipe\.jpg is a named pipe",
    ),
    Case("target-empty", swap(lambda lab: lab("empty.mp4")), 2, r"empty\.mp4.*empty"),
    Case("target-text", swap(lambda lab: lab("text.mp4")), 2, r"text\.mp4 is a text file, not a video"),
    # files that are something else, named for what they are (not "truncated or corrupt")
    Case("target-zip-named-mp4", swap(lambda lab: lab("zip.mp4")), 2, r"zip\.mp4 is a ZIP archive, not a"),
    Case("target-html-named-mp4", swap(lambda lab: lab("page.mp4")), 2, r"page\.mp4 is an HTML page, not a"),
    Case("target-pdf-named-mp4", swap(lambda lab: lab("doc.mp4")), 2, r"doc\.mp4 is a PDF document, not a"),
    Case("target-gzip-named-mp4", swap(lambda lab: lab("packed.mp4")), 2, r"packed\.mp4 is a gzip archive"),
    Case(
        "image-zip-named-jpg",
        swap(lambda lab: lab("zip.jpg"), lambda lab: lab.out("o.jpg")),
        2,
        r"zip\.jpg is not an image \(it is a ZIP archive\)",
    ),
    Case("target-audio-only", swap(lambda lab: lab("audio.mp4")), 2, r"audio\.mp4: has no video stream"),
    Case("target-image-named-mp4", swap(lambda lab: lab("png.mp4")), 2, r"png\.mp4: is an image"),
    Case(
        "target-unknown-codec", swap(lambda lab: lab("unknown.mkv")), 2, r"unknown\.mkv: uses a video codec"
    ),
    Case("target-truncated-index-at-end", swap(lambda lab: lab("cut.mp4")), 2, r"cut\.mp4.*truncated"),
    # damaged videos: refused, or rendered with a notice when the user allows it
    Case(
        "target-truncated-faststart",
        swap(lambda lab: lab("halved.mp4")),
        2,
        r"halved\.mp4 is truncated or damaged: \d+ of 60 frames.*video\.allow_damaged=true",
    ),
    Case(
        "target-zeroed-mdat",
        swap(lambda lab: lab("zeroed.mp4")),
        2,
        r"zeroed\.mp4 is (truncated or )?damaged.*video\.allow_damaged=true",
    ),
    Case(
        "target-truncated-allowed",
        swap(
            lambda lab: lab("halved.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.allow_damaged=true",
        ),
        0,
        r"halved\.mp4 is truncated or damaged: \d+ of 60 frames could be decoded, \d+ lost",
        _damaged_output,
        ("o.mp4",),
    ),
    Case(
        "target-zeroed-allowed",
        swap(
            lambda lab: lab("zeroed.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.allow_damaged=true",
        ),
        0,
        r"zeroed\.mp4 is .*damaged",
        _damaged_output,
        ("o.mp4",),
    ),
    # awkward but valid videos: kept as given, or a note says what changed
    Case(
        "two-audio-streams-kept",
        swap(lambda lab: lab("langs.mkv"), lambda lab: lab.out("o.mkv")),
        0,
        r"no face to replace",
        _two_tagged_audio_streams,
        ("o.mkv",),
    ),
    Case(
        "two-audio-streams-to-mp4",
        swap(lambda lab: lab("langs.mkv")),
        0,
        r"no face to replace",
        _two_audio_streams_mp4,
        ("o.mp4",),
    ),
    Case(
        "odd-size-padded-with-notice",
        swap(lambda lab: lab("odd.mkv")),
        0,
        r"odd\.mkv is 161×121.*162×122",
        _padded_to_even,
        ("o.mp4",),
    ),
    Case("no-audio", swap(lambda lab: lab("silent.mp4")), 0, r"no face to replace", _no_audio, ("o.mp4",)),
    Case(
        "trim-start-past-end",
        swap(
            lambda lab: lab("clip.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.start=5",
        ),
        2,
        r"video\.start 5 s is past the end of clip\.mp4 \(1\.00 s\)",
    ),
    Case(
        "trim-end-before-start",
        swap(
            lambda lab: lab("clip.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.start=0.8",
            "--set",
            "video.end=0.2",
        ),
        2,
        r"video\.end 0\.2 s is not after video\.start \(0\.8 s\): nothing to render",
    ),
    # images
    Case(
        "image-16-bit-png",
        swap(lambda lab: lab("face16.png"), lambda lab: lab.out("o.png")),
        0,
        r"face16\.png has 16 bits per channel: the output is 8-bit",
        _eight_bit_png,
        ("o.png",),
    ),
    Case(
        "image-truncated-jpeg",
        swap(lambda lab: lab("halfface.jpg"), lambda lab: lab.out("o.jpg")),
        2,
        r"halfface\.jpg could not be decoded",
    ),
    Case(
        "image-text-as-jpeg",
        swap(lambda lab: lab("text.jpg"), lambda lab: lab.out("o.jpg")),
        2,
        r"text\.jpg is not an image",
    ),
    Case(
        "image-without-face",
        swap(lambda lab: lab("noface.jpg"), lambda lab: lab.out("o.jpg")),
        2,
        r"no face to replace in the target noface\.jpg",
    ),
    # sources
    Case(
        "source-missing",
        swap(lambda lab: lab("face.jpg"), lambda lab: lab.out("o.jpg"), lambda lab: lab.out("who.jpg")),
        2,
        r"who\.jpg",
    ),
    Case(
        "source-fifo",
        swap(
            lambda lab: lab("face.jpg"),
            lambda lab: lab.out("o.jpg"),
            lambda lab: lab.special("src.jpg", "fifo"),
        ),
        2,
        r"src\.jpg is a named pipe",
    ),
    Case(
        "source-folder",
        swap(
            lambda lab: lab("face.jpg"),
            lambda lab: lab.out("o.jpg"),
            lambda lab: lab.special("srcdir.jpg", "dir"),
        ),
        2,
        r"srcdir\.jpg is a folder",
    ),
    Case(
        "source-text",
        swap(lambda lab: lab("face.jpg"), lambda lab: lab.out("o.jpg"), lambda lab: lab("text.jpg")),
        2,
        r"text\.jpg is not an image",
    ),
    Case(
        "source-without-face",
        swap(lambda lab: lab("face.jpg"), lambda lab: lab.out("o.jpg"), lambda lab: lab("noface.jpg")),
        2,
        r"no face found in the source photo noface\.jpg",
    ),
    # outputs
    Case(
        "output-is-the-target",
        swap(lambda lab: lab("clip.mp4"), lambda lab: lab("clip.mp4")),
        2,
        r"clip\.mp4 is one of the inputs",
    ),
    Case(
        "output-folder",
        swap(lambda lab: lab("clip.mp4"), lambda lab: lab.special("out.mp4", "dir")),
        2,
        r"out\.mp4 is a folder",
    ),
    Case(
        "output-missing-folder",
        swap(lambda lab: lab("clip.mp4"), lambda lab: lab.out("no/o.mp4")),
        2,
        r"folder of --output does not exist",
    ),
    Case(
        "output-dev-null",
        swap(lambda lab: lab("clip.mp4"), lambda lab: "/dev/null"),
        2,
        r"/dev/null is not a regular file",
    ),
    Case(
        "output-fifo",
        swap(lambda lab: lab("clip.mp4"), lambda lab: lab.special("o.mp4", "fifo")),
        2,
        r"o\.mp4 is not a regular file",
    ),
    Case(
        "output-avi",  # a .webm is VP9 now (video/formats.py); an .avi takes none of the codecs
        swap(lambda lab: lab("clip.mp4"), lambda lab: lab.out("o.avi")),
        2,
        r"cannot write video 'o\.avi'",
    ),
    Case(
        "output-gif",
        swap(lambda lab: lab("face.jpg"), lambda lab: lab.out("o.gif")),
        2,
        r"cannot write '\.gif'",
    ),
    Case(
        "output-read-only-disk",
        swap(lambda lab: lab("clip.mp4"), lambda lab: str(lab.mount("ro", "1m", read_only=True) / "o.mp4")),
        2,
        r"cannot write .*ro/o\.mp4: the file system is read-only",
    ),
    Case(
        "output-full-disk",
        swap(lambda lab: lab("clip.mp4"), lambda lab: str(lab.mount("full", "1m", fill=True) / "o.mp4")),
        2,
        r"cannot write .*full/o\.mp4: .*(disk is full|MB free)",
    ),
    Case(
        "output-write-protected-eperm",
        swap(lambda lab: lab("clip.mp4"), lambda lab: str(lab.locked("locked") / "o.mp4")),
        2,
        r"cannot write .*locked/o\.mp4: operation not permitted",
    ),
    # settings and presets
    Case(
        "set-unknown-key",
        swap(
            lambda lab: lab("clip.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.colour=1",
        ),
        2,
        r"video\.colour",
    ),
    Case(
        "set-bad-bool",
        swap(
            lambda lab: lab("clip.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--set",
            "video.allow_damaged=maybe",
        ),
        2,
        r"video\.allow_damaged",
    ),
    Case(
        "preset-binary-on-swap",
        swap(
            lambda lab: lab("clip.mp4"),
            lambda lab: lab.out("o.mp4"),
            lambda lab: lab("face.jpg"),
            "--preset",
            "PRESET",
        ),
        2,
        r"binary\.json is not a preset: not UTF-8",
    ),
    Case(
        "presets-import-binary",
        lambda lab: ["presets", "import", lab("binary.json")],
        2,
        r"binary\.json is not a preset: not UTF-8",
    ),
    Case(
        "presets-import-broken-json",
        lambda lab: ["presets", "import", lab("broken.json")],
        2,
        r"broken\.json is not valid JSON",
    ),
    Case(
        "presets-import-unknown-key",
        lambda lab: ["presets", "import", lab("badkey.json")],
        2,
        r"swapper\.colour|colour",
    ),
    Case(
        "presets-import-folder",
        lambda lab: ["presets", "import", lab.special("p.json", "dir")],
        2,
        r"p\.json is a folder",
    ),
    Case(
        "presets-export-overwrite",
        lambda lab: ["presets", "export", "fast-preview", lab("text.jpg")],
        2,
        r"text\.jpg already exists; add --force",
    ),
    Case(
        "presets-export-force",
        lambda lab: ["presets", "export", "fast-preview", lab("text.jpg"), "--force"],
        0,
        "",
        None,
        (),
    ),
    Case(
        "presets-export-new",
        lambda lab: ["presets", "export", "fast-preview", lab.out("mine.json")],
        0,
        "",
        _exported,
        ("mine.json",),
    ),
    # models
    Case(
        "models-import-folder",
        lambda lab: ["models", "import", lab.special("m.onnx", "dir"), "--name", "inswapper_128"],
        2,
        r"m\.onnx",
    ),
    Case(
        "models-import-bad-crc-argument",
        lambda lab: ["models", "import", lab("text.jpg"), "--name", "simswap_256", "--crc32", "xyz"],
        2,
        r"--crc32 must be 8 hex digits",
    ),
]


def _argv(case: Case, lab: Lab) -> list[str]:
    """The case's command line; ``PRESET`` stands for the binary preset file (a path: it is read as one)."""
    argv = case.argv(lab)
    return [lab("binary.json") if a == "PRESET" else a for a in argv]


def test_the_corpus_is_large_enough() -> None:
    kinds = {c.kind for c in CASES} | set(OTHER_KINDS)
    assert len(kinds) >= 40, len(kinds)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case: Case, lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _argv(case, lab)
    before = _files(lab.root)
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("facestation: note:")]
    notes = [line for line in err.splitlines() if line.startswith("facestation: note:")]
    created = _files(lab.root) - before
    if case.code:
        assert code == case.code, err
        assert len(lines) == 1, err
        assert lines[0].startswith("facestation: error: ") and re.search(case.says, lines[0]), lines[0]
        assert created == set(), f"left behind: {created}"
        return
    assert code == 0, err
    assert lines == [], err
    assert not case.says or any(re.search(case.says, n) for n in notes), err
    assert created == set(case.creates), created
    if case.check is not None:
        summary = json.loads(out) if out.strip().startswith("{") else {}
        case.check(lab, summary)


# --- kinds that need their own set-up ---------------------------------------------------------------------

OTHER_KINDS = (
    "output-write-protected-eacces",
    "output-disk-fills-while-rendering",
    "target-truncated-while-rendering",
    "sigterm",
    "sighup",
    "stale-partial-of-dead-process",
    "models-import-offline-every-model",
    "models-import-offline-pinned-ok",
    "models-import-offline-crc32-ok",
)


def _cli(args: list[str], *, prefix: tuple[str, ...] = (), hold: tuple[int, Path] | None = None
         ) -> subprocess.Popen[bytes]:
    """``facestation ARGS`` in a child process; ``hold=(frame, flag)``: its render waits at that frame
    (see pipeline.progress.FrameHold) until ``flag`` is removed or it gets a signal."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(HOLD_VARIABLE, None)
    if hold is not None:
        env[HOLD_VARIABLE] = f"{hold[0]}:{hold[1]}"
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "cli", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _one_error_line(err: str, pattern: str) -> None:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("facestation: note:")]
    assert "Traceback" not in err and len(lines) == 1 and re.search(pattern, lines[0]), err


def test_write_protected_folder_eacces(lab: Lab) -> None:
    """A folder without write permission, for a process without root's override (EACCES)."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv")
    locked = lab.root / "ro-perm"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    target, face = lab("clip.mp4"), lab("face.jpg")
    before = _files(lab.root)
    proc = _cli(
        ["swap", "--source", face, "--target", target, "--output", str(locked / "o.mp4")],
        prefix=("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"),
    )
    _out, err = proc.communicate(timeout=scaled(120))
    if b"setpriv:" in err:
        pytest.skip(f"setpriv cannot drop capabilities here: {err.decode(errors='replace').strip()}")
    assert proc.returncode == 2, err
    _one_error_line(err.decode(), r"cannot write .*ro-perm/o\.mp4: permission denied")
    assert _files(lab.root) == before


@pytest.mark.slow
def test_disk_fills_while_rendering(lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Enough room at the start, not for the whole output: exit 2 at the first failed write, nothing left."""
    noise = tmp_path / "noise.mp4"
    exe = shutil.which("ffmpeg") or "ffmpeg"
    subprocess.run(
        [
            exe,
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "nullsrc=s=320x240:r=30:d=3,geq=random(1)*255:128:128",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-crf",
            "30",
            "-pix_fmt",
            "yuv420p",
            str(noise),
        ],
        check=True,
    )
    disk = lab.mount("small", "1200k")
    face = lab("face.jpg")
    before = _files(lab.root)
    code = main(
        [
            "swap",
            "--source",
            face,
            "--target",
            str(noise),
            "--output",
            str(disk / "o.mp4"),
            "--set",
            "output.quality=100",
            "--json",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    _one_error_line(err, r"cannot write .*small/o\.mp4: the disk is full")
    assert _files(lab.root) == before


HELD_AT = 10  # of 300 frames: the render is surely in the middle whatever the machine's speed


def _held_mid_render(proc: subprocess.Popen[bytes], flag: Path, lab: Lab) -> None:
    """Wait until the child's render waits at its hold, with its partial output written."""
    wait_until(lambda: flag.exists() or proc.poll() is not None, 120, f"the render to reach frame {HELD_AT}")
    assert proc.poll() is None, proc.communicate()[1]
    wait_until(lambda: list(lab.root.glob(".o.*.partial.mp4")), 60, "the partial output")


@pytest.mark.slow
def test_target_truncated_while_rendering(lab: Lab, tmp_path: Path) -> None:
    """The target is cut to half while it renders: exit 2 naming it, no output, no partial."""
    target = Path(make_clip(lab.root / "long.mp4", seconds=10.0, size=(160, 120), fps=30, audio=False))
    face = lab("face.jpg")
    before = _files(lab.root)
    flag = tmp_path / "held"
    proc = _cli(["swap", "--source", face, "--target", str(target), "--output", lab.out("o.mp4")],
                hold=(HELD_AT, flag))
    _held_mid_render(proc, flag, lab)
    os.truncate(target, target.stat().st_size // 2)
    flag.unlink()  # go on, into the missing half
    _out, err = proc.communicate(timeout=scaled(120))
    assert proc.returncode == 2, err
    _one_error_line(err.decode(), r"long\.mp4 (changed while it was read|is truncated or damaged)")
    assert _files(lab.root) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["sigterm", "sighup"]
)
def test_signal_ends_swap_like_ctrl_c(lab: Lab, tmp_path: Path, sig: signal.Signals, code: int) -> None:
    target = Path(make_clip(lab.root / "long.mp4", seconds=10.0, size=(160, 120), fps=30))
    face = lab("face.jpg")
    before = _files(lab.root)
    flag = tmp_path / "held"
    proc = _cli(["swap", "--source", face, "--target", str(target), "--output", lab.out("o.mp4")],
                hold=(HELD_AT, flag))
    _held_mid_render(proc, flag, lab)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert [c for c in children if "ffmpeg" in c.name()]  # the decoder and the encoder, mid-render
    proc.send_signal(sig)  # (the signal also ends the hold)
    _out, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode == code, err
    _one_error_line(err.decode(), rf"stopped by {sig.name}")
    assert _files(lab.root) == before
    assert not [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_stale_partial_of_a_dead_process_is_cleaned(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    stale = lab.root / f".o.{host}.{dead.pid}-0123abcd.partial.mp4"
    alive = lab.root / f".o.{host}.{os.getpid()}-89abcdef.partial.mp4"
    remote = lab.root / f".o.farm-node-2.{dead.pid}-0123abcd.partial.mp4"  # another host's: not judged here
    other = lab.root / ".notes.partial.mp4"  # not one of ours: left alone
    for path in (stale, alive, remote, other):
        path.write_bytes(b"half a video")
    assert (
        main(
            [
                "swap",
                "--source",
                lab("face.jpg"),
                "--target",
                lab("clip.mp4"),
                "--output",
                lab.out("o.mp4"),
                "--json",
            ]
        )
        == 0
    ), capsys.readouterr().err
    assert not stale.exists() and alive.exists() and remote.exists() and other.exists()
    assert count_frames(lab.root / "o.mp4") == 30


# --- models import never touches the network ----------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(repr(args[:2]))
        raise OSError("network access during an import")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return calls


IMPORTABLE = [e.name for e in catalog.CATALOG.values() if not e.builtin]


@pytest.mark.parametrize("name", IMPORTABLE)
def test_models_import_of_a_wrong_file_is_refused_offline(
    name: str,
    lab: Lab,
    no_network: list[str],
    isolated_dirs: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = lab.root / "weights.onnx"
    fake.write_bytes(b"not the real weights" * 100)
    assert main(["models", "import", str(fake), "--name", name]) == 2
    err = capsys.readouterr().err
    entry = catalog.get(name)
    expected = (
        rf"weights\.onnx is not {re.escape(name)}'s file \((size|sha256)" if entry.sha256 or entry.size
        else r"weights\.onnx cannot be verified"
        + ("" if entry.crc32_url else r": refused; .* custom/weights")
    )
    _one_error_line(err, expected)
    if not entry.sha256 and entry.crc32_url:
        assert "--crc32" in err and f"{zlib.crc32(fake.read_bytes()) & 0xFFFFFFFF:08x}" in err
    assert no_network == []
    assert not any(isolated_dirs["models"].iterdir())


def test_models_import_pinned_model_offline(
    lab: Lab, no_network: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses
    import hashlib

    blob = b"pretend inswapper" * 1000
    entry = dataclasses.replace(catalog.get("inswapper_128"), sha256=hashlib.sha256(blob).hexdigest())
    monkeypatch.setitem(catalog.CATALOG, "inswapper_128", entry)
    src = lab.root / "my copy.onnx"
    src.write_bytes(blob)
    assert main(["models", "import", str(src), "--name", "inswapper_128"]) == 0, capsys.readouterr().err
    assert store.installed_path(entry).read_bytes() == blob and no_network == []


def test_models_import_crc32_model_offline(
    lab: Lab, no_network: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    blob = b"pretend simswap" * 1000
    src = lab.root / "simswap.onnx"
    src.write_bytes(blob)
    crc = f"{zlib.crc32(blob) & 0xFFFFFFFF:08x}"
    assert main(["models", "import", str(src), "--name", "simswap_256", "--crc32", "00000000"]) == 2
    _one_error_line(capsys.readouterr().err, r"CRC32 .* does not match")
    assert not store.installed_path(catalog.get("simswap_256")).exists()
    assert main(["models", "import", str(src), "--name", "simswap_256", "--crc32", crc.upper()]) == 0
    assert store.installed_path(catalog.get("simswap_256")).read_bytes() == blob and no_network == []


# --- the same faults through the queue ------------------------------------------------------------


def test_queued_job_of_a_damaged_target_fails_with_the_reason(lab: Lab) -> None:
    """The job's render raises the same error as ``swap``: failed with the reason, no output, never done."""
    from pipeline.jobs.store import JobStore
    from pipeline.jobs.worker import run
    from pipeline.settings import Settings

    store = JobStore(lab.root / "q.sqlite3")
    job = store.add([lab("face.jpg")], lab("halved.mp4"), lab.out("o.mp4"), Settings())
    run(store, "w", once=True)
    failed = store.get(job.id)
    assert failed.state == "failed", failed
    assert failed.error and "\n" not in failed.error
    assert re.search(r"halved\.mp4 is truncated or damaged: \d+ of 60 frames", failed.error), failed.error
    assert not (lab.root / "o.mp4").exists() and not list(lab.root.glob(".o.*"))


# --- issue 21: faults a user can fix are exit 2 with one line, never "internal error" ----------------------


@pytest.mark.parametrize("target, size", [("clip.mp4", 255), ("face.jpg", 250)])
def test_an_output_name_at_the_limit_is_written(
    lab: Lab, target: str, size: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """An output name that the file system takes is written, though its hidden partial's name would be
    longer than the limit (it used to fail after the render: exit 1, "File name too long")."""
    suffix = Path(target).suffix
    name = "n" * (size - len(suffix)) + suffix
    assert len(name.encode()) == size
    argv = swap(lambda lab: lab(target), lambda lab: lab.out(name))(lab)
    before = _files(lab.root)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    assert _files(lab.root) - before == {name}


def test_an_output_name_over_the_limit_is_refused(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    name = "n" * 252 + ".mp4"
    argv = swap(lambda lab: lab("clip.mp4"), lambda lab: lab.out(name))(lab)
    before = _files(lab.root)
    assert main(argv) == 2
    _one_error_line(capsys.readouterr().err,
                    r"the output name n+… is 256 bytes long; .* at most 255: choose a shorter name")
    assert _files(lab.root) == before


def test_a_queued_job_with_a_name_at_the_limit_is_joined(lab: Lab) -> None:
    """A video job's join writes a temp name longer than the output's: within the limit too."""
    from pipeline.jobs.store import JobStore
    from pipeline.jobs.worker import run
    from pipeline.settings import Settings

    name = "q" * 251 + ".mp4"
    store = JobStore(lab.root / "q.sqlite3")
    job = store.add([lab("face.jpg")], lab("silent.mp4"), lab.out(name), Settings())
    run(store, "w", once=True)
    done = store.get(job.id)
    assert done.state == "done", done.error
    assert count_frames(lab.out(name)) == 30
    assert not [n for n in os.listdir(lab.root) if n.startswith(".")]


def _queue_file(lab: Lab, kind: str) -> Path:
    """The default queue's file made ``kind``: not SQLite at all, or a real queue cut in half."""
    from pipeline import paths
    from pipeline.jobs.db import DB_NAME
    from pipeline.jobs.service import open_store
    from pipeline.settings import Settings

    path = paths.data_dir() / DB_NAME
    if kind == "not-sqlite":
        path.write_bytes(b"PK\x03\x04 a zip, not a queue" * 100)
        return path
    store = open_store()
    for i in range(200):
        store.add([lab("face.jpg")], lab("clip.mp4"), lab.out(f"o{i}.mp4"), Settings())
    store.close()
    for leftover in (path.with_name(DB_NAME + "-wal"), path.with_name(DB_NAME + "-shm")):
        leftover.unlink(missing_ok=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize("kind", ["not-sqlite", "truncated"])
@pytest.mark.parametrize("argv", [["queue", "list"], ["queue", "run", "--once"]], ids=["list", "run"])
def test_a_damaged_queue_file_is_named(lab: Lab, kind: str, argv: list[str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _queue_file(lab, kind)
    capsys.readouterr()
    assert main(argv) == 2
    _one_error_line(capsys.readouterr().err,
                    rf"the queue database {re.escape(str(path))} is damaged or not a queue .*: move it away")


@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_the_queue_on_a_read_only_or_full_disk_is_named(
    lab: Lab, fault: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Even ``queue list`` (it opens the file for writing: WAL, migrations) says which folder and what to
    do."""
    from pipeline.jobs.service import open_store

    data = lab.root / "data"
    data.mkdir()
    monkeypatch.setenv("FACESTATION_DATA", str(data))
    if fault == "full":
        disk = lab.mount("disk", "2m", fill=True)
        monkeypatch.setenv("FACESTATION_DATA", str(disk))
        expected = r"the disk is full"
        argv = ["queue", "add", "--source", lab("face.jpg"), "--target", lab("clip.mp4"),
                "--output", lab.out("o.mp4")]
    else:
        open_store().close()  # a queue made here once
        disk = lab.mount("ro", "1m", read_only=True)
        monkeypatch.setenv("FACESTATION_DATA", str(disk))
        expected = r"the file system is read-only"
        argv = ["queue", "list"]
    code = main(argv)
    _one_error_line(capsys.readouterr().err, rf"{re.escape(str(disk))}.*{expected}.*FACESTATION_DATA")
    assert code == 2


def test_ui_on_a_port_in_use_says_so_in_our_words(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert main(["ui", "--port", str(port), "--no-browser", "--no-worker"]) == 2
    err = capsys.readouterr().err
    _one_error_line(err, rf"port {port} on 127\.0\.0\.1 is already in use .*--port N")
    assert "GRADIO_SERVER_PORT" not in err


def test_too_few_file_descriptors_is_the_users_to_fix(lab: Lab) -> None:
    """``ulimit -n 9``: the render cannot open its pipes; exit 2 says which limit and how to raise it. (9 is
    far below what a render needs: 12 was sometimes enough, with the converted models already cached; Python
    itself starts on 7.)"""
    resource = pytest.importorskip("resource")
    face, target = lab("face.jpg"), lab("clip.mp4")
    before = _files(lab.root)

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (9, 9))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "cli", "swap", "--source", face, "--target", target,
                           "--output", lab.out("o.mp4")], cwd=REPO, env=env, capture_output=True,
                          preexec_fn=few_files, timeout=300, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    _one_error_line(err, r"too many open files \(this process may open 9\): raise the limit, e\.g\. `ulimit")
    assert _files(lab.root) == before


def test_a_hung_ffprobe_ends_in_one_line(lab: Lab, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An ffprobe that never answers (a stalled network drive) is stopped after ``FACESTATION_TOOL_TIMEOUT``
    s with a line naming it and the file; it used to block 60 s, then "internal error: TimeoutExpired"."""
    from pipeline.video import ffmpeg

    tools = lab.root / "tools"
    tools.mkdir()
    (tools / "ffmpeg").symlink_to(ffmpeg.find_tools().ffmpeg)
    (tools / "ffprobe").write_text("#!/bin/sh\nexec sleep 600\n")
    (tools / "ffprobe").chmod(0o755)
    monkeypatch.setenv("FACESTATION_FFMPEG", str(tools / "ffmpeg"))
    monkeypatch.setenv("FACESTATION_TOOL_TIMEOUT", "0.3")
    target = lab("clip.mp4")
    queue = ["queue", "add", "--source", lab("face.jpg"), "--target", target, "--output", lab.out("q.mp4")]
    for argv in (swap(lambda lab: target)(lab), queue):
        assert main(argv) == 2
        _one_error_line(capsys.readouterr().err,
                        rf"ffprobe did not answer within 0\.3 s on {re.escape(target)} .*TOOL_TIMEOUT")
    assert not [p for p in psutil.Process().children(recursive=True) if "sleep" in p.name()]


def _preset(lab: Lab, name: str, settings: dict[str, Any]) -> str:
    path = lab.root / name
    path.write_text(json.dumps({"schema": 1, "name": "p", "settings": settings}))
    return str(path)


@pytest.mark.parametrize("settings, key", [
    ({"detector": {"score": True}}, r"detector\.score"),
    ({"output": {"quality": "80"}}, r"output\.quality"),
    ({"video": {"keep_audio": 1}}, r"video\.keep_audio"),
])
def test_a_preset_is_strictly_typed(lab: Lab, settings: dict[str, Any], key: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``true`` is no score (it used to become 1.0, then "no face found"), ``"80"`` no number, ``1`` no
    yes."""
    preset = _preset(lab, "typed.json", settings)
    swap_argv = ["swap", "--source", lab("face.jpg"), "--target", lab("face.jpg"), "--output",
                 lab.out("o.png"), "--preset", preset]
    for argv in (["presets", "import", preset], swap_argv):
        assert main(argv) == 2
        _one_error_line(capsys.readouterr().err, key)
    assert not (lab.root / "o.png").exists()


def test_a_huge_or_deep_preset_is_refused_at_import(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    huge = lab.root / "huge.json"
    with open(huge, "wb") as fh:  # 200 MB, sparse: no disk used
        fh.truncate(200 * 1024 * 1024)
    assert main(["presets", "import", str(huge)]) == 2
    _one_error_line(capsys.readouterr().err, r"huge\.json is 209\.7 MB: a preset file is at most 256 KiB")
    deep = lab.root / "deep.json"
    deep.write_text('{"schema": 1, "settings": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["presets", "import", str(deep)]) == 2
    _one_error_line(capsys.readouterr().err, r"deep\.json nests deeper than a preset does")
    from pipeline import paths

    shutil.copyfile(huge, paths.user_presets_dir() / "dropped.json")  # put in the folder by hand
    assert main(["presets", "list"]) == 0
    out, _err = capsys.readouterr()
    assert len(out) < 10_000 and "dropped" not in out


def test_moving_the_first_job_up_says_it_is_first(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    ids = []
    for name in ("a.png", "b.png"):
        assert main(["queue", "add", "--source", lab("face.jpg"), "--target", lab("face.jpg"),
                     "--output", lab.out(name)]) == 0
        ids.append(int(capsys.readouterr().out))
    assert main(["queue", "move", str(ids[0]), "up"]) == 0
    assert capsys.readouterr().out.strip() == f"job {ids[0]}: already first in the queue (nothing moved)"
    assert main(["queue", "move", str(ids[1]), "down"]) == 0
    assert capsys.readouterr().out.strip() == f"job {ids[1]}: already last in the queue (nothing moved)"
    assert main(["queue", "move", str(ids[1]), "up"]) == 0
    assert capsys.readouterr().out.strip() == f"job {ids[1]}: moved up"


def test_two_missing_models_are_both_named(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """A preset asking for a swapper and an enhancer that are not installed names every missing model at once
    (the swapper's recogniser too), not the first one a render loads."""
    two = {"swapper": {"model": "inswapper_128"}, "enhancer": {"model": "gfpgan_1.4"}}
    preset = _preset(lab, "two.json", two)
    files = ["--source", lab("face.jpg"), "--target", lab("face.jpg"), "--output", lab.out("o.png")]
    for argv in (["swap", *files, "--preset", preset], ["queue", "add", *files, "--preset", preset]):
        assert main(argv) == 2
        _one_error_line(capsys.readouterr().err, r"3 models are not installed: inswapper_128 .*gfpgan_1\.4")


def test_a_tiny_video_is_not_swapped_into_blobs(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """A 16×16 clip of a face: the detector finds one in every frame, but swapping a 16 px face pastes the
    model's crop back as a blob over the whole frame (it said "50 faces swapped"). Left as it is, with a
    note."""
    tiny = cv2.resize(photos.grace_hopper(), (16, 16), interpolation=cv2.INTER_AREA)
    path = lab.root / "tiny.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (16, 16))
    for _ in range(30):
        writer.write(tiny)
    writer.release()
    assert main(swap(lambda lab: str(path))(lab)) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["faces_swapped"] == 0 and count_frames(summary["output"]) == 30
    assert re.search(r"note: faces smaller than 20 px were left as they are", err), err


# --- issue 21: what a damaged or rich input holds is kept, or said ---------------------------------------


def test_a_cut_in_the_middle_keeps_sound_and_picture_in_step(lab: Lab, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    """An MPEG-TS with the middle 40-60 % of its bytes cut: the frames lost are held (the last good one
    repeated), so the video keeps its length and every frame its time; the audio is fitted to it. It used to
    render the frames that could be read back to back: 7.5 s of video against 10 s of sound."""
    whole = make_clip(lab.root / "whole.ts", seconds=4.0, size=(160, 120), fps=30)
    cut = make_cut(whole, lab.root / "cut.ts", 0.4, 0.6)
    argv = swap(lambda lab: str(cut), lambda lab: lab.out("o.mp4"), lambda lab: lab("face.jpg"),
                "--set", "video.allow_damaged=true")(lab)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    durations = {s["codec_type"]: float(s["duration"]) for s in stream_info(summary["output"])["streams"]}
    assert abs(durations["video"] - durations["audio"]) <= 1 / 30, durations
    assert count_frames(summary["output"]) == summary["frames"] == 120  # held, none dropped
    said = re.search(r"note: cut\.ts .*frames (\d+)-(\d+) \([\d.]+-[\d.]+ s\) could not be read and were held"
                     r".*the audio was fitted to the video", err)
    assert said, err
    first, last = int(said.group(1)), int(said.group(2))
    assert 30 <= first <= last <= 90 and last - first + 1 >= 10  # in the middle, a real run


def test_held_frames_are_read_from_the_packets_times() -> None:
    from fractions import Fraction

    from pipeline.video.integrity import held_frames

    times = [1.0 + i / 10 for i in range(10)] + [1.0 + i / 10 for i in range(15, 20)]  # 10..14 missing
    assert held_frames(times, Fraction(10)) == [(10, 14)]
    assert held_frames(sorted(times, key=lambda t: (int(t * 10) % 3, t)), Fraction(10)) == [(10, 14)]
    assert held_frames(times, Fraction(10), start=0.2) == [(8, 12)]  # counted from the trim start
    assert held_frames(times, Fraction(10), start=1.2) == [(0, 2)]  # the trim starts inside the gap
    assert held_frames(times, Fraction(10), start=2.0) == []  # the gap is before it
    assert held_frames(times, Fraction(10), min_gap=1.0) == []  # a VFR source's short gaps are its rate
    assert held_frames([], Fraction(10)) == []


def _kinds(path: str | Path) -> list[str]:
    return [s["codec_type"] for s in stream_info(path)["streams"]]


def _rich_target(lab: Lab) -> Path:
    """A Matroska clip with sound, an SRT subtitle stream, a second video stream and an attached file."""
    clip = make_clip(lab.root / "plain.mp4", seconds=1.0, size=(160, 120), fps=30)
    return add_extra_streams(clip, lab.root / "rich.mkv", second_video=True, attachment=True)


def test_every_stream_the_output_cannot_carry_is_named(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """By the class: every kind of stream of the target is either in the output or named in a note with its
    count (subtitles, a second video stream and attachments were dropped in silence)."""
    target = _rich_target(lab)
    given = _kinds(target)
    for output, kept in (("o.mkv", ["video", "audio", "subtitle"]), ("o.mp4", ["video", "audio"])):
        code = main(swap(lambda lab: str(target), lambda lab, o=output: lab.out(o))(lab))
        out, err = capsys.readouterr()
        assert code == 0, err
        assert _kinds(json.loads(out)["output"]) == kept
        notes = [line for line in err.splitlines() if "rich.mkv has" in line]
        assert len(notes) == 1, err
        dropped = {kind: given.count(kind) - kept.count(kind) for kind in set(given)}
        words = {"video": "more video stream", "subtitle": "subtitle stream", "attachment": "attachment"}
        for kind, n in dropped.items():
            if n:
                assert re.search(rf"{n} {words[kind]}s? \(", notes[0]), notes[0]
            else:
                assert words.get(kind, kind) not in notes[0], notes[0]
        assert f"dropped from {output}" in notes[0]
    assert "(a .mkv output keeps the subtitles)" in notes[0]


def test_subtitles_are_kept_by_a_queued_job(lab: Lab) -> None:
    """A video job joins its segments with the source's subtitles too (mkv -> mkv)."""
    from pipeline.jobs.store import JobStore
    from pipeline.jobs.worker import run
    from pipeline.settings import Settings

    clip = make_clip(lab.root / "plain.mp4", seconds=1.0, size=(160, 120), fps=30)
    target = add_extra_streams(clip, lab.root / "subs.mkv")
    store = JobStore(lab.root / "q.sqlite3")
    job = store.add([lab("face.jpg")], str(target), lab.out("o.mkv"), Settings())
    run(store, "w", once=True)
    done = store.get(job.id)
    assert done.state == "done", done.error
    assert _kinds(lab.out("o.mkv")) == ["video", "audio", "subtitle"]
    assert count_frames(lab.out("o.mkv")) == 30


def test_a_multi_page_tiff_says_only_its_first_page_is_used(lab: Lab, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    from PIL import Image

    page = Image.open(lab("face.jpg")).convert("RGB")
    tiff = lab.root / "pages.tiff"
    page.save(tiff, save_all=True, append_images=[page.rotate(90), page])
    code = main(swap(lambda lab: str(tiff), lambda lab: lab.out("o.png"))(lab))
    err = capsys.readouterr().err
    assert code == 0, err
    assert re.search(r"note: pages\.tiff has 3 pages: only page 1 is swapped and written", err), err
    assert "animated" not in err


# --- issue 21: memory that runs out is the user's to fix ---------------------------------------------------


def _no_memory(kind: str) -> None:
    """Fail as numpy, onnxruntime or the C library does when memory runs out (under ``ulimit -v``)."""
    if kind == "numpy":
        np.empty(1 << 62, np.uint8)  # a real allocation failure: numpy's MemoryError
    if kind == "onnxruntime":
        from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException

        raise RuntimeException(
            "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Conv "
            "node. Name:'Conv_12' Status Message: bfc_arena.cc:376 BFCArena::AllocateRawInternal "
            "Failed to allocate memory for requested buffer of size 1073741824")
    raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))


@pytest.mark.parametrize("kind", ["numpy", "onnxruntime", "enomem"])
def test_memory_that_runs_out_says_what_to_ask_for(lab: Lab, kind: str, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A render whose detector cannot allocate: exit 2 and one line (memory ran out, a smaller batch, fewer
    threads, a smaller model), no "internal error" and no traceback; a queued job fails with the same line,
    at once (no retry that would run out again)."""
    from pipeline.jobs.store import JobStore
    from pipeline.jobs.worker import run
    from pipeline.process.processor import FaceProcessor
    from pipeline.settings import Settings

    monkeypatch.setattr(FaceProcessor, "detect", lambda self, frames: _no_memory(kind))
    said = r"memory ran out \(.+\): .*execution\.batch_size=1.*fewer threads.*a smaller model"
    before = _files(lab.root)
    assert main(swap(lambda lab: lab("clip.mp4"))(lab)) == 2
    _one_error_line(capsys.readouterr().err, said)
    assert _files(lab.root) - before == {"clip.mp4", "face.jpg"}  # the inputs copied in, nothing written
    store = JobStore(lab.root / "q.sqlite3")
    job = store.add([lab("face.jpg")], lab("clip.mp4"), lab.out("o.mp4"), Settings())
    run(store, "w", once=True)
    failed = store.get(job.id)
    assert failed.state == "failed" and failed.attempts == 1, failed
    assert failed.error and "\n" not in failed.error and re.search(said, failed.error), failed.error


def test_only_memory_faults_are_read_as_memory() -> None:
    from pipeline.errors import memory_fault

    assert memory_fault(RuntimeError("CUDA failure 2: out of memory ; GPU=0")) is not None
    assert memory_fault(RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : wrong shape")) is None
    assert memory_fault(OSError(errno.ENOENT, "No such file or directory")) is None
    assert memory_fault(ValueError("bad value")) is None
